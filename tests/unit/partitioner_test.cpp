// Java String.hashCode over UTF-16 code units and Kafka's Utils.abs-based
// partition choice: every test vector of docs/hashing.md §Vectors. Kafka's
// Utils.murmur2 / Utils.toPositive partition choice for record keys: the
// vectors of docs/partitioning.md.

#include <gtest/gtest.h>

#include <climits>
#include <ostream>
#include <string>

#include "runtime/partitioner.hpp"

namespace caftx {
namespace {

struct vector_row {
  const char* name;
  std::string id; // UTF-8
  int32_t hash;
  int32_t partition_of_50;
  int32_t partition_of_3;
};

void PrintTo(const vector_row& v, std::ostream* os) {
  *os << v.name;
}

class PartitionerVectors : public ::testing::TestWithParam<vector_row> {};

TEST_P(PartitionerVectors, HashCodeAndPartitionMatchKafka) {
  auto& v = GetParam();
  EXPECT_EQ(java_string_hash(v.id), v.hash);
  EXPECT_EQ(partition_for(v.id, 50), v.partition_of_50);
  EXPECT_EQ(partition_for(v.id, 3), v.partition_of_3);
}

INSTANTIATE_TEST_SUITE_P(
  HashingVectors, PartitionerVectors,
  ::testing::Values(
    vector_row{"Empty", "", 0, 0, 0},
    vector_row{"a", "a", 97, 47, 1},
    vector_row{"one", "one", 110182, 32, 1},
    vector_row{"two", "two", 115276, 26, 1},
    vector_row{"txnA", "txn-A", 110810526, 26, 0},
    vector_row{"txnB", "txn-B", 110810527, 27, 1},
    vector_row{"known", "known", 102204227, 27, 2},
    vector_row{"myTxn", "my-txn", -1061187895, 45, 1},
    vector_row{"orderService0", "order-service-0", -229043367, 17, 0},
    vector_row{"transactionalProducer", "transactionalProducer", 357448251, 1, 0},
    vector_row{"polygenelubricantsIsIntMinAndMapsToZero", "polygenelubricants", INT32_MIN, 0, 0},
    vector_row{"Aa", "Aa", 2112, 12, 0},
    vector_row{"BB", "BB", 2112, 12, 0},
    // U+00E9 is one UTF-16 code unit (two UTF-8 bytes).
    vector_row{"eAcuteTxn", "\xC3\xA9-txn", 216636294, 44, 0},
    // U+1F600 is two UTF-16 code units, the surrogates D83D DE00.
    vector_row{"txGrinningFaceNonBmp", "tx-\xF0\x9F\x98\x80", 112519500, 0, 0}),
  [](const ::testing::TestParamInfo<vector_row>& info) { return std::string(info.param.name); });

TEST(Partitioner, KafkaAbsMapsIntMinToZero) {
  EXPECT_EQ(kafka_abs(INT32_MIN), 0);
  EXPECT_EQ(kafka_abs(-5), 5);
  EXPECT_EQ(kafka_abs(5), 5);
  EXPECT_EQ(kafka_abs(INT32_MAX), INT32_MAX);
  EXPECT_EQ(kafka_abs(-INT32_MAX), INT32_MAX);
}

TEST(Partitioner, OneAndTwoShareShardZeroOfTwo) {
  // TransactionStateManagerTest relies on this.
  EXPECT_EQ(partition_for("one", 2), 0);
  EXPECT_EQ(partition_for("two", 2), 0);
}

TEST(Partitioner, NonBmpCharacterHashesAsItsTwoSurrogates) {
  // "tx-" followed by the code units U+D83D U+DE00, computed by hand.
  int32_t h = java_string_hash("tx-");
  uint32_t u = static_cast<uint32_t>(h);
  u = 31 * u + 0xD83D;
  u = 31 * u + 0xDE00;
  EXPECT_EQ(java_string_hash("tx-\xF0\x9F\x98\x80"), static_cast<int32_t>(u));
}

TEST(Partitioner, InvalidUtf8CountsAsReplacementCharacter) {
  // A lone continuation byte and a truncated sequence are U+FFFD each.
  EXPECT_EQ(java_string_hash("\x80"), 0xFFFD);
  EXPECT_EQ(java_string_hash("a\xC3"), 31 * 97 + 0xFFFD);
}

struct murmur2_row {
  const char* name;
  std::string key; // the key bytes
  int32_t hash;
};

void PrintTo(const murmur2_row& v, std::ostream* os) {
  *os << v.name;
}

class Murmur2Vectors : public ::testing::TestWithParam<murmur2_row> {};

TEST_P(Murmur2Vectors, HashMatchesKafkaUtilsMurmur2) {
  EXPECT_EQ(murmur2(GetParam().key), GetParam().hash);
}

INSTANTIATE_TEST_SUITE_P(
  KafkaUtilsTest, Murmur2Vectors,
  // Kafka's UtilsTest.testMurmur2, verbatim: lengths 2, 6 (two-byte tail),
  // 24, 26, 48 and 3 (three-byte tail).
  ::testing::Values(murmur2_row{"s21", "21", -973932308},
                    murmur2_row{"foobar", "foobar", -790332482},
                    murmur2_row{"aLittleBitLongString", "a-little-bit-long-string", -985981536},
                    murmur2_row{"aLittleBitLongerString", "a-little-bit-longer-string", -1486304829},
                    murmur2_row{"lkjh", "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
                    murmur2_row{"abc", "abc", 479470107}),
  [](const ::testing::TestParamInfo<murmur2_row>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
  Librdkafka, Murmur2Vectors,
  // librdkafka's unittest_murmur2 (Java's values as hex): one-byte tail,
  // no tail, three-byte tail and the empty key.
  ::testing::Values(murmur2_row{"kafka", "kafka", static_cast<int32_t>(0xd067cf64)},
                    murmur2_row{"giberish", "giberish123456789", static_cast<int32_t>(0x8f552b0c)},
                    murmur2_row{"s1234", "1234", static_cast<int32_t>(0x9fc97b14)},
                    murmur2_row{"s234", "234", static_cast<int32_t>(0xe7c009ca)},
                    murmur2_row{"s34", "34", static_cast<int32_t>(0x873930da)},
                    murmur2_row{"s4", "4", static_cast<int32_t>(0x5a4b5ca1)},
                    murmur2_row{"preamble", "PreAmbleWillBeRemoved,ThePrePartThatIs",
                                static_cast<int32_t>(0x78424f1c)},
                    murmur2_row{"Empty", "", static_cast<int32_t>(0x106e08d9)}),
  [](const ::testing::TestParamInfo<murmur2_row>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
  HighBytes, Murmur2Vectors,
  // Bytes >= 0x80, which Java reads as negative bytes and masks with 0xff.
  // Computed with two independent reimplementations of the Java code
  // (docs/partitioning.md); sign-extending the bytes instead gives the
  // value in the comment.
  ::testing::Values(murmur2_row{"byte80", "\x80", 857690492}, // not 225442571
                    murmur2_row{"highBlockAndTail", "\xFF\xFE\xFD\xFC\x80\x81\x82",
                                -1449165224}, // not 1471970776
                    murmur2_row{"eAcuteTxn", "\xC3\xA9-txn", -839356408}, // not 1332206685
                    murmur2_row{"txGrinningFace", "tx-\xF0\x9F\x98\x80", -1817093625}), // not 863731420
  [](const ::testing::TestParamInfo<murmur2_row>& info) { return std::string(info.param.name); });

TEST(Partitioner, ToPositiveMasksTheSignBit) {
  // Not |n|: Utils.toPositive clears bit 31.
  EXPECT_EQ(to_positive(-1), INT32_MAX);
  EXPECT_EQ(to_positive(INT32_MIN), 0);
  EXPECT_EQ(to_positive(-973932308), 1173551340);
  EXPECT_EQ(to_positive(5), 5);
  EXPECT_EQ(to_positive(INT32_MAX), INT32_MAX);
}

TEST(Partitioner, RecordKeyPartitionIsJavaClientsChoice) {
  // BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % n. For
  // "21" Utils.abs would give 2 of 3, 6 of 7, 8 of 50.
  EXPECT_EQ(partition_for_key("21", 3), 0);
  EXPECT_EQ(partition_for_key("21", 7), 3);
  EXPECT_EQ(partition_for_key("21", 50), 40);
  EXPECT_EQ(partition_for_key("foobar", 4), 2);
  EXPECT_EQ(partition_for_key("foobar", 50), 16);
  EXPECT_EQ(partition_for_key("txn-A", 50), 29);
  EXPECT_EQ(partition_for_key("customer-42", 4), 1);
  EXPECT_EQ(partition_for_key("ALFKI", 3), 0);
  EXPECT_EQ(partition_for_key("ALFKI", 7), 2);
  EXPECT_EQ(partition_for_key("polygenelubricants", 7), 3);
  EXPECT_EQ(partition_for_key("\xC3\xA9-txn", 3), 1);
  EXPECT_EQ(partition_for_key("a", 1), 0);
}

TEST(Partitioner, RecordKeysAndTransactionalIdsHashDifferently) {
  // partition_for keeps String.hashCode: "txn-A" is shard 26 of 50 as a
  // transactional id, partition 29 of 50 as a record key.
  EXPECT_EQ(partition_for("txn-A", 50), 26);
  EXPECT_EQ(partition_for_key("txn-A", 50), 29);
}

} // namespace
} // namespace caftx
