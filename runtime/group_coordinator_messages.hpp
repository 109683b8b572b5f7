// What a group coordinator receives (actors/group/group_coordinator_actor.hpp)
// besides the markers of its `__consumer_offsets` partition: TxnOffsetCommit,
// OffsetCommit, OffsetFetch, the group membership requests
// (runtime/group_membership.hpp), and its timers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/partition_messages.hpp"
#include "runtime/actor_interfaces.hpp"
#include "runtime/common_messages.hpp"
#include "runtime/group_membership.hpp"

namespace caftx {

/// TxnOffsetCommit (docs/transactions.md §TxnOffsetCommit): offsets pending until the marker.
struct txn_offset_commit_request {
  std::string transactional_id;
  std::string group_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
  std::vector<int64_t> offsets; // parallel to partitions
  /// Each offset's metadata string (Kafka's committed_metadata), parallel
  /// to partitions; empty: "" for every offset.
  std::vector<std::string> metadata{};
  /// KIP-447 (TxnOffsetCommit v3+): the consumer's generation and member
  /// id in its group, checked by the group coordinator; -1 and "" skip the
  /// check.
  int32_t generation_id = -1;
  std::string member_id{};
  /// KIP-345 (v3+): the member's static instance id, "" if none; another
  /// member's instance id is FENCED_INSTANCE_ID.
  std::string group_instance_id{};
};

/// OffsetCommit outside a transaction.
struct offset_commit_request {
  std::string group_id;
  std::vector<topic_partition> partitions;
  std::vector<int64_t> offsets;
  /// As txn_offset_commit_request::metadata.
  std::vector<std::string> metadata{};
  /// The committing member's generation and id (-1 and "" from a
  /// consumer outside group management), checked as Kafka's
  /// GroupCoordinator.handleCommitOffsets does.
  int32_t generation_id = -1;
  std::string member_id{};
  /// OffsetCommit v7+ (KIP-345), as in txn_offset_commit_request.
  std::string group_instance_id{};
};

/// OffsetFetch; require_stable answers UNSTABLE_OFFSET_COMMIT while a
/// transaction holds a pending offset for a requested partition (KIP-447).
/// No partitions: every partition the group has a committed offset for
/// (Kafka's OffsetFetch with null topics, as kafka-consumer-groups.sh
/// --describe asks), with UNSTABLE_OFFSET_COMMIT under require_stable
/// while a transaction holds a pending offset for one of them.
struct offset_fetch_request {
  std::string group_id;
  std::vector<topic_partition> partitions;
  bool require_stable = false;
};

struct offset_fetch_response {
  error_code error = error_code::none;
  std::vector<int64_t> offsets; // -1 = none committed
  /// The partition of each offset: the request's, or for a request of no
  /// partitions the group's, in topic and partition order.
  std::vector<topic_partition> partitions;
  /// Each offset's metadata string ("" when none committed).
  std::vector<std::string> metadata{};
  /// Under require_stable, the partitions a transaction holds an offset
  /// for (the reason for UNSTABLE_OFFSET_COMMIT).
  std::vector<topic_partition> unstable{};
};

/// A group coordinator to itself every offsets.retention.check.interval.ms:
/// expire old committed offsets and idle producers' marker epochs.
struct offsets_retention_tick {};

/// A group coordinator to itself when a membership deadline is due
/// (session timeouts, rebalance ends); only the one armed last, due at
/// `due_ms`, acts.
struct group_membership_tick {
  int64_t due_ms = 0;
};

/// To a node's group coordinators from its broker when the controller says
/// `topics` are being deleted: their committed offsets get tombstones
/// (Kafka's GroupCoordinator.onPartitionsDeleted).
struct offsets_topics_deleted {
  std::vector<std::string> topics;
};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(txn_offset_commit_request, x.transactional_id, x.group_id, x.pid, x.epoch,
              x.partitions, x.offsets, x.metadata, x.generation_id, x.member_id,
              x.group_instance_id)
CAFTX_INSPECT(offset_commit_request, x.group_id, x.partitions, x.offsets, x.metadata,
              x.generation_id, x.member_id, x.group_instance_id)
CAFTX_INSPECT(offset_fetch_request, x.group_id, x.partitions, x.require_stable)
CAFTX_INSPECT(offset_fetch_response, x.error, x.offsets, x.partitions, x.metadata, x.unstable)
CAFTX_INSPECT_EMPTY(offsets_retention_tick)
CAFTX_INSPECT(offsets_topics_deleted, x.topics)
CAFTX_INSPECT(group_membership_tick, x.due_ms)
CAFTX_INSPECT(group_protocol, x.name, x.metadata)
CAFTX_INSPECT(join_group_request, x.group_id, x.session_timeout_ms, x.rebalance_timeout_ms,
              x.member_id, x.protocol_type, x.protocols, x.client_id, x.client_host,
              x.require_known_member_id, x.group_instance_id)
CAFTX_INSPECT(join_group_member, x.member_id, x.metadata, x.group_instance_id)
CAFTX_INSPECT(join_group_response, x.error, x.generation_id, x.protocol_name, x.leader_id,
              x.member_id, x.members)
CAFTX_INSPECT(group_assignment, x.member_id, x.assignment)
CAFTX_INSPECT(sync_group_request, x.group_id, x.generation_id, x.member_id, x.assignments,
              x.group_instance_id)
CAFTX_INSPECT(sync_group_response, x.error, x.assignment)
CAFTX_INSPECT(heartbeat_request, x.group_id, x.generation_id, x.member_id,
              x.group_instance_id)
CAFTX_INSPECT(leave_group_request, x.group_id, x.member_ids, x.group_instance_ids)
CAFTX_INSPECT(leave_group_response, x.error, x.member_errors)
CAFTX_INSPECT(group_member_description, x.member_id, x.group_instance_id, x.client_id,
              x.client_host, x.metadata, x.assignment)
CAFTX_INSPECT(group_description, x.group_id, x.error, x.state, x.protocol_type, x.protocol,
              x.members)
CAFTX_INSPECT(describe_groups_request, x.groups)
CAFTX_INSPECT(describe_groups_response, x.groups)
CAFTX_INSPECT_EMPTY(list_groups_request)
CAFTX_INSPECT(listed_group, x.group_id, x.protocol_type, x.state)
CAFTX_INSPECT(list_groups_response, x.error, x.groups)
CAFTX_INSPECT(delete_groups_request, x.groups)
CAFTX_INSPECT(delete_groups_response, x.errors)

} // namespace caftx
