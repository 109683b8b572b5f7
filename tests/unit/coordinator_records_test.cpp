// The records coordinators write to their partitions, in Kafka's layouts
// (docs/coordinator-records.md): golden bytes written out by hand from
// Kafka's TransactionLogKey/Value, OffsetCommitKey/Value and
// GroupMetadataKey/Value schemas, round trips, and what is refused as
// corrupt.
#include <gtest/gtest.h>

#include <string>

#include "runtime/coordinator_records.hpp"

namespace caftx {
namespace {

using namespace coordinator_records;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b)
    s.push_back(static_cast<char>(x));
  return s;
}

txn_card ongoing_card() {
  txn_card c;
  c.transactional_id = "tx";
  c.pid = producer_id{3};
  c.epoch = producer_epoch{1};
  c.txn_timeout_ms = 60000;
  c.state = txn_state::ongoing;
  c.partitions = {{"orders", 0}, {"orders", 2}, {"pay", 1}};
  c.txn_start_ms = 100;
  c.last_update_ms = 200;
  c.last_epoch = producer_epoch{0};
  return c;
}

TEST(CoordinatorRecords, TransactionLogKeyIsVersion0AndTheIdAsAnInt16String) {
  EXPECT_EQ(encode_txn_key("tx"), bytes({0, 0, 0, 2, 't', 'x'}));
  EXPECT_EQ(decode_txn_key(bytes({0, 0, 0, 2, 't', 'x'})).value(), "tx");
  auto v1 = decode_txn_key(bytes({0, 1, 0, 2, 't', 'x'}));
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.error().message(), "TransactionLogKey: unknown version 1");
  EXPECT_FALSE(decode_txn_key(bytes({0, 0, 0, 3, 't', 'x'})).ok()); // cut short
}

TEST(CoordinatorRecords, TransactionLogValueV1GoldenBytes) {
  auto expected = bytes({
    0, 1,                   // version 1 (flexible)
    0, 0, 0, 0, 0, 0, 0, 3, // ProducerId
    0, 1,                   // ProducerEpoch
    0, 0, 0xea, 0x60,       // TransactionTimeoutMs 60000
    1,                      // TransactionStatus Ongoing
    3,                      // TransactionPartitions: 2 topics (compact: n + 1)
    7, 'o', 'r', 'd', 'e', 'r', 's', 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, // orders [0, 2], no tags
    4, 'p', 'a', 'y', 2, 0, 0, 0, 1, 0,                            // pay [1], no tags
    0, 0, 0, 0, 0, 0, 0, 200, // TransactionLastUpdateTimestampMs
    0, 0, 0, 0, 0, 0, 0, 100, // TransactionStartTimestampMs
    2,                        // two tagged fields:
    2, 2, 0, 2,               //   2 ClientTransactionVersion = 2
    102, 2, 0, 0,             //   102 LastProducerEpoch = 0 (caftx's)
  });
  EXPECT_EQ(encode_txn_value(ongoing_card()), expected);
  auto back = decode_txn_value("tx", expected);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, ongoing_card());
}

TEST(CoordinatorRecords, EmptyCardWritesNullPartitionsAndEveryOptionalFieldRoundTrips) {
  txn_card c;
  c.transactional_id = "t";
  c.pid = producer_id{53};
  c.previous_pid = producer_id{3};
  c.next_pid = producer_id{103};
  c.epoch = producer_epoch{32767};
  c.txn_timeout_ms = 1;
  c.state = txn_state::empty;
  c.last_update_ms = 9;
  c.ended_by_pid = producer_id{3};
  c.ended_by_epoch = producer_epoch{32766};
  c.last_epoch = producer_epoch{12};
  c.client_transaction_version = 1; // a Kafka client's EndTxn v0-4
  auto v = encode_txn_value(c);
  EXPECT_EQ(static_cast<unsigned char>(v[17]), 0u); // null partitions
  auto back = decode_txn_value("t", v);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, c);
}

TEST(CoordinatorRecords, TransactionLogValueV0IsReadWithoutTaggedFields) {
  auto v0 = bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0, 0xea, 0x60, 4, // v0 .. CompleteCommit
                   0, 0, 0, 1,                   // partitions: int32 count 1
                   0, 3, 'p', 'a', 'y', 0, 0, 0, 1, 0, 0, 0, 7, // "pay" [7]
                   0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0, 0, 0, 0, 0, 100});
  auto c = decode_txn_value("tx", v0);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->state, txn_state::complete_commit);
  EXPECT_EQ(c->partitions, (std::vector<topic_partition>{{"pay", 7}}));
  EXPECT_EQ(c->last_epoch, no_producer_epoch);
  EXPECT_EQ(c->txn_start_ms, 100);
}

TEST(CoordinatorRecords, CorruptTransactionLogValuesAreRefusedNamingWhy) {
  auto good = encode_txn_value(ongoing_card());
  auto v = good;
  v[1] = 2;
  EXPECT_EQ(decode_txn_value("tx", v).error().message(), "TransactionLogValue: unknown version 2");
  v = good;
  v[16] = 6; // Dead is never persisted
  EXPECT_EQ(decode_txn_value("tx", v).error().message(),
            "TransactionLogValue: state id 6 is not a persisted state (0-5)");
  EXPECT_EQ(decode_txn_value("tx", good.substr(0, 20)).error().code(),
            error_code::corrupt_message);
  EXPECT_EQ(decode_txn_value("tx", good + "x").error().message(),
            "TransactionLogValue: bytes after the value");
}

TEST(CoordinatorRecords, OffsetCommitKeyV1AndValueV3GoldenBytes) {
  group_offset_key k{"g", {"t", 5}};
  auto key = bytes({0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 5});
  EXPECT_EQ(encode_offset_key(k), key);
  EXPECT_EQ(decode_offset_key(key).value(), k);
  auto value = bytes({0, 3, 0, 0, 0, 0, 0, 0, 0, 42, 0xff, 0xff, 0xff, 0xff, 0, 2, 'm', 'd',
                      0, 0, 0, 0, 0, 0, 0x03, 0xe8});
  EXPECT_EQ(encode_offset_value({42, "md"}, 1000), value);
  int64_t ts = 0;
  auto v = decode_offset_value(value, &ts);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (offset_and_metadata{42, "md"}));
  EXPECT_EQ(ts, 1000);
  // A group metadata key (version 2) is not an offset commit.
  EXPECT_EQ(decode_offset_key(bytes({0, 2, 0, 1, 'g'})).error().message(),
            "OffsetCommitKey: key version 2 is not an offset commit (0-1)");
}

TEST(CoordinatorRecords, DescribePrintsTheRecordsOfBothInternalTopics) {
  EXPECT_EQ(describe(transaction_state_topic, encode_txn_key("tx"), encode_txn_value(ongoing_card()),
                     false),
            "transactional.id=tx producerId=3 producerEpoch=1 state=Ongoing "
            "partitions=[orders-0,orders-2,pay-1] txnTimeoutMs=60000 txnStartTimestamp=100 "
            "txnLastUpdateTimestamp=200");
  EXPECT_EQ(describe(transaction_state_topic, encode_txn_key("tx"), "", true),
            "transactional.id=tx <null>");
  EXPECT_EQ(describe(consumer_offsets_topic, encode_offset_key({"g", {"t", 5}}),
                     encode_offset_value({42, ""}, 7), false),
            "group=g topic=t partition=5 offset=42 metadata= commitTimestamp=7");
}

group_metadata_record two_member_group() {
  group_metadata_record g;
  g.group_id = "g";
  g.protocol_type = "consumer";
  g.generation = 7;
  g.protocol_name = "range";
  g.leader = "m1";
  g.state_timestamp_ms = 1000;
  g.members = {{"m1", "i", "c", "/h", 30000, 10000, "S", "A"},
               {"m2", "", "c", "/h", 30000, 10000, "", ""}};
  return g;
}

TEST(CoordinatorRecords, GroupMetadataKeyV2AndValueV3GoldenBytes) {
  auto key = bytes({0, 2, 0, 1, 'g'});
  EXPECT_EQ(encode_group_key("g"), key);
  EXPECT_TRUE(is_group_key(key));
  EXPECT_FALSE(is_group_key(encode_offset_key({"g", {"t", 0}})));
  EXPECT_EQ(decode_group_key(key).value(), "g");
  auto m1 = bytes({0, 2, 'm', '1', 0, 1, 'i', 0, 1, 'c', 0, 2, '/', 'h', 0, 0, 0x75, 0x30, 0, 0,
                   0x27, 0x10, 0, 0, 0, 1, 'S', 0, 0, 0, 1, 'A'});
  auto m2 = bytes({0, 2, 'm', '2', 0xff, 0xff, 0, 1, 'c', 0, 2, '/', 'h', 0, 0, 0x75, 0x30, 0, 0,
                   0x27, 0x10, 0, 0, 0, 0, 0, 0, 0, 0});
  auto value = bytes({0, 3, 0, 8}) + "consumer" + bytes({0, 0, 0, 7, 0, 5}) + "range"
               + bytes({0, 2, 'm', '1', 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 2}) + m1 + m2;
  EXPECT_EQ(encode_group_value(two_member_group()), value);
  auto g = decode_group_value("g", value);
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto want = two_member_group();
  EXPECT_EQ(g->generation, 7);
  EXPECT_EQ(g->protocol_name, "range");
  EXPECT_EQ(g->leader, "m1");
  EXPECT_EQ(g->state_timestamp_ms, 1000);
  ASSERT_EQ(g->members.size(), 2u);
  EXPECT_EQ(g->members[0].group_instance_id, "i");
  EXPECT_EQ(g->members[0].subscription, "S");
  EXPECT_EQ(g->members[0].assignment, "A");
  EXPECT_EQ(g->members[1].group_instance_id, "");
  EXPECT_EQ(g->members[1].rebalance_timeout_ms, 30000);
  // An Empty group: null protocol and leader, no members.
  group_metadata_record empty;
  empty.group_id = "g";
  empty.protocol_type = "consumer";
  empty.generation = 2;
  EXPECT_EQ(encode_group_value(empty), bytes({0, 3, 0, 8}) + "consumer"
                                         + bytes({0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}));
}

// Kafka 0.10's version 0 (no rebalance timeout: the session timeout
// stands in, no state timestamp, no instance ids).
TEST(CoordinatorRecords, GroupMetadataValueV0IsRead) {
  auto value = bytes({0, 0, 0, 8}) + "consumer" + bytes({0, 0, 0, 1, 0, 5}) + "range"
               + bytes({0, 1, 'm', 0, 0, 0, 1, 0, 1, 'm', 0, 1, 'c', 0, 2, '/', 'h', 0, 0, 0x27,
                        0x10, 0, 0, 0, 0, 0, 0, 0, 0});
  auto g = decode_group_value("g", value);
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_EQ(g->members.size(), 1u);
  EXPECT_EQ(g->members[0].session_timeout_ms, 10000);
  EXPECT_EQ(g->members[0].rebalance_timeout_ms, 10000);
  EXPECT_EQ(g->state_timestamp_ms, -1);
}

TEST(CoordinatorRecords, CorruptGroupRecordsAreRefusedNamingWhy) {
  EXPECT_EQ(decode_group_key(bytes({0, 1, 0, 1, 'g'})).error().message(),
            "GroupMetadataKey: key version 1 is not a group's (2)");
  EXPECT_EQ(decode_group_key(bytes({0, 2, 0, 5, 'g'})).error().message(),
            "GroupMetadataKey: truncated Group");
  auto value = encode_group_value(two_member_group());
  EXPECT_EQ(decode_group_value("g", value.substr(0, value.size() - 1)).error().message(),
            "GroupMetadataValue: truncated Assignment");
  EXPECT_EQ(decode_group_value("g", value + "x").error().message(),
            "GroupMetadataValue: bytes after the value");
  value[1] = 4;
  EXPECT_EQ(decode_group_value("g", value).error().message(),
            "GroupMetadataValue: unknown version 4");
  EXPECT_EQ(describe(consumer_offsets_topic, encode_group_key("g"),
                     encode_group_value(two_member_group()), false),
            "group=g generation=7 protocolType=consumer protocol=range leader=m1 "
            "members=[m1(instance=i),m2]");
  EXPECT_EQ(describe(consumer_offsets_topic, encode_group_key("g"), "", true), "group=g <null>");
}

} // namespace
} // namespace caftx
