// RecordBatch v2 (docs/record-batch.md): CRC-32C, golden bytes of a data
// batch and a control batch (computed by an independent bitwise encoder),
// and every way a batch from outside can be malformed.
#include <gtest/gtest.h>

#include <random>

#include "runtime/record_batch_v2.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

// Two records, producer 7, epoch 3, base sequence 5, transactional, base
// offset 42, leader epoch 0: "k" -> "hello" at 1000, and a null key with an
// empty value and one header h=x at 1005.
const char* data_batch_hex =
  "000000000000002a000000490000000002653e215600100000000100000000000003e800000000000003ed"
  "00000000000000070003000000050000000218000000026b0a68656c6c6f0014000a0201000202680278";

// A COMMIT marker of producer 7, epoch 4, coordinator epoch 9, at 2000,
// base offset 50.
const char* control_batch_hex =
  "000000000000003200000042000000000260498c9600300000000000000000000007d000000000000007d0"
  "00000000000000070004ffffffff000000012000000008000000010c00000000000900";

record_batch sample_batch() {
  record_batch b;
  b.base_offset = 42;
  b.pid = producer_id{7};
  b.epoch = producer_epoch{3};
  b.base_sequence = 5;
  b.attributes = attr_transactional;
  b.records.push_back({"k", "hello", {}, 1000});
  b.records.push_back({"", "", {{"h", "x"}}, 1005});
  return b;
}

TEST(Crc32c, CheckValueOf123456789) {
  EXPECT_EQ(v2::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(v2::crc32c_portable("123456789"), 0xE3069283u);
  EXPECT_EQ(v2::crc32c(""), 0u);
}

TEST(Crc32c, FastPathEqualsBoostOnEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::string buf(300, '\0');
  for (auto& c : buf)
    c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start)
    for (size_t len = 0; len + start <= buf.size(); len += 7) {
      std::string_view s{buf.data() + start, len};
      ASSERT_EQ(v2::crc32c(s), v2::crc32c_portable(s)) << start << "+" << len;
    }
}

TEST(RecordBatchV2, DataBatchEncodesToGoldenBytes) {
  EXPECT_EQ(v2::encode(sample_batch(), 0), from_hex(data_batch_hex));
}

TEST(RecordBatchV2, ControlBatchEncodesToGoldenBytes) {
  auto b = make_control_batch(producer_id{7}, producer_epoch{4},
                              {control_type::commit, coordinator_epoch{9}}, 2000);
  b.base_offset = 50;
  EXPECT_EQ(v2::encode(b, 0), from_hex(control_batch_hex));
}

TEST(RecordBatchV2, GoldenBytesDecodeToTheirFields) {
  auto bytes = from_hex(data_batch_hex);
  auto h = v2::validate(bytes);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->base_offset, 42);
  EXPECT_EQ(h->batch_length, 73);
  EXPECT_EQ(h->size(), 85);
  EXPECT_EQ(h->partition_leader_epoch, 0);
  EXPECT_EQ(h->crc, 0x653e2156u);
  EXPECT_EQ(h->attributes, attr_transactional);
  EXPECT_EQ(h->last_offset_delta, 1);
  EXPECT_EQ(h->base_timestamp, 1000);
  EXPECT_EQ(h->max_timestamp, 1005);
  EXPECT_EQ(h->producer_id, 7);
  EXPECT_EQ(h->producer_epoch, 3);
  EXPECT_EQ(h->base_sequence, 5);
  EXPECT_EQ(h->record_count, 2);
  auto b = v2::decode(bytes);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  ASSERT_EQ(b->records.size(), 2u);
  EXPECT_EQ(b->records[0].key, "k");
  EXPECT_EQ(b->records[0].value, "hello");
  EXPECT_EQ(b->records[0].timestamp_ms, 1000);
  EXPECT_EQ(b->records[1].key, "");
  EXPECT_EQ(b->records[1].timestamp_ms, 1005);
  ASSERT_EQ(b->records[1].headers.size(), 1u);
  EXPECT_EQ(b->records[1].headers[0].key, "h");
  EXPECT_EQ(b->records[1].headers[0].value, "x");
  EXPECT_EQ(b->last_sequence(), 6);
}

TEST(RecordBatchV2, ControlBatchInfoCarriesItsMarker) {
  auto bytes = from_hex(control_batch_hex);
  auto h = v2::validate(bytes);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  auto i = v2::info_of(*h, bytes);
  EXPECT_TRUE(i.is_control());
  EXPECT_TRUE(i.is_transactional());
  EXPECT_EQ(i.base_offset, 50);
  EXPECT_EQ(i.record_count, 1);
  EXPECT_EQ(i.max_timestamp_ms, 2000);
  ASSERT_TRUE(i.marker.has_value());
  EXPECT_EQ(i.marker->type, control_type::commit);
  EXPECT_EQ(i.marker->cepoch, coordinator_epoch{9});
}

TEST(RecordBatchV2, StampingBaseOffsetAndLeaderEpochKeepsTheCrcValid) {
  auto bytes = from_hex(data_batch_hex);
  v2::stamp(bytes, 1234567, 17);
  auto h = v2::validate(bytes);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->base_offset, 1234567);
  EXPECT_EQ(h->last_offset(), 1234568);
  EXPECT_EQ(h->partition_leader_epoch, 17);
}

TEST(RecordBatchV2, EveryFlippedBitAfterTheCrcFieldIsCorruptMessage) {
  auto good = from_hex(data_batch_hex);
  for (size_t byte = v2::attributes_pos; byte < good.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      auto h = v2::validate(bad);
      ASSERT_FALSE(h.ok()) << byte << "." << bit;
      // A flipped compression bit is found by the CRC first.
      EXPECT_EQ(h.error().code(), error_code::corrupt_message) << byte << "." << bit;
    }
}

TEST(RecordBatchV2, MalformedHeadersNameWhatIsWrong) {
  auto good = from_hex(data_batch_hex);
  auto code_and_text = [](const std::string& bytes) {
    auto h = v2::validate(bytes);
    return h.ok() ? std::string("ok") : h.error().to_string();
  };
  EXPECT_EQ(code_and_text(good.substr(0, 60)),
            "CORRUPT_MESSAGE: RecordBatch v2: 60 bytes, shorter than the 61-byte header");
  auto magic1 = good;
  magic1[v2::magic_pos] = 1;
  EXPECT_EQ(code_and_text(magic1), "CORRUPT_MESSAGE: RecordBatch v2: magic 1, expected 2");
  EXPECT_EQ(code_and_text(good.substr(0, 84)),
            "CORRUPT_MESSAGE: RecordBatch v2: batch length 73 outside [49, 72]");
  EXPECT_EQ(code_and_text(good + good),
            "CORRUPT_MESSAGE: RecordBatch v2: expected exactly one batch of 85 bytes, got 170");
}

// Compressed batches are read (tests/unit/compression_test.cpp); one marked
// gzip whose records are not gzip is corrupt.
TEST(RecordBatchV2, ABatchMarkedGzipWhoseRecordsAreNotGzipIsCorrupt) {
  auto b = sample_batch();
  auto bytes = v2::encode(b, 0);
  bytes[v2::attributes_pos + 1] = static_cast<char>(bytes[v2::attributes_pos + 1] | 0x01); // gzip
  auto crc = v2::crc32c(std::string_view{bytes}.substr(v2::attributes_pos));
  for (int i = 0; i < 4; ++i)
    bytes[v2::crc_pos + i] = static_cast<char>((crc >> (8 * (3 - i))) & 0xff);
  auto h = v2::validate(bytes);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().code(), error_code::corrupt_message);
  EXPECT_NE(h.error().message().find("gzip records"), std::string::npos) << h.error().message();
}

TEST(RecordBatchV2, ConcatenatedBatchesDecodeInOrder) {
  auto a = sample_batch();
  auto c = make_control_batch(producer_id{7}, producer_epoch{3},
                              {control_type::abort, coordinator_epoch{1}}, 3000);
  c.base_offset = 44;
  auto all = v2::encode(a) + v2::encode(c);
  auto batches = v2::decode_all(all);
  ASSERT_TRUE(batches.ok()) << batches.error().to_string();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].base_offset, 42);
  EXPECT_EQ((*batches)[1].base_offset, 44);
  EXPECT_EQ(parse_control_batch((*batches)[1])->type, control_type::abort);
  auto cut = v2::decode_all(all.substr(0, all.size() - 1));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code(), error_code::corrupt_message);
}

} // namespace
} // namespace caftx
