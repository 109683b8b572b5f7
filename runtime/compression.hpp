// The compression codecs of Kafka's RecordBatch v2 (attributes bits 0-2):
// gzip (zlib), snappy (raw, or the xerial framing Kafka's Java client
// writes), lz4 (the LZ4 frame format) and zstd, through Debian's zlib,
// libsnappy, liblz4 and libzstd. A partition stores a batch as its
// producer compressed it and decompresses only to check and read its
// records (docs/record-batch.md §Compression). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.hpp"

namespace caftx::compression {

/// Kafka's CompressionType ids.
enum codec : int16_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

/// The most a batch's records may decompress to: more is CORRUPT_MESSAGE
/// (a bound against decompression bombs; Kafka's message.max.bytes bounds
/// the compressed size, 1 MiB by default).
inline constexpr size_t max_decompressed_bytes = size_t{64} << 20;

/// The bytes `in` compressed with `codec` decompress to. Errors:
/// UNSUPPORTED_COMPRESSION_TYPE for an id other than 1-4, CORRUPT_MESSAGE
/// for bytes that do not decompress or decompress to more than `limit`.
status_or<std::string> decompress(int16_t codec, std::string_view in,
                                  size_t limit = max_decompressed_bytes);

/// `in` compressed with `codec` (1-4), as Kafka's producers write it (gzip
/// with a gzip header, raw snappy, an LZ4 frame, a zstd frame). Errors:
/// UNSUPPORTED_COMPRESSION_TYPE for another id.
status_or<std::string> compress(int16_t codec, std::string_view in);

} // namespace caftx::compression
