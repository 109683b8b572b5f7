// Consumer-group membership: the requests and answers of Kafka's classic
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// DescribeGroups, ListGroups, DeleteGroups) as a group coordinator takes
// them (docs/consumer-groups.md). Plain values, no CAF: the inspectors are
// in runtime/group_coordinator_messages.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/error_code.hpp"

namespace caftx {

/// One protocol a member offers, in its order of preference: the
/// assignor's name ("range", "roundrobin", …) and its subscription
/// metadata, opaque bytes to the coordinator.
struct group_protocol {
  std::string name;
  std::string metadata;
};

/// JoinGroup (Kafka's JoinGroupRequest v0-5 without the static member's
/// instance id). Times in ms; a v0 request has no rebalance timeout and
/// sends its session timeout there.
struct join_group_request {
  std::string group_id;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  /// "" for a member joining for the first time.
  std::string member_id;
  /// "consumer" for Kafka's consumers; the same for every member.
  std::string protocol_type;
  std::vector<group_protocol> protocols;
  std::string client_id;
  std::string client_host;
  /// KIP-394 (JoinGroup v4+): a first join gets MEMBER_ID_REQUIRED with
  /// its member id and must join again with it.
  bool require_known_member_id = false;
};

/// A member as the leader's JoinGroup answer lists it: its id and its
/// metadata for the chosen protocol.
struct join_group_member {
  std::string member_id;
  std::string metadata;
};

struct join_group_response {
  error_code error = error_code::none;
  int32_t generation_id = -1;
  std::string protocol_name;
  std::string leader_id;
  std::string member_id;
  /// Every member, for the leader only (it computes the assignment).
  std::vector<join_group_member> members;
};

/// One member's assignment in the leader's SyncGroup: opaque bytes.
struct group_assignment {
  std::string member_id;
  std::string assignment;
};

/// SyncGroup: the leader sends every member's assignment; the others
/// send none and wait for theirs.
struct sync_group_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::vector<group_assignment> assignments;
};

struct sync_group_response {
  error_code error = error_code::none;
  std::string assignment;
};

struct heartbeat_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
};

/// LeaveGroup: one member (v0-2) or several (v3).
struct leave_group_request {
  std::string group_id;
  std::vector<std::string> member_ids;
};

struct leave_group_response {
  error_code error = error_code::none;
  /// Parallel to the request's member ids.
  std::vector<error_code> member_errors;
};

struct group_member_description {
  std::string member_id;
  std::string client_id;
  std::string client_host;
  /// The member's metadata and assignment; empty unless the group is
  /// Stable (Kafka's GroupMetadata.summary).
  std::string metadata;
  std::string assignment;
};

/// DescribeGroups' answer for one group. A group the coordinator does not
/// have is "Dead" with no error, as in Kafka.
struct group_description {
  std::string group_id;
  error_code error = error_code::none;
  /// "Empty", "PreparingRebalance", "CompletingRebalance", "Stable" or "Dead".
  std::string state;
  std::string protocol_type;
  /// The chosen protocol while Stable, else "".
  std::string protocol;
  std::vector<group_member_description> members;
};

struct describe_groups_request {
  std::vector<std::string> groups;
};

struct describe_groups_response {
  std::vector<group_description> groups;
};

/// ListGroups: the groups of one coordinator.
struct list_groups_request {};

struct listed_group {
  std::string group_id;
  std::string protocol_type;
  std::string state;
};

struct list_groups_response {
  error_code error = error_code::none;
  std::vector<listed_group> groups;
};

/// DeleteGroups: groups without members lose their committed offsets.
struct delete_groups_request {
  std::vector<std::string> groups;
};

struct delete_groups_response {
  /// Parallel to the request's groups: NONE, NON_EMPTY_GROUP,
  /// GROUP_ID_NOT_FOUND, NOT_COORDINATOR, …
  std::vector<error_code> errors;
};

} // namespace caftx
