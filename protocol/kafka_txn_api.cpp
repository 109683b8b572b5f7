#include "protocol/kafka_txn_api.hpp"

namespace caftx::kafka {

find_coordinator_request read_find_coordinator_request(reader& r, int16_t version) {
  find_coordinator_request req;
  req.key = r.string();
  if (version >= 1)
    req.key_type = r.int8();
  return req;
}

std::string encode_find_coordinator_response(const find_coordinator_response& f,
                                             int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(f.throttle_time_ms);
  w.int16(f.error);
  if (version >= 1)
    w.nullable_string(f.error_message);
  w.int32(f.node_id);
  w.string(f.host);
  w.int32(f.port);
  return w.take();
}

init_producer_id_request read_init_producer_id_request(reader& r, int16_t version) {
  init_producer_id_request req;
  const bool flexible = version >= 2;
  req.transactional_id = flexible ? r.compact_nullable_string() : r.nullable_string();
  req.transaction_timeout_ms = r.int32();
  if (version >= 3) {
    req.producer_id = r.int64();
    req.producer_epoch = r.int16();
  }
  if (flexible)
    r.skip_tagged_fields();
  return req;
}

std::string encode_init_producer_id_response(const init_producer_id_response& i,
                                             int16_t version) {
  writer w;
  w.int32(i.throttle_time_ms);
  w.int16(i.error);
  w.int64(i.producer_id);
  w.int16(i.producer_epoch);
  if (version >= 2)
    w.no_tagged_fields();
  return w.take();
}

namespace {

// The transactional id, producer id and epoch that open AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn.
template <class Request>
void read_txn_identity(reader& r, Request& req) {
  req.transactional_id = r.string();
  req.producer_id = r.int64();
  req.producer_epoch = r.int16();
}

} // namespace

std::vector<txn_topic> read_txn_topics(reader& r, bool flexible) {
  return read_array(
    r,
    [flexible](reader& r) {
      txn_topic t;
      t.name = flexible ? r.compact_string() : r.string();
      t.partitions = read_array(r, [](reader& r) { return r.int32(); }, flexible);
      if (flexible)
        r.skip_tagged_fields();
      return t;
    },
    flexible);
}

void write_txn_topics(writer& w, const std::vector<txn_topic>& topics, bool flexible) {
  write_array(
    w, topics,
    [flexible](writer& w, const txn_topic& t) {
      flexible ? w.compact_string(t.name) : w.string(t.name);
      write_array(w, t.partitions, [](writer& w, int32_t p) { w.int32(p); }, flexible);
      if (flexible)
        w.no_tagged_fields();
    },
    flexible);
}

add_partitions_to_txn_request read_add_partitions_to_txn_request(reader& r, int16_t) {
  add_partitions_to_txn_request req;
  read_txn_identity(r, req);
  req.topics = read_txn_topics(r);
  return req;
}

void write_partition_errors(writer& w, const std::vector<topic_partition_errors>& topics,
                            bool flexible) {
  write_array(
    w, topics,
    [flexible](writer& w, const topic_partition_errors& t) {
      flexible ? w.compact_string(t.name) : w.string(t.name);
      write_array(
        w, t.partitions,
        [flexible](writer& w, const partition_error& p) {
          w.int32(p.index);
          w.int16(p.error);
          if (flexible)
            w.no_tagged_fields();
        },
        flexible);
      if (flexible)
        w.no_tagged_fields();
    },
    flexible);
}

std::string encode_partition_errors_response(const std::vector<topic_partition_errors>& topics,
                                             int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  write_partition_errors(w, topics);
  return w.take();
}

add_offsets_to_txn_request read_add_offsets_to_txn_request(reader& r, int16_t) {
  add_offsets_to_txn_request req;
  read_txn_identity(r, req);
  req.group_id = r.string();
  return req;
}

end_txn_request read_end_txn_request(reader& r, int16_t) {
  end_txn_request req;
  read_txn_identity(r, req);
  req.committed = r.boolean();
  return req;
}

std::string encode_error_response(int16_t error, int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  w.int16(error);
  return w.take();
}

txn_offset_commit_request read_txn_offset_commit_request(reader& r, int16_t version) {
  const bool flexible = version >= 3;
  auto string = [flexible](reader& r) { return flexible ? r.compact_string() : r.string(); };
  auto nullable = [flexible](reader& r) {
    return flexible ? r.compact_nullable_string() : r.nullable_string();
  };
  txn_offset_commit_request req;
  req.transactional_id = string(r);
  req.group_id = string(r);
  req.producer_id = r.int64();
  req.producer_epoch = r.int16();
  if (version >= 3) {
    req.generation_id = r.int32();
    req.member_id = string(r);
    req.group_instance_id = nullable(r);
  }
  req.topics = read_array(
    r,
    [&](reader& r) {
      txn_offset_commit_topic t;
      t.name = string(r);
      t.partitions = read_array(
        r,
        [&](reader& r) {
          txn_offset_commit_partition p;
          p.index = r.int32();
          p.committed_offset = r.int64();
          if (version >= 2)
            p.committed_leader_epoch = r.int32();
          p.committed_metadata = nullable(r);
          if (flexible)
            r.skip_tagged_fields();
          return p;
        },
        flexible);
      if (flexible)
        r.skip_tagged_fields();
      return t;
    },
    flexible);
  if (flexible)
    r.skip_tagged_fields();
  return req;
}

std::string encode_txn_offset_commit_response(const std::vector<topic_partition_errors>& topics,
                                              int16_t version) {
  if (version < 3)
    return encode_partition_errors_response(topics);
  writer w;
  w.int32(0);
  write_partition_errors(w, topics, true);
  w.no_tagged_fields();
  return w.take();
}

} // namespace caftx::kafka
