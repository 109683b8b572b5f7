// Two CreateTopics racing for one name: the second gets
// TOPIC_ALREADY_EXISTS while the first's record is being written, so one set
// of partition leaders serves the topic. CreatePartitions on the embedded
// node: new partitions with leaders, the old ones and their records kept.
#include "fixture.hpp"

namespace caftx::testing {
namespace {

class CreateTopicsTest : public node_fixture {
protected:
  void SetUp() override { start_node(); }
};

TEST_F(CreateTopicsTest, TwoCreateTopicsAtOnceCreateOneTopic) {
  auto first = self->request(broker(), caf::infinite, create_topic_request{"x", 2, {}});
  auto second = self->request(broker(), caf::infinite, create_topic_request{"x", 3, {}});
  sched.run();
  std::vector<error_code> errors;
  for (auto* h : {&first, &second})
    h->receive([&](const txn_response& r) { errors.push_back(r.error); },
               [&](const caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(errors, (std::vector<error_code>{error_code::none, error_code::topic_already_exists}));
  auto md = call<metadata_response>(broker(), metadata_request{{"x"}});
  ASSERT_EQ(md.topics.size(), 1u);
  EXPECT_EQ(md.topics[0].partitions.size(), 2u);
}

TEST_F(CreateTopicsTest, CreatePartitionsAddsLedPartitionsAndKeepsTheOldOnesRecords) {
  create_topic("x", 2);
  auto b = [this](std::string value) {
    return batch(producer_id{-1}, producer_epoch{-1}, -1, {std::move(value)}, false);
  };
  ASSERT_EQ(produce({"x", 1}, "", b("before")).error, error_code::none);
  auto grown = call<txn_response>(broker(), create_partitions_request{"x", 4, {}, false, 30000});
  ASSERT_EQ(grown.error, error_code::none) << grown.message;
  auto md = call<metadata_response>(broker(), metadata_request{{"x"}});
  ASSERT_EQ(md.topics.size(), 1u);
  ASSERT_EQ(md.topics[0].partitions.size(), 4u);
  for (auto& leader : md.topics[0].partitions)
    EXPECT_TRUE(leader);
  auto produced = produce({"x", 3}, "", b("after"));
  ASSERT_EQ(produced.error, error_code::none);
  EXPECT_EQ(produced.base_offset, 0);
  EXPECT_EQ(visible_values({"x", 3}, isolation_level::read_committed),
            (std::vector<std::string>{"after"}));
  EXPECT_EQ(visible_values({"x", 1}, isolation_level::read_committed),
            (std::vector<std::string>{"before"}));
  // Kafka's errors; nothing changes.
  auto lower = call<txn_response>(broker(), create_partitions_request{"x", 3, {}, false, 30000});
  EXPECT_EQ(lower.error, error_code::invalid_partitions);
  EXPECT_EQ(lower.message, "Topic currently has 4 partitions, which is higher than the requested 3.");
  auto unknown = call<txn_response>(broker(), create_partitions_request{"y", 3, {}, false, 30000});
  EXPECT_EQ(unknown.error, error_code::unknown_topic_or_partition);
  auto dry = call<txn_response>(broker(), create_partitions_request{"x", 9, {}, true, 30000});
  EXPECT_EQ(dry.error, error_code::none);
  auto too_many = call<txn_response>(broker(), create_partitions_request{"x", 10001, {}, false, 30000});
  EXPECT_EQ(too_many.error, error_code::invalid_partitions);
  EXPECT_EQ(call<metadata_response>(broker(), metadata_request{{"x"}}).topics.at(0).partitions.size(),
            4u);
}

// DescribeConfigs at the embedded node (node id 0): a topic's override
// and the node's defaults; an internal topic as the node runs it; the
// node's own keys; Kafka's errors.
TEST_F(CreateTopicsTest, DescribeConfigsShowsOverridesDefaultsAndTheNodesOwnKeys) {
  auto created = call<txn_response>(broker(), create_topic_request{"x", 1, {{"retention.ms", "1000"}}});
  ASSERT_EQ(created.error, error_code::none) << created.message;
  init("tx"); // creates __transaction_state
  auto value_of = [](const describe_configs_response& r, const std::string& key) {
    for (auto& e : r.entries)
      if (e.name == key)
        return std::make_pair(e.value, e.source);
    return std::make_pair(std::string("absent"), config_source::unknown);
  };
  auto x = call<describe_configs_response>(broker(), describe_configs_request{2, "x"});
  ASSERT_EQ(x.error, error_code::none) << x.message;
  EXPECT_EQ(value_of(x, "retention.ms"),
            std::make_pair(std::string("1000"), config_source::dynamic_topic_config));
  EXPECT_EQ(value_of(x, "cleanup.policy"),
            std::make_pair(std::string("delete"), config_source::default_config));
  auto txn = call<describe_configs_response>(broker(),
                                             describe_configs_request{2, "__transaction_state"});
  ASSERT_EQ(txn.error, error_code::none) << txn.message;
  EXPECT_EQ(value_of(txn, "retention.ms"),
            std::make_pair(std::string("-1"), config_source::dynamic_topic_config));
  EXPECT_EQ(value_of(txn, "cleanup.policy").first, "compact");
  EXPECT_EQ(value_of(txn, "min.insync.replicas").first, "1"); // the embedded node's one replica
  auto node = call<describe_configs_response>(broker(), describe_configs_request{4, "0"});
  ASSERT_EQ(node.error, error_code::none) << node.message;
  EXPECT_EQ(value_of(node, "num.partitions").first, "1");
  for (auto& e : node.entries)
    EXPECT_TRUE(e.read_only) << e.name;
  EXPECT_TRUE(call<describe_configs_response>(broker(), describe_configs_request{4, ""}).entries.empty());
  EXPECT_EQ(call<describe_configs_response>(broker(), describe_configs_request{4, "3"}).error,
            error_code::invalid_request);
  EXPECT_EQ(call<describe_configs_response>(broker(), describe_configs_request{4, "x"}).error,
            error_code::invalid_request);
  EXPECT_EQ(call<describe_configs_response>(broker(), describe_configs_request{8, "x"}).error,
            error_code::invalid_request);
  EXPECT_EQ(call<describe_configs_response>(broker(), describe_configs_request{2, "nope"}).error,
            error_code::unknown_topic_or_partition);
  EXPECT_EQ(call<describe_configs_response>(broker(), describe_configs_request{2, "bad/name"}).error,
            error_code::invalid_topic_exception);
}

} // namespace
} // namespace caftx::testing
