// A node's side of the controller protocol (docs/controller.md §Node side):
// which controller requests it accepts (Kafka's
// ReplicaManager.becomeLeaderOrFollower, stopReplicas,
// maybeUpdateMetadataCache, KafkaApis' broker epoch check of KIP-380), what
// each accepted partition means (become leader, become follower, stop), and
// the metadata cache answering "who leads this partition" and "where is the
// coordinator of this key" (Kafka's MetadataCache, FindCoordinator). Pure:
// no CAF, no clock; the shell performs the decided role changes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/controller_model.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// What a node does with one partition of an accepted request.
enum class replica_action : uint8_t {
  none,            // rejected or ignored (see error)
  become_leader,   // Partition.makeLeader
  become_follower, // Partition.makeFollower
  stop,            // StopReplica: stop fetching (delete if asked)
};

/// One partition's verdict.
struct replica_decision {
  topic_partition tp;
  error_code error = error_code::none;
  replica_action action = replica_action::none;
  int32_t leader_epoch = 0;  // the request's
  bool delete_partition = false; // stop only
};

/// The verdict on a whole request: a request-level error (then no
/// partition is applied), else one decision per partition in request order.
struct request_verdict {
  error_code error = error_code::none;
  std::string message;
  std::vector<replica_decision> partitions;
};

/// Where a coordinator lives: the internal topic's partition for the key
/// and its leader.
struct coordinator_location {
  topic_partition tp;
  controller::live_node leader;
};

class metadata_cache_core {
public:
  /// The node `self` registered at `node_epoch` (its /nodes/<id> czxid).
  metadata_cache_core(controller::node_id self, int64_t node_epoch)
    : self_(self), node_epoch_(node_epoch) {}

  /// After re-registering (a new session): the new czxid.
  void set_node_epoch(int64_t node_epoch) { node_epoch_ = node_epoch; }

  /// LeaderAndIsr. Whole request: a node_epoch below ours ->
  /// STALE_BROKER_EPOCH (77); a controller epoch below the highest seen ->
  /// STALE_CONTROLLER_EPOCH (11). Else the controller epoch becomes the
  /// highest seen and, per partition: leader epoch greater than the
  /// replica's -> applied (become_leader if the leader is this node, else
  /// become_follower) unless this node is not in its replicas
  /// (UNKNOWN_TOPIC_OR_PARTITION); lower -> rejected, equal -> ignored, both
  /// answered STALE_CONTROLLER_EPOCH as Kafka does. A replica not seen
  /// before has leader epoch -1.
  request_verdict on_leader_and_isr(const controller::leader_and_isr_request& req);

  /// StopReplica: the same two request-level checks; per partition, a
  /// leader epoch of -1 (none) or -2 (deletion), or one not below the
  /// replica's -> stop (the replica is forgotten); below ->
  /// FENCED_LEADER_EPOCH (74); a partition not hosted here -> stop (nothing
  /// to do, Kafka answers NONE).
  request_verdict on_stop_replica(const controller::stop_replica_request& req);

  /// UpdateMetadata: the same two checks, else the cache takes every
  /// partition state of the request and the live node list (replaced). A
  /// partition whose leader is leader_during_delete leaves the cache, and
  /// a topic without partitions left with it (Kafka's
  /// ZkMetadataCache.updateMetadata removePartitionInfo).
  status on_update_metadata(const controller::update_metadata_request& req);

  /// The leader of `tp` in the metadata cache. UNKNOWN_TOPIC_OR_PARTITION if
  /// unknown; LEADER_NOT_AVAILABLE if it has no leader or the leader is not
  /// among the live nodes.
  status_or<controller::live_node> leader_of(const topic_partition& tp) const;

  /// The coordinator for `key` (a transactional id or group id) on
  /// `internal_topic` (__transaction_state or __consumer_offsets): partition
  /// Utils.abs(key.hashCode()) % partitions (runtime/partitioner.hpp) and
  /// its leader. COORDINATOR_NOT_AVAILABLE if the topic is not in the cache
  /// or the partition has no live leader (Kafka's FindCoordinator).
  status_or<coordinator_location> coordinator_for(std::string_view key,
                                                  const std::string& internal_topic) const;

  /// Every partition of `topic` the cache holds, in partition order (empty
  /// for an unknown topic): what DescribeTopics reports.
  std::vector<controller::partition_info> partitions_of(const std::string& topic) const;
  /// The names of every topic in the cache, internal ones included, sorted.
  std::vector<std::string> topic_names() const;

  /// The state this node applied for its replica of `tp`, or nullptr.
  const controller::partition_info* replica(const topic_partition& tp) const;
  /// Highest controller epoch seen (Kafka's ReplicaManager.controllerEpoch).
  int32_t controller_epoch() const { return controller_epoch_; }
  int64_t node_epoch() const { return node_epoch_; }
  const std::map<controller::node_id, controller::live_node>& live_nodes() const { return live_; }

private:
  /// The request-level checks; an empty status when they pass.
  status check(int32_t controller_epoch, int64_t node_epoch) const;
  /// check(); on success the controller epoch becomes the highest seen,
  /// else `v` gets the request-level error.
  bool admit(int32_t controller_epoch, int64_t node_epoch, request_verdict& v);

  controller::node_id self_;
  int64_t node_epoch_;
  int32_t controller_epoch_ = 0;
  std::map<topic_partition, controller::partition_info> replicas_;  // hosted here
  std::map<topic_partition, controller::partition_info> metadata_;  // the whole cluster
  std::map<std::string, int32_t> partition_counts_;
  std::map<controller::node_id, controller::live_node> live_;
};

} // namespace caftx
