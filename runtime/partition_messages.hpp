// What a partition leader receives (actors/partition/partition_actor.hpp):
// Produce, Fetch, ListOffsets, DeleteRecords, WriteTxnMarkers,
// DescribeProducers, its coordinator's election, and its own timers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/actor_interfaces.hpp"
#include "runtime/common_messages.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/transaction_admin.hpp"

namespace caftx {

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
  /// The coordinator's election it writes for (become_leader_response::
  /// load_generation); 0 for clients. A coordinator restarted by its
  /// supervisor keeps the leader epoch in cluster mode (the controller's
  /// epoch did not move), so this is what fences a write of the dead
  /// incarnation reaching the partition after its successor's election:
  /// NOT_COORDINATOR, nothing appended (the successor loaded without it).
  uint64_t load_generation = 0;
  /// Kafka's acks: -1 (all) answers once the high watermark passed the
  /// batch, with NOT_ENOUGH_REPLICAS before the append when the ISR is
  /// below min.insync.replicas; 1 once the leader made it durable; 0 at
  /// once after the leader's append, with base offset -1 (Kafka sends no
  /// reply at all; caftx answers, so that errors still reach the producer).
  int16_t acks = -1;
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
  /// A coordinator's read of its own partition (its load): the load
  /// generation of the election it loads under, as its appends carry it.
  /// A partition restarted since then answers NOT_COORDINATOR, and the
  /// coordinator starts over with an election of its own. 0: any reader.
  uint64_t load_generation = 0;
  /// The highest partition leader epoch the reader has seen in this
  /// partition's batches (-1: none). A leader at a lower epoch is stale (a
  /// zombie that has not heard of its successor yet) and answers
  /// UNKNOWN_LEADER_EPOCH (75), Kafka's answer to a fetch from a newer
  /// epoch than its own (KIP-320): the reader looks the leader up again
  /// instead of taking the stale leader's log end for its own position.
  int32_t last_seen_leader_epoch = -1;
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

/// ListOffsets: timestamp -1 = latest, -2 = earliest (docs/producer-state.md §ListOffsets).
struct list_offsets_request {
  topic_partition tp;
  int64_t timestamp = -1;
  isolation_level isolation = isolation_level::read_uncommitted;
};

struct list_offsets_response {
  error_code error = error_code::none;
  int64_t offset = -1;
  /// For a timestamp: the found record's timestamp; -1 otherwise.
  int64_t timestamp = -1;
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
  /// Unique in the process for each election; the coordinator's appends
  /// carry it (produce_request::load_generation).
  uint64_t load_generation = 0;
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
  /// With leader_epoch: the load generation of the group coordinator's
  /// election (as its appends carry); another one is NOT_COORDINATOR,
  /// nothing written. A partition restarted under its coordinator has not
  /// been elected again and so takes no marker until it is.
  uint64_t load_generation = 0;
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

/// Periodic timer of a partition leader: expire idle producers.
struct producer_expiration_tick {};

/// Periodic timer of a partition leader (every replica.lag.time.max.ms / 2,
/// Kafka's isr-expiration task): propose removing lagging followers.
struct isr_expiration_tick {};
/// An AlterIsr of the leader at `leader_epoch` got no answer: sent again
/// while still in flight.
struct alter_isr_retry {
  int32_t leader_epoch = -1;
};
/// A fetch the partition leader held (fetch_request::max_wait_ms) has
/// waited its time: answered with what is there (nothing, usually).
struct fetch_wait_expired {
  uint64_t id = 0;
};

// -- replication (docs/replication.md) ------------------------------------------

/// A follower's fetch from its partition's leader (Kafka's FetchRequest with
/// replica_id = the follower's node id), sent by the follower node's
/// replica fetcher to the leader node's broker, which hands it to the
/// partition. The leader answers with the batches from `fetch_offset` up to
/// its own synced log end (not the HW), or with the diverging epoch when
/// the follower's log parts from its own (KIP-320 / IBP 2.7), or holds the
/// fetch up to `max_wait_ms` (replica.fetch.wait.max.ms) while it has
/// nothing new and its HW is `high_watermark`, the follower's.
struct replica_fetch_request {
  topic_partition tp;
  int32_t follower = -1;            // node id
  int64_t fetch_offset = 0;         // the follower's synced log end offset
  int32_t last_fetched_epoch = -1;  // leader epoch of its last batch (-1: none)
  int32_t current_leader_epoch = -1; // the leader epoch it follows
  int64_t high_watermark = 0;       // the follower's HW
  int32_t max_bytes = 1048576;      // replica.fetch.max.bytes (at least one batch)
  int32_t max_wait_ms = 500;
};
/// NOT_LEADER_OR_FOLLOWER (not the leader, or not an assigned replica),
/// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (the follower's epoch is
/// older / newer), OFFSET_OUT_OF_RANGE (fetch offset past the log end),
/// NOT_ENOUGH_REPLICAS never.
struct replica_fetch_response {
  error_code error = error_code::none;
  std::string message;
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  int64_t log_end_offset = -1;
  /// The logs diverge: the leader's end of the follower's last fetched
  /// epoch (both -1 when the leader has no epoch at or below it); the
  /// follower truncates and fetches again; `records` is then empty.
  bool diverging = false;
  int32_t diverging_epoch = -1;
  int64_t diverging_end_offset = -1;
  std::string records; // whole RecordBatch v2 batches as the leader stores them
};
/// To a replica from its node's broker (LeaderAndIsr made it a follower of
/// `leader` at `leader_epoch`): it stops leading (produces, markers and
/// fetches get NOT_LEADER_OR_FOLLOWER, replies still waiting for the HW
/// too), waits for its writes in flight and answers its position.
struct become_follower_request {
  int32_t leader = -1;
  int32_t leader_epoch = -1;
};
/// Batches fetched from the leader at `leader_epoch`, appended as they are
/// (partition_core::append_replica) and synced before the answer; the HW
/// becomes min(leader_high_watermark, log end).
struct replica_append_request {
  int32_t leader_epoch = -1;
  std::string records;
  int64_t leader_high_watermark = 0;
};
/// The leader answered a diverging epoch: the replica truncates
/// (replication::follower_truncation) and answers its new position.
struct replica_truncate_request {
  int32_t leader_epoch = -1;
  int32_t diverging_epoch = -1;
  int64_t diverging_end_offset = -1;
};
/// A follower's position after one of the three requests above. Errors:
/// FENCED_LEADER_EPOCH (it follows another leader epoch now),
/// NOT_LEADER_OR_FOLLOWER (it leads), KAFKA_STORAGE_ERROR, CORRUPT_MESSAGE
/// (a fetched batch that does not decode: nothing of it is appended).
struct replica_position {
  error_code error = error_code::none;
  std::string message;
  int64_t log_end_offset = 0;
  int32_t last_fetched_epoch = -1;
  int64_t high_watermark = 0;
  /// After a truncation: false when the replica truncated to the end of an
  /// older epoch and must ask again with it (KIP-279).
  bool truncation_completed = true;
};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(active_producer, x.pid, x.epoch, x.last_sequence, x.last_timestamp_ms,
              x.coordinator_epoch, x.current_txn_start_offset)
CAFTX_INSPECT(produce_request, x.tp, x.transactional_id, x.records, x.from_coordinator,
              x.leader_epoch, x.load_generation, x.acks)
CAFTX_INSPECT(produce_response, x.error, x.message, x.base_offset, x.log_start_offset)
CAFTX_INSPECT(fetch_request, x.tp, x.fetch_offset, x.max_bytes, x.isolation, x.max_wait_ms,
              x.load_generation, x.last_seen_leader_epoch)
CAFTX_INSPECT(fetch_response, x.error, x.message, x.high_watermark, x.last_stable_offset,
              x.log_start_offset, x.aborted_transactions, x.records)
CAFTX_INSPECT(list_offsets_request, x.tp, x.timestamp, x.isolation)
CAFTX_INSPECT(list_offsets_response, x.error, x.offset, x.timestamp)
CAFTX_INSPECT(delete_records_request, x.tp, x.offset)
CAFTX_INSPECT(delete_records_response, x.error, x.message, x.low_watermark)
CAFTX_INSPECT(become_leader_response, x.error, x.message, x.leader_epoch, x.log_start_offset,
              x.log_end_offset, x.load_generation)
CAFTX_INSPECT(write_txn_marker_request, x.pid, x.epoch, x.coordinator_epoch, x.committed, x.tp,
              x.transaction_version, x.leader_epoch, x.load_generation)
CAFTX_INSPECT(describe_producers_request, x.tp)
CAFTX_INSPECT(describe_producers_response, x.error, x.message, x.active_producers)
CAFTX_INSPECT(fetch_wait_expired, x.id)
CAFTX_INSPECT(replica_fetch_request, x.tp, x.follower, x.fetch_offset, x.last_fetched_epoch,
              x.current_leader_epoch, x.high_watermark, x.max_bytes, x.max_wait_ms)
CAFTX_INSPECT(replica_fetch_response, x.error, x.message, x.high_watermark, x.log_start_offset,
              x.log_end_offset, x.diverging, x.diverging_epoch, x.diverging_end_offset, x.records)
CAFTX_INSPECT(become_follower_request, x.leader, x.leader_epoch)
CAFTX_INSPECT(replica_append_request, x.leader_epoch, x.records, x.leader_high_watermark)
CAFTX_INSPECT(replica_truncate_request, x.leader_epoch, x.diverging_epoch, x.diverging_end_offset)
CAFTX_INSPECT(replica_position, x.error, x.message, x.log_end_offset, x.last_fetched_epoch,
              x.high_watermark, x.truncation_completed)
CAFTX_INSPECT_EMPTY(become_leader_request)
CAFTX_INSPECT_EMPTY(retention_tick)
CAFTX_INSPECT_EMPTY(cleaner_tick)
CAFTX_INSPECT_EMPTY(cleaner_step)
CAFTX_INSPECT_EMPTY(write_snapshot_request)
CAFTX_INSPECT_EMPTY(producer_expiration_tick)
CAFTX_INSPECT_EMPTY(isr_expiration_tick)
CAFTX_INSPECT(alter_isr_retry, x.leader_epoch)

} // namespace caftx
