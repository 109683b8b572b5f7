// What a node's broker receives from clients and from other nodes
// (actors/broker/broker_actor.hpp): CreateTopics, Metadata,
// FindCoordinator, the node-wide Fetch, caftx's hello, and the handles
// and endpoints nodes exchange in a cluster (docs/node.md §Cluster mode).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "runtime/common_messages.hpp"
#include "runtime/config_entry.hpp"
#include "runtime/partition_messages.hpp"

namespace caftx {

/// CreateTopics for one topic. Errors: TOPIC_ALREADY_EXISTS,
/// INVALID_PARTITIONS (count outside [1, 10000]), INVALID_REQUEST (bad name),
/// INVALID_REPLICATION_FACTOR (more replicas than live nodes, or not -1 and
/// below 1).
struct create_topic_request {
  std::string name;
  /// -1: the node's num.partitions.
  int32_t partitions = 1;
  /// CreateTopics configs (retention.ms, retention.bytes, ...).
  std::map<std::string, std::string> configs;
  /// Replicas per partition; -1: the node's default.replication.factor
  /// (Kafka's CreatableTopic.replicationFactor). The single node has one.
  int32_t replication_factor = -1;
};

/// DeleteTopics for one topic (Kafka's DeleteTopicsRequest), to any node's
/// broker, which hands it to the controller. Answered once the topic is
/// deleted everywhere: NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST
/// (a bad name, or an internal one: __transaction_state and
/// __consumer_offsets cannot be deleted), TOPIC_DELETION_DISABLED (delete.topic.enable=false),
/// REQUEST_TIMED_OUT after `timeout_ms` (the topic stays marked for
/// deletion and is deleted once every replica has confirmed; Kafka's
/// DeleteTopics times out the same way while a replica is offline).
struct delete_topic_request {
  std::string name;
  /// How long the node waits for the deletion to complete (Kafka's
  /// DeleteTopicsRequest timeoutMs); <= 0: the node's request.timeout.ms.
  int32_t timeout_ms = 0;
};

/// CreatePartitions for one topic (Kafka's CreatePartitionsRequest,
/// KIP-195), to any node's broker, which hands it to the controller: grow
/// `name` to `count` partitions in all. Answered once the new partitions
/// have leaders known at this node (or at once when `timeout_ms` <= 0, as
/// Kafka does): NONE, or the controller's error
/// (controller_create_partitions_request), INVALID_PARTITIONS (count above
/// 10000), REQUEST_TIMED_OUT (the partitions exist but have no leader here
/// within `timeout_ms`).
struct create_partitions_request {
  std::string name;
  int32_t count = 0;
  /// The replicas of each new partition (node ids, the first leads); empty:
  /// placed by the controller.
  std::vector<std::vector<int32_t>> assignments;
  /// Only check; nothing changes (Kafka's validateOnly).
  bool validate_only = false;
  /// How long to wait for the new partitions' leaders, in milliseconds
  /// (Kafka's timeoutMs).
  int32_t timeout_ms = 30000;
};

/// DescribeConfigs of one resource (Kafka's DescribeConfigsResource):
/// `resource_type` 2 (TOPIC) or 4 (BROKER), by Kafka's ResourceType.
struct describe_configs_request {
  int8_t resource_type = 2;
  std::string resource_name;
};

/// Every config of the resource (config/config.hpp: describe_topic_configs,
/// describe_node_configs), or Kafka's error: UNKNOWN_TOPIC_OR_PARTITION,
/// INVALID_TOPIC_EXCEPTION (a name Kafka's Topic.validate refuses),
/// INVALID_REQUEST (another node's id, a broker name that is not a
/// number, another resource type), REQUEST_TIMED_OUT.
struct describe_configs_response {
  error_code error = error_code::none;
  std::string message;
  std::vector<config_entry> entries;
};

/// Metadata of one topic: one partition leader handle per partition (null:
/// no leader known now).
struct topic_metadata {
  std::string name;
  error_code error = error_code::none;
  std::vector<partition_actor> partitions;
};

/// Metadata for the named topics (all topics if empty). An unknown topic
/// has UNKNOWN_TOPIC_OR_PARTITION unless auto.create.topics.enable is on.
struct metadata_request {
  std::vector<std::string> topics;
};

struct metadata_response {
  std::vector<topic_metadata> topics;
};

/// FindCoordinator: key_type 0 = GROUP, 1 = TRANSACTION (docs/transactions.md §FindCoordinator).
struct find_coordinator_request {
  int8_t key_type = 1;
  std::string key;
};

struct find_coordinator_response {
  error_code error = error_code::none;
  std::string message;
  int32_t partition = -1; // of __transaction_state / __consumer_offsets
  caf::actor coordinator;
};

/// Fetch of many partitions from one node in one request, as Kafka's
/// FetchRequest with its topics and partitions (Kafka's consumer sends one
/// per node). The node asks each partition's leader (`partitions[i]`: the
/// partition, its fetch offset, its max.partition.fetch.bytes, the
/// isolation level; each entry's max_wait_ms is ignored) and answers once
/// the partitions' records together reach `min_bytes` (fetch.min.bytes),
/// a partition answered an error, or `max_wait_ms` (fetch.max.wait.ms)
/// passed; then with what every partition has. The records of the
/// answer total at most `max_bytes` (fetch.max.bytes), except that the
/// first partition with records always keeps them (KIP-74: a batch larger
/// than the limits still comes, so the consumer makes progress); a later
/// partition over the budget answers no records (no error) and is fetched
/// again from the same offset. Per partition the answer is exactly the
/// one fetch_request gives (high watermark, last stable offset, aborted
/// transactions, errors: docs/producer-state.md §Fetch); a partition the
/// node does not lead answers UNKNOWN_TOPIC_OR_PARTITION, one whose leader
/// did not answer NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT.
struct node_fetch_request {
  std::vector<fetch_request> partitions;
  int32_t max_wait_ms = 500;
  int32_t min_bytes = 1;
  int32_t max_bytes = 52428800;
};

struct node_fetch_response {
  /// In the request's order, one per requested partition.
  std::vector<fetch_response> partitions;
};

/// caftx's own handshake, sent to a node's broker right after CAF's BASP
/// handshake (which compares app-identifiers only from the connecting
/// side, and drops payloads it cannot deserialize without a word).
/// `role` 0 = client (knows only bootstrap.servers; any cluster_id is
/// accepted, "" included), 1 = node (its cluster_id must equal the
/// node's: INCONSISTENT_CLUSTER_ID otherwise). `build` is
/// middleman_build_id() of the sender: another build is refused with
/// INVALID_REQUEST, since its messages might not deserialize.
struct cluster_hello_request {
  int8_t role = 0;
  std::string cluster_id;
  int32_t node_id = -1;
  std::string build;
};

/// The answer: NONE, INCONSISTENT_CLUSTER_ID or INVALID_REQUEST, with the
/// answering node's cluster id, node id, advertised listener and build.
struct cluster_hello_response {
  error_code error = error_code::none;
  std::string message;
  std::string cluster_id;
  int32_t node_id = -1;
  std::string advertised_listener;
  std::string build;
};

/// One partition a node leads, at the leader epoch the controller gave it:
/// its leader and, for `__transaction_state` and `__consumer_offsets`
/// partitions, the coordinator on it (null otherwise).
struct partition_handle {
  topic_partition tp;
  int32_t leader_epoch = -1;
  partition_actor leader;
  caf::actor coordinator;
};

/// To a node's broker: the handles of these partitions, where it leads
/// them. Answered with node_handles_response listing only those it leads
/// now (a partition it does not lead, or not yet, is left out).
struct node_handles_request {
  std::vector<topic_partition> partitions;
};

struct node_handles_response {
  int32_t node_id = -1;
  std::vector<partition_handle> handles;
};

/// To a node's broker: the live nodes it knows (cluster mode; empty for a
/// node alone). Clients connect to each of them directly, so that the
/// handles they get are not routed through the bootstrap node.
struct cluster_nodes_request {};

struct cluster_nodes_response {
  /// "host:port" of every live node but the answering one.
  std::vector<std::string> endpoints;
};

/// caftx's drill hook (caftx.drills.enable, docs/node.md §Drill hook), to
/// a node's broker: cut the node off from `peers` (node ids) and, with
/// `zookeeper`, from ZooKeeper, while it goes on serving its clients; or,
/// with `heal`, end those cuts. A cut peer's messages to the node's
/// partitions, coordinators and broker are dropped unanswered, as lost
/// packets. Two-way unless `one_way`: the broker first asks each peer
/// (that it can reach) to drop this node's messages too, and a heal asks
/// it to take them again. Errors (INVALID_REQUEST): drills are off on the
/// node, a peer id is the node's own or negative, `zookeeper` on a node
/// without ZooKeeper.
struct drill_network_request {
  bool heal = false;
  std::vector<int32_t> peers;
  bool zookeeper = false;
  bool one_way = false;
};

/// The answer: the node's cuts after the request (peer ids, sorted, and
/// whether ZooKeeper is cut); `message` names the peers that did not
/// confirm their half of a two-way cut or heal (unreachable or timed out:
/// this node's half holds regardless).
struct drill_network_response {
  error_code error = error_code::none;
  std::string message;
  std::vector<int32_t> cut_peers;
  bool zookeeper_cut = false;
};

/// caftx's fault drill (caftx.drills.enable, docs/node.md §Drill hook), to
/// a node's broker: arms fault point `point` (one of fault::all_points())
/// once. Its next hit — for the points of appended batches, of a batch of
/// `topic` (empty: any) and `partition` (-1: any), and with `control_only`
/// of a control batch (a marker) only — kills the whole node process
/// there, as SIGKILL at that instant would, or with `kill_node` false only
/// the actor hitting it (its supervisor restarts it). Errors
/// (INVALID_REQUEST): drills off, a node without fault drills (only
/// `caftx-node` has them), a build without fault points (Release), an
/// unknown point.
struct drill_fault_request {
  std::string point;
  std::string topic;
  int32_t partition = -1;
  bool control_only = false;
  bool kill_node = true;
  /// Instead of arming: take back the drill armed at `point` if it has
  /// not fired yet (the answer's `still_armed` says whether it had not).
  bool disarm = false;
};

/// The answer: armed or disarmed (error NONE), or why not.
struct drill_fault_response {
  error_code error = error_code::none;
  std::string message;
  /// For a disarm: the point was still armed (never hit).
  bool still_armed = false;
};

/// One partition as DescribeTopics reports it (Kafka's TopicPartitionInfo,
/// the columns of kafka-topics.sh --describe): node ids; `leader` -1 when
/// it has none now; replicas in assignment order (the first is the
/// preferred leader).
struct partition_description {
  int32_t partition = 0;
  int32_t leader = -1;
  int32_t leader_epoch = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

/// One topic of DescribeTopics: NONE with its partitions in order, or
/// UNKNOWN_TOPIC_OR_PARTITION.
struct topic_description {
  std::string name;
  error_code error = error_code::none;
  bool internal = false; // __transaction_state, __consumer_offsets
  std::vector<partition_description> partitions;
};

/// DescribeTopics (Kafka's Admin.describeTopics over Metadata) for the
/// named topics, or every topic, internal ones included, when empty. The
/// node answers from its metadata cache: the leaders, replicas and ISRs
/// the controller last sent it (UpdateMetadata); the single node from its
/// own partitions (leader, replica and ISR: itself). Creates nothing.
struct describe_topics_request {
  std::vector<std::string> topics;
};

struct describe_topics_response {
  std::vector<topic_description> topics;
};

/// The cluster as Kafka's Metadata shows it (the node's Kafka listener
/// asks its broker): every live node that serves Kafka's protocol with its
/// advertised PLAINTEXT:// host and port and rack, the controller's id
/// (-1: none known), the cluster id.
struct kafka_cluster_request {};

struct kafka_broker_info {
  int32_t node_id = -1;
  std::string host;
  int32_t port = 0;
  std::string rack; // "" = none
};

struct kafka_cluster_response {
  std::vector<kafka_broker_info> brokers;
  int32_t controller_id = -1;
  std::string cluster_id;
};

/// Kafka's FindCoordinator as the node's Kafka listener asks it: where
/// the coordinator of `key` lives (key_type 0 a group, 1 a transactional
/// id). Answered from the metadata cache: the partition of the internal
/// topic (`__consumer_offsets` / `__transaction_state`) and its leader's
/// node id and advertised PLAINTEXT:// host and port. Errors:
/// INVALID_REQUEST (an unknown key type, an empty transactional id),
/// COORDINATOR_NOT_AVAILABLE (the topic does not exist yet: its creation
/// is started; no live leader; a leader without a Kafka listener).
struct kafka_coordinator_request {
  int8_t key_type = 0;
  std::string key;
};

struct kafka_coordinator_response {
  error_code error = error_code::none;
  std::string message;
  int32_t partition = -1;
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
};

/// "caftx-<version>-<16 hex digits>": the version and a fingerprint of the
/// registered message types (each name and the bytes of its
/// default-constructed value under CAF's binary serializer, so a field
/// added, removed or retyped changes it). Two processes exchange messages
/// only when theirs are equal (cluster_hello_request::build) (docs/node.md §Middleman).
const std::string& wire_build_id();

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(create_topic_request, x.name, x.partitions, x.configs, x.replication_factor)
CAFTX_INSPECT(delete_topic_request, x.name, x.timeout_ms)
CAFTX_INSPECT(config_synonym, x.name, x.value, x.source)
CAFTX_INSPECT(config_entry, x.name, x.value, x.read_only, x.source, x.synonyms)
CAFTX_INSPECT(describe_configs_request, x.resource_type, x.resource_name)
CAFTX_INSPECT(describe_configs_response, x.error, x.message, x.entries)
CAFTX_INSPECT(create_partitions_request, x.name, x.count, x.assignments, x.validate_only,
              x.timeout_ms)
CAFTX_INSPECT_EMPTY(kafka_cluster_request)
CAFTX_INSPECT(kafka_coordinator_request, x.key_type, x.key)
CAFTX_INSPECT(kafka_coordinator_response, x.error, x.message, x.partition, x.node_id, x.host,
              x.port)
CAFTX_INSPECT(kafka_broker_info, x.node_id, x.host, x.port, x.rack)
CAFTX_INSPECT(kafka_cluster_response, x.brokers, x.controller_id, x.cluster_id)
CAFTX_INSPECT(partition_description, x.partition, x.leader, x.leader_epoch, x.replicas, x.isr)
CAFTX_INSPECT(topic_description, x.name, x.error, x.internal, x.partitions)
CAFTX_INSPECT(describe_topics_request, x.topics)
CAFTX_INSPECT(describe_topics_response, x.topics)
CAFTX_INSPECT(topic_metadata, x.name, x.error, x.partitions)
CAFTX_INSPECT(metadata_request, x.topics)
CAFTX_INSPECT(metadata_response, x.topics)
CAFTX_INSPECT(find_coordinator_request, x.key_type, x.key)
CAFTX_INSPECT(find_coordinator_response, x.error, x.message, x.partition, x.coordinator)
CAFTX_INSPECT(node_fetch_request, x.partitions, x.max_wait_ms, x.min_bytes, x.max_bytes)
CAFTX_INSPECT(node_fetch_response, x.partitions)
CAFTX_INSPECT(cluster_hello_request, x.role, x.cluster_id, x.node_id, x.build)
CAFTX_INSPECT(cluster_hello_response, x.error, x.message, x.cluster_id, x.node_id,
              x.advertised_listener, x.build)
CAFTX_INSPECT(partition_handle, x.tp, x.leader_epoch, x.leader, x.coordinator)
CAFTX_INSPECT(node_handles_request, x.partitions)
CAFTX_INSPECT(node_handles_response, x.node_id, x.handles)
CAFTX_INSPECT(cluster_nodes_response, x.endpoints)
CAFTX_INSPECT_EMPTY(cluster_nodes_request)
CAFTX_INSPECT(drill_network_request, x.heal, x.peers, x.zookeeper, x.one_way)
CAFTX_INSPECT(drill_network_response, x.error, x.message, x.cut_peers, x.zookeeper_cut)
CAFTX_INSPECT(drill_fault_request, x.point, x.topic, x.partition, x.control_only, x.kill_node,
              x.disarm)
CAFTX_INSPECT(drill_fault_response, x.error, x.message, x.still_armed)

} // namespace caftx
