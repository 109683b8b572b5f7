// Kafka's RecordBatch v2 (magic 2, KIP-98): the one byte format of a batch
// in caftx. The producer session encodes a batch once; the partition leader
// checks it, stamps its base offset and leader epoch into the header (both
// outside the CRC) and stores the bytes as they are; Fetch returns them
// unchanged, concatenated as Kafka's `records` field; the consumer decodes.
// Layout and rules: docs/record-batch.md. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx::v2 {

/// Bytes of the batch header before the first record (Kafka's
/// DefaultRecordBatch.RECORD_BATCH_OVERHEAD).
inline constexpr size_t header_size = 61;
/// The magic byte of this format.
inline constexpr int8_t magic = 2;
/// Byte offsets of header fields (big-endian integers).
inline constexpr size_t base_offset_pos = 0;
inline constexpr size_t batch_length_pos = 8;
inline constexpr size_t leader_epoch_pos = 12;
inline constexpr size_t magic_pos = 16;
inline constexpr size_t crc_pos = 17;
inline constexpr size_t attributes_pos = 21; // the CRC covers from here to the end

/// The header of a RecordBatch v2, field by field as on the wire.
struct batch_header {
  int64_t base_offset = 0;
  int32_t batch_length = 0; // bytes after this field (the whole batch - 12)
  int32_t partition_leader_epoch = -1;
  int8_t magic = 2;
  uint32_t crc = 0; // CRC-32C of the bytes from attributes to the end
  int16_t attributes = 0; // bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control,
                          // 6 delete horizon (KIP-534)
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = -1;
  int64_t max_timestamp = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t record_count = 0;

  int64_t last_offset() const { return base_offset + last_offset_delta; }
  int32_t size() const { return batch_length + 12; }
};

/// CRC-32C (Castagnoli, reflected, init and final xor 0xffffffff), as
/// Kafka's Crc32C: crc32c("123456789") == 0xe3069283. Uses the SSE 4.2
/// instruction where the processor has it, else Boost.CRC.
uint32_t crc32c(std::string_view bytes);
/// The same through Boost.CRC only (the reference the fast path is tested
/// against).
uint32_t crc32c_portable(std::string_view bytes);

/// Encodes `b` (its base offset, producer id, epoch, base sequence,
/// attributes and records; no compression, CreateTime) with the given
/// partition leader epoch. An empty key is written as a null key (-1), a
/// record with `null_value` with a null value (-1) and any other value as
/// it is; the base timestamp is the first record's and the max timestamp
/// the largest. Records get offset deltas 0, 1, ... (their `offset_delta`
/// and the batch's `last_offset_delta` are ignored: a batch as produced).
/// Requires at least one record.
std::string encode(const record_batch& b, int32_t partition_leader_epoch = -1);

/// Reads the header of the batch at the start of `bytes`. Errors
/// (CORRUPT_MESSAGE, naming what is wrong): fewer than 61 bytes, a batch
/// length that runs past `bytes` or below the header, a magic other than 2,
/// a negative last offset delta or a record count outside [0, last offset
/// delta + 1] (a cleaned batch keeps its offset range with fewer records,
/// docs/compaction.md). Does not check the CRC.
status_or<batch_header> read_header(std::string_view bytes);

/// True if the stored CRC matches the bytes of the batch at the start of
/// `bytes` (whose header read_header accepted).
bool crc_matches(std::string_view bytes, const batch_header& h);

/// Checks one batch as a partition leader does before appending it:
/// read_header, exactly one batch in `bytes`, the CRC (CORRUPT_MESSAGE),
/// at least one record, a last offset delta of record count - 1, no delete
/// horizon flag (the cleaner's), and every record well formed with offset
/// deltas 0, 1, ... (CORRUPT_MESSAGE). A compressed batch (gzip, snappy,
/// lz4, zstd) is checked on its records decompressed
/// (runtime/compression.hpp: UNSUPPORTED_COMPRESSION_TYPE for another
/// codec id, CORRUPT_MESSAGE for records that do not decompress) and kept
/// as sent. Returns the header.
status_or<batch_header> validate(std::string_view bytes);

/// The batch at the start of `bytes` (header `h`) with its records
/// decompressed: the same header with compression bits 0, batch length
/// and CRC-32C recomputed. Errors: those of compression::decompress.
status_or<std::string> inflate(std::string_view bytes, const batch_header& h);

/// Decodes the whole batch at the start of `bytes` (CRC checked; a
/// compressed batch decompressed). Errors as validate(), except that a stored batch may be thinned by the cleaner:
/// fewer records (or none) than offsets, with increasing offset deltas
/// (set in each record, and the header's in `last_offset_delta`). Null keys
/// decode as empty strings, null values as empty with `null_value` set.
status_or<record_batch> decode(std::string_view bytes);

/// Decodes every batch of a concatenation (a Fetch response's `records`).
status_or<std::vector<record_batch>> decode_all(std::string_view records);

/// Calls `fn(header, batch bytes)` for each batch of a concatenation, in
/// order, until it returns false; CRCs are not checked. Errors as
/// read_header for a batch cut short or malformed.
status for_each_batch(std::string_view records,
                      const std::function<bool(const batch_header&, std::string_view)>& fn);

/// Writes `base_offset` and `partition_leader_epoch` into the header of the
/// batch at the start of `bytes` (both lie outside the CRC).
void stamp(std::string& bytes, int64_t base_offset, int32_t partition_leader_epoch);

/// What a partition keeps of a batch: header fields (record_count = the
/// offsets it occupies, last offset delta + 1) and, for a control batch,
/// its marker (decoded from its single control record).
batch_info info_of(const batch_header& h, std::string_view bytes);

// -- the cleaner's view (docs/compaction.md) -----------------------------------

/// One record of a stored batch as views into the batch's bytes (Kafka's
/// DefaultRecord as the LogCleaner reads it).
struct record_view {
  int32_t offset_delta = 0;
  int64_t timestamp_ms = -1; // base timestamp + the record's delta
  bool has_key = false;      // false: a null key
  std::string_view key;
  bool null_value = false;   // a tombstone
  std::string_view value;    // empty for a tombstone
  /// The record's bytes after its timestamp delta (offset delta, key,
  /// value, headers): copied unchanged when the batch is rebuilt.
  std::string_view tail;
};

/// Calls `fn` for each record of the batch at the start of `bytes` (whose
/// header is `h`), in order. Errors (CORRUPT_MESSAGE) as decode(); the CRC
/// is not checked. A compressed batch is decompressed into `*scratch`,
/// which the views point into (keep it while they are used); without
/// `scratch` it is UNSUPPORTED_COMPRESSION_TYPE.
status for_each_record(std::string_view bytes, const batch_header& h,
                       const std::function<void(const record_view&)>& fn,
                       std::string* scratch = nullptr);

/// The batch of header `h` with only the records `kept` (views into its
/// bytes, or into the decompressed records of a compressed batch, in
/// order; none: an empty batch), uncompressed, as Kafka's
/// MemoryRecords.filterTo writes it: base offset, last offset delta, partition leader epoch,
/// producer id, epoch, base sequence, max timestamp and the transactional
/// and control bits unchanged, so the records keep their offsets and
/// timestamps. With `delete_horizon_ms` the delete horizon flag is set and
/// the base timestamp is the horizon (KIP-534); else the base timestamp is
/// kept (-1 for an empty batch, Kafka's writeEmptyHeader). Record count,
/// batch length and the CRC-32C are recomputed.
std::string rebuild(const batch_header& h, const std::vector<record_view>& kept,
                    std::optional<int64_t> delete_horizon_ms);

/// The delete horizon of a batch (its base timestamp), if the flag is set.
std::optional<int64_t> delete_horizon(const batch_header& h);

} // namespace caftx::v2
