// Kafka's consumer-group APIs in their non-flexible versions, field by
// field as Kafka's message schemas define them: OffsetCommit (key 8, v0-7)
// and OffsetFetch (key 9, v0-7) (docs/kafka-protocol.md §Offsets); JoinGroup
// (11, v0-5), Heartbeat (12, v0-3), LeaveGroup (13, v0-3), SyncGroup (14,
// v0-3), DescribeGroups (15, v0-4), ListGroups (16, v0-2) and DeleteGroups
// (42, v0-1) (§Groups). Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_txn_api.hpp"
#include "protocol/kafka_wire.hpp"
#include "runtime/group_membership.hpp"

namespace caftx::kafka {

// -- OffsetCommit (8) ------------------------------------------------------------------

struct offset_commit_partition {
  int32_t index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1; // v6+
  int64_t commit_timestamp = -1;       // v1 only
  std::optional<std::string> committed_metadata;
};

struct offset_commit_topic {
  std::string name;
  std::vector<offset_commit_partition> partitions;
};

/// OffsetCommitRequest v0-7: the group, from v1 the generation and member
/// id (-1 and "" from a consumer outside group management), from v7 the
/// static member's instance id, v2-4 a retention time, then the offsets.
struct offset_commit_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int64_t retention_time_ms = -1;
  std::vector<offset_commit_topic> topics;
};

offset_commit_request read_offset_commit_request(reader& r, int16_t version);

/// OffsetCommitResponse v0-7: the throttle time from v3, then per topic
/// and partition an error.
std::string encode_offset_commit_response(const std::vector<topic_partition_errors>& topics,
                                          int16_t version, int32_t throttle_time_ms = 0);

// -- OffsetFetch (9) -------------------------------------------------------------------

struct offset_fetch_topic {
  std::string name;
  std::vector<int32_t> partitions;
};

/// OffsetFetchRequest v0-7: the group and its topics' partitions; from v2
/// a null topic list asks for every offset the group has; v6 is flexible;
/// v7 adds require_stable (KIP-447).
struct offset_fetch_request {
  std::string group_id;
  std::optional<std::vector<offset_fetch_topic>> topics;
  bool require_stable = false;
};

offset_fetch_request read_offset_fetch_request(reader& r, int16_t version);

struct offset_fetch_partition {
  int32_t index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1; // v5+
  std::optional<std::string> metadata;
  int16_t error = 0;
};

struct offset_fetch_topic_response {
  std::string name;
  std::vector<offset_fetch_partition> partitions;
};

/// OffsetFetchResponse v0-7: the throttle time from v3, the topics, then
/// from v2 a top-level error; compact and tagged from v6.
struct offset_fetch_response {
  int32_t throttle_time_ms = 0;
  std::vector<offset_fetch_topic_response> topics;
  int16_t error = 0;
};

std::string encode_offset_fetch_response(const offset_fetch_response& f, int16_t version);

// -- group membership -------------------------------------------------------------

/// JoinGroupRequest v0-5: v1 adds the rebalance timeout (a v0 request gets
/// its session timeout there), v5 the static member's instance id (KIP-345;
/// null, and "" too, read as a dynamic member). The client id and host are
/// left for the caller (they are not in the body).
struct join_group_request {
  caftx::join_group_request group;
};

join_group_request read_join_group_request(reader& r, int16_t version);

/// JoinGroupResponse v0-5: the throttle time from v2; each listed member's
/// instance id (null for a dynamic member) from v5.
std::string encode_join_group_response(const caftx::join_group_response& resp, int16_t version);

/// SyncGroupRequest v0-3 (v3 adds the instance id, in the core request).
struct sync_group_request {
  caftx::sync_group_request group;
};

sync_group_request read_sync_group_request(reader& r, int16_t version);
std::string encode_sync_group_response(const caftx::sync_group_response& resp, int16_t version);

/// HeartbeatRequest v0-3 (v3 adds the instance id, in the core request).
struct heartbeat_request {
  caftx::heartbeat_request group;
};

heartbeat_request read_heartbeat_request(reader& r, int16_t version);
/// HeartbeatResponse v0-3: the throttle time from v1, the error.
std::string encode_heartbeat_response(int16_t error, int16_t version);

/// LeaveGroupRequest v0-3: one member id up to v2, from v3 a list of
/// (member id, instance id).
struct leave_group_request {
  caftx::leave_group_request group;
  /// v3, parallel to member ids, as sent (null or not), to echo them; the
  /// core request has them too, null as "".
  std::vector<std::optional<std::string>> group_instance_ids;
};

leave_group_request read_leave_group_request(reader& r, int16_t version);
/// LeaveGroupResponse v0-3: the throttle time from v1, the error, from v3
/// each member's error. Up to v2 the one member's error is the response's.
std::string encode_leave_group_response(const caftx::leave_group_response& resp,
                                        const leave_group_request& req, int16_t version);

/// DescribeGroupsRequest v0-4 (v3 adds include_authorized_operations).
struct describe_groups_request {
  std::vector<std::string> groups;
  bool include_authorized_operations = false;
};

describe_groups_request read_describe_groups_request(reader& r, int16_t version);
/// DescribeGroupsResponse v0-4: the throttle time from v1; per member the
/// instance id (null) from v4; per group the authorized operations
/// (INT32_MIN, not computed) from v3.
std::string encode_describe_groups_response(const std::vector<caftx::group_description>& groups,
                                            int16_t version);

/// ListGroupsRequest v0-2 has no fields.
struct list_groups_request {};

list_groups_request read_list_groups_request(reader& r, int16_t version);
/// ListGroupsResponse v0-2: the throttle time from v1, the error, the
/// groups (id and protocol type).
std::string encode_list_groups_response(const caftx::list_groups_response& resp, int16_t version);

/// DeleteGroupsRequest v0-1: the group names.
struct delete_groups_request {
  std::vector<std::string> groups;
};

delete_groups_request read_delete_groups_request(reader& r, int16_t version);
/// DeleteGroupsResponse v0-1: the throttle time, then (group, error) per group.
std::string encode_delete_groups_response(const std::vector<std::string>& groups,
                                          const std::vector<int16_t>& errors);

} // namespace caftx::kafka
