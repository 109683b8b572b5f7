// The bytes of a producer-state snapshot and of an aborted-index entry
// (storage/FORMAT.md), locked by golden bytes from an independent encoder,
// and every kind of damage reported as KAFKA_STORAGE_ERROR.
#include <gtest/gtest.h>

#include <cstring>

#include "actors/partition/snapshot_codec.hpp"
#include "runtime/record_batch_v2.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

// Covers [0, 12) after 1234 bytes of batches, producer state dropped
// before: producer 7 (epoch 3, marker coordinator epoch 2, last timestamp
// 1000, open transaction from 10, batches seq 0 at 0-4 and seq 5 at 10-11)
// and producer 9 (epoch 0, no marker, 999, nothing open, no batches).
const char* snapshot_hex =
  "021c80ad1c0c0000000000000000000000000000000000000000000000d20400000000000001020000000700"
  "000000000000030002000000e8030000000000000a0000000000000002000000000000000000000000040000"
  "0000000000050000000a000000000000000b0000000000000009000000000000000000ffffffffe703000000"
  "000000ffffffffffffffff00";

// The same state as version 1 wrote it (no flags byte), before version 2.
const char* snapshot_v1_hex =
  "013bd1ce9e0c0000000000000000000000000000000000000000000000d20400000000000002000000070000"
  "0000000000030002000000e8030000000000000a00000000000000020000000000000000000000000400000000"
  "000000050000000a000000000000000b0000000000000009000000000000000000ffffffffe703000000000000"
  "ffffffffffffffff00";

producer_snapshot sample() {
  producer_snapshot s;
  s.offset = 12;
  s.log_start_offset = 0;
  s.log_end_position = 1234;
  s.producer_state_dropped = true;
  producer_state_entry a;
  a.epoch = producer_epoch{3};
  a.cepoch = coordinator_epoch{2};
  a.last_timestamp_ms = 1000;
  a.current_txn_first_offset = 10;
  a.batches.push_back({0, 4, 0, 4});
  a.batches.push_back({5, 6, 10, 11});
  s.producers[producer_id{7}] = a;
  producer_state_entry b;
  b.epoch = producer_epoch{0};
  b.last_timestamp_ms = 999;
  s.producers[producer_id{9}] = b;
  return s;
}

TEST(SnapshotCodec, EncodesToGoldenBytes) {
  EXPECT_EQ(to_hex(snapshot_codec::encode(sample())), snapshot_hex);
}

// Every field of sample(), decoded from `hex`.
void expect_sample(const std::string& hex) {
  auto s = snapshot_codec::decode(from_hex(hex));
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_TRUE(s->producer_state_dropped);
  EXPECT_EQ(s->offset, 12);
  EXPECT_EQ(s->log_start_position, 0);
  EXPECT_EQ(s->log_end_position, 1234);
  ASSERT_EQ(s->producers.size(), 2u);
  auto& a = s->producers.at(producer_id{7});
  EXPECT_EQ(a.epoch, producer_epoch{3});
  EXPECT_EQ(a.cepoch, coordinator_epoch{2});
  EXPECT_EQ(a.last_timestamp_ms, 1000);
  EXPECT_EQ(a.current_txn_first_offset, std::optional<int64_t>{10});
  ASSERT_EQ(a.batches.size(), 2u);
  EXPECT_EQ(a.batches[1].first_sequence, 5);
  EXPECT_EQ(a.batches[1].last_sequence, 6);
  EXPECT_EQ(a.batches[1].base_offset, 10);
  EXPECT_EQ(a.batches[1].last_offset, 11);
  auto& b = s->producers.at(producer_id{9});
  EXPECT_EQ(b.cepoch, coordinator_epoch{-1});
  EXPECT_FALSE(b.current_txn_first_offset.has_value());
  EXPECT_TRUE(b.batches.empty());
}

TEST(SnapshotCodec, GoldenBytesDecodeToEveryField) { expect_sample(snapshot_hex); }

// Version 1 cannot tell whether producer state was dropped: it reads as
// dropped, so a partition restored from it keeps accepting producers it
// has no state for at any sequence (docs/producer-state.md §First-batches).
TEST(SnapshotCodec, Version1GoldenBytesDecodeToEveryFieldWithProducerStateDropped) {
  expect_sample(snapshot_v1_hex);
}

TEST(SnapshotCodec, ProducerStateNeverDroppedRoundTripsAndUnknownFlagsAreRefused) {
  auto s = sample();
  s.producer_state_dropped = false;
  auto bytes = snapshot_codec::encode(s);
  ASSERT_EQ(bytes.size(), from_hex(snapshot_hex).size());
  EXPECT_EQ(static_cast<uint8_t>(bytes[37]), 0); // the flags byte
  auto back = snapshot_codec::decode(bytes);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_FALSE(back->producer_state_dropped);
  EXPECT_EQ(back->producers.size(), 2u);
  // A flag this version does not know, with a matching CRC.
  bytes[37] = 0x03;
  auto crc = v2::crc32c(std::string_view(bytes).substr(5));
  std::memcpy(bytes.data() + 1, &crc, sizeof(crc));
  EXPECT_EQ(snapshot_codec::decode(bytes).error().to_string(),
            "KAFKA_STORAGE_ERROR: producer-state snapshot: unknown flags 3");
}

TEST(SnapshotCodec, EveryDamageIsKafkaStorageError) {
  auto good = from_hex(snapshot_hex);
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = snapshot_codec::decode(std::string_view(good).substr(0, n));
    ASSERT_FALSE(r.ok()) << "prefix of " << n;
    EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  }
  for (size_t i = 5; i < good.size(); ++i) {
    auto bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    auto r = snapshot_codec::decode(bad);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.error().to_string(), "KAFKA_STORAGE_ERROR: producer-state snapshot: CRC-32C mismatch");
  }
  auto v3 = good;
  v3[0] = 3;
  EXPECT_EQ(snapshot_codec::decode(v3).error().message(),
            "producer-state snapshot: unknown version 3");
  EXPECT_EQ(snapshot_codec::decode(good + "x").error().message(),
            "producer-state snapshot: CRC-32C mismatch");
}

TEST(SnapshotCodec, LogStartGoldenBytes) {
  auto bytes = snapshot_codec::encode_log_start(42, 4096);
  EXPECT_EQ(to_hex(bytes), "012a000000000000000010000000000000");
  EXPECT_EQ(snapshot_codec::decode_log_start(bytes).value(), std::make_pair(int64_t{42}, int64_t{4096}));
  EXPECT_EQ(snapshot_codec::decode_log_start(bytes + "x").error().to_string(),
            "KAFKA_STORAGE_ERROR: log start: 18 bytes, expected 17");
}

TEST(SnapshotCodec, AbortedEntryGoldenBytes) {
  aborted_txn_entry e{producer_id{7}, 3, 5, 6};
  auto bytes = snapshot_codec::encode(e);
  EXPECT_EQ(to_hex(bytes), "010700000000000000030000000000000005000000000000000600000000000000");
  auto back = snapshot_codec::decode_aborted(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->pid, producer_id{7});
  EXPECT_EQ(back->first_offset, 3);
  EXPECT_EQ(back->last_offset, 5);
  EXPECT_EQ(back->last_stable_offset, 6);
  EXPECT_EQ(snapshot_codec::decode_aborted(bytes.substr(0, 32)).error().to_string(),
            "KAFKA_STORAGE_ERROR: aborted-index entry: 32 bytes, expected 33");
}

} // namespace
} // namespace caftx
