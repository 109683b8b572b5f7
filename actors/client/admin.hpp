// Admin calls for embedding applications and tools (Kafka's Admin client,
// and the kafka-transactions.sh commands of KIP-664): blocking, usable from
// any plain C++ thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/client/admin_core.hpp"
#include "config/config.hpp"
#include "runtime/messages.hpp"
#include "runtime/status.hpp"

namespace caftx {

namespace detail {
class client_channel;
class remote_cluster;
} // namespace detail

/// CreateTopics for one topic through `broker`, with its configs
/// (retention.ms, retention.bytes). Errors: INVALID_CONFIG, TOPIC_ALREADY_EXISTS,
/// INVALID_PARTITIONS (count outside [1, 10000]), INVALID_REQUEST (name),
/// REQUEST_TIMED_OUT (no reply within `timeout`).
status create_topic(caf::actor_system& sys, const caf::actor& broker, const std::string& name,
                    int32_t partitions, const std::map<std::string, std::string>& configs = {},
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

/// DeleteTopics for one topic through `broker` (admin_client::delete_topic).
status delete_topic(caf::actor_system& sys, const caf::actor& broker, const std::string& name,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

/// DescribeTransactions (KIP-664) for one transactional id; see
/// admin_client::describe_transaction.
status_or<describe_transaction_response>
describe_transaction(caf::actor_system& sys, const caf::actor& broker,
                     const std::string& transactional_id,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

/// Options of an admin_client.
struct admin_options {
  /// How long each request waits for its reply; REQUEST_TIMED_OUT after it.
  std::chrono::milliseconds request_timeout{30000};
  /// Wall-clock milliseconds, compared with producers' last timestamps by
  /// find-hanging; nullptr means std::chrono::system_clock.
  std::function<int64_t()> clock_ms;
  /// Under CAF's deterministic test scheduler: runs the scheduler after
  /// each request is sent. Leave empty otherwise.
  std::function<void()> after_send;
};

/// Kafka's Admin calls for transactions (KIP-664, docs/transactions.md §Admin) against
/// one node, through its broker. Errors of a call are Kafka's; a request
/// without reply is REQUEST_TIMED_OUT, or NOT_COORDINATOR if its receiver
/// is gone. Owns a scoped actor: use one instance per thread.
class admin_client {
public:
  admin_client(caf::actor_system& sys, caf::actor broker, admin_options opts = {});
  /// An admin client in a process of its own (Kafka's Admin.create(Properties)):
  /// `bootstrap.servers`, the connection keys of producer's properties-only
  /// constructor, and `request.timeout.ms` (admin_options::request_timeout).
  /// Throws kafka_exception(INVALID_CONFIG, fatal) for another key or a bad value.
  explicit admin_client(const properties& props);
  ~admin_client();
  admin_client(const admin_client&) = delete;
  admin_client& operator=(const admin_client&) = delete;

  /// ListTransactions over every coordinator shard of the node: rows
  /// (transactional id, producer id, state name) sorted by id that pass
  /// `filter` (see txn_coordinator_core::list_transactions: Dead is never
  /// listed; unknown state names come back in unknown_state_filters; Empty
  /// ids pass every duration filter, as in Kafka). Errors:
  /// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
  status_or<list_transactions_response> list_transactions(const list_transactions_filter& filter = {});

  /// DescribeTransactions for one id at its coordinator: state name,
  /// producer id and epoch, transaction timeout, start time (-1 in Empty),
  /// partitions, coordinator epoch. Errors: INVALID_REQUEST (""),
  /// TRANSACTIONAL_ID_NOT_FOUND (105), COORDINATOR_LOAD_IN_PROGRESS,
  /// COORDINATOR_NOT_AVAILABLE.
  status_or<describe_transaction_response> describe_transaction(const std::string& transactional_id);

  /// CreateTopics for one topic with its configs and `replication_factor`
  /// replicas per partition (-1: the node's default.replication.factor);
  /// see caftx::create_topic above, and INVALID_REPLICATION_FACTOR for more
  /// replicas than live nodes (REQUEST_TIMED_OUT after request_timeout).
  status create_topic(const std::string& name, int32_t partitions,
                      const std::map<std::string, std::string>& configs = {},
                      int32_t replication_factor = -1);

  /// DeleteTopics for one topic (Kafka's Admin.deleteTopics): ok once every
  /// replica deleted its data and the topic is gone from the cluster; its
  /// open transactions complete without it. Errors: UNKNOWN_TOPIC_OR_PARTITION,
  /// INVALID_REQUEST (a bad name; __transaction_state, __consumer_offsets),
  /// TOPIC_DELETION_DISABLED (delete.topic.enable=false), REQUEST_TIMED_OUT
  /// (the topic stays marked for deletion, e.g. while a replica's node is
  /// down, and is deleted once it is back; a CreateTopics of the name
  /// meanwhile gets TOPIC_ALREADY_EXISTS).
  status delete_topic(const std::string& name);

  /// CreatePartitions for one topic (Kafka's Admin.createPartitions with
  /// NewPartitions.increaseTo, KIP-195): `count` partitions in all, the new
  /// ones placed by the controller, or on `assignments` (one list of node
  /// ids per new partition, the first of each leads). Ok once the new
  /// partitions have leaders at the connected node. Records with a key may
  /// hash to another partition afterwards, as in Kafka. `validate_only`:
  /// only the checks. Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS
  /// (not more than now, or above 10000), INVALID_REPLICA_ASSIGNMENT,
  /// INVALID_REPLICATION_FACTOR (fewer live nodes than partition 0's
  /// replicas), INVALID_TOPIC_EXCEPTION (the topic is queued for deletion,
  /// or is __transaction_state or __consumer_offsets), REQUEST_TIMED_OUT.
  status create_partitions(const std::string& name, int32_t count,
                           const std::vector<std::vector<int32_t>>& assignments = {},
                           bool validate_only = false);

  /// DescribeTopics: leader, leader epoch, replicas and ISR of every
  /// partition of `topics` (every topic, internal ones included, when
  /// empty) as the connected node's metadata cache holds them (see
  /// describe_topics_request). An unknown topic comes back with
  /// UNKNOWN_TOPIC_OR_PARTITION in its entry; the call fails only when the
  /// node does not answer (REQUEST_TIMED_OUT).
  status_or<std::vector<topic_description>> describe_topics(const std::vector<std::string>& topics = {});

  /// Every committed offset of consumer group `group_id` (Kafka's
  /// Admin.listConsumerGroupOffsets: OffsetFetch of all partitions at the
  /// group's coordinator), by partition; empty for a group without one.
  /// Errors: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
  /// NOT_COORDINATOR, INVALID_REQUEST (an empty group id).
  status_or<std::map<topic_partition, int64_t>> list_group_offsets(const std::string& group_id);

  /// DescribeProducers for one partition at its leader: every producer with
  /// state there, by producer id. Errors: UNKNOWN_TOPIC_OR_PARTITION.
  status_or<std::vector<active_producer>> describe_producers(const topic_partition& tp);

  /// One Fetch of `tp` at its leader, answered at once (max wait 0), for
  /// tools that judge the log itself (caftx-drill's history checker): the
  /// whole batches from `offset` on as stored, with the leader's high
  /// watermark, last stable offset and, for read_committed, its aborted
  /// transactions. Kafka's Admin has no counterpart; a consumer filters
  /// the same answer (read_committed_filter.hpp). Errors: the fetch's own
  /// (OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER, ...),
  /// UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT.
  status_or<fetch_response> fetch(const topic_partition& tp, int64_t offset,
                                  isolation_level isolation, int32_t max_bytes = 1 << 20);

  /// DeleteRecords (KIP-107, kafka-delete-records.sh) for one partition:
  /// its log starts at `offset` from now on (-1: the high watermark);
  /// fetches below get OFFSET_OUT_OF_RANGE and consumers apply
  /// auto.offset.reset. Returns the low watermark (the log start offset
  /// after the request). Errors: OFFSET_OUT_OF_RANGE (offset above the
  /// high watermark or below -1), UNKNOWN_TOPIC_OR_PARTITION.
  status_or<int64_t> delete_records(const topic_partition& tp, int64_t offset);

  /// kafka-transactions.sh find-hanging over every partition of `topics`
  /// (all topics if empty): DescribeProducers per partition gives the
  /// candidates (open transaction, no write for more than
  /// `max_transaction_timeout_ms`), ListTransactions filtered by their
  /// producer ids maps them to transactional ids, DescribeTransactions
  /// gives each id's partitions; see filter_hanging for the verdict. As
  /// Kafka's tool, only TRANSACTIONAL_ID_NOT_FOUND from DescribeTransactions
  /// makes a candidate hanging; any other error fails the call (a loading
  /// coordinator proves nothing). Errors: UNKNOWN_TOPIC_OR_PARTITION (a
  /// named topic does not exist), and those of the three APIs.
  status_or<std::vector<hanging_transaction>>
  find_hanging_transactions(const std::vector<std::string>& topics = {},
                            int64_t max_transaction_timeout_ms = default_max_transaction_timeout_ms);

  /// kafka-transactions.sh abort (Admin.abortTransaction): aborts the open
  /// transaction that starts at `start_offset` of `tp` with a
  /// WriteTxnMarkers(ABORT) sent straight to the partition leader, built by
  /// abort_marker_request from DescribeProducers. Errors:
  /// UNKNOWN_TOPIC_OR_PARTITION; INVALID_REQUEST if no open transaction
  /// starts at `start_offset`; INVALID_PRODUCER_EPOCH or
  /// TRANSACTION_COORDINATOR_FENCED if the producer moved on meanwhile.
  status abort_transaction(const topic_partition& tp, int64_t start_offset);

  /// The same for a transaction named by its producer (Kafka's
  /// AbortTransactionSpec, kafka-transactions.sh abort --producer-id
  /// --producer-epoch --coordinator-epoch): WriteTxnMarkers(ABORT) with
  /// that producer id and epoch and `coordinator_epoch` (-1 taken as 0).
  /// Errors: UNKNOWN_TOPIC_OR_PARTITION; INVALID_PRODUCER_EPOCH (another
  /// epoch of that producer is current there); TRANSACTION_COORDINATOR_FENCED
  /// (a marker of a newer coordinator epoch was written).
  status abort_transaction(const topic_partition& tp, producer_id pid, producer_epoch epoch,
                           int32_t coordinator_epoch);

  /// ElectLeaders (KIP-460, kafka-leader-election.sh --election-type
  /// preferred) for `partitions` (every partition when empty), through the
  /// controller: one answer per partition (see elect_leaders_result:
  /// NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
  /// UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER). Errors of the call:
  /// REQUEST_TIMED_OUT.
  status_or<std::vector<elect_leaders_result>>
  elect_preferred_leaders(const std::vector<topic_partition>& partitions = {});

  /// The node.id of the node this client is connected to (the node the
  /// relay forwards to now). Errors: REQUEST_TIMED_OUT.
  status_or<int32_t> node_id();

  /// caftx's drill hook (docs/node.md §Drill hook) on the node this client
  /// is connected to (give bootstrap.servers that one node): cut it off
  /// from peers and/or ZooKeeper, or heal; see drill_network_request.
  /// Returns the node's cuts after the request. Errors: INVALID_REQUEST
  /// (drills off on the node: caftx.drills.enable=false; a bad peer id;
  /// ZooKeeper on a node without it), REQUEST_TIMED_OUT.
  status_or<drill_network_response> drill_network(const drill_network_request& req);

  /// caftx's fault drill on the node this client is connected to: arms a
  /// fault point once (see drill_fault_request). Errors: INVALID_REQUEST
  /// (drills off, no fault drills on that node, a build without fault
  /// points, an unknown point), REQUEST_TIMED_OUT.
  status drill_fault(const drill_fault_request& req);
  /// Takes back the fault drill armed at `point` on that node: true if it
  /// was still armed (never hit). Errors: those of drill_fault.
  status_or<bool> disarm_fault(const std::string& point);

private:
  // Partition leaders of `topics` (all if empty), from the metadata of all
  // topics, so that no topic is auto-created by a lookup.
  status_or<std::vector<std::pair<topic_partition, partition_actor>>>
  leaders(const std::vector<std::string>& topics);
  status_or<partition_actor> leader_of(const topic_partition& tp);
  status_or<std::vector<active_producer>> describe_producers_at(const partition_actor& leader,
                                                                const topic_partition& tp);

  // Declared first: destroyed after ch_.
  std::shared_ptr<detail::remote_cluster> cluster_;
  std::unique_ptr<detail::client_channel> ch_;
  admin_options opts_;
};

/// The WriteTxnMarkers(ABORT) of an admin abort (docs/transactions.md §Admin) for the
/// open transaction of `producer` on `tp`: that producer's id and epoch,
/// its coordinator epoch with -1 (no marker seen) replaced by 0, result
/// ABORT.
write_txn_marker_request abort_marker_request(const topic_partition& tp,
                                              const active_producer& producer);

} // namespace caftx
