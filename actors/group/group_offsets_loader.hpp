// Replays a group coordinator's partition of `__consumer_offsets` into a
// group_coordinator_core, a chunk at a time (docs/transactions.md
// §TxnOffsetCommit, Kafka's GroupMetadataManager.loadGroupsAndOffsets), in
// offset order:
//
// - a plain batch's offset records (key OffsetCommitKey, value
//   OffsetCommitValue, runtime/coordinator_records.hpp) are committed
//   offsets, each with its log offset; a null value deletes the offset;
// - a transactional data batch's records are offsets pending for its
//   producer id (with their log offsets);
// - a control batch (the commit or abort marker the transaction coordinator
//   had written into this partition) completes or drops that producer's
//   pending offsets.
//
// Only records below the election's log end offset are replayed. No CAF:
// the actor feeds it the bytes of each fetch and calls next_chunk() once
// per message to itself, answering COORDINATOR_LOAD_IN_PROGRESS in between.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/group/group_coordinator_core.hpp"
#include "runtime/status.hpp"

namespace caftx {

class group_offsets_loader {
public:
  explicit group_offsets_loader(int64_t end_offset) : end_offset_(end_offset) {}

  /// Hands over the next fetched bytes (whole RecordBatch v2 batches,
  /// concatenated); the ones fed before must have been consumed.
  void feed(std::string records);

  /// Applies the fed batches to `core`, whole batches until at least
  /// `max_records` (>= 1) records were read or the fed bytes end. Returns
  /// true once they ended. Errors: KAFKA_STORAGE_ERROR naming the offset of
  /// a batch or record that does not decode (the core then holds the
  /// records before its batch).
  status_or<bool> next_chunk(group_coordinator_core& core, size_t max_records);

  /// The offset to read next: one past the last batch replayed.
  int64_t next_offset() const { return next_offset_; }
  void set_next_offset(int64_t offset) { next_offset_ = offset; }
  /// True once every record below the end offset was replayed.
  bool done() const { return next_offset_ >= end_offset_; }
  /// Records read so far (offsets, tombstones, markers).
  size_t loaded() const { return loaded_; }

private:
  int64_t end_offset_;
  int64_t next_offset_ = 0;
  std::string fed_;
  size_t pos_ = 0;
  size_t loaded_ = 0;
};

} // namespace caftx
