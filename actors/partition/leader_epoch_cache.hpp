// A replica's leader epoch cache (Kafka's LeaderEpochFileCache, KIP-101):
// for each leader epoch the offset of the first record written in it. A
// follower finds its truncation point from it (KIP-279, KIP-320), a leader
// answers OffsetsForLeaderEpoch and detects a diverging follower from it.
// Pure value type: no CAF, no disk (the shell persists entries() as the
// partition's leader-epoch checkpoint, snapshot_codec::encode_epochs;
// docs/replication.md). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.hpp"

namespace caftx {

/// Kafka's RecordBatch.NO_PARTITION_LEADER_EPOCH / UNDEFINED_EPOCH.
inline constexpr int32_t undefined_epoch = -1;
/// Kafka's UNDEFINED_EPOCH_OFFSET.
inline constexpr int64_t undefined_epoch_offset = -1;

/// One entry: `epoch` started at `start_offset` (Kafka's EpochEntry).
struct epoch_entry {
  int32_t epoch = undefined_epoch;
  int64_t start_offset = undefined_epoch_offset;
  friend bool operator==(const epoch_entry& a, const epoch_entry& b) {
    return a.epoch == b.epoch && a.start_offset == b.start_offset;
  }
};

/// The answer to "where does epoch E end?" (Kafka's OffsetAndEpoch as
/// returned by endOffsetFor): the largest epoch at or below E that this
/// replica knows and the offset one past its last record; both undefined
/// when E is undefined, the cache is empty or E is above every known epoch.
struct epoch_end {
  int32_t epoch = undefined_epoch;
  int64_t end_offset = undefined_epoch_offset;
  friend bool operator==(const epoch_end& a, const epoch_end& b) {
    return a.epoch == b.epoch && a.end_offset == b.end_offset;
  }
};

class leader_epoch_cache {
public:
  leader_epoch_cache() = default;

  /// Records that `epoch` starts at `start_offset` (Kafka's assign): a
  /// leader calls it with (its epoch, its log end offset) on becoming
  /// leader, before any append; a replica calls it for every appended batch
  /// whose partition leader epoch is newer than the latest. Entries that
  /// would break monotonicity (an epoch or start offset not below the new
  /// one) are removed first. Returns true if the cache changed (the shell
  /// then persists it). Requires epoch >= 0 and start_offset >= 0.
  bool assign(int32_t epoch, int64_t start_offset);

  /// Kafka's endOffsetFor(requestedEpoch, logEndOffset):
  /// - E undefined or the cache empty: (undefined, undefined);
  /// - E the latest epoch: (E, log_end_offset);
  /// - E above every epoch known: (undefined, undefined);
  /// - E below every epoch known: (E, first start offset);
  /// - otherwise: (largest epoch <= E, start offset of the first epoch > E).
  epoch_end end_offset_for(int32_t requested_epoch, int64_t log_end_offset) const;

  /// The log was truncated to end at `end_offset`: drops every entry
  /// starting at or above it (Kafka's truncateFromEnd).
  void truncate_from_end(int64_t end_offset);

  /// The log now starts at `start_offset`: entries wholly below it go and
  /// the last one at or below it starts at it (Kafka's truncateFromStart).
  void truncate_from_start(int64_t start_offset);

  /// The latest entry, if any.
  std::optional<epoch_entry> latest() const;
  /// The latest epoch, undefined_epoch if empty.
  int32_t latest_epoch() const { return entries_.empty() ? undefined_epoch : entries_.back().epoch; }
  const std::vector<epoch_entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

  /// A cache holding `entries` as read back from the partition's
  /// leader-epoch checkpoint (snapshot_codec::decode_epochs, which checks
  /// the order). Errors (KAFKA_STORAGE_ERROR): an entry with a negative
  /// epoch or offset, or not after the one before (epochs strictly
  /// increasing, start offsets not decreasing).
  static status_or<leader_epoch_cache> from_entries(std::vector<epoch_entry> entries);

private:
  std::vector<epoch_entry> entries_; // strictly increasing epoch and start offset
};

} // namespace caftx
