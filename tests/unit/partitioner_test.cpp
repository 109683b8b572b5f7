// Java String.hashCode over UTF-16 code units and Kafka's Utils.abs-based
// partition choice: every test vector of docs/hashing.md §Vectors.

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
  Reference43, PartitionerVectors,
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

TEST(Partitioner, RecordKeyPartitionIsStable) {
  EXPECT_EQ(partition_for_key("txn-A", 50), 26);
  EXPECT_EQ(partition_for_key("polygenelubricants", 7), 0);
  EXPECT_EQ(partition_for_key("a", 1), 0);
}

} // namespace
} // namespace caftx
