// CAF inspectors of the controller's requests to nodes (LeaderAndIsr,
// UpdateMetadata, StopReplica; runtime/controller_model.hpp), so that they
// cross the middleman: a controller sends them to the nodes' brokers. The
// types stay plain in controller_model.hpp for the pure cores; this header
// is for registration (register_message_types) and for the shells.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/common_messages.hpp"
#include "runtime/controller_model.hpp"

namespace caftx::controller {

#define CAFTX_CONTROLLER_INSPECT(type, ...)                                                        \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type& x) {                                 \
    return f(caf::meta::type_name("caftx::controller::" #type), __VA_ARGS__);                      \
  }

CAFTX_CONTROLLER_INSPECT(endpoint, x.host, x.port)
CAFTX_CONTROLLER_INSPECT(live_node, x.id, x.node_epoch, x.ep, x.rack, x.kafka)
CAFTX_CONTROLLER_INSPECT(partition_info, x.tp, x.controller_epoch, x.leader, x.leader_epoch, x.isr,
                         x.partition_epoch, x.replicas, x.is_new)
CAFTX_CONTROLLER_INSPECT(leader_and_isr_request, x.controller_id, x.controller_epoch, x.node_epoch,
                         x.partitions)
CAFTX_CONTROLLER_INSPECT(update_metadata_request, x.controller_id, x.controller_epoch,
                         x.node_epoch, x.partitions, x.live_nodes)
CAFTX_CONTROLLER_INSPECT(stop_replica_partition, x.tp, x.leader_epoch, x.delete_partition)
CAFTX_CONTROLLER_INSPECT(stop_replica_request, x.controller_id, x.controller_epoch, x.node_epoch,
                         x.partitions)

#undef CAFTX_CONTROLLER_INSPECT

} // namespace caftx::controller

namespace caftx {

// -- to a node's controller actor (actors/controller/controller_actor.hpp) ----

/// To the node's controller actor from a transaction coordinator shard
/// (cluster mode): claim the next block of producer ids on
/// /producer_id_block (Kafka's ZooKeeper-mode ProducerIdManager).
struct producer_id_block_request {};

/// NONE with the block [first, last] (both inclusive, 1000 ids), or the
/// error: REQUEST_TIMED_OUT when ZooKeeper did not answer or kept
/// answering with another node's claim, UNKNOWN_SERVER_ERROR for a
/// malformed znode or exhausted ids.
struct producer_id_block_response {
  error_code error = error_code::none;
  std::string message;
  int64_t first = -1;
  int64_t last = -1;
};

/// CreateTopics forwarded by a node's broker to the controller's node
/// (Kafka's brokers forward CreateTopics to the controller). Answered with
/// txn_response: NONE, or the controller's error (TOPIC_ALREADY_EXISTS,
/// INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, NOT_CONTROLLER, ...).
struct controller_create_topic_request {
  std::string name;
  int32_t partitions = 1;
  int32_t replication_factor = 1;
  std::map<std::string, std::string> configs;
};

/// DeleteTopics for one topic forwarded by a node's broker to the
/// controller's node (controller_core::delete_topic). Answered with
/// txn_response once every replica deleted its data and the topic's
/// znodes are gone: NONE, or UNKNOWN_TOPIC_OR_PARTITION,
/// INVALID_TOPIC_EXCEPTION (an internal topic), NOT_CONTROLLER,
/// REQUEST_TIMED_OUT (the store's answer was lost; the deletion may go on).
struct controller_delete_topic_request {
  std::string name;
};

/// CreatePartitions for one topic forwarded by a node's broker to the
/// controller's node (controller_core::create_partitions): grow `name` to
/// `count` partitions, placed as Kafka places them unless `assignments`
/// gives each new partition's replicas. Answered with txn_response once
/// the new partitions' znodes are written: NONE, or UNKNOWN_TOPIC_OR_PARTITION,
/// INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR,
/// INVALID_TOPIC_EXCEPTION (queued for deletion, or internal), NOT_CONTROLLER,
/// REQUEST_TIMED_OUT (the store's answer was lost).
struct controller_create_partitions_request {
  std::string name;
  int32_t count = 0;
  std::vector<std::vector<int32_t>> assignments;
  bool validate_only = false;
};

/// The answer to StopReplica with delete (Kafka's StopReplicaResponse of a
/// topic deletion): node `node_id` deleted its replicas of `partitions`
/// from its store. Its broker sends it to the controller (through the
/// controller's node's broker, which sets `forwarded`); a lost one is
/// made up by the controller's next StopReplica.
struct replicas_deleted {
  int32_t node_id = -1;
  std::vector<topic_partition> partitions;
  bool forwarded = false;
};

/// Kafka's ElectLeaders (KIP-460, election type PREFERRED;
/// kafka-leader-election.sh --election-type preferred), sent to any node's
/// broker, which forwards it to the controller: each partition of
/// `partitions` (every partition when empty) whose preferred replica (its
/// first assigned) is live and in the ISR gets it as leader at the next
/// leader epoch.
struct elect_leaders_request {
  std::vector<topic_partition> partitions;
  /// Set by the broker that hands it to the controller's node.
  bool forwarded = false;
};

/// One partition's answer: NONE (the election is being written; the new
/// leader takes over once it is), ELECTION_NOT_NEEDED (84),
/// PREFERRED_LEADER_NOT_AVAILABLE (80), UNKNOWN_TOPIC_OR_PARTITION,
/// NOT_CONTROLLER.
struct elect_leaders_result {
  topic_partition tp;
  error_code error = error_code::none;
  std::string message;
};

struct elect_leaders_response {
  std::vector<elect_leaders_result> results;
};

/// To the local controller actor: a topic's assignment as stored
/// (/topics/<name>), for the configs a new leader needs.
struct controller_topic_request {
  std::string name;
};

/// The answer: NONE with the partition count and topic configs, or
/// UNKNOWN_TOPIC_OR_PARTITION, or REQUEST_TIMED_OUT when the store did not
/// answer.
struct controller_topic_response {
  error_code error = error_code::none;
  std::string message;
  int32_t partitions = 0;
  std::map<std::string, std::string> configs;
};

/// ControlledShutdown (Kafka's ControlledShutdownRequest, KIP-380 for the
/// node epoch): a node about to stop asks the controller to move its
/// leaderships away first. A node's broker sends it to the controller's
/// node, whose broker hands it to its controller actor.
struct controlled_shutdown_request {
  int32_t node_id = -1;
  int64_t node_epoch = -1;
};

/// NONE with the partitions of replication factor > 1 the node still leads
/// (it retries until none remain), or BROKER_NOT_AVAILABLE (not
/// registered), STALE_BROKER_EPOCH (an older registration), NOT_CONTROLLER,
/// REQUEST_TIMED_OUT (the store did not answer).
struct controlled_shutdown_response {
  error_code error = error_code::none;
  std::string message;
  std::vector<topic_partition> remaining;
};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(producer_id_block_response, x.error, x.message, x.first, x.last)
CAFTX_INSPECT(elect_leaders_request, x.partitions, x.forwarded)
CAFTX_INSPECT(elect_leaders_result, x.tp, x.error, x.message)
CAFTX_INSPECT(elect_leaders_response, x.results)
CAFTX_INSPECT(controller_create_topic_request, x.name, x.partitions, x.replication_factor,
              x.configs)
CAFTX_INSPECT(controller_topic_request, x.name)
CAFTX_INSPECT(controller_delete_topic_request, x.name)
CAFTX_INSPECT(controller_create_partitions_request, x.name, x.count, x.assignments,
              x.validate_only)
CAFTX_INSPECT(replicas_deleted, x.node_id, x.partitions, x.forwarded)
CAFTX_INSPECT(controller_topic_response, x.error, x.message, x.partitions, x.configs)
CAFTX_INSPECT_EMPTY(producer_id_block_request)
/// AlterIsr (KIP-497, Kafka 2.7+) for one partition, from its leader to the
/// controller through the leader's broker: the full new ISR, based on the
/// state at `partition_epoch` (the state znode's version) and the leader's
/// `leader_epoch`. `forwarded` is set by the broker that hands it to the
/// controller's node.
struct alter_isr_request {
  int32_t node_id = -1;
  int64_t node_epoch = -1;
  topic_partition tp;
  int32_t leader_epoch = -1;
  std::vector<int32_t> isr;
  int32_t partition_epoch = -1;
  bool forwarded = false;
};

/// NONE with the state as written (leader epoch, ISR, its new partition
/// epoch), or STALE_BROKER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
/// NOT_LEADER_OR_FOLLOWER (the sender does not lead it),
/// FENCED_LEADER_EPOCH (an older leader epoch), INVALID_UPDATE_VERSION
/// (another partition epoch), INVALID_REQUEST (an ISR without the leader
/// or with a node outside the replicas), INELIGIBLE_REPLICA (a node to add
/// that is not live or shuts down), NOT_CONTROLLER, REQUEST_TIMED_OUT.
struct alter_isr_response {
  error_code error = error_code::none;
  std::string message;
  int32_t leader_epoch = -1;
  std::vector<int32_t> isr;
  int32_t partition_epoch = -1;
};

CAFTX_INSPECT(alter_isr_request, x.node_id, x.node_epoch, x.tp, x.leader_epoch, x.isr,
              x.partition_epoch, x.forwarded)
CAFTX_INSPECT(alter_isr_response, x.error, x.message, x.leader_epoch, x.isr, x.partition_epoch)
CAFTX_INSPECT(controlled_shutdown_request, x.node_id, x.node_epoch)
CAFTX_INSPECT(controlled_shutdown_response, x.error, x.message, x.remaining)

} // namespace caftx

/// Every controller request type, for register_message_types() (names
/// relative to caftx::).
#define CAFTX_CONTROLLER_MESSAGE_TYPES(X)                                                          \
  X(controller::endpoint)                                                                          \
  X(controller::live_node)                                                                         \
  X(controller::partition_info)                                                                    \
  X(controller::leader_and_isr_request)                                                            \
  X(controller::update_metadata_request)                                                           \
  X(controller::stop_replica_partition)                                                            \
  X(controller::stop_replica_request)
