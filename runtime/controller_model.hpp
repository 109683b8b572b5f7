// The controller's data model in Kafka's ZooKeeper-mode terms (Kafka's
// ControllerContext, LeaderAndIsr, BrokerInfo), the store writes the
// controller decides (path, data, expected version, op kind) and the
// requests it sends to nodes (LeaderAndIsr, UpdateMetadata, StopReplica).
// Plain value types: no CAF, no clock, no ZooKeeper (docs/controller.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "runtime/ids.hpp"

namespace caftx::controller {

/// A node's id in the cluster (Kafka's broker.id).
using node_id = int32_t;

/// Kafka's LeaderAndIsr.NoLeader: a partition without a leader.
inline constexpr node_id no_leader = -1;
/// Kafka's LeaderAndIsr.LeaderDuringDelete: in UpdateMetadata, the
/// partition's topic is being deleted and the metadata cache drops it.
inline constexpr node_id leader_during_delete = -2;

/// Where a node accepts connections.
struct endpoint {
  std::string host;
  uint16_t port = 0;
  friend bool operator==(const endpoint& a, const endpoint& b) {
    return a.port == b.port && a.host == b.host;
  }
};

/// A registered node: its /nodes/<id> znode. node_epoch is the znode's
/// czxid (KIP-380 broker epoch): a node that re-registers after a session
/// expiry or restart gets a greater one.
struct live_node {
  node_id id = -1;
  int64_t node_epoch = -1;
  endpoint ep;
  std::string rack; // "" = none
  /// Where Kafka clients reach the node (its advertised PLAINTEXT://
  /// listener); port 0: it serves no Kafka listener.
  endpoint kafka;
  friend bool operator==(const live_node& a, const live_node& b) {
    return a.id == b.id && a.node_epoch == b.node_epoch && a.ep == b.ep && a.rack == b.rack
           && a.kafka == b.kafka;
  }
};

/// A topic's /topics/<t> znode: partition -> replicas (the first one is the
/// preferred leader) and the topic configs (string values, as Kafka's
/// /config/topics/<t>).
struct topic_assignment {
  std::string name;
  std::map<int32_t, std::vector<node_id>> partitions;
  std::map<std::string, std::string> configs;
  friend bool operator==(const topic_assignment& a, const topic_assignment& b) {
    return a.name == b.name && a.partitions == b.partitions && a.configs == b.configs;
  }
};

/// A partition's /topics/<t>/<p>/state znode (Kafka's LeaderIsrAndControllerEpoch).
/// partition_epoch is the znode's data version (Kafka's zkVersion), not
/// part of the JSON.
struct partition_state {
  node_id leader = no_leader;
  int32_t leader_epoch = 0;
  std::vector<node_id> isr;
  int32_t controller_epoch = 0; // of the controller that wrote it
  int32_t partition_epoch = 0;
  /// Equal leader, leader epoch, ISR and controller epoch (the JSON),
  /// whatever the partition epoch.
  bool same_decision(const partition_state& o) const {
    return leader == o.leader && leader_epoch == o.leader_epoch && isr == o.isr
           && controller_epoch == o.controller_epoch;
  }
  friend bool operator==(const partition_state& a, const partition_state& b) {
    return a.same_decision(b) && a.partition_epoch == b.partition_epoch;
  }
};

/// The elected controller: its node, its controller epoch and the data
/// version of /controller_epoch after its increment. Every write of this
/// controller checks that version (Kafka's controllerEpochZkVersion).
struct controller_identity {
  node_id id = -1;
  int32_t epoch = 0;
  int32_t epoch_version = 0;
};

// -- store operations --------------------------------------------------------

/// Kind of one store operation (ZooKeeper's create, setData, check, delete).
enum class op_kind : uint8_t {
  create,           // persistent znode; fails NODEEXISTS
  create_ephemeral, // bound to the session; fails NODEEXISTS
  set,              // setData at expected_version (-1: any); fails BADVERSION / NONODE
  check,            // version check only; fails BADVERSION / NONODE
  remove,           // delete at expected_version (-1: any)
};

/// One store operation. `data` is the znode's bytes (JSON, see znodes.hpp).
struct store_op {
  op_kind kind = op_kind::set;
  std::string path;
  std::string data;
  int32_t expected_version = -1;
  friend bool operator==(const store_op& a, const store_op& b) {
    return a.kind == b.kind && a.path == b.path && a.data == b.data
           && a.expected_version == b.expected_version;
  }
};

/// An atomic multi-operation. A controller write always starts with
/// check(/controller_epoch, epoch_version) (Kafka's
/// wrapRequestWithControllerEpochCheck): a deposed controller's writes fail.
struct store_write {
  uint64_t id = 0; // the core's handle for the answer
  std::vector<store_op> ops;
};

/// How a store write ended (ZooKeeper's result codes of a multi).
enum class write_outcome : uint8_t {
  ok,
  bad_version,     // BADVERSION at ops[failed_op]
  no_node,         // NONODE at ops[failed_op]
  node_exists,     // NODEEXISTS at ops[failed_op]
  connection_loss, // unknown outcome: the write may or may not have happened
};

/// The answer to a store_write. On ok, versions[i] is the data version of
/// ops[i]'s znode afterwards (0 for a create, the new version for a set,
/// -1 for check and remove).
struct write_result {
  uint64_t id = 0;
  write_outcome outcome = write_outcome::ok;
  size_t failed_op = 0;
  std::vector<int32_t> versions;
};

// -- controller requests -----------------------------------------------------

/// One partition of a LeaderAndIsr or UpdateMetadata request (Kafka's
/// LeaderAndIsrPartitionState / UpdateMetadataPartitionState).
struct partition_info {
  topic_partition tp;
  int32_t controller_epoch = 0;
  node_id leader = no_leader;
  int32_t leader_epoch = 0;
  std::vector<node_id> isr;
  int32_t partition_epoch = 0; // Kafka's ZkVersion
  std::vector<node_id> replicas;
  bool is_new = false; // LeaderAndIsr only: the replica is created by this request
  friend bool operator==(const partition_info& a, const partition_info& b) {
    return a.tp == b.tp && a.controller_epoch == b.controller_epoch && a.leader == b.leader
           && a.leader_epoch == b.leader_epoch && a.isr == b.isr
           && a.partition_epoch == b.partition_epoch && a.replicas == b.replicas
           && a.is_new == b.is_new;
  }
};

/// LeaderAndIsr (Kafka api key 4) to one node: become leader or follower of
/// each partition. node_epoch is the target's registration the controller
/// knows (KIP-380).
struct leader_and_isr_request {
  node_id controller_id = -1;
  int32_t controller_epoch = 0;
  int64_t node_epoch = -1;
  std::vector<partition_info> partitions;
};

/// UpdateMetadata (Kafka api key 6) to one node: partition states and all
/// live nodes with endpoints, for its metadata cache.
struct update_metadata_request {
  node_id controller_id = -1;
  int32_t controller_epoch = 0;
  int64_t node_epoch = -1;
  std::vector<partition_info> partitions;
  std::vector<live_node> live_nodes;
};

/// One partition of a StopReplica request (Kafka's StopReplicaPartitionState, KIP-570).
struct stop_replica_partition {
  topic_partition tp;
  int32_t leader_epoch = 0;
  bool delete_partition = false;
};

/// StopReplica (Kafka api key 5) to one node: stop fetching (and delete).
struct stop_replica_request {
  node_id controller_id = -1;
  int32_t controller_epoch = 0;
  int64_t node_epoch = -1;
  std::vector<stop_replica_partition> partitions;
};

/// A request and the node it goes to; a decision's requests go out in order.
struct outbound_request {
  node_id target = -1;
  std::variant<leader_and_isr_request, update_metadata_request, stop_replica_request> request;
};

} // namespace caftx::controller
