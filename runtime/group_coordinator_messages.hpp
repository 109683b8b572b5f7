// What a group coordinator receives (actors/group/group_coordinator_actor.hpp)
// besides the markers of its `__consumer_offsets` partition: TxnOffsetCommit,
// OffsetCommit, OffsetFetch, and its retention timer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/partition_messages.hpp"
#include "runtime/actor_interfaces.hpp"
#include "runtime/common_messages.hpp"

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
};

/// OffsetCommit outside a transaction.
struct offset_commit_request {
  std::string group_id;
  std::vector<topic_partition> partitions;
  std::vector<int64_t> offsets;
  /// As txn_offset_commit_request::metadata.
  std::vector<std::string> metadata{};
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
};

/// A group coordinator to itself every offsets.retention.check.interval.ms:
/// expire old committed offsets and idle producers' marker epochs.
struct offsets_retention_tick {};

/// To a node's group coordinators from its broker when the controller says
/// `topics` are being deleted: their committed offsets get tombstones
/// (Kafka's GroupCoordinator.onPartitionsDeleted).
struct offsets_topics_deleted {
  std::vector<std::string> topics;
};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(txn_offset_commit_request, x.transactional_id, x.group_id, x.pid, x.epoch,
              x.partitions, x.offsets, x.metadata)
CAFTX_INSPECT(offset_commit_request, x.group_id, x.partitions, x.offsets, x.metadata)
CAFTX_INSPECT(offset_fetch_request, x.group_id, x.partitions, x.require_stable)
CAFTX_INSPECT(offset_fetch_response, x.error, x.offsets, x.partitions, x.metadata)
CAFTX_INSPECT_EMPTY(offsets_retention_tick)
CAFTX_INSPECT(offsets_topics_deleted, x.topics)

} // namespace caftx
