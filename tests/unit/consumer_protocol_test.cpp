// consumer_protocol: Kafka's consumer subscription and assignment bytes
// (as librdkafka and the Java client write them) and the range and
// roundrobin assignors, against Kafka's RangeAssignor and
// RoundRobinAssignor results.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/client/consumer_protocol.hpp"

namespace caftx::consumer_protocol {
namespace {

TEST(ConsumerProtocol, SubscriptionV0EncodesAsKafkasAndReadsLibrdkafkasV1) {
  EXPECT_EQ(encode_subscription({"orders"}),
            std::string("\x00\x00"                 // version 0
                        "\x00\x00\x00\x01"         // one topic
                        "\x00\x06orders"
                        "\xff\xff\xff\xff",        // null user data
                        18));
  // librdkafka's v1: empty (not null) user data, then owned partitions.
  std::string v1("\x00\x01\x00\x00\x00\x02\x00\x01"
                 "a\x00\x01"
                 "b\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01"
                 "a\x00\x00\x00\x01\x00\x00\x00\x00",
                 31);
  auto topics = decode_subscription(v1);
  ASSERT_TRUE(topics.ok()) << topics.error().to_string();
  EXPECT_EQ(*topics, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(decode_subscription(std::string("\x00\x00\x00\x00\x00\x05", 6)).ok());
}

TEST(ConsumerProtocol, AssignmentRoundTripsGroupedByTopic) {
  std::vector<topic_partition> tps{{"b", 1}, {"a", 0}, {"b", 0}};
  auto bytes = encode_assignment(tps);
  EXPECT_EQ(bytes, std::string("\x00\x00"
                               "\x00\x00\x00\x02"
                               "\x00\x01"
                               "a\x00\x00\x00\x01\x00\x00\x00\x00"
                               "\x00\x01"
                               "b\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00"
                               "\xff\xff\xff\xff",
                               36));
  auto back = decode_assignment(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<topic_partition>{{"a", 0}, {"b", 1}, {"b", 0}}));
  auto empty = decode_assignment("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(decode_assignment(std::string("\x00\x00\x00\x00\x00\x01\x00", 7)).ok());
}

// Kafka's RangeAssignor javadoc example: t0 and t1 with 3 partitions each,
// consumers C0 and C1: C0 gets t0p0, t0p1, t1p0, t1p1; C1 t0p2, t1p2.
TEST(ConsumerProtocol, RangeAsKafkasExample) {
  auto a = assign_range({{"C0", {"t0", "t1"}}, {"C1", {"t0", "t1"}}}, {{"t0", 3}, {"t1", 3}});
  EXPECT_EQ(a["C0"], (std::vector<topic_partition>{{"t0", 0}, {"t0", 1}, {"t1", 0}, {"t1", 1}}));
  EXPECT_EQ(a["C1"], (std::vector<topic_partition>{{"t0", 2}, {"t1", 2}}));
}

// Kafka's RoundRobinAssignor javadoc examples.
TEST(ConsumerProtocol, RoundRobinAsKafkasExamples) {
  auto a = assign_roundrobin({{"C0", {"t0", "t1"}}, {"C1", {"t0", "t1"}}}, {{"t0", 3}, {"t1", 3}});
  EXPECT_EQ(a["C0"], (std::vector<topic_partition>{{"t0", 0}, {"t0", 2}, {"t1", 1}}));
  EXPECT_EQ(a["C1"], (std::vector<topic_partition>{{"t0", 1}, {"t1", 0}, {"t1", 2}}));
  // C0 subscribes t0; C1 t0, t1; C2 t0, t1, t2 (1, 2 and 3 partitions):
  // C0 [t0p0], C1 [t1p0], C2 [t1p1, t2p0, t2p1, t2p2].
  auto b = assign_roundrobin({{"C0", {"t0"}}, {"C1", {"t0", "t1"}}, {"C2", {"t0", "t1", "t2"}}},
                             {{"t0", 1}, {"t1", 2}, {"t2", 3}});
  EXPECT_EQ(b["C0"], (std::vector<topic_partition>{{"t0", 0}}));
  EXPECT_EQ(b["C1"], (std::vector<topic_partition>{{"t1", 0}}));
  EXPECT_EQ(b["C2"], (std::vector<topic_partition>{{"t1", 1}, {"t2", 0}, {"t2", 1}, {"t2", 2}}));
}

TEST(ConsumerProtocol, EveryMemberGetsAnEntryAndUnknownTopicsNothing) {
  auto a = assign_range({{"C0", {"gone"}}, {"C1", {"t0"}}}, {{"t0", 1}});
  EXPECT_TRUE(a["C0"].empty());
  EXPECT_EQ(a["C1"], (std::vector<topic_partition>{{"t0", 0}}));
  EXPECT_EQ(a.size(), 2u);
  auto r = assign_roundrobin({{"C0", {"t0"}}, {"C1", {"t0"}}, {"C2", {"t0"}}}, {{"t0", 2}});
  EXPECT_EQ(r.size(), 3u);
  EXPECT_TRUE(r["C2"].empty());
}

} // namespace
} // namespace caftx::consumer_protocol
