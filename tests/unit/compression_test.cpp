// RecordBatch v2's codecs (runtime/compression.hpp) and compressed batches
// in runtime/record_batch_v2.hpp: every codec round-trips, snappy in
// xerial's framing too, bad bytes are CORRUPT_MESSAGE, a batch whose
// records decompress past the limit is refused, and a compressed batch is
// validated on its records and decoded like an uncompressed one.
#include <gtest/gtest.h>

#include "runtime/compression.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {
namespace {

std::string sample() {
  std::string s;
  for (int i = 0; i < 2000; ++i)
    s += "record " + std::to_string(i % 37) + ";";
  return s;
}

TEST(Compression, EveryCodecRoundTrips) {
  auto in = sample();
  for (int16_t codec : {compression::gzip, compression::snappy, compression::lz4,
                        compression::zstd}) {
    auto packed = compression::compress(codec, in);
    ASSERT_TRUE(packed.ok()) << codec;
    EXPECT_LT(packed->size(), in.size() / 2) << codec;
    auto back = compression::decompress(codec, *packed);
    ASSERT_TRUE(back.ok()) << codec << ": " << back.error().to_string();
    EXPECT_EQ(*back, in) << codec;
  }
}

// Kafka's Java client frames snappy as xerial's SnappyOutputStream does:
// the magic, two versions, then length-prefixed raw blocks.
TEST(Compression, SnappyInXerialFraming) {
  auto first = compression::compress(compression::snappy, "hello, ");
  auto second = compression::compress(compression::snappy, "world");
  ASSERT_TRUE(first.ok() && second.ok());
  std::string framed("\x82SNAPPY\0\0\0\0\x01\0\0\0\x01", 16);
  for (auto* block : {&*first, &*second}) {
    auto n = block->size();
    framed += std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
    framed += *block;
  }
  auto back = compression::decompress(compression::snappy, framed);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, "hello, world");
  // A block length past the end.
  framed.resize(framed.size() - 1);
  EXPECT_EQ(compression::decompress(compression::snappy, framed).error().code(),
            error_code::corrupt_message);
}

TEST(Compression, BadBytesUnknownCodecsAndBombs) {
  for (int16_t codec : {compression::gzip, compression::snappy, compression::lz4,
                        compression::zstd}) {
    auto r = compression::decompress(codec, "definitely not compressed");
    ASSERT_FALSE(r.ok()) << codec;
    EXPECT_EQ(r.error().code(), error_code::corrupt_message) << codec;
    // Cut short.
    auto packed = compression::compress(codec, sample());
    auto cut = compression::decompress(codec, packed->substr(0, packed->size() / 2));
    EXPECT_FALSE(cut.ok()) << codec;
    // Past the limit.
    auto big = compression::decompress(codec, *packed, 1000);
    ASSERT_FALSE(big.ok()) << codec;
    EXPECT_NE(big.error().message().find("more than 1000 bytes"), std::string::npos) << codec;
  }
  EXPECT_EQ(compression::decompress(5, "x").error().code(),
            error_code::unsupported_compression_type);
  EXPECT_EQ(compression::compress(7, "x").error().code(), error_code::unsupported_compression_type);
}

// A batch as a compressing producer sends it: the records section
// compressed, the codec in the attributes, the CRC over the compressed
// bytes.
std::string compressed_batch(int16_t codec, const record_batch& b) {
  auto plain = v2::encode(b);
  auto records = compression::compress(codec, std::string_view{plain}.substr(v2::header_size));
  std::string out = plain.substr(0, v2::header_size) + *records;
  auto put32 = [&out](size_t pos, uint32_t v) {
    for (int k = 0; k < 4; ++k)
      out[pos + k] = static_cast<char>(v >> (24 - 8 * k));
  };
  out[v2::attributes_pos + 1] = static_cast<char>(b.attributes | codec);
  put32(v2::batch_length_pos, static_cast<uint32_t>(out.size() - 12));
  put32(v2::crc_pos, v2::crc32c(std::string_view{out}.substr(v2::attributes_pos)));
  return out;
}

TEST(Compression, CompressedBatchesAreValidatedAndDecodedOnTheirRecords) {
  record_batch b;
  b.pid = producer_id{7};
  b.epoch = producer_epoch{1};
  b.base_sequence = 0;
  for (int i = 0; i < 50; ++i)
    b.records.push_back({"k" + std::to_string(i), "value " + std::to_string(i), {}, 1000 + i,
                         false, -1});
  for (int16_t codec : {compression::gzip, compression::snappy, compression::lz4,
                        compression::zstd}) {
    auto bytes = compressed_batch(codec, b);
    auto h = v2::validate(bytes);
    ASSERT_TRUE(h.ok()) << codec << ": " << h.error().to_string();
    EXPECT_EQ(h->attributes & 0x07, codec);
    EXPECT_EQ(h->record_count, 50);
    auto decoded = v2::decode(bytes);
    ASSERT_TRUE(decoded.ok()) << codec;
    ASSERT_EQ(decoded->records.size(), 50u);
    EXPECT_EQ(decoded->records[49].value, "value 49");
    EXPECT_EQ(decoded->records[49].timestamp_ms, 1049);
    // The cleaner's view: the records, decompressed into a scratch buffer.
    std::string scratch;
    int seen = 0;
    EXPECT_TRUE(v2::for_each_record(bytes, *h, [&](const v2::record_view&) { ++seen; }, &scratch)
                  .ok());
    EXPECT_EQ(seen, 50);
    EXPECT_EQ(v2::for_each_record(bytes, *h, [](const v2::record_view&) {}).code(),
              error_code::unsupported_compression_type);
    // Records that do not decompress.
    auto broken = bytes;
    broken[v2::header_size + 2] ^= 0x5a;
    broken.replace(v2::crc_pos, 4, std::string(4, '\0'));
    auto crc = v2::crc32c(std::string_view{broken}.substr(v2::attributes_pos));
    for (int k = 0; k < 4; ++k)
      broken[v2::crc_pos + k] = static_cast<char>(crc >> (24 - 8 * k));
    EXPECT_FALSE(v2::validate(broken).ok()) << codec;
  }
  auto other = compressed_batch(compression::gzip, b);
  other[v2::attributes_pos + 1] = static_cast<char>(6); // codec id 6
  auto crc = v2::crc32c(std::string_view{other}.substr(v2::attributes_pos));
  for (int k = 0; k < 4; ++k)
    other[v2::crc_pos + k] = static_cast<char>(crc >> (24 - 8 * k));
  EXPECT_EQ(v2::validate(other).error().code(), error_code::unsupported_compression_type);
}

} // namespace
} // namespace caftx
