// Kafka's RecordBatch v2 (magic 2, KIP-98): the one byte format of a batch
// in caftx. The producer session encodes a batch once; the partition leader
// checks it, stamps its base offset and leader epoch into the header (both
// outside the CRC) and stores the bytes as they are; Fetch returns them
// unchanged, concatenated as Kafka's `records` field; the consumer decodes.
// Layout and rules: docs/record-batch.md. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
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
  int16_t attributes = 0; // bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control
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
/// partition leader epoch. An empty key is written as a null key (-1) and
/// an empty value as an empty value; the base timestamp is the first
/// record's and the max timestamp the largest. Requires at least one record.
std::string encode(const record_batch& b, int32_t partition_leader_epoch = -1);

/// Reads the header of the batch at the start of `bytes`. Errors
/// (CORRUPT_MESSAGE, naming what is wrong): fewer than 61 bytes, a batch
/// length that runs past `bytes` or below the header, a magic other than 2,
/// a negative record count or a last offset delta that does not match it.
/// Does not check the CRC.
status_or<batch_header> read_header(std::string_view bytes);

/// True if the stored CRC matches the bytes of the batch at the start of
/// `bytes` (whose header read_header accepted).
bool crc_matches(std::string_view bytes, const batch_header& h);

/// Checks one batch as a partition leader does before appending it:
/// read_header, exactly one batch in `bytes`, the CRC (CORRUPT_MESSAGE),
/// no compression (UNSUPPORTED_COMPRESSION_TYPE), and every record well
/// formed with offset deltas 0, 1, ... and the header's record count
/// (CORRUPT_MESSAGE). Returns the header.
status_or<batch_header> validate(std::string_view bytes);

/// Decodes the whole batch at the start of `bytes` (CRC checked). Errors as
/// validate(). Null keys and values decode as empty strings.
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

/// What a partition keeps of a batch: header fields and, for a control
/// batch, its marker (decoded from its single control record).
batch_info info_of(const batch_header& h, std::string_view bytes);

} // namespace caftx::v2
