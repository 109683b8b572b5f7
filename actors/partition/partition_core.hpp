// The pure core of a partition leader: producer state with the last 5
// batches per producer (Kafka's ProducerStateManager), the log start and end
// offsets, the high watermark, the last stable offset and the
// aborted-transaction index (docs/producer-state.md). The log itself is not
// here: the batches' bytes stay in storage, and fetch() reads them through a
// batch_reader the shell provides (tests use memory). No CAF, no clock, no
// disk. Owned by exactly one partition actor; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "runtime/record_batch.hpp"
#include "runtime/record_batch_v2.hpp"
#include "runtime/status.hpp"
#include "runtime/transaction_admin.hpp"

namespace caftx {

/// What the partition remembers of one appended batch (Kafka's
/// BatchMetadata): enough to answer a retry with the original offset.
struct batch_metadata {
  int32_t first_sequence = no_sequence;
  int32_t last_sequence = no_sequence;
  int64_t base_offset = -1;
  int64_t last_offset = -1;
};

/// The last (at most) five batches of one producer, oldest first, in 16
/// bytes each (first sequence, record count - 1, base offset) instead of a
/// deque's 512-byte chunk: producer state stays small with millions of
/// producer ids (Kafka: about 2.8 KB each).
class batch_window {
public:
  static constexpr size_t capacity = 5; // ProducerStateEntry.NUM_BATCHES_TO_RETAIN
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The i-th retained batch, 0 = oldest.
  batch_metadata operator[](size_t i) const;
  batch_metadata front() const { return (*this)[0]; }
  batch_metadata back() const { return (*this)[size_ - 1]; }
  /// Appends, dropping the oldest batch beyond the capacity.
  void push_back(const batch_metadata& m);
  void clear() { size_ = head_ = 0; }

private:
  struct slot {
    int32_t first_sequence;
    int32_t offset_delta; // record count - 1
    int64_t base_offset;
  };
  slot slots_[capacity];
  uint8_t head_ = 0; // index of the oldest
  uint8_t size_ = 0;
};

/// Per-producer state on one partition (Kafka's ProducerStateEntry).
struct producer_state_entry {
  static constexpr size_t batches_to_retain = batch_window::capacity;
  producer_epoch epoch = no_producer_epoch;
  coordinator_epoch cepoch{-1};       // highest coordinator epoch of a marker
  batch_window batches;               // oldest first, at most 5
  std::optional<int64_t> current_txn_first_offset;
  int64_t last_timestamp_ms = -1;
};

/// One entry of the aborted-transaction index (Kafka's AbortedTxn).
struct aborted_txn_entry {
  producer_id pid = no_producer_id;
  int64_t first_offset = -1;
  int64_t last_offset = -1;        // offset of the ABORT marker
  int64_t last_stable_offset = -1; // LSO recorded when the marker was written
};

/// Result of checking a client batch against the producer state.
struct produce_decision {
  /// True if the batch is a retry of one of the last 5 batches: nothing is
  /// appended and `base_offset` is the original one.
  bool duplicate = false;
  int64_t base_offset = -1;
  int64_t last_offset = -1;
};

/// What a Fetch returns (Kafka's FetchResponse partition data): whole
/// batches in [fetch_offset, upper) where upper is the HW (read_uncommitted)
/// or the LSO (read_committed), as their stored RecordBatch v2 bytes one
/// after the other; aborted transactions only for read_committed.
struct fetch_result {
  int64_t high_watermark = 0;
  int64_t last_stable_offset = 0;
  int64_t log_start_offset = 0;
  std::string records;      // concatenated RecordBatch v2 bytes
  int32_t batch_count = 0;  // batches in `records`
  int64_t next_offset = -1; // one past the last batch in `records` (-1: none)
  std::vector<aborted_transaction> aborted;
};

/// Reads stored batches: calls `fn(header, bytes)` for every batch from the
/// one that holds `offset` (or the first after it) on, in offset order,
/// until `fn` returns false or the log ends. Returns a non-ok status
/// (KAFKA_STORAGE_ERROR) if the storage cannot be read.
using batch_reader = std::function<status(
  int64_t offset, const std::function<bool(const v2::batch_header&, std::string_view)>& fn)>;

/// The producer state a partition restores instead of replaying its whole
/// log (Kafka's producer-state snapshot, ProducerStateManager): everything
/// the core knows about the log below `offset`.
struct producer_snapshot {
  int64_t offset = 0; // the log end offset the state covers
  int64_t log_start_offset = 0;
  /// Bytes ever appended before the log start offset's batch and before
  /// `offset`: the log's size is their difference (log_size_bytes()).
  int64_t log_start_position = 0;
  int64_t log_end_position = 0;
  /// The partition ever dropped a producer's state (producer.id.expiration.ms):
  /// a producer it has no state for may then be one that comes back, so it
  /// is accepted at any sequence (docs/producer-state.md §First-batches).
  bool producer_state_dropped = false;
  std::map<producer_id, producer_state_entry> producers;
};

/// A topic's retention (Kafka's `retention.ms`, `retention.bytes`); -1 =
/// unlimited.
struct retention_policy {
  int64_t retention_ms = 604800000;
  int64_t retention_bytes = -1;
};

/// A move of the log start offset (retention or DeleteRecords) that the
/// shell persists before applying it (apply_log_start).
struct log_start_move {
  int64_t log_start_offset = 0;
  int64_t log_start_position = 0;
  /// Marker offsets of the aborted-index entries that end below the new
  /// log start: dropped from the index (and their keys deleted).
  std::vector<int64_t> dropped_aborted;
};

/// What append() did beyond moving the log end offset.
struct append_result {
  int64_t base_offset = -1;
  /// The entry the batch (an ABORT marker) added to the aborted index.
  std::optional<aborted_txn_entry> aborted;
};

class partition_core {
public:
  explicit partition_core(topic_partition tp) : tp_(std::move(tp)) {}

  // -- client batches (origin CLIENT) -------------------------------------

  /// Checks `batch` in Kafka's order (docs/producer-state.md §Append): duplicate of a retained batch
  /// (success, original offsets), epoch (INVALID_PRODUCER_EPOCH), sequence
  /// (OUT_OF_ORDER_SEQUENCE_NUMBER), transaction state (INVALID_TXN_STATE);
  /// malformed batches get INVALID_RECORD. Never mutates.
  /// Policy for a producer without state (§Sequences Q1, §First-batches):
  /// its first batch must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER
  /// otherwise: an earlier batch of a new producer is missing, so a later
  /// one must not be written first), unless this partition ever dropped a
  /// producer's state by expiry (producer_state_dropped()): then any
  /// sequence is accepted, as in Kafka >= 2.5 (KIP-360), so a producer whose
  /// state expired resumes.
  status_or<produce_decision> validate_produce(const batch_info& batch) const;

  /// Appends a batch that validate_produce accepted (not a duplicate), or a
  /// control batch validate_marker accepted, at the log end offset (its own
  /// base offset is ignored) and applies it to the producer state.
  append_result append(batch_info batch);

  /// A batch a coordinator appends to its own partition (Kafka's
  /// AppendOrigin.COORDINATOR: a group coordinator's offset records, plain
  /// or transactional with the producer's id and epoch and base sequence
  /// -1): no sequence checks and no KIP-890 verification (the coordinator
  /// checked the request), but an epoch older than the producer's here is
  /// INVALID_PRODUCER_EPOCH; append() then updates the producer state (a
  /// transactional batch opens the producer's transaction: LSO, markers).
  /// Empty or control batches are INVALID_RECORD.
  status validate_coordinator_append(const batch_info& batch) const;

  // -- markers (origin COORDINATOR) ---------------------------------------

  /// KIP-890 part 1: true for a transactional batch whose producer has no
  /// open transaction here at the batch's epoch. Such a batch would open a
  /// transaction, so the shell first asks the transaction coordinator
  /// whether this partition is in the producer's ongoing transaction; a
  /// late write of a finished transaction can then not leave a hanging one.
  bool needs_verification(const batch_info& batch) const;

  /// Checks a WriteTxnMarkers entry (docs/transactions.md §WriteTxnMarkers step 4, docs/producer-state.md §Markers). A lower coordinator
  /// epoch than the highest seen for the producer gives
  /// TRANSACTION_COORDINATOR_FENCED. With transaction_version 2 (markers of
  /// the coordinator, which bumps the epoch at every EndTxn, KIP-890 part
  /// 2) the marker's epoch must be above the producer's epoch here, or equal
  /// to it while no transaction is open (a repeated marker); otherwise
  /// INVALID_PRODUCER_EPOCH, so a delayed marker never ends a later
  /// transaction. With version 1 (admin abort, KIP-664) only a lower epoch
  /// is rejected.
  status validate_marker(producer_id pid, producer_epoch epoch, end_txn_marker marker,
                         int8_t transaction_version = 2) const;

  /// Appends the control batch (it occupies one offset) and completes the
  /// producer's open transaction, if any; a marker that completes nothing
  /// changes neither the LSO nor the aborted index. Returns the control
  /// batch with its base offset, to be stored, and what append() did.
  std::pair<record_batch, append_result> append_marker(producer_id pid, producer_epoch epoch,
                                                       end_txn_marker marker, int64_t now_ms);

  // -- recovery ------------------------------------------------------------

  /// Re-applies a batch read back from storage (origin REPLICATION: no
  /// producer checks); the high watermark is set once the load is done
  /// (load_high_watermark). The batch may
  /// start above the log end offset (the cleaner removed the batches
  /// between, docs/compaction.md): the log end moves past the gap. Errors
  /// (KAFKA_STORAGE_ERROR): the batch starts below the log end offset.
  status replay(const batch_info& batch);

  /// A batch a follower fetched from its leader (Kafka's
  /// AppendOrigin.REPLICATION, UnifiedLog.appendAsFollower): stored at the
  /// leader's offsets with no producer checks (the leader made them; a
  /// producer unknown here is accepted, KAFKA-6003), applied to the
  /// producer state, the LSO and the aborted index as on the leader, so a
  /// follower that becomes leader deduplicates, fences and serves
  /// read_committed from its first request. The high watermark does not
  /// move (the follower takes the leader's, set_high_watermark). As
  /// replay(), the batch may start above the log end offset (the leader's
  /// cleaner removed the batches between). Errors (KAFKA_STORAGE_ERROR):
  /// the batch starts below the log end offset or holds no record.
  status_or<append_result> append_replica(const batch_info& batch);

  /// The state to persist as a snapshot: only valid while every appended
  /// batch is durable (high_watermark() == log_end_offset()).
  producer_snapshot snapshot() const;

  /// Starts from a snapshot instead of offset 0: restores the producers and
  /// offsets of `s` and the aborted-index entries whose marker lies below
  /// s.offset (from storage); the log after s.offset is then replayed.
  /// Requires a fresh core.
  void restore(const producer_snapshot& s, std::vector<aborted_txn_entry> aborted);

  // -- retention (Kafka's UnifiedLog.deleteOldSegments, deleteRecords) -----

  /// Where retention moves the log start: walks the batches from the log
  /// start through `read` and removes them while every one is older than
  /// retention_ms (its max timestamp before now_ms - retention_ms) or the
  /// log without it still holds at least retention_bytes, stopping at the
  /// first batch that stays (Kafka's takeWhile over segments; here per
  /// batch). Never moves the log start above the last stable offset (an
  /// undecided transaction's data stays until its marker) nor the high
  /// watermark. nullopt if nothing is to be removed.
  status_or<std::optional<log_start_move>> plan_retention(const batch_reader& read,
                                                          const retention_policy& policy,
                                                          int64_t now_ms) const;

  /// DeleteRecords (KIP-107): the log starts at `offset` (-1: the high
  /// watermark). Errors: OFFSET_OUT_OF_RANGE for an offset below -1 or
  /// above the high watermark. nullopt if `offset` is not above the
  /// current log start (nothing changes; the low watermark is
  /// log_start_offset()).
  status_or<std::optional<log_start_move>> plan_delete_records(const batch_reader& read,
                                                               int64_t offset) const;

  /// Applies a move planned above (after the shell persisted it). Producer
  /// state is untouched: a producer whose batches were all removed keeps
  /// its sequence and epoch until producer.id.expiration.ms (KIP-360's fix
  /// of KAFKA-7190).
  void apply_log_start(const log_start_move& move);

  /// Bytes of the batches from the log start's batch to the log end.
  int64_t log_size_bytes() const { return log_end_position_ - log_start_position_; }
  /// The position counters: bytes ever appended before the log end, and
  /// that minus the log's size (log_size_bytes()).
  int64_t log_start_position() const { return log_start_position_; }
  int64_t log_end_position() const { return log_end_position_; }

  // -- compaction (docs/compaction.md) -------------------------------------

  /// Applies a written step of the cleaner: the log is `bytes_removed`
  /// smaller (the log start position moves up by that, so log_size_bytes()
  /// stays the stored size) and the aborted-index entries of the deleted
  /// ABORT markers `dropped_aborted` go.
  void apply_cleaned(int64_t bytes_removed, const std::vector<int64_t>& dropped_aborted);

  // -- expiration ------------------------------------------------------------

  /// Drops the state of every producer without an open transaction whose
  /// last timestamp is at least `expiration_ms` before `now_ms` (Kafka's
  /// producer.id.expiration.ms, docs/producer-state.md §Expiration). A producer with an open transaction
  /// never expires. Returns the number of producers dropped; if any, the
  /// partition has dropped producer state from then on
  /// (producer_state_dropped(), kept in its snapshots).
  size_t remove_expired_producers(int64_t now_ms, int64_t expiration_ms);

  /// True once the partition dropped some producer's state by expiry
  /// (here, or before a restart: restored from the snapshot, or found
  /// again by the expiry check at load). Never reset.
  bool producer_state_dropped() const { return producer_state_dropped_; }

  // -- high watermark --------------------------------------------------------

  /// The high watermark after a load (restore() and replay()): `hw`
  /// clamped to [log start, log end], below what the load assumed if need
  /// be: the log end for a partition of one replica (all of it is
  /// durable, so committed), the stored checkpoint for a replicated one
  /// (its log end may hold batches no follower has). Transactions whose
  /// marker lies below it stop holding the LSO.
  void load_high_watermark(int64_t hw);

  /// Moves the high watermark to `hw` (the durable log end in a one-replica
  /// node). Completed transactions whose marker is below it stop holding
  /// the LSO. Requires: high_watermark() <= hw <= log_end_offset().
  void set_high_watermark(int64_t hw);

  // -- observers -------------------------------------------------------------

  const topic_partition& tp() const { return tp_; }
  int64_t log_start_offset() const { return log_start_offset_; }
  int64_t log_end_offset() const { return log_end_offset_; }
  int64_t high_watermark() const { return high_watermark_; }
  /// LSO = first unstable offset if below the HW, else the HW (docs/producer-state.md §LSO).
  int64_t last_stable_offset() const;
  std::optional<int64_t> first_unstable_offset() const;
  const std::map<producer_id, producer_state_entry>& producers() const { return producers_; }
  const std::vector<aborted_txn_entry>& aborted_index() const { return aborted_index_; }
  /// Estimated heap bytes of the producer state (entries, open and
  /// unreplicated transactions, as tree nodes) and of the aborted-transaction
  /// index (Kafka has no such gauge; its ProducerStateManager is what this
  /// measures).
  size_t producer_state_bytes() const;

  /// DescribeProducers (KIP-664, docs/producer-state.md §DescribeProducers), as Kafka's
  /// UnifiedLog.activeProducers: one row per producer with state here, by
  /// producer id: epoch, last sequence (-1 if only markers since the last
  /// epoch change), last timestamp, highest coordinator epoch of a marker
  /// (-1 if none) and the first offset of its open transaction (-1 if none).
  std::vector<active_producer> active_producers() const;

  /// Batches in [fetch_offset, upper) up to `max_bytes` (at least one
  /// batch), read through `read`. Errors: OFFSET_OUT_OF_RANGE if
  /// fetch_offset is below the log start or above the log end offset;
  /// the reader's error.
  status_or<fetch_result> fetch(const batch_reader& read, int64_t fetch_offset,
                                int32_t max_bytes, isolation_level isolation) const;

  /// ListOffsets: -1 = latest (LSO under read_committed, HW otherwise),
  /// -2 = earliest (the log start offset); a timestamp gives the first
  /// offset holding a record at or after it, or -1 if that offset is at or
  /// above the bound. A timestamp reads the log through `read` from its start
  /// (batches whose max timestamp is below it are skipped undecoded).
  /// `record_timestamp`, when given, receives the found record's
  /// timestamp (-1 for latest, earliest and nothing found), as Kafka's
  /// ListOffsets v1+ answers it.
  status_or<int64_t> list_offset(const batch_reader& read, int64_t timestamp,
                                 isolation_level isolation,
                                 int64_t* record_timestamp = nullptr) const;

private:
  void apply(const batch_info& batch);
  /// apply() at the batch's own base offset, with the aborted-index entry
  /// it added.
  append_result apply_appended(const batch_info& batch);

  status_or<log_start_move> plan_move(const batch_reader& read, int64_t bound,
                                      const std::function<bool(const v2::batch_header&,
                                                               int64_t size_left)>& remove) const;

  topic_partition tp_;
  int64_t log_start_offset_ = 0;
  int64_t log_end_offset_ = 0;
  int64_t log_start_position_ = 0;
  int64_t log_end_position_ = 0;
  int64_t high_watermark_ = 0;
  bool producer_state_dropped_ = false;
  std::map<producer_id, producer_state_entry> producers_;
  // first offset -> producer id of open transactions (Kafka's ongoingTxns)
  std::map<int64_t, producer_id> ongoing_txns_;
  // first offset -> marker offset of completed transactions whose marker is
  // not yet below the HW (Kafka's unreplicatedTxns)
  std::map<int64_t, int64_t> unreplicated_txns_;
  std::vector<aborted_txn_entry> aborted_index_;
};

} // namespace caftx
