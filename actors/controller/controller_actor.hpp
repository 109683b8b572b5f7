// The controller actor of a node (docs/controller.md): Kafka's
// KafkaController as it runs on every broker in ZooKeeper mode. It owns
// the node's coordination store session (ZooKeeper, or the local store of
// the embedded node), registers the node under /nodes/<id> (the znode's
// czxid is the node epoch, KIP-380), takes part in the controller election
// and, while elected, drives controller_core: every decision's writes go to
// the store as fenced multis, its requests (LeaderAndIsr, UpdateMetadata,
// StopReplica) to the nodes through `send`.
//
// Session rules (ZooKeeper's, as Kafka's KafkaZkClient):
// - connecting (connection lost): the session may live on; requests to
//   nodes are held until connected again (stricter than Kafka, which
//   resigns only on expiry), writes still answer ZCONNECTIONLOSS;
// - expired: the controller role ends at once, the node re-registers with
//   the store's next session (a new node epoch) and enters the election
//   again;
// - ZCONNECTIONLOSS on a write = unknown outcome: the core re-reads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/actor_interfaces.hpp"
#include "runtime/controller_model.hpp"
#include "runtime/coordination_types.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// What the controller actor reports to its node.
struct controller_events {
  /// The store's session connected (the first time, and after each
  /// reconnection), with its id.
  std::function<void(int64_t session_id)> connected;
  /// Every change of the store's session state as the store reports it
  /// (connected, connecting, expired, closed), for the node's metrics.
  std::function<void(session_state state)> session;
  /// Registered under /nodes/<id> with `node_epoch` (again after every
  /// session expiry, with a new epoch).
  std::function<void(int64_t node_epoch)> registered;
  /// This node became controller at `controller_epoch`, or stopped being it.
  std::function<void(int32_t controller_epoch)> elected;
  std::function<void(const std::string& why)> resigned;
  /// A ControlledShutdown of `node` was answered (Kafka's controller logs
  /// "Shutting down broker N"), with the count of partitions it still leads.
  std::function<void(controller::node_id node, const status& result, size_t remaining)>
    controlled_shutdown;
  /// A topic was created with this replica assignment (Kafka's
  /// controller logs "New topics: ... with new partition replica assignment").
  std::function<void(const controller::topic_assignment& topic)> topic_created;
  /// CreatePartitions grew a topic; `topic` is its whole new assignment
  /// (Kafka's controller logs "New partitions to be added").
  std::function<void(const controller::topic_assignment& topic)> partitions_added;
  /// A topic's deletion completed: every replica deleted its data and its
  /// znodes are gone (Kafka's controller logs "Deletion of topic t
  /// successfully completed").
  std::function<void(const std::string& topic)> topic_deleted;
  /// Registration is impossible (another live node has this node.id, a
  /// malformed znode): the node must stop.
  std::function<void(const status& why)> fatal;
};

struct controller_options {
  controller::node_id node_id = -1;
  /// The endpoint other nodes and clients reach this node at
  /// (advertised.listeners).
  controller::endpoint advertised;
  /// The advertised PLAINTEXT:// listener Kafka clients are told (port 0:
  /// none), registered with the node.
  controller::endpoint kafka_advertised;
  std::string rack;
  std::string build;
  /// caftx.cluster.id. Before registering, the node reads /cluster_id
  /// (creating it with this id if absent); another id there is fatal
  /// (INCONSISTENT_CLUSTER_ID, Kafka's InconsistentClusterIdException).
  /// Empty: not checked.
  std::string cluster_id;
  /// A /nodes/<id> of another session is waited for this long before the
  /// node gives up as a duplicate: after a SIGKILL and a quick restart it
  /// is the dead process's, gone once its session expires. The node's
  /// session timeout plus a margin; 0 = fatal at once.
  int64_t duplicate_wait_ms = 0;
  /// Spawns the coordination store with `owner` as the receiver of its
  /// session and watch events (spawn_zookeeper_store or spawn_local_store).
  std::function<caf::actor(caf::actor owner)> spawn_store;
  /// Delivers a controller request to its target node; called on the
  /// actor's thread, must not block.
  std::function<void(const controller::outbound_request& r)> send;
  /// As `send`, with the target's endpoint as the controller knows it
  /// (from its /nodes znode; empty when unknown). Used instead of `send`
  /// when set.
  std::function<void(const controller::outbound_request& r, const controller::endpoint& target)>
    send_to;
  /// Kafka's AdminUtils draws these at random; tests fix them.
  std::function<int32_t(int32_t bound)> random;
  /// auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds
  /// (here in milliseconds), leader.imbalance.per.broker.percentage: while
  /// controller, every interval the partitions of nodes above the
  /// imbalance share get a preferred replica election
  /// (controller_core::imbalanced_partitions).
  bool auto_leader_rebalance = true;
  int64_t leader_imbalance_check_interval_ms = 300000;
  int32_t leader_imbalance_per_broker_percentage = 10;
  std::function<int64_t()> clock_ms;
  controller_events events;
};

/// Spawns the controller actor; it spawns its store at once and goes
/// through registration and the election as the store's session connects.
controller_actor spawn_controller(caf::actor_system& sys, controller_options opts);

} // namespace caftx
