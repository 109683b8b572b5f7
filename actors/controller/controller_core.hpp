// The controller's decisions, after Kafka's ZooKeeper-mode KafkaController
// with its PartitionStateMachine and ReplicaStateMachine
// (docs/controller.md). Pure: no CAF, no clock, no store. Each event
// returns a controller_decision: store writes to perform (each fenced by
// check(/controller_epoch, epoch_version)), partition states to re-read,
// requests to send, replies. Memory changes only once a write is answered
// ok (prepare -> persist -> complete), and the LeaderAndIsr and
// UpdateMetadata requests of an event go out only after all of its writes
// are answered.
//
// Shell contract:
// - perform every write of a decision, answer each with on_write_result();
// - read partition_state_path(tp) for each reread, answer with on_state_read();
// - send `requests` in order, each to its target node;
// - once `resigned`, stop: the core decides nothing more (it answers
//   NOT_CONTROLLER to requests) and the shell drops its /controller
//   watch-state and re-enters the election.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/controller_model.hpp"
#include "runtime/status.hpp"

namespace caftx::controller {

/// Why `name` is not a topic name, with Kafka's messages (Topic.validate:
/// 1-249 characters of [a-zA-Z0-9._-], not "." or ".."); nullopt when it is one.
std::optional<std::string> invalid_topic_name(const std::string& name);

/// The whole cluster state as read by a new controller (Kafka's
/// initializeControllerContext): live nodes, topics, partition states
/// (partition_epoch = the state znode's version).
struct cluster_snapshot {
  std::vector<live_node> live_nodes;
  std::vector<topic_assignment> topics;
  std::map<topic_partition, partition_state> states;
  /// The children of /delete_topics: topics whose deletion a controller
  /// started (Kafka's topicsToBeDeleted read at failover).
  std::set<std::string> deleting;
};

/// CreateTopics for one topic. start_index and next_replica_shift are the
/// values Kafka's AdminUtils draws at random (replica_assignment.hpp).
struct create_topic_request {
  std::string name;
  int32_t partitions = 1;
  int32_t replication_factor = 1;
  std::map<std::string, std::string> configs;
  int32_t start_index = 0;
  int32_t next_replica_shift = 0;
};

/// The answer to a create_topic_request.
struct create_topic_result {
  std::string name;
  status result;
};

/// The answer to DeleteTopics for one topic, given once the topic is gone
/// (or the request failed).
using delete_topic_result = create_topic_result;

/// CreatePartitions for one topic (Kafka's CreatePartitionsTopic, KIP-195):
/// grow it to `count` partitions in all.
struct create_partitions_request {
  std::string name;
  int32_t count = 0;
  /// The replicas of each new partition, the first one first (Kafka's
  /// CreatePartitionsAssignment); empty: placed as Kafka's AdminUtils
  /// places them.
  std::vector<std::vector<node_id>> assignments;
  /// Only the checks and the placement; nothing is written.
  bool validate_only = false;
};

/// The answer to a create_partitions_request, given once the new
/// partitions' znodes are written (or the request failed).
using create_partitions_result = create_topic_result;

/// The answer to ControlledShutdown (Kafka's ControlledShutdownResponse):
/// the partitions of replication factor > 1 the node still leads; the node
/// retries until none remain.
struct controlled_shutdown_result {
  node_id node = -1;
  status result;
  std::vector<topic_partition> remaining;
};

/// AlterIsr for one partition (KIP-497): `node` at `node_epoch`, leading
/// `tp` at `leader_epoch`, proposes `isr` based on `partition_epoch`.
struct alter_isr_proposal {
  node_id node = -1;
  int64_t node_epoch = -1;
  topic_partition tp;
  int32_t leader_epoch = -1;
  std::vector<node_id> isr;
  int32_t partition_epoch = -1;
  /// The shell's handle for the answer, carried into alter_isr_result.
  uint64_t request = 0;
};

/// The answer to an alter_isr_proposal: ok with the state as written (or
/// as it already was), or the error.
struct alter_isr_result {
  node_id node = -1;
  topic_partition tp;
  status result;
  partition_state state;
  uint64_t request = 0; ///< the proposal's
};

/// What the shell does after an event.
struct controller_decision {
  std::vector<store_write> writes;
  std::vector<topic_partition> rereads;
  std::vector<outbound_request> requests;
  std::vector<create_topic_result> created_topics;
  std::vector<delete_topic_result> deleted_topics;
  /// CreatePartitions answers, per topic in the order the requests came.
  std::vector<create_partitions_result> created_partitions;
  std::vector<controlled_shutdown_result> shutdowns;
  std::vector<alter_isr_result> isr_changes;
  bool resigned = false;
  /// Why, when resigned: a newer controller wrote (empty), or the reason.
  std::string resigned_because;
};

class controller_core {
public:
  /// The core of the controller `me` won the election as (controller_election.hpp).
  explicit controller_core(controller_identity me) : me_(me) {}

  /// Kafka's onControllerFailover over the state read from the store: a
  /// state written by a newer controller resigns at once. Else
  /// UpdateMetadata (all partitions, all live nodes) to every live node
  /// first; then every partition without a live leader gets an offline
  /// election and every dead ISR member is removed; once written,
  /// LeaderAndIsr for all partitions to every live replica.
  controller_decision on_become_controller(cluster_snapshot snapshot);

  /// The children of /nodes changed (Kafka's processBrokerChange): `nodes`
  /// is the full live set. A missing id failed; a new id started; an id
  /// with another node_epoch BOUNCED (handled as failure, then startup).
  /// Failed and bounced nodes lose their leaderships (offline election from
  /// ISR ∩ live in assignment order) and leave every ISR (never emptying
  /// one); started nodes get UpdateMetadata with all partitions at once,
  /// then LeaderAndIsr for all their partitions, and offline partitions
  /// whose ISR holds them are elected.
  controller_decision on_nodes_changed(const std::vector<live_node>& nodes);

  /// CreateTopics (Kafka's AdminZkClient.createTopic then
  /// onNewPartitionCreation): replicas assigned over the live nodes, one
  /// fenced multi creating /topics/<t> and every /topics/<t>/<p>/state
  /// (leader = first replica, ISR = all replicas, leader_epoch 0); then
  /// LeaderAndIsr (is_new) to the replicas and UpdateMetadata to all.
  /// Errors: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION (a name Kafka's
  /// Topic.validate refuses), INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR
  /// (replica_assignment.hpp), NOT_CONTROLLER once resigned, REQUEST_TIMED_OUT
  /// when the store's answer is unknown.
  controller_decision create_topic(const create_topic_request& req);

  /// DeleteTopics for one topic (Kafka's TopicDeletionManager in ZooKeeper
  /// mode). A fenced create of /delete_topics/<t> marks it; once written,
  /// UpdateMetadata with leader_during_delete for its partitions goes to
  /// every live node (their metadata caches drop the topic: clients see
  /// it gone) and StopReplica with delete (leader epoch -2, KIP-570) to
  /// every live replica. A replica on a node that is down gets it when the
  /// node starts again: until every replica confirmed (on_replicas_deleted)
  /// the deletion waits, as Kafka's does for an offline replica. Then one
  /// fenced multi removes the state znodes, /topics/<t> and the marker,
  /// and the answer is ok. While marked, the topic's partitions get no
  /// elections, no LeaderAndIsr, no ISR changes, and a CreateTopics of the
  /// name is TOPIC_ALREADY_EXISTS "Topic 't' is marked for deletion.". A
  /// second DeleteTopics of a marked topic is answered with the first one
  /// (nothing returned now). Errors: UNKNOWN_TOPIC_OR_PARTITION,
  /// INVALID_TOPIC_EXCEPTION for __transaction_state and
  /// __consumer_offsets (the coordinators live on them), NOT_CONTROLLER,
  /// REQUEST_TIMED_OUT when the store's answer to a write is unknown (the
  /// controller then resigns and the next one reads the marker, if it was
  /// written, and resumes).
  controller_decision delete_topic(const std::string& name);

  /// CreatePartitions (Kafka's ZkAdminManager.createPartitions and
  /// AdminZkClient.addPartitions, then the controller's
  /// onNewPartitionCreation for the new partitions): one fenced multi sets
  /// /topics/<t> to the grown assignment and creates each new
  /// /topics/<t>/<p>/state (leader = first replica, ISR = all replicas,
  /// leader_epoch 0); once written, LeaderAndIsr (is_new) to their replicas
  /// and UpdateMetadata to all live nodes. The partitions that were there
  /// are not touched. New partitions take partition 0's replication factor
  /// and are placed over the live nodes as AdminUtils places them, from
  /// partition `old count` on, start index and replica shift both the
  /// position of partition 0's first replica among the sorted live nodes
  /// (AdminZkClient.createNewPartitionsAssignment), unless `assignments`
  /// gives them. Checks, in Kafka's order: NOT_CONTROLLER;
  /// INVALID_TOPIC_EXCEPTION "The topic is queued for deletion.";
  /// UNKNOWN_TOPIC_OR_PARTITION "The topic 't' does not exist.";
  /// INVALID_PARTITIONS "Topic currently has 3 partitions, which is higher
  /// than the requested 2." or "Topic already has 3 partitions.";
  /// INVALID_REPLICA_ASSIGNMENT for a node that is not live ("Unknown
  /// broker(s) in replica assignment: 7."), another number of assignments
  /// than new partitions, an empty one, a node named twice, or a
  /// replication factor other than partition 0's; INVALID_REPLICATION_FACTOR
  /// when partition 0 has more replicas than there are live nodes. Beyond
  /// Kafka: __transaction_state and __consumer_offsets are refused with
  /// INVALID_TOPIC_EXCEPTION, since their partition count places every
  /// transactional id and group on its coordinator (Kafka allows it and
  /// its coordinators then look for their state in the wrong partition).
  /// `validate_only`: the checks and the placement only, answered ok.
  /// A topic's CreatePartitions and DeleteTopics are decided one at a time
  /// in arrival order: one that comes while partitions are being added to
  /// the topic waits for that write's outcome (Kafka's controller decides
  /// its events one at a time); the grow's own ISR writes (a new replica
  /// that died meanwhile) are part of it. REQUEST_TIMED_OUT when the
  /// store's answer is unknown (the controller then resigns, as for
  /// create_topic) or when the controller resigns with the write in flight:
  /// the partitions may exist, and NOT_CONTROLLER would have the caller
  /// send it again and be told they do.
  controller_decision create_partitions(const create_partitions_request& req);

  /// `node` deleted its replicas of `results` whose error is NONE (Kafka's
  /// StopReplica response of a deletion); the others stay awaited and get
  /// StopReplica again from retry_topic_deletions().
  controller_decision on_replicas_deleted(node_id node,
                                          const std::vector<std::pair<topic_partition, error_code>>& results);

  /// StopReplica with delete again to every live node with a replica of a
  /// marked topic that it has not confirmed (a request or its answer may
  /// be lost with a connection). The shell calls it periodically while
  /// deletions_pending().
  controller_decision retry_topic_deletions();
  bool deletions_pending() const { return !deleting_.empty(); }
  /// Whether `topic` is marked for deletion.
  bool deleting(const std::string& topic) const;

  /// ControlledShutdown of `node` at `node_epoch` (Kafka's
  /// doControlledShutdown): the node counts as shutting down (no longer
  /// eligible as leader); its leaderships of replication factor > 1 move to
  /// the first live ISR member not shutting down (new ISR without
  /// shutting-down nodes); it gets StopReplica (delete=false) for the
  /// partitions it follows and leaves their ISRs. The reply lists what it
  /// still leads. Errors: BROKER_NOT_AVAILABLE "Broker id N does not
  /// exist.", STALE_BROKER_EPOCH for an older node_epoch, NOT_CONTROLLER.
  /// StopReplica goes out once the ISR removals are written, carrying the
  /// partitions' leader epochs after them.
  controller_decision controlled_shutdown(node_id node, int64_t node_epoch);

  /// AlterIsr (Kafka's KafkaController.processAlterIsr): checks, in this
  /// order, NOT_CONTROLLER, STALE_BROKER_EPOCH (not the node's current
  /// registration), UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (it
  /// does not lead the partition), FENCED_LEADER_EPOCH (another leader
  /// epoch), INVALID_REQUEST (the ISR lacks the leader or names a node
  /// outside the replicas), INELIGIBLE_REPLICA (it adds a node that is not
  /// live or shuts down); the same ISR as now is answered ok at once;
  /// another partition epoch is INVALID_UPDATE_VERSION. Else one fenced
  /// write of the state at that version with the new ISR, the leader and
  /// its epoch unchanged; once written the answer and UpdateMetadata to
  /// every live node (no LeaderAndIsr: the leader knows, the followers do
  /// not need it). A proposal for a partition with a write of this
  /// controller in flight waits for that write's outcome and is decided
  /// on the state after it (Kafka's controller decides its events one at a
  /// time, each write answered before the next event): answered from the
  /// state before it, a restarted leader's confirmation of the older ISR
  /// would be taken while an expand it did not know of was being written.
  controller_decision alter_isr(const alter_isr_proposal& p);

  /// Preferred replica election (Kafka's onReplicaElection with
  /// PreferredReplicaPartitionLeaderElectionStrategy): each partition of
  /// `which` (every partition when empty) whose first assigned replica is
  /// eligible (live, not shutting down), in the ISR and not its leader gets
  /// it as leader at leader epoch + 1, the ISR unchanged; once written,
  /// LeaderAndIsr to its live replicas and UpdateMetadata to every live
  /// node. A partition already led by its preferred replica, or whose
  /// preferred replica cannot lead, is left as it is (Kafka answers
  /// ELECTION_NOT_NEEDED and PREFERRED_LEADER_NOT_AVAILABLE for them).
  /// Returns nothing once resigned.
  controller_decision elect_preferred_leaders(const std::vector<topic_partition>& which);

  /// Kafka's ElectLeaders (KIP-460, election type PREFERRED) answers for
  /// `which` (every partition when empty), as the controller holds them
  /// now: NONE (elect_preferred_leaders will move it), ELECTION_NOT_NEEDED
  /// (its preferred replica leads), PREFERRED_LEADER_NOT_AVAILABLE (the
  /// preferred replica is not live, shuts down or is out of the ISR),
  /// UNKNOWN_TOPIC_OR_PARTITION; NOT_CONTROLLER for all once resigned.
  std::vector<std::pair<topic_partition, status>>
  preferred_election_check(const std::vector<topic_partition>& which) const;

  /// The partitions an automatic rebalance would elect now (Kafka's
  /// checkAndTriggerAutoLeaderRebalance): for each live node, the
  /// partitions whose preferred replica it is; if the share of them that
  /// another node leads is above `imbalance_percent` / 100
  /// (leader.imbalance.per.broker.percentage), those of them it can lead
  /// (eligible, in the ISR). None while a node shuts down.
  std::vector<topic_partition> imbalanced_partitions(int32_t imbalance_percent) const;

  /// The fenced create of /cluster_id holding `id` (drawn by the shell),
  /// written by the first controller; NODEEXISTS means another controller
  /// created it, read it instead (Kafka's KafkaZkClient.getOrCreateClusterId).
  store_write create_cluster_id(const std::string& id);

  /// The answer to one of our writes. ok: the state is taken (partition
  /// epoch = the new version). BADVERSION on the epoch check (ops[0]):
  /// another controller exists, resign. BADVERSION on a state znode, or a
  /// connection loss: reread that partition.
  controller_decision on_write_result(const write_result& r);

  /// A partition state re-read after a failed write (`data` nullopt: the
  /// znode is gone, the partition is dropped from the event). Written by a
  /// newer controller: resign. Equal to what we wrote (our write succeeded
  /// before a connection loss): taken. Else the event's change is decided
  /// again on the new state.
  controller_decision on_state_read(const topic_partition& tp, const std::optional<std::string>& data,
                                    int32_t version);

  bool resigned() const { return resigned_; }
  const controller_identity& identity() const { return me_; }
  /// The state as last written or read, or nullptr.
  const partition_state* state(const topic_partition& tp) const;
  const topic_assignment* topic(const std::string& name) const;
  const std::map<node_id, live_node>& live_nodes() const { return live_; }
  const std::set<node_id>& shutting_down() const { return shutting_down_; }

private:
  /// What an event wants for one partition: these nodes leave the ISR and
  /// the leadership.
  struct intent {
    std::set<node_id> remove;
    /// AlterIsr: this ISR, if the state is still at `expected_partition_epoch`.
    std::optional<std::vector<node_id>> set_isr;
    int32_t expected_partition_epoch = -1;
    /// Preferred replica election: the first assigned replica leads, if
    /// it can.
    bool preferred = false;
  };

  /// One event's writes and what to send once all are answered.
  struct batch {
    std::set<topic_partition> pending;
    std::map<topic_partition, intent> intents;
    std::set<topic_partition> changed;
    std::set<topic_partition> created;
    std::set<node_id> full_leader_and_isr; // started nodes: all their partitions
    std::map<node_id, std::set<topic_partition>> stopped;
    bool topic_write_pending = false;
    std::optional<create_topic_result> topic_reply;
    std::optional<topic_assignment> new_topic;
    /// new_topic grows a topic of this many partitions (CreatePartitions);
    /// 0: new_topic is a new topic.
    int32_t grown_from = 0;
    std::optional<node_id> shutdown_of;
    std::optional<alter_isr_result> isr_reply; // AlterIsr: UpdateMetadata only
  };

  struct pending_write {
    uint64_t batch = 0;
    std::optional<topic_partition> tp; // a state write, else the topic create
    partition_state proposed;
  };

  bool eligible(node_id n) const;
  const std::vector<node_id>& replicas(const topic_partition& tp) const;
  std::optional<partition_state> decide(const topic_partition& tp, const intent& in) const;
  /// Decides `tp` in batch `b`: a write, or nothing to do.
  void plan(uint64_t b, const topic_partition& tp, controller_decision& out);
  /// Plans every partition of batch `b`'s intents, then finishes it if
  /// nothing is left to write.
  void plan_batch(uint64_t b, controller_decision& out);
  store_write fenced(std::vector<store_op> ops);
  uint64_t open_batch();
  void maybe_finish(uint64_t b, controller_decision& out);
  partition_info info(const topic_partition& tp, bool is_new) const;
  void update_metadata(node_id target, std::vector<partition_info> parts,
                       controller_decision& out) const;
  controller_decision resign(controller_decision out);
  /// A write of some batch for `tp` is in flight (or being re-read).
  bool write_in_flight(const topic_partition& tp) const;
  /// Decides the waiting AlterIsr proposals whose partition has no write
  /// in flight any more, one per partition at a time.
  void release_deferred(controller_decision& out);
  controller_decision write_answered(const write_result& r);
  controller_decision state_read(const topic_partition& tp, const std::optional<std::string>& data,
                                 int32_t version);
  /// A topic deletion: the marker written, the replicas not yet confirmed,
  /// the final removal in flight.
  struct deletion {
    bool marked = false;
    bool removing = false;
    std::set<std::pair<node_id, int32_t>> awaiting; // (replica, partition)
    std::vector<store_op> removal; // the removes of the final write
  };
  /// The marker is written: UpdateMetadata and StopReplica go out.
  void start_deletion(const std::string& name, controller_decision& out);
  /// StopReplica with delete for the replicas of marked topics on `target`
  /// that it has not confirmed.
  void stop_deleted_replicas(node_id target, controller_decision& out) const;
  /// Every replica confirmed: the znodes are removed.
  void maybe_remove_topic(const std::string& name, controller_decision& out);
  controller_decision deletion_write_answered(const std::string& name, const write_result& r);
  /// create_partitions and delete_topic once no partitions are being added
  /// to the topic.
  void grow_topic(const create_partitions_request& req, controller_decision& out);
  void begin_deletion(const std::string& name, controller_decision& out);
  /// The fenced multi writing topic `t` (created, or grown from
  /// `grown_from` partitions) with the states of its new partitions.
  void write_topic(topic_assignment t, int32_t grown_from, controller_decision& out);
  /// Partitions of `name` are written: decides the requests for it that
  /// waited, until one of them writes partitions again.
  void release_topic_queue(const std::string& name, controller_decision& out);
  /// A request that waits for the partitions being added to its topic:
  /// a CreatePartitions, or a DeleteTopics when `grow` is empty.
  struct queued_topic_request {
    std::optional<create_partitions_request> grow;
  };

  controller_identity me_;
  bool resigned_ = false;
  std::map<node_id, live_node> live_;
  std::set<node_id> shutting_down_;
  std::map<std::string, topic_assignment> topics_;
  std::map<topic_partition, partition_state> states_;
  uint64_t next_write_id_ = 1;
  uint64_t next_batch_id_ = 1;
  std::map<uint64_t, batch> batches_;
  std::map<uint64_t, pending_write> writes_;
  std::multimap<topic_partition, std::pair<uint64_t, partition_state>> rereads_; // batch, proposed
  std::multimap<topic_partition, alter_isr_proposal> deferred_isr_; // in arrival order per partition
  std::map<std::string, deletion> deleting_;
  std::map<uint64_t, std::string> deletion_writes_; // write id -> topic
  std::set<std::string> growing_; // topics with new partitions being written
  std::map<std::string, std::deque<queued_topic_request>> topic_queue_;
};

} // namespace caftx::controller
