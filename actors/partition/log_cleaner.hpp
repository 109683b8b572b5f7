// Log compaction (Kafka's cleanup.policy=compact, docs/compaction.md): the
// pure core of a partition's cleaner, after Kafka's LogCleaner, Cleaner,
// SkimpyOffsetMap, CleanedTransactionMetadata and LogCleanerManager. One
// cleaning round first reads the dirty part of the log into a map of key
// -> latest offset, then walks every batch from the log start to the
// round's end and says which to rewrite (fewer records, a delete horizon),
// which to delete and which to leave; the shell writes that and persists
// the checkpoint. Both phases go a bounded number of batches at a time, so
// the partition actor serves produce and fetch between them. Batches are
// read through a batch_reader (tests use memory_log). No CAF, no clock, no
// disk; not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/partition/partition_core.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// A compacted topic's settings (Kafka's topic configs of the same names,
/// config/config.hpp topic_config).
struct compaction_policy {
  /// `delete.retention.ms`: a tombstone, and a marker whose transaction's
  /// data is gone, stay this long after the round that first found them
  /// removable (the delete horizon, KIP-534).
  int64_t delete_retention_ms = 86400000;
  /// `min.cleanable.dirty.ratio`: a round starts when the dirty share of
  /// the cleanable bytes is above it (should_clean).
  double min_cleanable_dirty_ratio = 0.5;
  /// `min.compaction.lag.ms`: a round ends before the first batch whose max
  /// timestamp is less than this before the round's time.
  int64_t min_compaction_lag_ms = 0;
  /// Keys one round's map holds (from log.cleaner.dedupe.buffer.size:
  /// max_map_keys()); a dirty part with more is cleaned in several rounds.
  size_t max_map_keys = 5033164;
};

/// Keys of a map of `buffer_bytes`: 24 bytes a key (a 16-byte digest and
/// an 8-byte offset), filled to 90%, as Kafka's SkimpyOffsetMap with
/// log.cleaner.io.buffer.load.factor 0.9. At least 1.
size_t max_map_keys(int64_t buffer_bytes);

/// What a partition persists of its cleaner (the `cleaner/` key,
/// storage/FORMAT.md; Kafka's cleaner-offset-checkpoint).
struct cleaner_checkpoint {
  /// The log below this offset has been cleaned (0: never).
  int64_t clean_offset = 0;
  /// Bytes ever appended before clean_offset (the position counter of
  /// partition_core): the dirty bytes are those appended after it.
  int64_t clean_position = 0;
  /// The earliest delete horizon of a batch that still holds a tombstone
  /// or a marker (-1: none): once it passed, a round runs even if the log
  /// is not dirty (should_clean).
  int64_t next_delete_horizon_ms = -1;
};

/// The checkpoint's bytes: version uint8 (1), clean offset int64, clean
/// position int64, next delete horizon int64, little-endian (25 bytes).
std::string encode(const cleaner_checkpoint& c);
/// Errors: KAFKA_STORAGE_ERROR for another version or length.
status_or<cleaner_checkpoint> decode_cleaner_checkpoint(std::string_view bytes);

/// The 128-bit digest a map keeps of a key: the first 16 bytes of its
/// SHA-256. Kafka keeps 16 bytes of MD5; MD5 collisions can be made at
/// will, so a producer could pick a key that removes another key's live
/// record. SHA-256 has no known collision, and an accidental one among n
/// keys has odds about n^2 / 2^129 (1e-21 for a billion keys); a 64-bit hash
/// would collide by accident at a few billion keys and lose a live record
/// without a trace (docs/compaction.md §Memory).
struct key_digest {
  std::array<uint8_t, 16> bytes{};
  static key_digest of(std::string_view key);
  bool operator==(const key_digest& o) const { return bytes == o.bytes; }
};

/// key -> offset of its newest record in the dirty part (Kafka's OffsetMap):
/// 16 bytes of digest and 8 of offset per key, plus the hash table's own.
class offset_map {
public:
  /// Records `offset` for `key` (offsets come in increasing order).
  void put(std::string_view key, int64_t offset);
  /// The newest offset of `key`, or -1 if it is not in the dirty part.
  int64_t get(std::string_view key) const;
  size_t size() const { return map_.size(); }

private:
  struct hash {
    size_t operator()(const key_digest& d) const;
  };
  std::unordered_map<key_digest, int64_t, hash> map_;
};

/// INVALID_RECORD ("Compacted topic cannot accept message without key in
/// topic partition <tp>.", Kafka's LogValidator) if a record of the batch
/// at the start of `bytes` (header `h`, already validated) has no key;
/// control batches pass.
status check_keys_for_compaction(std::string_view bytes, const v2::batch_header& h,
                                 const topic_partition& tp);

/// The dirty ratio (Kafka's LogToClean.cleanableRatio): the bytes appended
/// after the checkpoint and below `end` over all bytes of the log below
/// `end`, where `end_position` is the position counter at `end` (the
/// newest snapshot: what stands for Kafka's active segment, docs/compaction.md).
/// 0 if nothing below `end` is dirty.
double dirty_ratio(const cleaner_checkpoint& c, int64_t log_start_offset,
                   int64_t log_start_position, int64_t end, int64_t end_position);

/// Whether a round should run now: the dirty ratio above the policy's
/// minimum (Kafka: cleanableRatio > minCleanableRatio), or a delete horizon
/// of the checkpoint passed.
bool should_clean(const compaction_policy& p, double ratio, const cleaner_checkpoint& c,
                  int64_t now_ms);

/// One change of a stored batch.
struct batch_rewrite {
  int64_t base_offset = -1;
  /// The new bytes (same base offset, same key); nullopt: the batch is
  /// deleted.
  std::optional<std::string> bytes;
  int32_t old_size = 0;
};

/// What one step of the rewrite phase decided, to be written at once.
struct clean_chunk {
  std::vector<batch_rewrite> rewrites;
  /// Offsets of the ABORT markers deleted: their aborted-index entries go.
  std::vector<int64_t> dropped_aborted;
  /// Bytes the log loses (old sizes minus new sizes).
  int64_t bytes_removed = 0;
  /// The round is over: checkpoint() is the one to persist with this chunk.
  bool done = false;
};

/// One cleaning round (Kafka's Cleaner.doClean) over the log as the
/// partition shows it: build_map() until it returns true, then clean()
/// until a chunk says done. Kafka's rules (docs/compaction.md §Rule):
/// - the round ends at the first of `bound` (min(LSO, HW, newest snapshot)),
///   the first batch younger than min.compaction.lag.ms, and the batch
///   before the one that would overflow the map;
/// - a data record stays if it has a key and no newer record of its key is
///   in the dirty part; a tombstone (null value) stays until its batch's
///   delete horizon passed, set to the round's time + delete.retention.ms
///   by the first round that keeps it; records without a key go;
/// - batches of aborted transactions go whole; a marker stays until no
///   batch of its transaction is left and its delete horizon (set when it
///   first becomes removable) passed;
/// - a batch that is its producer's last (its last offset is the producer's
///   last data offset, or it is a marker of the producer's current epoch
///   with no data since) stays, if need be empty, so the producer's epoch
///   and sequence survive (Kafka's isBatchLastRecordOfProducer);
/// - a kept batch keeps its base offset, last offset delta, producer id,
///   epoch and base sequence; the CRC is recomputed.
class cleaning_round {
public:
  /// `checkpoint`: where the last round ended; `dirty_position`: the
  /// position counter at max(checkpoint offset, log start) (the caller's,
  /// as it knows the log start's). `aborted`: the aborted index.
  cleaning_round(compaction_policy policy, cleaner_checkpoint checkpoint, int64_t log_start_offset,
                 int64_t dirty_position, int64_t bound, int64_t now_ms,
                 std::vector<aborted_txn_entry> aborted);

  /// Reads up to `max_batches` batches of the dirty part into the map.
  /// True once the map is complete (end() is then known). Errors: the
  /// reader's, and CORRUPT_MESSAGE for a batch whose records do not read.
  status_or<bool> build_map(const batch_reader& read, size_t max_batches);

  /// Decides on up to `max_batches` batches from where the last call
  /// stopped (the log start at first; never below `log_start_offset`, the
  /// partition's now), with `producers` the partition's producer state now.
  status_or<clean_chunk> clean(const batch_reader& read, int64_t log_start_offset,
                               const std::map<producer_id, producer_state_entry>& producers,
                               size_t max_batches);

  /// The offset the round cleans up to (valid once build_map returned true).
  int64_t end() const { return end_; }
  /// The checkpoint after the round (valid once clean() said done).
  cleaner_checkpoint checkpoint() const;
  /// Keys in the map.
  size_t map_size() const { return map_.size(); }

private:
  // Kafka's CleanedTransactionMetadata: which batches belong to aborted
  // transactions, and which markers may go.
  class txn_tracker {
  public:
    /// Tracks the aborted transactions whose marker is at or after `from`
    /// (Kafka's collectAbortedTransactions for the range read).
    txn_tracker(const std::vector<aborted_txn_entry>& aborted, int64_t from);
    /// True if the data batch belongs to an aborted transaction.
    bool on_batch(const v2::batch_header& h);
    /// True if the marker may go: its transaction has no batch left.
    bool on_marker(const v2::batch_header& h, std::optional<control_type> type);

  private:
    void consume_up_to(int64_t offset);
    struct aborted_state {
      bool observed_batch = false;
    };
    std::deque<aborted_txn_entry> pending_; // by first offset
    std::map<int64_t, aborted_state> ongoing_aborted_; // by producer id
    std::set<int64_t> ongoing_committed_;              // producer ids
  };

  compaction_policy policy_;
  cleaner_checkpoint from_;
  int64_t now_ms_;
  int64_t bound_;
  offset_map map_;
  txn_tracker map_txns_;   // over the dirty part, for the map
  txn_tracker clean_txns_; // over the whole walk, for the rewrite
  int64_t map_next_;       // next offset the map phase reads
  int64_t end_ = -1;
  int64_t end_position_;
  bool map_done_ = false;
  int64_t walk_next_ = 0;  // next offset the rewrite phase decides on
  int64_t next_horizon_ = -1;
};

} // namespace caftx
