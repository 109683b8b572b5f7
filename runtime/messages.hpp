// The typed messages actors exchange, named after Kafka's APIs, with their
// CAF inspectors. Every message is registered by register_message_types()
// under a fixed name, so the same messages can cross the CAF middleman.
// Responses carry Kafka error codes; CAF errors only mean "no reply"
// (timeout, actor down).
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/error_code.hpp"
#include "runtime/group_offsets.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/transaction_admin.hpp"

namespace caftx {

// -- admin and metadata --------------------------------------------------------

/// CreateTopics for one topic. Errors: TOPIC_ALREADY_EXISTS,
/// INVALID_PARTITIONS (count outside [1, 10000]), INVALID_REQUEST (bad name).
struct create_topic_request {
  std::string name;
  int32_t partitions = 1;
  /// CreateTopics configs (retention.ms, retention.bytes, ...).
  std::map<std::string, std::string> configs;
};

/// Metadata of one topic: one partition leader handle per partition.
struct topic_metadata {
  std::string name;
  error_code error = error_code::none;
  std::vector<caf::actor> partitions;
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

// -- transaction coordinator -------------------------------------------------

/// InitProducerId (docs/transactions.md §InitProducerId). has_transactional_id = false asks for
/// a producer id for an idempotent producer.
struct init_producer_id_request {
  bool has_transactional_id = false;
  std::string transactional_id;
  int32_t transaction_timeout_ms = 60000;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

struct init_producer_id_response {
  error_code error = error_code::none;
  std::string message;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// AddPartitionsToTxn (docs/transactions.md §AddPartitionsToTxn; verify_only: §Verification). With `verify_only` (KIP-890
/// part 1, sent by a partition leader or group coordinator before the first
/// transactional write of a producer there) nothing is added: the reply is
/// NONE if every partition is in the producer's ongoing transaction,
/// TRANSACTION_ABORTABLE if one is not, INVALID_PRODUCER_ID_MAPPING,
/// PRODUCER_FENCED or CONCURRENT_TRANSACTIONS (Prepare*) otherwise.
struct add_partitions_to_txn_request {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
  bool verify_only = false;
};

/// AddOffsetsToTxn (docs/transactions.md §AddOffsetsToTxn).
struct add_offsets_to_txn_request {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::string group_id;
};

/// EndTxn (docs/transactions.md §EndTxn).
struct end_txn_request {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  bool committed = false;
};

/// Reply of EndTxn (docs/transactions.md §EndTxn, KIP-890 part 2 / EndTxn v5): the
/// producer id and epoch the producer must use from now on; every ended
/// transaction bumps the epoch (or rotates the producer id when the epoch
/// is exhausted). -1/-1 on error.
struct end_txn_response {
  error_code error = error_code::none;
  std::string message;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// Reply of AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
/// OffsetCommit and WriteTxnMarkers: one error for the whole request.
struct txn_response {
  error_code error = error_code::none;
  std::string message;
};

/// DescribeTransactions (docs/transactions.md §Admin, KIP-664): the current card.
/// Errors: INVALID_REQUEST (""), TRANSACTIONAL_ID_NOT_FOUND (absent or
/// Dead), COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
struct describe_transaction_request {
  std::string transactional_id;
};

struct describe_transaction_response {
  error_code error = error_code::none;
  std::string state; // Kafka's state name, e.g. "CompleteCommit"
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
  int32_t coordinator_epoch = -1;
  int32_t transaction_timeout_ms = 0;
  int64_t transaction_start_ms = -1; // -1 while Empty
};

// -- partitions --------------------------------------------------------------

/// Produce of one batch to one partition (docs/producer-state.md §Produce).
struct produce_request {
  topic_partition tp;
  std::string transactional_id; // empty for non-transactional batches
  /// One RecordBatch v2 (runtime/record_batch_v2.hpp), as Kafka's
  /// ProduceRequest partition `records`: checked (CRC, framing) and stored
  /// as it is, with the base offset and leader epoch stamped.
  std::string records;
  /// A coordinator appending to its own `__transaction_state` /
  /// `__consumer_offsets` partition (Kafka's AppendOrigin.COORDINATOR):
  /// only such appends may write an internal topic; a client's gets
  /// INVALID_TOPIC_EXCEPTION.
  bool from_coordinator = false;
  /// The leader epoch the writer was elected with (become_leader_response);
  /// -1 for clients. Another current leader epoch gives
  /// FENCED_LEADER_EPOCH and nothing is appended, so a coordinator never
  /// completes a write of an epoch that is no longer its own (KAFKA-20634).
  int32_t leader_epoch = -1;
};

struct produce_response {
  error_code error = error_code::none;
  std::string message;
  int64_t base_offset = -1;
  int64_t log_start_offset = -1;
};

/// Fetch from one partition (docs/producer-state.md §Fetch).
struct fetch_request {
  topic_partition tp;
  int64_t fetch_offset = 0;
  int32_t max_bytes = 1048576;
  isolation_level isolation = isolation_level::read_uncommitted;
  /// fetch.max.wait.ms: with nothing to return, the leader holds the fetch
  /// until something becomes visible at `fetch_offset` (the high watermark
  /// or, read_committed, the last stable offset moves past it) or this
  /// many milliseconds passed, then answers (empty after the wait).
  /// 0: answer at once.
  int32_t max_wait_ms = 0;
};

struct fetch_response {
  error_code error = error_code::none;
  std::string message;
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t log_start_offset = -1;
  std::vector<aborted_transaction> aborted_transactions;
  /// Whole batches as stored, concatenated RecordBatch v2 bytes (Kafka's
  /// FetchResponse partition `records`); v2::decode_all reads them.
  std::string records;
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

/// ListOffsets: timestamp -1 = latest, -2 = earliest (docs/producer-state.md §ListOffsets).
struct list_offsets_request {
  topic_partition tp;
  int64_t timestamp = -1;
  isolation_level isolation = isolation_level::read_uncommitted;
};

struct list_offsets_response {
  error_code error = error_code::none;
  int64_t offset = -1;
};

/// DeleteRecords for one partition (KIP-107): the log starts at `offset`
/// from now on (-1: the high watermark).
struct delete_records_request {
  topic_partition tp;
  int64_t offset = -1;
};

struct delete_records_response {
  error_code error = error_code::none;
  std::string message;
  int64_t low_watermark = -1; // the log start offset after the request
};

/// To the partition of a coordinator (`__transaction_state-N`,
/// `__consumer_offsets-N`) when its coordinator starts: the partition
/// becomes leader again at the next leader epoch (one node stands in for
/// the controller's election, Kafka's Partition.makeLeader), recorded in
/// its leader-epoch checkpoint before the answer. The coordinator's epoch
/// is that leader epoch; it then reads the partition from its log start to
/// `log_end_offset`.
struct become_leader_request {};

struct become_leader_response {
  error_code error = error_code::none;
  std::string message;
  int32_t leader_epoch = -1;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
};

/// To a partition leader: apply the retention now (every
/// log.retention.check.interval.ms).
struct retention_tick {};

/// To a compacted partition leader: check whether to start a cleaning
/// round (every log.cleaner.backoff.ms, docs/compaction.md).
struct cleaner_tick {};

/// To a partition leader from itself: go on with the cleaning round
/// (one bounded step per message, so produce and fetch are served between).
struct cleaner_step {};

/// To a partition leader at a clean shutdown: write a producer-state
/// snapshot at the log end (if nothing is in flight), so the next start
/// replays nothing; answered with a txn_response once it is durable.
struct write_snapshot_request {};

/// WriteTxnMarkers for one partition (docs/transactions.md §WriteTxnMarkers). The coordinator
/// writes markers with transaction_version 2 (KIP-890 part 2): the marker's
/// epoch is the one bumped at the end of the transaction, so the partition
/// requires it to be above the epoch of the open transaction's data (an
/// equal epoch is only a repeat of a marker already written). Version 1
/// (the admin abort of a hanging transaction, KIP-664) carries the data's
/// own epoch and only must not be older.
struct write_txn_marker_request {
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  int32_t coordinator_epoch = 0;
  bool committed = false;
  topic_partition tp;
  int8_t transaction_version = 2;
  /// -1 from the transaction coordinator. A group coordinator forwarding a
  /// marker to its own `__consumer_offsets` partition sends the leader
  /// epoch it was elected with; another current epoch there is
  /// FENCED_LEADER_EPOCH, nothing written.
  int32_t leader_epoch = -1;
};

// -- group coordinator -------------------------------------------------------

/// TxnOffsetCommit (docs/transactions.md §TxnOffsetCommit): offsets pending until the marker.
struct txn_offset_commit_request {
  std::string transactional_id;
  std::string group_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
  std::vector<int64_t> offsets; // parallel to partitions
};

/// OffsetCommit outside a transaction.
struct offset_commit_request {
  std::string group_id;
  std::vector<topic_partition> partitions;
  std::vector<int64_t> offsets;
};

/// OffsetFetch; require_stable answers UNSTABLE_OFFSET_COMMIT while a
/// transaction holds a pending offset for a requested partition (KIP-447).
struct offset_fetch_request {
  std::string group_id;
  std::vector<topic_partition> partitions;
  bool require_stable = false;
};

struct offset_fetch_response {
  error_code error = error_code::none;
  std::vector<int64_t> offsets; // -1 = none committed
};

// -- admin for hanging transactions (KIP-664) ---------------------------------

/// ListTransactions, sent to a broker, which asks every coordinator shard
/// of its node and merges the listings (docs/transactions.md §Admin).
struct list_transactions_request {
  list_transactions_filter filter;
};

/// Rows sorted by transactional id. COORDINATOR_LOAD_IN_PROGRESS or
/// COORDINATOR_NOT_AVAILABLE (no rows) if a shard is loading or down.
struct list_transactions_response {
  error_code error = error_code::none;
  std::string message;
  std::vector<std::string> unknown_state_filters;
  std::vector<transaction_listing> transactions;
};

/// DescribeProducers for one partition, sent to its leader.
struct describe_producers_request {
  topic_partition tp;
};

/// UNKNOWN_TOPIC_OR_PARTITION if the receiver does not lead `tp`.
struct describe_producers_response {
  error_code error = error_code::none;
  std::string message;
  std::vector<active_producer> active_producers; // by producer id
};

// -- connecting over the middleman (docs/node.md §Middleman) ------------------

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

// -- between the nodes of a cluster (docs/node.md §Cluster mode) --------------

/// One partition a node leads, at the leader epoch the controller gave it:
/// its leader and, for `__transaction_state` and `__consumer_offsets`
/// partitions, the coordinator on it (null otherwise).
struct partition_handle {
  topic_partition tp;
  int32_t leader_epoch = -1;
  caf::actor leader;
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

// -- internal ------------------------------------------------------------------

/// A durable write finished (sent by the storage writer to the actor that
/// queued it).
struct storage_done {
  uint64_t ticket = 0;
  error_code error = error_code::none;
  std::string message;
};

/// Periodic timer of a coordinator shard: abort timed-out transactions.
struct coordinator_tick {};

/// Periodic timer of a coordinator shard: expire idle transactional ids
/// (transaction.remove.expired.transaction.cleanup.interval.ms).
struct txn_expiration_tick {};

/// A loading coordinator shard reads and installs its next chunk of cards.
struct coordinator_load_chunk {};

/// Periodic timer of a partition leader: expire idle producers.
struct producer_expiration_tick {};

/// A group coordinator to itself every offsets.retention.check.interval.ms:
/// expire old committed offsets and idle producers' marker epochs.
struct offsets_retention_tick {};

/// Re-send the markers of a transaction that are not acknowledged yet.
struct marker_retry {
  std::string transactional_id;
};

/// A fetch the partition leader held (fetch_request::max_wait_ms) has
/// waited its time: answered with what is there (nothing, usually).
struct fetch_wait_expired {
  uint64_t id = 0;
};

/// A request the coordinator parked (AddPartitionsToTxn / AddOffsetsToTxn
/// while the previous transaction completes) has waited long enough: it is
/// answered CONCURRENT_TRANSACTIONS if still parked.
struct parked_request_expired {
  std::string transactional_id;
  uint64_t id = 0;
};

/// Ask a supervisor for its restart count.
struct supervisor_stats_request {};

struct supervisor_stats {
  int32_t restarts = 0;
  bool gave_up = false;
};

// -- producer session ----------------------------------------------------------

/// The producer's identity after InitProducerId (or a local epoch bump):
/// sequences of every partition restart at 0.
struct session_identity {
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// One record for partition `tp`, led by `leader` (no reply). `add_to_txn`
/// marks a transactional producer's first record for `tp` in the current
/// transaction: the session sends AddPartitionsToTxn for it (batched with
/// other new partitions) and holds the partition's batches until it is
/// added, as Kafka's Sender does.
struct session_record {
  uint64_t id = 0; // the facade's handle for its callback
  topic_partition tp;
  caf::actor leader;
  record rec;
  bool add_to_txn = false;
};

/// What became of one record. `add_failed`: the record was never sent
/// because AddPartitionsToTxn for its partition failed with `error`.
struct session_completion {
  uint64_t id = 0;
  error_code error = error_code::none;
  std::string message;
  int64_t offset = -1;
  bool add_failed = false;
};

/// Seal every open batch and reply once every record received so far is
/// acknowledged or failed (discard = drop what was not sent yet, for an
/// abort).
struct session_flush {
  bool discard = false;
};

struct session_flush_result {
  std::vector<session_completion> completions;
  producer_epoch epoch = no_producer_epoch; // after local KIP-360 bumps
};

/// Internal timers of the session: linger.ms of a partition's open batch,
/// and the retry backoff.
struct session_linger {
  topic_partition tp;
  uint64_t generation = 0;
};

struct session_retry {};

/// The session's AddPartitionsToTxn backoff elapsed (`generation` of the
/// request it retries; stale timers are ignored), or, with generation 0,
/// new partitions wait for a request.
struct session_add_retry {
  uint64_t generation = 0;
};

/// Drill: a supervisor kills its current child (exit_reason::kill).
struct kill_child_request {};

/// To a supervisor: every write its dead child had queued is settled; the
/// next child may load.
struct supervisor_settled {};

// -- inspectors ------------------------------------------------------------

template <class Inspector, class Tag, class Rep>
typename Inspector::result_type inspect(Inspector& f, strong_id<Tag, Rep>& x) {
  return f(x.value);
}

#define CAFTX_INSPECT(type, ...)                                                                   \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type& x) {                                 \
    return f(caf::meta::type_name("caftx::" #type), __VA_ARGS__);                                  \
  }

CAFTX_INSPECT(topic_partition, x.topic, x.partition)
CAFTX_INSPECT(record_header, x.key, x.value)
CAFTX_INSPECT(record, x.key, x.value, x.headers, x.timestamp_ms, x.null_value, x.offset_delta)
CAFTX_INSPECT(aborted_transaction, x.pid, x.first_offset)
CAFTX_INSPECT(create_topic_request, x.name, x.partitions, x.configs)
CAFTX_INSPECT(topic_metadata, x.name, x.error, x.partitions)
CAFTX_INSPECT(metadata_request, x.topics)
CAFTX_INSPECT(metadata_response, x.topics)
CAFTX_INSPECT(find_coordinator_request, x.key_type, x.key)
CAFTX_INSPECT(cluster_hello_request, x.role, x.cluster_id, x.node_id, x.build)
CAFTX_INSPECT(cluster_hello_response, x.error, x.message, x.cluster_id, x.node_id,
              x.advertised_listener, x.build)
CAFTX_INSPECT(find_coordinator_response, x.error, x.message, x.partition, x.coordinator)
CAFTX_INSPECT(init_producer_id_request, x.has_transactional_id, x.transactional_id,
              x.transaction_timeout_ms, x.pid, x.epoch)
CAFTX_INSPECT(init_producer_id_response, x.error, x.message, x.pid, x.epoch)
CAFTX_INSPECT(add_partitions_to_txn_request, x.transactional_id, x.pid, x.epoch, x.partitions,
              x.verify_only)
CAFTX_INSPECT(add_offsets_to_txn_request, x.transactional_id, x.pid, x.epoch, x.group_id)
CAFTX_INSPECT(end_txn_request, x.transactional_id, x.pid, x.epoch, x.committed)
CAFTX_INSPECT(end_txn_response, x.error, x.message, x.pid, x.epoch)
CAFTX_INSPECT(txn_response, x.error, x.message)
CAFTX_INSPECT(describe_transaction_request, x.transactional_id)
CAFTX_INSPECT(describe_transaction_response, x.error, x.state, x.pid, x.epoch, x.partitions,
              x.coordinator_epoch, x.transaction_timeout_ms, x.transaction_start_ms)
CAFTX_INSPECT(produce_request, x.tp, x.transactional_id, x.records, x.from_coordinator,
              x.leader_epoch)
CAFTX_INSPECT(become_leader_response, x.error, x.message, x.leader_epoch, x.log_start_offset,
              x.log_end_offset)
CAFTX_INSPECT(produce_response, x.error, x.message, x.base_offset, x.log_start_offset)
CAFTX_INSPECT(fetch_request, x.tp, x.fetch_offset, x.max_bytes, x.isolation, x.max_wait_ms)
CAFTX_INSPECT(fetch_response, x.error, x.message, x.high_watermark, x.last_stable_offset,
              x.log_start_offset, x.aborted_transactions, x.records)
CAFTX_INSPECT(node_fetch_request, x.partitions, x.max_wait_ms, x.min_bytes, x.max_bytes)
CAFTX_INSPECT(node_fetch_response, x.partitions)
CAFTX_INSPECT(list_offsets_request, x.tp, x.timestamp, x.isolation)
CAFTX_INSPECT(list_offsets_response, x.error, x.offset)
CAFTX_INSPECT(delete_records_request, x.tp, x.offset)
CAFTX_INSPECT(delete_records_response, x.error, x.message, x.low_watermark)
CAFTX_INSPECT(write_txn_marker_request, x.pid, x.epoch, x.coordinator_epoch, x.committed, x.tp,
              x.transaction_version, x.leader_epoch)
CAFTX_INSPECT(txn_offset_commit_request, x.transactional_id, x.group_id, x.pid, x.epoch,
              x.partitions, x.offsets)
CAFTX_INSPECT(offset_commit_request, x.group_id, x.partitions, x.offsets)
CAFTX_INSPECT(offset_fetch_request, x.group_id, x.partitions, x.require_stable)
CAFTX_INSPECT(offset_fetch_response, x.error, x.offsets)
CAFTX_INSPECT(list_transactions_filter, x.states, x.producer_ids, x.duration_ms)
CAFTX_INSPECT(transaction_listing, x.transactional_id, x.pid, x.state)
CAFTX_INSPECT(active_producer, x.pid, x.epoch, x.last_sequence, x.last_timestamp_ms,
              x.coordinator_epoch, x.current_txn_start_offset)
CAFTX_INSPECT(list_transactions_request, x.filter)
CAFTX_INSPECT(list_transactions_response, x.error, x.message, x.unknown_state_filters,
              x.transactions)
CAFTX_INSPECT(describe_producers_request, x.tp)
CAFTX_INSPECT(describe_producers_response, x.error, x.message, x.active_producers)
CAFTX_INSPECT(partition_handle, x.tp, x.leader_epoch, x.leader, x.coordinator)
CAFTX_INSPECT(node_handles_request, x.partitions)
CAFTX_INSPECT(cluster_nodes_response, x.endpoints)
CAFTX_INSPECT(producer_id_block_response, x.error, x.message, x.first, x.last)
CAFTX_INSPECT(node_handles_response, x.node_id, x.handles)
CAFTX_INSPECT(controller_create_topic_request, x.name, x.partitions, x.replication_factor,
              x.configs)
CAFTX_INSPECT(controller_topic_request, x.name)
CAFTX_INSPECT(controller_topic_response, x.error, x.message, x.partitions, x.configs)
CAFTX_INSPECT(storage_done, x.ticket, x.error, x.message)
CAFTX_INSPECT(marker_retry, x.transactional_id)
CAFTX_INSPECT(parked_request_expired, x.transactional_id, x.id)
CAFTX_INSPECT(fetch_wait_expired, x.id)
CAFTX_INSPECT(supervisor_stats, x.restarts, x.gave_up)
CAFTX_INSPECT(session_identity, x.pid, x.epoch)
CAFTX_INSPECT(session_record, x.id, x.tp, x.leader, x.rec, x.add_to_txn)
CAFTX_INSPECT(session_completion, x.id, x.error, x.message, x.offset, x.add_failed)
CAFTX_INSPECT(session_flush, x.discard)
CAFTX_INSPECT(session_flush_result, x.completions, x.epoch)
CAFTX_INSPECT(session_linger, x.tp, x.generation)
CAFTX_INSPECT(session_add_retry, x.generation)

#undef CAFTX_INSPECT

// Messages without fields.
#define CAFTX_INSPECT_EMPTY(type)                                                                  \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type&) {                                   \
    return f(caf::meta::type_name("caftx::" #type));                                               \
  }

CAFTX_INSPECT_EMPTY(supervisor_stats_request)
CAFTX_INSPECT_EMPTY(coordinator_tick)
CAFTX_INSPECT_EMPTY(txn_expiration_tick)
CAFTX_INSPECT_EMPTY(coordinator_load_chunk)
CAFTX_INSPECT_EMPTY(producer_expiration_tick)
CAFTX_INSPECT_EMPTY(offsets_retention_tick)
CAFTX_INSPECT_EMPTY(retention_tick)
CAFTX_INSPECT_EMPTY(cleaner_tick)
CAFTX_INSPECT_EMPTY(cleaner_step)
CAFTX_INSPECT_EMPTY(write_snapshot_request)
CAFTX_INSPECT_EMPTY(become_leader_request)
CAFTX_INSPECT_EMPTY(cluster_nodes_request)
CAFTX_INSPECT_EMPTY(producer_id_block_request)
CAFTX_INSPECT_EMPTY(session_retry)
CAFTX_INSPECT_EMPTY(kill_child_request)
CAFTX_INSPECT_EMPTY(supervisor_settled)

#undef CAFTX_INSPECT_EMPTY

/// Registers every message type above with `cfg` under "caftx::<name>".
/// Must be called on every node's config before the actor system starts.
void register_message_types(caf::actor_system_config& cfg);

/// Calls `fn(name)` for every registered message type name (for tests).
std::vector<std::string> registered_message_type_names();

/// "caftx-<version>-<16 hex digits>": the version and a fingerprint of the
/// registered message types (each name and the bytes of its
/// default-constructed value under CAF's binary serializer, so a field
/// added, removed or retyped changes it). Two processes exchange messages
/// only when theirs are equal (docs/node.md §Middleman).
const std::string& wire_build_id();

} // namespace caftx
