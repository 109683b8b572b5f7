// The controller's znode layout and JSON (docs/controller.md §Znodes):
// golden strings, round trips, malformed znodes naming their path; the
// election steps (Kafka's registerControllerAndIncrementControllerEpoch),
// replica assignment (Kafka's AdminUtils) and producer id blocks (Kafka's
// ProducerIdManager).
#include <gtest/gtest.h>

#include "actors/controller/controller_election.hpp"
#include "actors/controller/producer_id_block.hpp"
#include "actors/controller/replica_assignment.hpp"
#include "actors/controller/znodes.hpp"

namespace caftx::controller {
namespace {

// -- znodes -------------------------------------------------------------------

TEST(Znodes, PathsAreTheControllersLayout) {
  EXPECT_EQ(node_path(3), "/nodes/3");
  EXPECT_EQ(topic_path("payments"), "/topics/payments");
  EXPECT_EQ(partition_path({"payments", 2}), "/topics/payments/2");
  EXPECT_EQ(partition_state_path({"payments", 2}), "/topics/payments/2/state");
  EXPECT_EQ(controller_path, "/controller");
  EXPECT_EQ(controller_epoch_path, "/controller_epoch");
  EXPECT_EQ(producer_id_block_path, "/producer_id_block");
  EXPECT_EQ(cluster_id_path, "/cluster_id");
}

TEST(Znodes, PartitionStateGoldenStringInKafkasFieldOrder) {
  partition_state st{1, 4, {1, 2, 3}, 7, 0};
  EXPECT_EQ(encode_partition_state(st),
            R"({"version":1,"leader":1,"leader_epoch":4,"controller_epoch":7,"isr":[1,2,3]})");
  auto back = decode_partition_state("/topics/t/0/state", encode_partition_state(st), 9);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, (partition_state{1, 4, {1, 2, 3}, 7, 9})); // partition epoch = znode version
  auto offline = decode_partition_state(
    "/topics/t/0/state", R"({"version":1,"leader":-1,"leader_epoch":5,"controller_epoch":7,"isr":[3]})", 2);
  ASSERT_TRUE(offline.ok());
  EXPECT_EQ(offline->leader, no_leader);
}

TEST(Znodes, TopicGoldenString) {
  topic_assignment t{"payments", {{0, {1, 2, 3}}, {1, {2, 3, 1}}}, {{"min.insync.replicas", "2"}}};
  EXPECT_EQ(encode_topic(t),
            R"({"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]},"config":{"min.insync.replicas":"2"}})");
  auto back = decode_topic("payments", encode_topic(t));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, t);
}

TEST(Znodes, NodeGoldenStringWithAndWithoutRack) {
  node_registration reg{endpoint{"10.0.0.7", 9092}, "", "0.1.0", 1700000000123, {}};
  EXPECT_EQ(encode_node(reg),
            R"({"version":1,"host":"10.0.0.7","port":9092,"caftx_build":"0.1.0","started_ms":1700000000123})");
  reg.rack = "r1";
  EXPECT_EQ(encode_node(reg),
            R"({"version":1,"host":"10.0.0.7","port":9092,"rack":"r1","caftx_build":"0.1.0","started_ms":1700000000123})");
  auto back = decode_node("/nodes/7", encode_node(reg));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_live_node(7, 4242, *back), (live_node{7, 4242, endpoint{"10.0.0.7", 9092}, "r1", {}}));
  // The embedded node has no listener: port 0.
  auto embedded = decode_node("/nodes/0", encode_node({endpoint{"localhost", 0}, "", "b", 1, {}}));
  ASSERT_TRUE(embedded.ok()) << embedded.error().to_string();
  EXPECT_EQ(embedded->ep, (endpoint{"localhost", 0}));
}

// A node serving Kafka's protocol registers its advertised PLAINTEXT://
// listener as Kafka's BrokerIdZNode does ("endpoints"); other kinds there
// are not caftx's and are skipped.
TEST(Znodes, NodeKafkaEndpointIsKafkasEndpointsEntry) {
  node_registration reg{endpoint{"10.0.0.7", 9192}, "", "b", 1, endpoint{"broker7", 9092}};
  EXPECT_EQ(encode_node(reg),
            R"({"version":1,"host":"10.0.0.7","port":9192,"caftx_build":"b","started_ms":1,"endpoints":["PLAINTEXT://broker7:9092"]})");
  auto back = decode_node("/nodes/7", encode_node(reg));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(to_live_node(7, 1, *back).kafka, (endpoint{"broker7", 9092}));
  auto other = decode_node(
    "/nodes/7",
    R"({"version":1,"host":"h","port":1,"caftx_build":"b","started_ms":1,"endpoints":["SSL://h:9093"]})");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->kafka.port, 0);
  auto bad = decode_node(
    "/nodes/7",
    R"({"version":1,"host":"h","port":1,"caftx_build":"b","started_ms":1,"endpoints":["PLAINTEXT://h:x"]})");
  EXPECT_EQ(bad.error().message(),
            "malformed znode /nodes/7: \"endpoints\" entry 'PLAINTEXT://h:x' is not PLAINTEXT://host:port");
}

TEST(Znodes, ControllerEpochProducerIdBlockAndClusterIdGoldenStrings) {
  EXPECT_EQ(encode_controller(2, 1700000000123),
            R"({"version":1,"node_id":2,"timestamp":"1700000000123"})");
  EXPECT_EQ(*decode_controller(encode_controller(2, 5)), 2);
  EXPECT_EQ(encode_controller_epoch(5), R"({"version":1,"epoch":5})");
  EXPECT_EQ(*decode_controller_epoch(R"({"version":1,"epoch":5})"), 5);
  producer_id_block b{3, 1000, 1999};
  EXPECT_EQ(encode_producer_id_block(b),
            R"({"version":1,"node_id":3,"block_start":"1000","block_end":"1999"})");
  EXPECT_EQ(*decode_producer_id_block(encode_producer_id_block(b)), b);
  EXPECT_EQ(encode_cluster_id("Zx9"), R"({"version":1,"id":"Zx9"})");
  EXPECT_EQ(*decode_cluster_id(R"({"version":1,"id":"Zx9"})"), "Zx9");
}

TEST(Znodes, MalformedZnodeGivesAnErrorNamingThePath) {
  auto expect = [](const status& st, const std::string& message) {
    EXPECT_EQ(st.code(), error_code::unknown_server_error);
    EXPECT_EQ(st.message(), message);
  };
  const std::string p = "/topics/t/0/state";
  expect(decode_partition_state(p, "{not json", 0).error(), "malformed znode /topics/t/0/state: not JSON");
  expect(decode_partition_state(p, R"({"version":2,"leader":1})", 0).error(),
         "malformed znode /topics/t/0/state: unsupported version 2");
  expect(decode_partition_state(p, R"({"version":1,"leader":1,"leader_epoch":0,"isr":[1]})", 0).error(),
         "malformed znode /topics/t/0/state: no \"controller_epoch\"");
  expect(decode_partition_state(
           p, R"({"version":1,"leader":4,"leader_epoch":0,"controller_epoch":1,"isr":[1,2]})", 0)
           .error(),
         "malformed znode /topics/t/0/state: leader 4 not in \"isr\"");
  expect(decode_partition_state(
           p, R"({"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,1]})", 0)
           .error(),
         "malformed znode /topics/t/0/state: \"isr\" names node 1 twice");
  expect(decode_topic("t", R"({"version":1,"partitions":{"0":[1],"2":[1]},"config":{}})").error(),
         "malformed znode /topics/t: partitions are not numbered 0..1");
  expect(decode_topic("t", R"({"version":1,"partitions":{"0":[1]},"config":{"a":2}})").error(),
         "malformed znode /topics/t: config \"a\" is not a string");
  expect(decode_node("/nodes/3", R"({"version":1,"host":"h","port":65536,"caftx_build":"b","started_ms":1})")
           .error(),
         "malformed znode /nodes/3: \"port\" out of range: 65536");
  expect(decode_controller_epoch("5").error(), "malformed znode /controller_epoch: not a JSON object");
  expect(decode_producer_id_block(R"({"version":1,"node_id":1,"block_start":"x","block_end":"9"})").error(),
         "malformed znode /producer_id_block: \"block_start\" is not a decimal number: \"x\"");
}

// -- election -----------------------------------------------------------------

TEST(ControllerElection, ReadsEpochRegistersWithVersionCheckThenIncrementsAtThatVersion) {
  controller_election e{2, 1700000000123};
  auto ensure = e.ensure_epoch_znode();
  ASSERT_EQ(ensure.ops.size(), 1u);
  EXPECT_EQ(ensure.ops[0], (store_op{op_kind::create, "/controller_epoch", R"({"version":1,"epoch":0})", -1}));

  auto s1 = e.on_read(std::nullopt, R"({"version":1,"epoch":4})", 7);
  ASSERT_EQ(s1.outcome, election_outcome::write);
  ASSERT_EQ(s1.write->ops.size(), 2u);
  EXPECT_EQ(s1.write->ops[0], (store_op{op_kind::check, "/controller_epoch", "", 7}));
  EXPECT_EQ(s1.write->ops[1], (store_op{op_kind::create_ephemeral, "/controller",
                                        R"({"version":1,"node_id":2,"timestamp":"1700000000123"})", -1}));

  auto s2 = e.on_result({s1.write->id, write_outcome::ok, 0, {-1, 0}});
  ASSERT_EQ(s2.outcome, election_outcome::write);
  ASSERT_EQ(s2.write->ops.size(), 1u);
  EXPECT_EQ(s2.write->ops[0], (store_op{op_kind::set, "/controller_epoch", R"({"version":1,"epoch":5})", 7}));
  EXPECT_FALSE(e.identity());

  auto s3 = e.on_result({s2.write->id, write_outcome::ok, 0, {8}});
  EXPECT_EQ(s3.outcome, election_outcome::won);
  ASSERT_TRUE(e.identity());
  EXPECT_EQ(e.identity()->id, 2);
  EXPECT_EQ(e.identity()->epoch, 5);
  EXPECT_EQ(e.identity()->epoch_version, 8);
}

TEST(ControllerElection, AnotherControllerOrNodeExistsOrMovedEpochLoses) {
  controller_election a{2, 0};
  EXPECT_EQ(a.on_read(3, R"({"version":1,"epoch":4})", 7).outcome, election_outcome::lost);
  controller_election b{2, 0};
  auto w = b.on_read(std::nullopt, R"({"version":1,"epoch":4})", 7);
  EXPECT_EQ(b.on_result({w.write->id, write_outcome::node_exists, 1, {}}).outcome, election_outcome::lost);
  EXPECT_FALSE(b.identity());
  controller_election c{2, 0};
  w = c.on_read(std::nullopt, R"({"version":1,"epoch":4})", 7);
  EXPECT_EQ(c.on_result({w.write->id, write_outcome::bad_version, 0, {}}).outcome, election_outcome::lost);
  EXPECT_FALSE(c.identity());
}

TEST(ControllerElection, BadVersionOnIncrementLosesAndDeletesOurControllerZnode) {
  controller_election e{2, 0};
  auto w = e.on_read(std::nullopt, R"({"version":1,"epoch":4})", 7);
  auto inc = e.on_result({w.write->id, write_outcome::ok, 0, {-1, 0}});
  auto lost = e.on_result({inc.write->id, write_outcome::bad_version, 0, {}});
  EXPECT_EQ(lost.outcome, election_outcome::lost);
  ASSERT_TRUE(lost.write);
  EXPECT_EQ(lost.write->ops, (std::vector<store_op>{{op_kind::remove, "/controller", "", -1}}));
  EXPECT_FALSE(e.identity());
}

TEST(ControllerElection, ConnectionLossRereadsAndFindingOurControllerZnodeIncrements) {
  controller_election e{2, 0};
  auto w = e.on_read(std::nullopt, R"({"version":1,"epoch":4})", 7);
  EXPECT_EQ(e.on_result({w.write->id, write_outcome::connection_loss, 0, {}}).outcome,
            election_outcome::reread);
  auto again = e.on_read(2, R"({"version":1,"epoch":4})", 7); // our create went through
  ASSERT_EQ(again.outcome, election_outcome::write);
  EXPECT_EQ(again.write->ops,
            (std::vector<store_op>{{op_kind::set, "/controller_epoch", R"({"version":1,"epoch":5})", 7}}));
}

TEST(ControllerElection, MalformedEpochZnodeLosesWithThePath) {
  controller_election e{2, 0};
  auto s = e.on_read(std::nullopt, "5", 7);
  EXPECT_EQ(s.outcome, election_outcome::lost);
  EXPECT_EQ(s.reason, "UNKNOWN_SERVER_ERROR: malformed znode /controller_epoch: not a JSON object");
}

// -- replica assignment ---------------------------------------------------------

TEST(ReplicaAssignment, KafkasAdminUtilsExampleFiveNodesTenPartitionsThreeReplicas) {
  // Kafka's AdminUtilsTest.testReplicaAssignment (fixed start index 0).
  auto a = assign_replicas(10, 3, {0, 1, 2, 3, 4}, 0, 0);
  ASSERT_TRUE(a.ok());
  std::map<int32_t, std::vector<node_id>> expected{
    {0, {0, 1, 2}}, {1, {1, 2, 3}}, {2, {2, 3, 4}}, {3, {3, 4, 0}}, {4, {4, 0, 1}},
    {5, {0, 2, 3}}, {6, {1, 3, 4}}, {7, {2, 4, 0}}, {8, {3, 0, 1}}, {9, {4, 1, 2}}};
  EXPECT_EQ(*a, expected);
}

TEST(ReplicaAssignment, StartIndexAndReplicaShiftAreInputsOverSortedNodes) {
  auto a = assign_replicas(4, 2, {3, 1, 2}, 1, 1);
  ASSERT_TRUE(a.ok());
  std::map<int32_t, std::vector<node_id>> expected{{0, {2, 1}}, {1, {3, 2}}, {2, {1, 3}}, {3, {2, 3}}};
  EXPECT_EQ(*a, expected);
}

// CreatePartitions numbers the new partitions on from the topic's count
// (Kafka's startPartitionId): their first replicas continue the round of a
// topic created that large at once; the replica shift starts over from the
// value given (Kafka passes the start index again), so the followers may
// differ.
TEST(ReplicaAssignment, AddedPartitionsContinueTheNumberingAndTheFirstReplicas) {
  auto whole = assign_replicas(10, 3, {0, 1, 2, 3, 4}, 0, 0);
  auto added = assign_replicas(4, 3, {0, 1, 2, 3, 4}, 0, 0, 6);
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(added.ok());
  std::map<int32_t, std::vector<node_id>> expected{
    {6, {1, 2, 3}}, {7, {2, 3, 4}}, {8, {3, 4, 0}}, {9, {4, 0, 1}}};
  EXPECT_EQ(*added, expected);
  for (auto& [p, replicas] : *added)
    EXPECT_EQ(replicas.front(), whole->at(p).front()) << "partition " << p;
  // AdminZkClient.createNewPartitionsAssignment: start index and shift both
  // the index of partition 0's first replica (node 1 here).
  auto grown = assign_replicas(2, 2, {0, 1, 2, 3, 4}, 1, 1, 3);
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(*grown, (std::map<int32_t, std::vector<node_id>>{{3, {4, 1}}, {4, {0, 2}}}));
}

TEST(ReplicaAssignment, ReplicationFactorAboveLiveNodesIsInvalidReplicationFactor38) {
  auto a = assign_replicas(3, 3, {1, 2}, 0, 0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(static_cast<int>(a.error().code()), 38);
  EXPECT_EQ(a.error().message(), "Replication factor: 3 larger than available brokers: 2.");
  auto zero_rf = assign_replicas(3, 0, {1, 2}, 0, 0);
  EXPECT_EQ(zero_rf.error().code(), error_code::invalid_replication_factor);
  EXPECT_EQ(zero_rf.error().message(), "Replication factor must be larger than 0.");
  auto zero_p = assign_replicas(0, 1, {1, 2}, 0, 0);
  EXPECT_EQ(zero_p.error().code(), error_code::invalid_partitions);
  EXPECT_EQ(zero_p.error().message(), "Number of partitions must be larger than 0.");
}

// -- producer id blocks ---------------------------------------------------------

TEST(ProducerIdBlock, FirstBlockIsZeroTo999AndCreatesTheZnode) {
  auto c = claim_producer_id_block(std::nullopt, 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->block, (producer_id_block{4, 0, 999}));
  EXPECT_EQ(c->op, (store_op{op_kind::create, "/producer_id_block",
                             R"({"version":1,"node_id":4,"block_start":"0","block_end":"999"})", -1}));
}

TEST(ProducerIdBlock, NextBlockStartsAfterTheOldEndAndCasesOnTheReadVersion) {
  auto c = claim_producer_id_block(
    versioned_data{R"({"version":1,"node_id":2,"block_start":"1000","block_end":"1999"})", 6}, 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->block, (producer_id_block{4, 2000, 2999}));
  EXPECT_EQ(c->op.kind, op_kind::set);
  EXPECT_EQ(c->op.expected_version, 6);
  EXPECT_TRUE(claim_succeeded(*c, c->op.data));
  EXPECT_FALSE(claim_succeeded(
    *c, R"({"version":1,"node_id":3,"block_start":"2000","block_end":"2999"})")); // another node won
}

TEST(ProducerIdBlock, ExhaustedIdsAndMalformedZnodeFail) {
  auto end = std::to_string(std::numeric_limits<int64_t>::max() - 999);
  auto c = claim_producer_id_block(
    versioned_data{R"({"version":1,"node_id":2,"block_start":"0","block_end":")" + end + "\"}", 1}, 4);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message(), "Have exhausted all producerIds.");
  auto bad = claim_producer_id_block(versioned_data{"{}", 1}, 4);
  EXPECT_EQ(bad.error().message(), "malformed znode /producer_id_block: no \"version\"");
}

} // namespace
} // namespace caftx::controller
