#include "protocol/kafka_admin_api.hpp"

namespace caftx::kafka {

create_topics_request read_create_topics_request(reader& r, int16_t version) {
  create_topics_request req;
  req.topics = read_array(r, [](reader& r) {
    creatable_topic t;
    t.name = r.string();
    t.num_partitions = r.int32();
    t.replication_factor = r.int16();
    t.assignments = read_array(r, [](reader& r) {
      creatable_replica_assignment a;
      a.partition_index = r.int32();
      a.broker_ids = read_array(r, [](reader& r) { return r.int32(); });
      return a;
    });
    t.configs = read_array(r, [](reader& r) {
      creatable_topic_config c;
      c.name = r.string();
      c.value = r.nullable_string();
      return c;
    });
    return t;
  });
  req.timeout_ms = r.int32();
  if (version >= 1)
    req.validate_only = r.boolean();
  return req;
}

std::string encode_create_topics_response(const std::vector<topic_error>& topics, int16_t version,
                                          int32_t throttle_time_ms) {
  writer w;
  if (version >= 2)
    w.int32(throttle_time_ms);
  write_array(w, topics, [version](writer& w, const topic_error& t) {
    w.string(t.name);
    w.int16(t.error);
    if (version >= 1)
      w.nullable_string(t.message);
  });
  return w.take();
}

delete_topics_request read_delete_topics_request(reader& r, int16_t) {
  delete_topics_request req;
  req.names = read_array(r, [](reader& r) { return r.string(); });
  req.timeout_ms = r.int32();
  return req;
}

std::string encode_delete_topics_response(const std::vector<topic_error>& topics, int16_t version,
                                          int32_t throttle_time_ms) {
  writer w;
  if (version >= 1)
    w.int32(throttle_time_ms);
  write_array(w, topics, [](writer& w, const topic_error& t) {
    w.string(t.name);
    w.int16(t.error);
  });
  return w.take();
}

} // namespace caftx::kafka
