// Records and record batches, shaped after Kafka's RecordBatch v2: producer
// id, producer epoch, base sequence, attributes with the transactional and
// control bits, and control records for commit/abort markers (docs/producer-state.md
// §Control-records). Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ids.hpp"

namespace caftx {

/// A record header (key, value bytes).
struct record_header {
  std::string key;
  std::string value;
};

/// One record: key and value are opaque bytes. An empty key is Kafka's
/// null key (no key).
struct record {
  std::string key;
  std::string value;
  std::vector<record_header> headers;
  int64_t timestamp_ms = -1;
  /// Kafka's null value (`value` is then empty): a tombstone, which on a
  /// compacted topic removes the key (docs/compaction.md).
  bool null_value = false;
  /// Offset delta in its batch as stored (decoded batches); -1 = its index
  /// in `records` (a batch as a producer builds it). A cleaned batch keeps
  /// its records' offsets, so its deltas may have gaps (docs/compaction.md).
  int32_t offset_delta = -1;
};

/// Batch attribute bit 6 (KIP-534): the base timestamp holds the delete
/// horizon, the time after which the cleaner drops the batch's tombstones
/// and (for a control batch) its marker.
inline constexpr int16_t attr_delete_horizon = 0x40;

/// Kafka's batch attribute bits (magic v2).
inline constexpr int16_t attr_transactional = 0x10;
inline constexpr int16_t attr_control = 0x20;

/// Control record types (docs/producer-state.md §Control-records).
enum class control_type : int16_t { abort = 0, commit = 1 };

/// An end-transaction marker: the content of a control record.
struct end_txn_marker {
  control_type type = control_type::abort;
  coordinator_epoch cepoch{0};
};

/// A batch of records from one producer to one partition. A control batch
/// carries exactly one control record (the marker) and occupies one offset.
struct record_batch {
  int64_t base_offset = -1;        // assigned by the partition leader
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  int32_t base_sequence = no_sequence;
  int16_t attributes = 0;
  std::vector<record> records;
  /// The header's last offset delta as stored (decoded batches); -1 =
  /// record_count() - 1. A cleaned batch keeps its offset range with fewer
  /// records, or none (docs/compaction.md).
  int32_t last_offset_delta = -1;

  bool is_transactional() const { return (attributes & attr_transactional) != 0; }
  bool is_control() const { return (attributes & attr_control) != 0; }
  /// Number of records in `records` (1 for a control batch as written).
  int32_t record_count() const { return static_cast<int32_t>(records.size()); }
  /// Offsets the batch occupies: last_offset() - base_offset + 1.
  int32_t offset_count() const {
    return last_offset_delta >= 0 ? last_offset_delta + 1 : record_count();
  }
  int64_t last_offset() const { return base_offset + offset_count() - 1; }
  /// The offset of records[k].
  int64_t offset_of(size_t k) const {
    auto d = records[k].offset_delta;
    return base_offset + (d >= 0 ? d : static_cast<int64_t>(k));
  }
  /// base_sequence + offset_count() - 1, wrapping after INT32_MAX to 0.
  int32_t last_sequence() const;
  int64_t max_timestamp_ms() const;
};

/// What a partition leader keeps of a batch without its records: the fields
/// of its RecordBatch v2 header and, for a control batch, its marker.
struct batch_info {
  int64_t base_offset = -1;
  int32_t record_count = 0; // offsets the batch occupies (last offset delta + 1)
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  int32_t base_sequence = no_sequence;
  int16_t attributes = 0;
  int64_t max_timestamp_ms = -1;
  int32_t size_bytes = 0; // of its RecordBatch v2 bytes (0 where not encoded)
  /// The marker of a well-formed control batch; nullopt otherwise.
  std::optional<end_txn_marker> marker;

  bool is_transactional() const { return (attributes & attr_transactional) != 0; }
  bool is_control() const { return (attributes & attr_control) != 0; }
  int64_t last_offset() const { return base_offset + record_count - 1; }
  int32_t last_sequence() const;
};

/// The batch_info of a decoded batch.
batch_info info_of(const record_batch& b);

/// Adds `delta` to a sequence number with Kafka's wrap-around after
/// 2147483647 to 0.
int32_t add_sequence(int32_t sequence, int32_t delta);

/// Builds a control batch for (pid, epoch) holding one marker record with
/// Kafka's layout: key = int16 version 0 + int16 type, value = int16
/// version 0 + int32 coordinator epoch (big-endian).
record_batch make_control_batch(producer_id pid, producer_epoch epoch,
                                end_txn_marker marker, int64_t timestamp_ms);

/// Reads the marker of a control batch; nullopt if the batch is not a
/// well-formed control batch.
std::optional<end_txn_marker> parse_control_batch(const record_batch& batch);

/// An aborted transaction as returned by Fetch under read_committed
/// (docs/producer-state.md §Fetch, §Aborted-index).
struct aborted_transaction {
  producer_id pid = no_producer_id;
  int64_t first_offset = -1;
};

/// Fetch isolation level (Fetch v4+ `isolation_level`).
enum class isolation_level : int8_t { read_uncommitted = 0, read_committed = 1 };

} // namespace caftx
