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

/// JoinGroup (Kafka's JoinGroupRequest v0-5). Times in ms; a v0 request
/// has no rebalance timeout and sends its session timeout there.
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
  /// KIP-345 (JoinGroup v5+, the client's group.instance.id): a static
  /// member, which keeps its place in the group across restarts; a join
  /// under it with no member id takes over the instance's place and fences
  /// the member id it had (FENCED_INSTANCE_ID). "" for a dynamic member.
  std::string group_instance_id{};
};

/// A member as the leader's JoinGroup answer lists it: its id and its
/// metadata for the chosen protocol.
struct join_group_member {
  std::string member_id;
  std::string metadata;
  /// The member's static instance id (KIP-345), "" for a dynamic one.
  std::string group_instance_id{};
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
  /// SyncGroup v3+ (KIP-345): the member's instance id, "" if dynamic;
  /// another member's instance id is FENCED_INSTANCE_ID.
  std::string group_instance_id{};
};

struct sync_group_response {
  error_code error = error_code::none;
  std::string assignment;
};

struct heartbeat_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  /// Heartbeat v3+ (KIP-345), as sync_group_request::group_instance_id.
  std::string group_instance_id{};
};

/// LeaveGroup: one member (v0-2) or several (v3).
struct leave_group_request {
  std::string group_id;
  std::vector<std::string> member_ids;
  /// LeaveGroup v3 (KIP-345), parallel to member_ids (shorter: "" for the
  /// rest): each member's instance id. A member id "" with an instance id
  /// removes whichever member holds the instance (an operator's removal).
  std::vector<std::string> group_instance_ids{};
};

struct leave_group_response {
  error_code error = error_code::none;
  /// Parallel to the request's member ids.
  std::vector<error_code> member_errors;
};

struct group_member_description {
  std::string member_id;
  /// The static member's instance id (DescribeGroups v4+), "" if dynamic.
  std::string group_instance_id;
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

/// A member as its group's metadata record keeps it (Kafka's
/// GroupMetadataValue.MemberMetadata): its metadata for the group's chosen
/// protocol (the "subscription") and its assignment, opaque bytes. Times
/// in ms.
struct group_record_member {
  std::string member_id;
  /// KIP-345; "" for a dynamic member (null in the record).
  std::string group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  std::string subscription;
  std::string assignment;
};

/// A group's record in `__consumer_offsets` (Kafka's GroupMetadataKey v2
/// and GroupMetadataValue v3), written when a generation's assignment is
/// complete and when the group becomes Empty; a coordinator loading the
/// partition restores the group from its last record (a tombstone: the
/// group was deleted). docs/consumer-groups.md §Coordinator failover.
struct group_metadata_record {
  std::string group_id; // the key's
  std::string protocol_type;
  int32_t generation = 0;
  /// The chosen protocol and the leader's member id; "" (null in the
  /// record) for an Empty group.
  std::string protocol_name;
  std::string leader;
  /// When the group entered its current state (ms since the epoch); -1
  /// unknown.
  int64_t state_timestamp_ms = -1;
  std::vector<group_record_member> members;
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
