#include "protocol/kafka_data_api.hpp"

namespace caftx::kafka {

// -- Produce ----------------------------------------------------------------------------

produce_request read_produce_request(reader& r, int16_t version) {
  produce_request req;
  if (version >= 3)
    req.transactional_id = r.nullable_string();
  req.acks = r.int16();
  req.timeout_ms = r.int32();
  req.topics = read_array(r, [](reader& r) {
    produce_topic_data t;
    t.name = r.string();
    t.partitions = read_array(r, [](reader& r) {
      produce_partition_data p;
      p.index = r.int32();
      p.records = r.nullable_bytes();
      return p;
    });
    return t;
  });
  return req;
}

std::string encode_produce_response(const std::vector<produce_topic_response>& topics,
                                    int16_t version, int32_t throttle_time_ms) {
  writer w;
  write_array(w, topics, [version](writer& w, const produce_topic_response& t) {
    w.string(t.name);
    write_array(w, t.partitions, [version](writer& w, const produce_partition_response& p) {
      w.int32(p.index);
      w.int16(p.error);
      w.int64(p.base_offset);
      if (version >= 2)
        w.int64(p.log_append_time_ms);
      if (version >= 5)
        w.int64(p.log_start_offset);
    });
  });
  if (version >= 1)
    w.int32(throttle_time_ms);
  return w.take();
}

// -- Fetch -------------------------------------------------------------------------------

fetch_request read_fetch_request(reader& r, int16_t version) {
  fetch_request req;
  req.replica_id = r.int32();
  req.max_wait_ms = r.int32();
  req.min_bytes = r.int32();
  if (version >= 3)
    req.max_bytes = r.int32();
  if (version >= 4)
    req.isolation_level = r.int8();
  if (version >= 7) {
    req.session_id = r.int32();
    req.session_epoch = r.int32();
  }
  req.topics = read_array(r, [version](reader& r) {
    fetch_topic t;
    t.name = r.string();
    t.partitions = read_array(r, [version](reader& r) {
      fetch_partition p;
      p.index = r.int32();
      if (version >= 9)
        p.current_leader_epoch = r.int32();
      p.fetch_offset = r.int64();
      if (version >= 5)
        p.log_start_offset = r.int64();
      p.max_bytes = r.int32();
      return p;
    });
    return t;
  });
  if (version >= 7)
    req.forgotten = read_array(r, [](reader& r) {
      forgotten_topic t;
      t.name = r.string();
      t.partitions = read_array(r, [](reader& r) { return r.int32(); });
      return t;
    });
  if (version >= 11)
    req.rack_id = r.string();
  return req;
}

std::string encode_fetch_response(const fetch_response& f, int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(f.throttle_time_ms);
  if (version >= 7) {
    w.int16(f.error);
    w.int32(f.session_id);
  }
  write_array(w, f.topics, [version](writer& w, const fetch_topic_response& t) {
    w.string(t.name);
    write_array(w, t.partitions, [version](writer& w, const fetch_partition_response& p) {
      w.int32(p.index);
      w.int16(p.error);
      w.int64(p.high_watermark);
      if (version >= 4)
        w.int64(p.last_stable_offset);
      if (version >= 5)
        w.int64(p.log_start_offset);
      if (version >= 4) {
        if (!p.aborted_transactions) {
          w.array_length(-1, false);
        } else {
          write_array(w, *p.aborted_transactions,
                      [](writer& w, const fetch_aborted_transaction& a) {
                        w.int64(a.producer_id);
                        w.int64(a.first_offset);
                      });
        }
      }
      if (version >= 11)
        w.int32(p.preferred_read_replica);
      w.nullable_bytes(p.records);
    });
  });
  return w.take();
}

// -- ListOffsets -------------------------------------------------------------------------

list_offsets_request read_list_offsets_request(reader& r, int16_t version) {
  list_offsets_request req;
  req.replica_id = r.int32();
  if (version >= 2)
    req.isolation_level = r.int8();
  req.topics = read_array(r, [version](reader& r) {
    list_offsets_topic t;
    t.name = r.string();
    t.partitions = read_array(r, [version](reader& r) {
      list_offsets_partition p;
      p.index = r.int32();
      p.timestamp = r.int64();
      if (version == 0)
        p.max_num_offsets = r.int32();
      return p;
    });
    return t;
  });
  return req;
}

std::string encode_list_offsets_response(const std::vector<list_offsets_topic_response>& topics,
                                         int16_t version, int32_t throttle_time_ms) {
  writer w;
  if (version >= 2)
    w.int32(throttle_time_ms);
  write_array(w, topics, [version](writer& w, const list_offsets_topic_response& t) {
    w.string(t.name);
    write_array(w, t.partitions, [version](writer& w, const list_offsets_partition_response& p) {
      w.int32(p.index);
      w.int16(p.error);
      if (version == 0) {
        // Kafka's v0 answer: a list of offsets (one here, none when not found).
        w.array_length(p.error == 0 && p.offset >= 0 ? 1 : 0, false);
        if (p.error == 0 && p.offset >= 0)
          w.int64(p.offset);
      } else {
        w.int64(p.timestamp);
        w.int64(p.offset);
      }
    });
  });
  return w.take();
}

// -- DeleteRecords -------------------------------------------------------------------

delete_records_request read_delete_records_request(reader& r, int16_t) {
  delete_records_request req;
  req.topics = read_array(r, [](reader& r) {
    delete_records_topic t;
    t.name = r.string();
    t.partitions = read_array(r, [](reader& r) {
      delete_records_partition p;
      p.index = r.int32();
      p.offset = r.int64();
      return p;
    });
    return t;
  });
  req.timeout_ms = r.int32();
  return req;
}

std::string encode_delete_records_response(
  const std::vector<delete_records_topic_response>& topics, int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  write_array(w, topics, [](writer& w, const delete_records_topic_response& t) {
    w.string(t.name);
    write_array(w, t.partitions, [](writer& w, const delete_records_partition_response& p) {
      w.int32(p.index);
      w.int64(p.low_watermark);
      w.int16(p.error);
    });
  });
  return w.take();
}

} // namespace caftx::kafka
