// Typed settings with Kafka's names and defaults, parsed from
// `key=value` properties (a Kafka .properties file or command-line
// overrides) and validated: a bad value names the key and the allowed range.
// Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config_entry.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// Kafka-style properties: key -> value, both strings.
using properties = std::map<std::string, std::string>;

/// Reads a Java-style .properties file: `key=value` (or `key: value`) per
/// line, `#` and `!` comments, blank lines ignored. Errors: INVALID_CONFIG
/// naming the file and line for a line without a separator or a duplicate
/// key, and for a file that cannot be read.
status_or<properties> load_properties_file(const std::string& path);

/// Settings of one broker node (Kafka's broker configs).
struct node_config {
  /// Directory of the node's LevelDB database (`log.dirs` in Kafka).
  std::string data_dir;
  /// `transaction.state.log.num.partitions`, [1, 1000]. Must never change
  /// for an existing data directory.
  int32_t transaction_state_log_num_partitions = 50;
  /// `offsets.topic.num.partitions`, [1, 1000].
  int32_t offsets_topic_num_partitions = 50;
  /// `offsets.retention.minutes`, [1, 2147483647]: a committed offset of
  /// a group without members whose commit is this old is removed, a tombstone appended to its
  /// `__consumer_offsets` partition (Kafka's GroupMetadataManager
  /// cleanupGroupMetadata). Offsets pending in a transaction never expire.
  int32_t offsets_retention_minutes = 10080;
  /// `offsets.retention.check.interval.ms`, [1, 2147483647]: period of that
  /// check in each group coordinator.
  int32_t offsets_retention_check_interval_ms = 600000;
  /// `group.min.session.timeout.ms` and `group.max.session.timeout.ms`,
  /// [1, 2147483647], min <= max: a JoinGroup's session timeout outside
  /// them is INVALID_SESSION_TIMEOUT.
  int32_t group_min_session_timeout_ms = 6000;
  int32_t group_max_session_timeout_ms = 1800000;
  /// `group.initial.rebalance.delay.ms`, [0, 2147483647]: how long the
  /// first rebalance of an empty group waits for more members.
  int32_t group_initial_rebalance_delay_ms = 3000;
  /// `group.max.size`, [1, 2147483647]: members per group.
  int32_t group_max_size = 2147483647;
  /// `transaction.max.timeout.ms`, [1, 2147483647].
  int32_t transaction_max_timeout_ms = 900000;
  /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`, [1, 2147483647].
  int32_t transaction_abort_timed_out_transaction_cleanup_interval_ms = 10000;
  /// `transactional.id.expiration.ms`, [1, 2147483647]: a transactional id
  /// whose card is Empty, CompleteCommit or CompleteAbort and was last
  /// written at least this long ago is removed (its card key deleted, the
  /// tombstone of Kafka's compacted `__transaction_state`); it comes back
  /// as a new id (new producer id, epoch 0) (docs/transactions.md §Transitions T11).
  int32_t transactional_id_expiration_ms = 604800000;
  /// `transaction.remove.expired.transaction.cleanup.interval.ms`,
  /// [1, 2147483647]: period of the expiration check of each shard.
  int32_t transaction_remove_expired_transaction_cleanup_interval_ms = 3600000;
  /// `caftx.coordinator.load.chunk.cards`, [1, 1000000]: a starting
  /// coordinator shard reads and installs at most this many cards per
  /// message to itself, so it keeps answering COORDINATOR_LOAD_IN_PROGRESS
  /// while it loads a large shard (Kafka reads
  /// `transaction.state.log.load.buffer.size` bytes at a time instead).
  int32_t coordinator_load_chunk_cards = 1000;
  /// `caftx.coordinator.park.ms`, [0, 2147483647]: how long a coordinator
  /// shard holds an AddPartitionsToTxn or AddOffsetsToTxn of a
  /// transactional id busy with a transition (the previous transaction's
  /// markers, or another card write) before answering
  /// CONCURRENT_TRANSACTIONS (Kafka answers at once; 0 does the same).
  int32_t coordinator_park_ms = 1000;
  /// `auto.create.topics.enable`: create a topic on first produce/fetch.
  bool auto_create_topics_enable = false;
  /// `delete.topic.enable` (Kafka's default true): false refuses
  /// DeleteTopics with TOPIC_DELETION_DISABLED.
  bool delete_topic_enable = true;
  /// `num.partitions`: partition count of auto-created topics, [1, 10000].
  int32_t num_partitions = 1;
  /// `producer.id.expiration.ms`, [1, 2147483647]: a partition forgets an
  /// idempotent producer idle this long (never one with an open transaction).
  int32_t producer_id_expiration_ms = 86400000;
  /// `producer.id.expiration.check.interval.ms`, [1, 2147483647].
  int32_t producer_id_expiration_check_interval_ms = 600000;
  /// The retention of topics that set none (Kafka's `log.retention.ms`, or
  /// `log.retention.minutes` * 60000, or `log.retention.hours` * 3600000,
  /// default 168 hours; -1 = unlimited), in ms.
  int64_t log_retention_ms = 604800000;
  /// `log.retention.bytes`, [-1, 2^63-1]: per partition; -1 = unlimited.
  int64_t log_retention_bytes = -1;
  /// `log.retention.check.interval.ms`, [1, 2147483647]: how often each
  /// partition applies its retention.
  int32_t log_retention_check_interval_ms = 300000;
  /// `caftx.storage.sync`: fsync each durable write (group-committed).
  bool storage_sync = true;
  /// `caftx.log.tail.cache.bytes`, [0, 2147483647]: bytes of each
  /// partition's newest batches kept in memory for fetches near the log
  /// end; older data is read from storage.
  int32_t log_tail_cache_bytes = 4 * 1024 * 1024;
  /// `caftx.log.snapshot.interval.bytes`, [1, 2147483647]: a partition
  /// writes a producer-state snapshot (Kafka's ProducerStateManager
  /// snapshot) each time this many log bytes were appended since the last
  /// one; a restart replays at most this much of the log.
  int32_t log_snapshot_interval_bytes = 16 * 1024 * 1024;
  /// `caftx.supervisor.max.restarts` within
  /// `caftx.supervisor.restart.window.ms`: a coordinator shard, partition
  /// leader or group coordinator crashing more often is not restarted again.
  int32_t supervisor_max_restarts = 5;
  int32_t supervisor_restart_window_ms = 10000;
  /// `request.timeout.ms`, [1, 2147483647]: how long a node waits for
  /// another actor's reply (markers, transaction verification) before it
  /// treats the destination as unavailable and retries or answers a
  /// retriable error (docs/configuration.md §Node).
  int32_t request_timeout_ms = 30000;
  /// `controlled.shutdown.enable` (cluster mode): at a clean stop the node
  /// first asks the controller to move its leaderships away (Kafka's
  /// ControlledShutdown), making `controlled.shutdown.max.retries`, [0,
  /// 2147483646], further attempts `controlled.shutdown.retry.backoff.ms`,
  /// [0, 2147483647], apart while the controller is unknown, unreachable or
  /// has partitions left to move; then it stops either way.
  bool controlled_shutdown_enable = true;
  int32_t controlled_shutdown_max_retries = 3;
  int32_t controlled_shutdown_retry_backoff_ms = 5000;
  /// `caftx.marker.retry.backoff.ms`: wait before re-sending a marker that
  /// a partition did not acknowledge, [1, 60000].
  int32_t marker_retry_backoff_ms = 100;
  /// `log.cleanup.policy`: the cleanup.policy of topics that set none
  /// (delete, compact or compact,delete; docs/compaction.md).
  bool log_cleanup_delete = true;
  bool log_cleanup_compact = false;
  /// `log.cleaner.enable`: compacted partitions run their cleaner.
  bool log_cleaner_enable = true;
  /// `log.cleaner.backoff.ms`, [1, 2147483647]: how often each compacted
  /// partition checks whether it is dirty enough to clean.
  int32_t log_cleaner_backoff_ms = 15000;
  /// `log.cleaner.delete.retention.ms`, [0, 2^63-1]: the
  /// delete.retention.ms of topics that set none.
  int64_t log_cleaner_delete_retention_ms = 86400000;
  /// `log.cleaner.min.cleanable.ratio`, [0, 1]: the
  /// min.cleanable.dirty.ratio of topics that set none.
  double log_cleaner_min_cleanable_ratio = 0.5;
  /// `log.cleaner.min.compaction.lag.ms`, [0, 2^63-1]: the
  /// min.compaction.lag.ms of topics that set none.
  int64_t log_cleaner_min_compaction_lag_ms = 0;
  /// `log.cleaner.dedupe.buffer.size`, [1048576, 2^63-1]: bytes of one
  /// cleaning round's key map (24 bytes a key, filled to 90%, as Kafka's
  /// SkimpyOffsetMap); a dirty part with more keys is cleaned in several
  /// rounds.
  int64_t log_cleaner_dedupe_buffer_size = 134217728;
  /// `message.max.bytes`, [0, 2147483647]: the max.message.bytes of
  /// topics that set none: the largest record batch a partition takes
  /// (Kafka's default 1048588: 1 MiB plus the batch header's 12 bytes of
  /// log overhead).
  int32_t message_max_bytes = 1048588;
  /// `caftx.log.cleaner.step.batches`, [1, 1000000]: batches a cleaning
  /// partition reads (or rewrites) per message to itself, so it serves
  /// produce and fetch between the steps of a round.
  int32_t log_cleaner_step_batches = 1000;

  // -- replication (cluster mode, docs/replication.md) ----------------------
  /// `default.replication.factor`, [1, 32767]: replicas of a topic created
  /// without one (auto-created or CreateTopics with -1).
  int32_t default_replication_factor = 1;
  /// `min.insync.replicas`, [1, 2147483647]: the min.insync.replicas of
  /// topics that set none: an acks=all produce needs an ISR this large
  /// (NOT_ENOUGH_REPLICAS before the append, NOT_ENOUGH_REPLICAS_AFTER_APPEND
  /// when it shrank while the produce waited).
  int32_t min_insync_replicas = 1;
  /// `transaction.state.log.replication.factor`, [1, 32767], and
  /// `transaction.state.log.min.isr`, [1, 2147483647]: replicas and
  /// min.insync.replicas of `__transaction_state`; the topic is created
  /// only once that many nodes have registered (the embedded single node
  /// uses 1 and 1).
  int32_t transaction_state_log_replication_factor = 3;
  int32_t transaction_state_log_min_isr = 2;
  /// `offsets.topic.replication.factor`, [1, 32767]: replicas of
  /// `__consumer_offsets`, created once that many nodes have registered;
  /// its min.insync.replicas is the node's min.insync.replicas.
  int32_t offsets_topic_replication_factor = 3;
  /// `replica.lag.time.max.ms`, [1, 2^63-1]: a follower that has not
  /// caught up with the leader's log end for this long leaves the ISR.
  int64_t replica_lag_time_max_ms = 30000;
  /// `replica.fetch.wait.max.ms`, [0, 2147483647]: how long the leader
  /// holds a follower's fetch while it has nothing new for it.
  int32_t replica_fetch_wait_max_ms = 500;
  /// `replica.fetch.max.bytes`, [1, 2147483647]: bytes per partition a
  /// follower fetch asks for (at least one batch comes back).
  int32_t replica_fetch_max_bytes = 1048576;
  /// `replica.fetch.backoff.ms`, [0, 2147483647]: a follower's wait after a
  /// failed fetch before it fetches again.
  int32_t replica_fetch_backoff_ms = 1000;
  /// `auto.leader.rebalance.enable`: the controller moves leaderships back
  /// to their preferred replicas (the first assigned) when a node's share
  /// of partitions led elsewhere passes the percentage below.
  bool auto_leader_rebalance_enable = true;
  /// `leader.imbalance.check.interval.seconds`, [1, 2^63-1]: how often
  /// the controller checks.
  int64_t leader_imbalance_check_interval_seconds = 300;
  /// `leader.imbalance.per.broker.percentage`, [0, 100]: the share (in
  /// percent) of a node's preferred partitions led elsewhere above which
  /// they move back.
  int32_t leader_imbalance_per_broker_percentage = 10;
  /// `caftx.drills.enable` (caftx's own, off by default): the node takes
  /// drill requests (drill_network_request: cut it off from named peers
  /// or from ZooKeeper, and heal) and routes every message to its
  /// partitions, coordinators and broker through a gate that can drop
  /// them. Off: drill requests are refused with INVALID_REQUEST and no
  /// gate is in the way (docs/node.md §Drill hook).
  bool drills_enable = false;

  /// The keys the properties parsed set (DescribeConfigs tells a value
  /// set there, STATIC_BROKER_CONFIG, from a default, DEFAULT_CONFIG).
  std::vector<std::string> given;

  /// Parses known keys; unknown keys give INVALID_CONFIG, Kafka broker keys
  /// without meaning here (segment sizes, thread counts) are ignored.
  static status_or<node_config> parse(const properties& props);
};

/// The configs of a topic created with `overrides` (its CreateTopics
/// configs), over `node`'s defaults: each topic key caftx honours
/// (retention.ms, retention.bytes, cleanup.policy, compression.type,
/// delete.retention.ms, min.cleanable.dirty.ratio, min.compaction.lag.ms,
/// max.message.bytes, min.insync.replicas), its value the override
/// (DYNAMIC_TOPIC_CONFIG) or the node's (STATIC_BROKER_CONFIG when the
/// node's properties set it, else DEFAULT_CONFIG), with its synonyms in
/// that order (Kafka's ConfigHelper for a topic), sorted by name.
std::vector<config_entry> describe_topic_configs(const properties& overrides,
                                                 const node_config& node);

/// The node's own configs (Kafka's broker resource): every key
/// node_config::parse takes, with the value in effect, sorted by name;
/// STATIC_BROKER_CONFIG when the node's properties set it, else
/// DEFAULT_CONFIG; all read-only.
std::vector<config_entry> describe_node_configs(const node_config& node);

/// Settings of a producer (Kafka's ProducerConfig names and defaults).
/// Per-topic settings (CreateTopics configs), Kafka's names; defaults from
/// the node's log.retention.*.
struct topic_config {
  /// `retention.ms`, [-1, 2^63-1]: data older than this is removed; -1 = never.
  int64_t retention_ms = 604800000;
  /// `retention.bytes`, [-1, 2^63-1]: per partition; -1 = unlimited.
  int64_t retention_bytes = -1;
  /// `cleanup.policy`: a list of `delete` (retention.ms / retention.bytes
  /// remove old data) and `compact` (the cleaner keeps the newest record of
  /// each key, docs/compaction.md); default the node's log.cleanup.policy.
  bool cleanup_delete = true;
  bool cleanup_compact = false;
  /// `delete.retention.ms`, [0, 2^63-1]: how long a tombstone (and a
  /// transaction marker) stays after the cleaner first saw it removable.
  int64_t delete_retention_ms = 86400000;
  /// `min.cleanable.dirty.ratio`, [0, 1]: the cleaner starts when the
  /// uncleaned bytes are this share of the log's cleanable bytes.
  double min_cleanable_dirty_ratio = 0.5;
  /// `min.compaction.lag.ms`, [0, 2^63-1]: records younger than this are
  /// not cleaned yet.
  int64_t min_compaction_lag_ms = 0;
  /// `max.message.bytes`, [0, 2147483647]: a produced batch larger than
  /// this is rejected with MESSAGE_TOO_LARGE, nothing appended; default
  /// the node's message.max.bytes.
  int32_t max_message_bytes = 1048588;
  /// `min.insync.replicas`, [1, 2147483647]: the ISR an acks=all append
  /// needs (NOT_ENOUGH_REPLICAS); default the node's min.insync.replicas.
  int32_t min_insync_replicas = 1;

  /// Parses the configs of one topic over the node's defaults: an unknown
  /// key or a value out of range is INVALID_CONFIG naming the key and the
  /// range; `cleanup.policy` a list of compact and delete; Kafka topic keys
  /// without meaning here (segment.bytes, segment.ms, ...) are
  /// ignored.
  static status_or<topic_config> parse(const properties& props, const node_config& node);
};

struct producer_config {
  /// `transactional.id`; set => transactional producer (implies idempotence).
  std::optional<std::string> transactional_id;
  /// `enable.idempotence`, default true.
  bool enable_idempotence = true;
  /// `transaction.timeout.ms`, [1, 2147483647]; the coordinator rejects
  /// more than its transaction.max.timeout.ms with INVALID_TRANSACTION_TIMEOUT.
  int32_t transaction_timeout_ms = 60000;
  /// `max.in.flight.requests.per.connection`, [1, 5] with idempotence.
  int32_t max_in_flight_requests_per_connection = 5;
  /// `acks`: only "all" (-1) is accepted with idempotence; "1" and "0"
  /// behave as "all" on a one-replica node.
  int32_t acks = -1;
  /// `retries`, [0, 2147483647].
  int32_t retries = 2147483647;
  /// `retry.backoff.ms`, [0, 2147483647].
  int32_t retry_backoff_ms = 100;
  /// `delivery.timeout.ms`, [1, 2147483647]: bound on retrying one request.
  int32_t delivery_timeout_ms = 120000;
  /// `request.timeout.ms`, [1, 2147483647]: wait for one reply.
  int32_t request_timeout_ms = 30000;
  /// `linger.ms`, [0, 2147483647]. Accepted for compatibility; records are
  /// sent when a batch fills, and on flush, commit and abort.
  int32_t linger_ms = 5;
  /// `batch.size` in bytes, [1, 2147483647].
  int32_t batch_size = 16384;
  /// `buffer.memory` in bytes, [1, 2^63-1]: the records a producer holds
  /// (handed to send() and not yet acknowledged or failed) may take this
  /// much; send() blocks while a record does not fit (Kafka's BufferPool).
  int64_t buffer_memory = 33554432;
  /// `max.block.ms`, [0, 2^63-1]: how long send() waits for buffer.memory,
  /// and how long init_transactions(), commit_transaction(),
  /// abort_transaction() and send_offsets_to_transaction() wait for the
  /// coordinator, before they throw REQUEST_TIMED_OUT (Kafka's
  /// TimeoutException).
  int64_t max_block_ms = 60000;
  /// `max.request.size` in bytes, [1, 2147483647]: send() rejects a record
  /// whose size (with the batch header) is larger, with MESSAGE_TOO_LARGE
  /// (Kafka's RecordTooLargeException).
  int32_t max_request_size = 1048576;

  static status_or<producer_config> parse(const properties& props);
};

/// Settings of a consumer (Kafka's ConsumerConfig names).
struct consumer_config {
  /// `group.id`; required for commit() and committed().
  std::optional<std::string> group_id;
  /// `isolation.level`: read_uncommitted (default) or read_committed.
  isolation_level isolation = isolation_level::read_uncommitted;
  /// `auto.offset.reset`: earliest, latest (default) or none.
  std::string auto_offset_reset = "latest";
  /// `max.poll.records`, [1, 2147483647].
  int32_t max_poll_records = 500;
  /// `max.partition.fetch.bytes`, [1, 2147483647]: the records one
  /// partition brings in a fetch (at least one batch, however large).
  int32_t max_partition_fetch_bytes = 1048576;
  /// `fetch.min.bytes`, [0, 2147483647]: a node answers a fetch once its
  /// partitions have this many bytes of records, or fetch.max.wait.ms passed.
  int32_t fetch_min_bytes = 1;
  /// `fetch.max.wait.ms`, [0, 2147483647]: how long a node holds a fetch
  /// below fetch.min.bytes (at most the poll's own timeout).
  int32_t fetch_max_wait_ms = 500;
  /// `fetch.max.bytes`, [0, 2147483647]: the records one fetch of a node
  /// brings in all (the first partition with records always brings them).
  int32_t fetch_max_bytes = 52428800;
  /// `request.timeout.ms`, [1, 2147483647].
  int32_t request_timeout_ms = 30000;
  /// `retry.backoff.ms`, [0, 2147483647]: the wait before fetching a
  /// committed offset again after UNSTABLE_OFFSET_COMMIT.
  int32_t retry_backoff_ms = 100;
  /// `default.api.timeout.ms`, [1, 2147483647]: how long position(),
  /// committed() and commit() wait for a committed offset held by a
  /// transaction (poll() waits at most its own timeout).
  int32_t default_api_timeout_ms = 60000;
  /// `enable.auto.commit`: only false is supported (offsets are committed
  /// with commit() or inside a transaction); the default is false.
  bool enable_auto_commit = false;
  /// `client.id`: the start of the member id a group gives this consumer.
  std::string client_id = "caftx-consumer";
  /// `group.instance.id` (KIP-345): makes the consumer a static member of
  /// its group, which keeps its place (and assignment) when the consumer
  /// restarts within session.timeout.ms, and sends no LeaveGroup on
  /// close() or unsubscribe(). 1-249 characters of [a-zA-Z0-9._-], not "."
  /// or ".." (Kafka's JoinGroupRequest.validateGroupInstanceId). A second
  /// consumer with the same id fences the first: its poll() and commit()
  /// throw FENCED_INSTANCE_ID (fatal).
  std::optional<std::string> group_instance_id;
  /// `session.timeout.ms`, [1, 2147483647]: a member that sends no
  /// heartbeat this long is removed from its group (subscribe()); the
  /// group coordinator's group.min/max.session.timeout.ms bound it.
  int32_t session_timeout_ms = 45000;
  /// `heartbeat.interval.ms`, [1, 2147483647]: how often poll() sends a
  /// heartbeat while subscribed.
  int32_t heartbeat_interval_ms = 3000;
  /// `max.poll.interval.ms`, [1, 2147483647]: the rebalance timeout the
  /// consumer joins its group with (how long a rebalance waits for it).
  int32_t max_poll_interval_ms = 300000;
  /// `partition.assignment.strategy`: the assignors offered when joining,
  /// in order of preference, from "range" and "roundrobin" (Kafka's class
  /// names RangeAssignor and RoundRobinAssignor are taken too).
  std::vector<std::string> partition_assignment_strategy{"range", "roundrobin"};

  static status_or<consumer_config> parse(const properties& props);
};

} // namespace caftx
