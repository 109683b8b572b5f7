#include "protocol/kafka_txn_admin_api.hpp"

namespace caftx::kafka {

describe_producers_request read_describe_producers_request(reader& r, int16_t) {
  describe_producers_request req;
  req.topics = read_txn_topics(r, true);
  r.skip_tagged_fields();
  return req;
}

std::string encode_describe_producers_response(const std::vector<describe_producers_topic>& topics,
                                               int16_t, int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  write_array(
    w, topics,
    [](writer& w, const describe_producers_topic& t) {
      w.compact_string(t.name);
      write_array(
        w, t.partitions,
        [](writer& w, const describe_producers_partition& p) {
          w.int32(p.index);
          w.int16(p.error);
          w.compact_nullable_string(p.message);
          write_array(
            w, p.active_producers,
            [](writer& w, const producer_state& s) {
              w.int64(s.producer_id);
              w.int32(s.producer_epoch);
              w.int32(s.last_sequence);
              w.int64(s.last_timestamp);
              w.int32(s.coordinator_epoch);
              w.int64(s.current_txn_start_offset);
              w.no_tagged_fields();
            },
            true);
          w.no_tagged_fields();
        },
        true);
      w.no_tagged_fields();
    },
    true);
  w.no_tagged_fields();
  return w.take();
}

describe_transactions_request read_describe_transactions_request(reader& r, int16_t) {
  describe_transactions_request req;
  req.transactional_ids = read_array(r, [](reader& r) { return r.compact_string(); }, true);
  r.skip_tagged_fields();
  return req;
}

std::string encode_describe_transactions_response(
  const std::vector<transaction_state_description>& states, int16_t, int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  write_array(
    w, states,
    [](writer& w, const transaction_state_description& s) {
      w.int16(s.error);
      w.compact_string(s.transactional_id);
      w.compact_string(s.state);
      w.int32(s.timeout_ms);
      w.int64(s.start_time_ms);
      w.int64(s.producer_id);
      w.int16(s.producer_epoch);
      write_txn_topics(w, s.topics, true);
      w.no_tagged_fields();
    },
    true);
  w.no_tagged_fields();
  return w.take();
}

list_transactions_request read_list_transactions_request(reader& r, int16_t version) {
  list_transactions_request req;
  req.state_filters = read_array(r, [](reader& r) { return r.compact_string(); }, true);
  req.producer_id_filters = read_array(r, [](reader& r) { return r.int64(); }, true);
  if (version >= 1)
    req.duration_filter_ms = r.int64();
  r.skip_tagged_fields();
  return req;
}

std::string encode_list_transactions_response(const list_transactions_response& resp, int16_t,
                                              int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  w.int16(resp.error);
  write_array(w, resp.unknown_state_filters,
              [](writer& w, const std::string& s) { w.compact_string(s); }, true);
  write_array(
    w, resp.transactions,
    [](writer& w, const listed_transaction& t) {
      w.compact_string(t.transactional_id);
      w.int64(t.producer_id);
      w.compact_string(t.state);
      w.no_tagged_fields();
    },
    true);
  w.no_tagged_fields();
  return w.take();
}

write_txn_markers_request read_write_txn_markers_request(reader& r, int16_t version) {
  const bool flexible = version >= 1;
  write_txn_markers_request req;
  req.markers = read_array(
    r,
    [flexible](reader& r) {
      writable_txn_marker m;
      m.producer_id = r.int64();
      m.producer_epoch = r.int16();
      m.committed = r.boolean();
      m.topics = read_txn_topics(r, flexible);
      m.coordinator_epoch = r.int32();
      if (flexible)
        r.skip_tagged_fields();
      return m;
    },
    flexible);
  if (flexible)
    r.skip_tagged_fields();
  return req;
}

std::string encode_write_txn_markers_response(const std::vector<txn_marker_result>& markers,
                                              int16_t version) {
  const bool flexible = version >= 1;
  writer w;
  write_array(
    w, markers,
    [flexible](writer& w, const txn_marker_result& m) {
      w.int64(m.producer_id);
      write_partition_errors(w, m.topics, flexible);
      if (flexible)
        w.no_tagged_fields();
    },
    flexible);
  if (flexible)
    w.no_tagged_fields();
  return w.take();
}

} // namespace caftx::kafka
