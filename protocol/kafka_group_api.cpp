#include "protocol/kafka_group_api.hpp"

namespace caftx::kafka {

offset_commit_request read_offset_commit_request(reader& r, int16_t version) {
  offset_commit_request req;
  req.group_id = r.string();
  if (version >= 1) {
    req.generation_id = r.int32();
    req.member_id = r.string();
  }
  if (version >= 7)
    req.group_instance_id = r.nullable_string();
  if (version >= 2 && version <= 4)
    req.retention_time_ms = r.int64();
  req.topics = read_array(r, [version](reader& r) {
    offset_commit_topic t;
    t.name = r.string();
    t.partitions = read_array(r, [version](reader& r) {
      offset_commit_partition p;
      p.index = r.int32();
      p.committed_offset = r.int64();
      if (version >= 6)
        p.committed_leader_epoch = r.int32();
      if (version == 1)
        p.commit_timestamp = r.int64();
      p.committed_metadata = r.nullable_string();
      return p;
    });
    return t;
  });
  return req;
}

std::string encode_offset_commit_response(const std::vector<topic_partition_errors>& topics,
                                          int16_t version, int32_t throttle_time_ms) {
  writer w;
  if (version >= 3)
    w.int32(throttle_time_ms);
  write_partition_errors(w, topics);
  return w.take();
}

offset_fetch_request read_offset_fetch_request(reader& r, int16_t version) {
  offset_fetch_request req;
  req.group_id = r.string();
  auto n = r.array_length(false);
  if (!n) {
    // Null (every offset of the group) from v2 on only.
    if (r.ok() && version < 2)
      r.fail("null topics in OffsetFetch v" + std::to_string(version));
    return req;
  }
  std::vector<offset_fetch_topic> topics;
  for (int32_t i = 0; i < *n && r.ok(); ++i) {
    offset_fetch_topic t;
    t.name = r.string();
    t.partitions = read_array(r, [](reader& r) { return r.int32(); });
    topics.push_back(std::move(t));
  }
  req.topics = std::move(topics);
  return req;
}

std::string encode_offset_fetch_response(const offset_fetch_response& f, int16_t version) {
  writer w;
  if (version >= 3)
    w.int32(f.throttle_time_ms);
  write_array(w, f.topics, [version](writer& w, const offset_fetch_topic_response& t) {
    w.string(t.name);
    write_array(w, t.partitions, [version](writer& w, const offset_fetch_partition& p) {
      w.int32(p.index);
      w.int64(p.committed_offset);
      if (version >= 5)
        w.int32(p.committed_leader_epoch);
      w.nullable_string(p.metadata);
      w.int16(p.error);
    });
  });
  if (version >= 2)
    w.int16(f.error);
  return w.take();
}

} // namespace caftx::kafka
