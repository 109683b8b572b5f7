// A node's acceptance of controller requests (Kafka's
// ReplicaManager.becomeLeaderOrFollower / stopReplicas /
// maybeUpdateMetadataCache, KIP-380's broker epoch) and its metadata
// lookups (actors/broker/metadata_cache_core.hpp, docs/controller.md §Node side).
#include <gtest/gtest.h>

#include "actors/broker/metadata_cache_core.hpp"
#include "runtime/partitioner.hpp"

namespace caftx {
namespace {

using controller::leader_and_isr_request;
using controller::live_node;
using controller::partition_info;
using controller::stop_replica_request;
using controller::update_metadata_request;

partition_info part(const std::string& t, int32_t p, int32_t leader, int32_t epoch,
                    std::vector<int32_t> replicas = {1, 2, 3}) {
  return partition_info{topic_partition{t, p}, 5, leader, epoch, replicas, 0, replicas, false};
}

leader_and_isr_request lair(int32_t controller_epoch, int64_t node_epoch, std::vector<partition_info> parts) {
  return leader_and_isr_request{1, controller_epoch, node_epoch, std::move(parts)};
}

TEST(MetadataCache, LeaderEpochGreaterIsAppliedAsLeaderOrFollower) {
  metadata_cache_core m{2, 200};
  auto v = m.on_leader_and_isr(lair(5, 200, {part("t", 0, 2, 0), part("t", 1, 3, 4)}));
  ASSERT_EQ(v.error, error_code::none);
  ASSERT_EQ(v.partitions.size(), 2u);
  EXPECT_EQ(v.partitions[0].action, replica_action::become_leader);
  EXPECT_EQ(v.partitions[1].action, replica_action::become_follower);
  EXPECT_EQ(m.replica({"t", 1})->leader_epoch, 4);
  EXPECT_EQ(m.controller_epoch(), 5);
}

TEST(MetadataCache, LowerLeaderEpochIsRejectedAndEqualIgnoredBothStaleControllerEpoch) {
  metadata_cache_core m{2, 200};
  (void)m.on_leader_and_isr(lair(5, 200, {part("t", 0, 3, 4)}));
  auto v = m.on_leader_and_isr(lair(5, 200, {part("t", 0, 2, 3), part("t", 0, 2, 4)}));
  ASSERT_EQ(v.error, error_code::none);
  EXPECT_EQ(v.partitions[0].error, error_code::stale_controller_epoch);
  EXPECT_EQ(v.partitions[0].action, replica_action::none);
  EXPECT_EQ(v.partitions[1].error, error_code::stale_controller_epoch);
  EXPECT_EQ(v.partitions[1].action, replica_action::none);
  EXPECT_EQ(m.replica({"t", 0})->leader, 3); // unchanged
}

TEST(MetadataCache, ControllerEpochBelowTheHighestSeenRejectsTheWholeRequest) {
  metadata_cache_core m{2, 200};
  (void)m.on_leader_and_isr(lair(6, 200, {part("t", 0, 3, 1)}));
  auto v = m.on_leader_and_isr(lair(5, 200, {part("t", 0, 2, 9), part("t", 1, 2, 0)}));
  EXPECT_EQ(static_cast<int>(v.error), 11);
  EXPECT_TRUE(v.partitions.empty());
  EXPECT_EQ(m.replica({"t", 1}), nullptr);
  EXPECT_EQ(m.replica({"t", 0})->leader_epoch, 1);
  EXPECT_EQ(m.on_update_metadata({1, 5, 200, {part("t", 0, 2, 9)}, {}}).code(),
            error_code::stale_controller_epoch);
  EXPECT_EQ(m.on_stop_replica({1, 5, 200, {{{"t", 0}, 9, false}}}).error, error_code::stale_controller_epoch);
}

TEST(MetadataCache, RequestForAnOlderNodeEpochIsStaleBrokerEpoch) {
  metadata_cache_core m{2, 200};
  auto v = m.on_leader_and_isr(lair(9, 199, {part("t", 0, 2, 0)}));
  EXPECT_EQ(static_cast<int>(v.error), 77);
  EXPECT_TRUE(v.partitions.empty());
  EXPECT_EQ(m.controller_epoch(), 0); // the stale request taught nothing
  EXPECT_EQ(m.on_update_metadata({1, 9, 199, {}, {}}).code(), error_code::stale_broker_epoch);
  // After re-registering, requests for the new registration pass.
  m.set_node_epoch(250);
  EXPECT_EQ(m.on_leader_and_isr(lair(9, 200, {})).error, error_code::stale_broker_epoch);
  EXPECT_EQ(m.on_leader_and_isr(lair(9, 250, {})).error, error_code::none);
}

TEST(MetadataCache, PartitionNotReplicatedHereIsUnknownTopicOrPartition) {
  metadata_cache_core m{2, 200};
  auto v = m.on_leader_and_isr(lair(5, 200, {part("t", 0, 1, 0, {1, 3})}));
  EXPECT_EQ(v.partitions.at(0).error, error_code::unknown_topic_or_partition);
  EXPECT_EQ(m.replica({"t", 0}), nullptr);
}

TEST(MetadataCache, StopReplicaWithAnOlderLeaderEpochIsFencedElseStops) {
  metadata_cache_core m{2, 200};
  (void)m.on_leader_and_isr(lair(5, 200, {part("t", 0, 1, 4), part("t", 1, 1, 4)}));
  auto v = m.on_stop_replica({1, 5, 200, {{{"t", 0}, 3, false}, {{"t", 1}, -2, true}}});
  ASSERT_EQ(v.error, error_code::none);
  EXPECT_EQ(v.partitions[0].error, error_code::fenced_leader_epoch);
  EXPECT_EQ(v.partitions[0].action, replica_action::none);
  EXPECT_EQ(v.partitions[1].action, replica_action::stop);
  EXPECT_TRUE(v.partitions[1].delete_partition);
  EXPECT_NE(m.replica({"t", 0}), nullptr);
  EXPECT_EQ(m.replica({"t", 1}), nullptr);
}

TEST(MetadataCache, LeaderLookupAndCoordinatorForAKeyByJavaHashCode) {
  metadata_cache_core m{2, 200};
  update_metadata_request um{1, 5, 200, {}, {}};
  for (int32_t p = 0; p < 50; ++p)
    um.partitions.push_back(part(transaction_state_topic, p, 1 + p % 3, 0));
  um.partitions.push_back(part("t", 0, controller::no_leader, 3));
  um.live_nodes = {live_node{1, 100, controller::endpoint{"h1", 9091}, "", {}}, live_node{2, 200, controller::endpoint{"h2", 9092}, "", {}},
                   live_node{3, 300, controller::endpoint{"h3", 9093}, "", {}}};
  ASSERT_TRUE(m.on_update_metadata(um).ok());
  // "payments-1".hashCode() == 1612905873; 1612905873 % 50 == 23; leader 1 + 23 % 3 == 3.
  EXPECT_EQ(partition_for("payments-1", 50), 23);
  auto c = m.coordinator_for("payments-1", transaction_state_topic);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->tp, (topic_partition{transaction_state_topic, 23}));
  EXPECT_EQ(c->leader.id, 3);
  EXPECT_EQ(c->leader.ep, (controller::endpoint{"h3", 9093}));
  EXPECT_EQ(m.leader_of({"t", 0}).error().code(), error_code::leader_not_available);
  EXPECT_EQ(m.leader_of({"t", 1}).error().code(), error_code::unknown_topic_or_partition);
  EXPECT_EQ(m.coordinator_for("g", consumer_offsets_topic).error().code(),
            error_code::coordinator_not_available);
  // A leader that left the live nodes is not available.
  um.partitions.clear();
  um.live_nodes.pop_back();
  um.controller_epoch = 6;
  ASSERT_TRUE(m.on_update_metadata(um).ok());
  EXPECT_EQ(m.coordinator_for("payments-1", transaction_state_topic).error().code(),
            error_code::coordinator_not_available);
  EXPECT_EQ(m.leader_of({transaction_state_topic, 23}).error().code(), error_code::leader_not_available);
}

} // namespace
} // namespace caftx

namespace caftx {
namespace {

// DescribeTopics reads the whole cluster's partitions from UpdateMetadata:
// every partition of a topic in order with its leader, replicas and ISR
// as last sent (a later UpdateMetadata replaces one partition's state),
// all topic names sorted, nothing for an unknown topic.
TEST(MetadataCache, PartitionsOfATopicAreTheLatestUpdateMetadataInPartitionOrder) {
  metadata_cache_core m{2, 200};
  auto p1 = part("t", 1, 3, 4);
  p1.isr = {3, 1};
  ASSERT_TRUE(m.on_update_metadata({1, 5, 200, {p1, part("t", 0, 2, 1), part("a", 0, 1, 0)}, {}})
                .ok());
  auto t = m.partitions_of("t");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], part("t", 0, 2, 1));
  EXPECT_EQ(t[1], p1);
  EXPECT_EQ(t[1].isr, (std::vector<int32_t>{3, 1}));
  auto moved = part("t", 1, 1, 5);
  ASSERT_TRUE(m.on_update_metadata({1, 5, 200, {moved}, {}}).ok());
  EXPECT_EQ(m.partitions_of("t")[1], moved);
  EXPECT_TRUE(m.partitions_of("nope").empty());
  EXPECT_EQ(m.topic_names(), (std::vector<std::string>{"a", "t"}));
}

// UpdateMetadata with LeaderDuringDelete (-2): the partition leaves the
// cache, the topic with its last partition (ZkMetadataCache's
// removePartitionInfo); the same name comes back with a new topic.
TEST(MetadataCache, LeaderDuringDeleteRemovesThePartitionAndTheTopicWithItsLast) {
  metadata_cache_core m{2, 200};
  ASSERT_TRUE(
    m.on_update_metadata({1, 5, 200, {part("t", 0, 2, 1), part("t", 1, 3, 1), part("a", 0, 1, 0)}, {}})
      .ok());
  ASSERT_TRUE(m.on_update_metadata({1, 5, 200, {part("t", 0, controller::leader_during_delete, 1)}, {}})
                .ok());
  ASSERT_EQ(m.partitions_of("t").size(), 1u);
  EXPECT_EQ(m.partitions_of("t")[0].tp.partition, 1);
  EXPECT_EQ(m.leader_of({"t", 0}).error().code(), error_code::unknown_topic_or_partition);
  EXPECT_EQ(m.topic_names(), (std::vector<std::string>{"a", "t"}));
  ASSERT_TRUE(m.on_update_metadata({1, 5, 200, {part("t", 1, controller::leader_during_delete, 1)}, {}})
                .ok());
  EXPECT_TRUE(m.partitions_of("t").empty());
  EXPECT_EQ(m.topic_names(), (std::vector<std::string>{"a"}));
  ASSERT_TRUE(m.on_update_metadata({1, 5, 200, {part("t", 0, 3, 0)}, {}}).ok());
  EXPECT_EQ(m.topic_names(), (std::vector<std::string>{"a", "t"}));
}

} // namespace
} // namespace caftx
