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

create_partitions_request read_create_partitions_request(reader& r, int16_t) {
  create_partitions_request req;
  req.topics = read_array(r, [](reader& r) {
    create_partitions_topic t;
    t.name = r.string();
    t.count = r.int32();
    // A nullable array: null when no assignments are given.
    if (auto n = r.array_length(false)) {
      t.assignments.emplace();
      for (int32_t i = 0; i < *n && r.ok(); ++i)
        t.assignments->push_back(read_array(r, [](reader& r) { return r.int32(); }));
    }
    return t;
  });
  req.timeout_ms = r.int32();
  req.validate_only = r.boolean();
  return req;
}

std::string encode_create_partitions_response(const std::vector<topic_error>& topics,
                                              int16_t, int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  write_array(w, topics, [](writer& w, const topic_error& t) {
    w.string(t.name);
    w.int16(t.error);
    w.nullable_string(t.message);
  });
  return w.take();
}

describe_configs_request read_describe_configs_request(reader& r, int16_t version) {
  describe_configs_request req;
  req.resources = read_array(r, [](reader& r) {
    describe_configs_resource res;
    res.type = r.int8();
    res.name = r.string();
    if (auto n = r.array_length(false)) {
      res.keys.emplace();
      for (int32_t i = 0; i < *n && r.ok(); ++i)
        res.keys->push_back(r.string());
    }
    return res;
  });
  if (version >= 1)
    req.include_synonyms = r.boolean();
  return req;
}

std::string encode_describe_configs_response(const std::vector<describe_configs_result>& results,
                                             int16_t version, int32_t throttle_time_ms) {
  writer w;
  w.int32(throttle_time_ms);
  write_array(w, results, [version](writer& w, const describe_configs_result& res) {
    w.int16(res.error);
    w.nullable_string(res.message);
    w.int8(res.type);
    w.string(res.name);
    write_array(w, res.configs, [version](writer& w, const describe_configs_entry& e) {
      w.string(e.name);
      w.nullable_string(e.value);
      w.boolean(e.read_only);
      if (version == 0)
        w.boolean(e.is_default);
      else
        w.int8(e.source);
      w.boolean(e.is_sensitive);
      if (version >= 1)
        write_array(w, e.synonyms, [](writer& w, const describe_configs_synonym& s) {
          w.string(s.name);
          w.nullable_string(s.value);
          w.int8(s.source);
        });
    });
  });
  return w.take();
}

} // namespace caftx::kafka
