#include "protocol/kafka_group_api.hpp"

#include <climits>
#include <cstdint>
#include <utility>

#include "protocol/kafka_api.hpp"

namespace caftx::kafka {

namespace {

// A static member's instance id on the wire: null for a dynamic member.
std::optional<std::string> instance_id(const std::string& id) {
  return id.empty() ? std::nullopt : std::optional<std::string>(id);
}

} // namespace

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
  const bool flexible = version >= 6;
  auto string = [flexible](reader& r) { return flexible ? r.compact_string() : r.string(); };
  offset_fetch_request req;
  req.group_id = string(r);
  auto n = r.array_length(flexible);
  if (!n) {
    // Null (every offset of the group) from v2 on only.
    if (r.ok() && version < 2)
      r.fail("null topics in OffsetFetch v" + std::to_string(version));
  } else {
    std::vector<offset_fetch_topic> topics;
    for (int32_t i = 0; i < *n && r.ok(); ++i) {
      offset_fetch_topic t;
      t.name = string(r);
      t.partitions = read_array(r, [](reader& r) { return r.int32(); }, flexible);
      if (flexible)
        r.skip_tagged_fields();
      topics.push_back(std::move(t));
    }
    req.topics = std::move(topics);
  }
  if (version >= 7)
    req.require_stable = r.boolean();
  if (flexible)
    r.skip_tagged_fields();
  return req;
}

std::string encode_offset_fetch_response(const offset_fetch_response& f, int16_t version) {
  const bool flexible = version >= 6;
  writer w;
  if (version >= 3)
    w.int32(f.throttle_time_ms);
  write_array(
    w, f.topics,
    [version, flexible](writer& w, const offset_fetch_topic_response& t) {
      flexible ? w.compact_string(t.name) : w.string(t.name);
      write_array(
        w, t.partitions,
        [version, flexible](writer& w, const offset_fetch_partition& p) {
          w.int32(p.index);
          w.int64(p.committed_offset);
          if (version >= 5)
            w.int32(p.committed_leader_epoch);
          flexible ? w.compact_nullable_string(p.metadata) : w.nullable_string(p.metadata);
          w.int16(p.error);
          if (flexible)
            w.no_tagged_fields();
        },
        flexible);
      if (flexible)
        w.no_tagged_fields();
    },
    flexible);
  if (version >= 2)
    w.int16(f.error);
  if (flexible)
    w.no_tagged_fields();
  return w.take();
}

join_group_request read_join_group_request(reader& r, int16_t version) {
  join_group_request req;
  auto& g = req.group;
  g.group_id = r.string();
  g.session_timeout_ms = r.int32();
  g.rebalance_timeout_ms = version >= 1 ? r.int32() : g.session_timeout_ms;
  g.member_id = r.string();
  if (version >= 5)
    g.group_instance_id = r.nullable_string().value_or("");
  g.protocol_type = r.string();
  g.protocols = read_array(r, [](reader& r) {
    group_protocol p;
    p.name = r.string();
    p.metadata = r.bytes();
    return p;
  });
  g.require_known_member_id = version >= 4 && g.group_instance_id.empty();
  return req;
}

std::string encode_join_group_response(const caftx::join_group_response& resp, int16_t version) {
  writer w;
  if (version >= 2)
    w.int32(0);
  w.int16(wire_error(resp.error));
  w.int32(resp.generation_id);
  w.string(resp.protocol_name);
  w.string(resp.leader_id);
  w.string(resp.member_id);
  write_array(w, resp.members, [version](writer& w, const join_group_member& m) {
    w.string(m.member_id);
    if (version >= 5)
      w.nullable_string(instance_id(m.group_instance_id));
    w.bytes(m.metadata);
  });
  return w.take();
}

sync_group_request read_sync_group_request(reader& r, int16_t version) {
  sync_group_request req;
  auto& g = req.group;
  g.group_id = r.string();
  g.generation_id = r.int32();
  g.member_id = r.string();
  if (version >= 3)
    g.group_instance_id = r.nullable_string().value_or("");
  g.assignments = read_array(r, [](reader& r) {
    group_assignment a;
    a.member_id = r.string();
    a.assignment = r.bytes();
    return a;
  });
  return req;
}

std::string encode_sync_group_response(const caftx::sync_group_response& resp, int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(0);
  w.int16(wire_error(resp.error));
  w.bytes(resp.assignment);
  return w.take();
}

heartbeat_request read_heartbeat_request(reader& r, int16_t version) {
  heartbeat_request req;
  req.group.group_id = r.string();
  req.group.generation_id = r.int32();
  req.group.member_id = r.string();
  if (version >= 3)
    req.group.group_instance_id = r.nullable_string().value_or("");
  return req;
}

std::string encode_heartbeat_response(int16_t error, int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(0);
  w.int16(error);
  return w.take();
}

leave_group_request read_leave_group_request(reader& r, int16_t version) {
  leave_group_request req;
  req.group.group_id = r.string();
  if (version <= 2) {
    req.group.member_ids.push_back(r.string());
    req.group_instance_ids.emplace_back();
    return req;
  }
  auto members = read_array(r, [](reader& r) {
    auto id = r.string();
    return std::make_pair(id, r.nullable_string());
  });
  for (auto& [id, instance] : members) {
    req.group.member_ids.push_back(id);
    req.group.group_instance_ids.push_back(instance.value_or(""));
    req.group_instance_ids.push_back(instance);
  }
  return req;
}

std::string encode_leave_group_response(const caftx::leave_group_response& resp,
                                        const leave_group_request& req, int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(0);
  if (version <= 2) {
    auto e = resp.error;
    if (e == error_code::none && !resp.member_errors.empty())
      e = resp.member_errors.front();
    w.int16(wire_error(e));
    return w.take();
  }
  w.int16(wire_error(resp.error));
  auto& ids = req.group.member_ids;
  w.array_length(static_cast<int32_t>(ids.size()), false);
  for (size_t i = 0; i < ids.size(); ++i) {
    w.string(ids[i]);
    w.nullable_string(req.group_instance_ids[i]);
    auto e = resp.error != error_code::none ? resp.error
             : i < resp.member_errors.size() ? resp.member_errors[i]
                                             : error_code::unknown_member_id;
    w.int16(wire_error(e));
  }
  return w.take();
}

describe_groups_request read_describe_groups_request(reader& r, int16_t version) {
  describe_groups_request req;
  req.groups = read_array(r, [](reader& r) { return r.string(); });
  if (version >= 3)
    req.include_authorized_operations = r.boolean();
  return req;
}

std::string encode_describe_groups_response(const std::vector<caftx::group_description>& groups,
                                            int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(0);
  write_array(w, groups, [version](writer& w, const group_description& g) {
    w.int16(wire_error(g.error));
    w.string(g.group_id);
    w.string(g.state);
    w.string(g.protocol_type);
    w.string(g.protocol);
    write_array(w, g.members, [version](writer& w, const group_member_description& m) {
      w.string(m.member_id);
      if (version >= 4)
        w.nullable_string(instance_id(m.group_instance_id));
      w.string(m.client_id);
      w.string(m.client_host);
      w.bytes(m.metadata);
      w.bytes(m.assignment);
    });
    if (version >= 3)
      w.int32(INT32_MIN);
  });
  return w.take();
}

list_groups_request read_list_groups_request(reader&, int16_t) {
  return {};
}

std::string encode_list_groups_response(const caftx::list_groups_response& resp, int16_t version) {
  writer w;
  if (version >= 1)
    w.int32(0);
  w.int16(wire_error(resp.error));
  write_array(w, resp.groups, [](writer& w, const listed_group& g) {
    w.string(g.group_id);
    w.string(g.protocol_type);
  });
  return w.take();
}

delete_groups_request read_delete_groups_request(reader& r, int16_t) {
  delete_groups_request req;
  req.groups = read_array(r, [](reader& r) { return r.string(); });
  return req;
}

std::string encode_delete_groups_response(const std::vector<std::string>& groups,
                                          const std::vector<int16_t>& errors) {
  writer w;
  w.int32(0);
  w.array_length(static_cast<int32_t>(groups.size()), false);
  for (size_t i = 0; i < groups.size(); ++i) {
    w.string(groups[i]);
    w.int16(i < errors.size() ? errors[i] : int16_t{0});
  }
  return w.take();
}

} // namespace caftx::kafka
