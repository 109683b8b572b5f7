// A node's multi-partition fetch (node_fetch_request, Kafka's Fetch of
// many partitions) and the consumer using it: one request per node for
// every assigned partition, answered when any partition has data or
// fetch.max.wait.ms passed, within fetch.min.bytes / fetch.max.bytes /
// max.partition.fetch.bytes, with per-partition errors; per partition the
// same answer as a fetch of that partition alone.
#include "fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>

#include "actors/broker/node_fetch.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"

namespace caftx::testing {
namespace {

class NodeFetchTest : public node_fixture {
protected:
  void SetUp() override {
    start_node();
    create_topic("t", 3);
  }

  void produce_values(int32_t partition, std::vector<std::string> values) {
    auto r = produce({"t", partition}, "", batch(no_producer_id, no_producer_epoch, -1,
                                                 std::move(values), false));
    ASSERT_EQ(r.error, error_code::none) << r.message;
  }

  static fetch_request part(int32_t p, int64_t offset, int32_t max_bytes = 1 << 20,
                            isolation_level iso = isolation_level::read_uncommitted) {
    return fetch_request{{"t", p}, offset, max_bytes, iso, 0};
  }

  static std::vector<std::string> values_of(const fetch_response& r) {
    std::vector<std::string> out;
    for (auto& b : batches_of(r))
      for (auto& rec : b.records)
        out.push_back(rec.value);
    return out;
  }
};

TEST_F(NodeFetchTest, OneRequestAnswersEveryPartitionAsItsOwnFetchWouldWithPerPartitionErrors) {
  produce_values(0, {"a0", "a1"});
  produce_values(2, {"c0"});
  node_fetch_request req{{part(0, 0), part(1, 0), part(2, 0), part(2, 5),
                          fetch_request{{"nope", 0}, 0, 1 << 20}},
                         0, 1, 52428800};
  auto r = call<node_fetch_response>(broker(), req);
  ASSERT_EQ(r.partitions.size(), 5u);
  EXPECT_EQ(values_of(r.partitions[0]), (std::vector<std::string>{"a0", "a1"}));
  EXPECT_EQ(r.partitions[0].high_watermark, 2);
  EXPECT_TRUE(r.partitions[1].records.empty());
  EXPECT_EQ(r.partitions[1].error, error_code::none);
  EXPECT_EQ(values_of(r.partitions[2]), (std::vector<std::string>{"c0"}));
  EXPECT_EQ(r.partitions[3].error, error_code::offset_out_of_range);
  EXPECT_EQ(r.partitions[4].error, error_code::unknown_topic_or_partition);
  // Each partition's part is what its own fetch answers.
  for (int p : {0, 2}) {
    auto alone = fetch({"t", p}, 0, isolation_level::read_uncommitted);
    EXPECT_EQ(r.partitions[static_cast<size_t>(p)].records, alone.records);
    EXPECT_EQ(r.partitions[static_cast<size_t>(p)].last_stable_offset, alone.last_stable_offset);
  }
}

TEST_F(NodeFetchTest, AHeldFetchIsAnsweredWhenAnyPartitionGetsDataOrWhenTheWaitPasses) {
  node_fetch_request req{{part(0, 0), part(1, 0), part(2, 0)}, 10000, 1, 52428800};
  auto handle = self->request(broker(), caf::infinite, req);
  sched.run();
  EXPECT_TRUE(self->mailbox().empty()); // nothing anywhere: held
  produce_values(1, {"b0"});             // data at one partition
  sched.run();
  node_fetch_response r;
  bool got = false;
  ASSERT_FALSE(self->mailbox().empty());
  handle.receive([&](node_fetch_response& x) { r = std::move(x); got = true; },
                 [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  ASSERT_TRUE(got);
  ASSERT_EQ(r.partitions.size(), 3u);
  EXPECT_EQ(values_of(r.partitions[1]), (std::vector<std::string>{"b0"}));
  EXPECT_TRUE(r.partitions[0].records.empty());
  EXPECT_TRUE(r.partitions[2].records.empty());

  // Nothing new: answered empty once fetch.max.wait.ms passed.
  auto empty = self->request(broker(), caf::infinite,
                             node_fetch_request{{part(0, 0), part(1, 1)}, 200, 1, 52428800});
  sched.run();
  EXPECT_TRUE(self->mailbox().empty());
  sched.advance_time(std::chrono::milliseconds(200));
  sched.run();
  got = false;
  empty.receive(
    [&](node_fetch_response& x) {
      got = true;
      ASSERT_EQ(x.partitions.size(), 2u);
      EXPECT_TRUE(x.partitions[0].records.empty());
      EXPECT_TRUE(x.partitions[1].records.empty());
      EXPECT_EQ(x.partitions[1].error, error_code::none);
    },
    [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_TRUE(got);
}

TEST_F(NodeFetchTest, FetchMinBytesHoldsTheAnswerUntilThePartitionsTogetherHaveThatMuch) {
  produce_values(0, {"a0"});
  auto alone = fetch({"t", 0}, 0, isolation_level::read_uncommitted).records.size();
  // More than partition 0 has: held until partition 2 adds its part.
  node_fetch_request req{{part(0, 0), part(2, 0)}, 10000, static_cast<int32_t>(alone + 1),
                         52428800};
  auto handle = self->request(broker(), caf::infinite, req);
  sched.run();
  EXPECT_TRUE(self->mailbox().empty());
  produce_values(2, {"c0"});
  sched.run();
  ASSERT_FALSE(self->mailbox().empty());
  handle.receive(
    [&](node_fetch_response& r) {
      ASSERT_EQ(r.partitions.size(), 2u);
      EXPECT_EQ(values_of(r.partitions[0]), (std::vector<std::string>{"a0"}));
      EXPECT_EQ(values_of(r.partitions[1]), (std::vector<std::string>{"c0"}));
    },
    [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
}

TEST_F(NodeFetchTest, FetchMaxBytesKeepsTheFirstPartitionsRecordsAndDropsThoseOverTheBudget) {
  produce_values(0, {std::string(500, 'a')});
  produce_values(1, {std::string(500, 'b')});
  produce_values(2, {"c"});
  auto size0 = fetch({"t", 0}, 0, isolation_level::read_uncommitted).records.size();
  auto size2 = fetch({"t", 2}, 0, isolation_level::read_uncommitted).records.size();
  // Room for partition 0 and the small partition 2, not for partition 1.
  auto budget = static_cast<int32_t>(size0 + size2);
  auto r = call<node_fetch_response>(
    broker(), node_fetch_request{{part(0, 0), part(1, 0), part(2, 0)}, 0, 1, budget});
  ASSERT_EQ(r.partitions.size(), 3u);
  EXPECT_EQ(values_of(r.partitions[0]), (std::vector<std::string>{std::string(500, 'a')}));
  EXPECT_TRUE(r.partitions[1].records.empty());
  EXPECT_EQ(r.partitions[1].error, error_code::none);
  EXPECT_EQ(r.partitions[1].high_watermark, 1);
  EXPECT_EQ(values_of(r.partitions[2]), (std::vector<std::string>{"c"}));
  // A budget below the first partition's batch still brings that batch.
  auto tiny = call<node_fetch_response>(
    broker(), node_fetch_request{{part(1, 0), part(0, 0)}, 0, 1, 10});
  EXPECT_EQ(values_of(tiny.partitions[0]), (std::vector<std::string>{std::string(500, 'b')}));
  EXPECT_TRUE(tiny.partitions[1].records.empty());
}

TEST_F(NodeFetchTest, ReadCommittedPerPartitionStopsAtTheLastStableOffsetWithItsAbortedList) {
  auto id = init("tx");
  ASSERT_EQ(add("tx", id, {{"t", 0}}).error, error_code::none);
  ASSERT_EQ(produce({"t", 0}, "tx", batch(id.pid, id.epoch, 0, {"open"}, true)).error,
            error_code::none);
  produce_values(1, {"plain"});
  auto r = call<node_fetch_response>(
    broker(), node_fetch_request{{part(0, 0, 1 << 20, isolation_level::read_committed),
                                  part(1, 0, 1 << 20, isolation_level::read_committed)},
                                 0, 1, 52428800});
  ASSERT_EQ(r.partitions.size(), 2u);
  EXPECT_TRUE(r.partitions[0].records.empty()); // the open transaction is above the LSO
  EXPECT_EQ(r.partitions[0].last_stable_offset, 0);
  EXPECT_EQ(values_of(r.partitions[1]), (std::vector<std::string>{"plain"}));
  ASSERT_EQ(end("tx", id, false).error, error_code::none);
  auto after = call<node_fetch_response>(
    broker(), node_fetch_request{{part(0, 0, 1 << 20, isolation_level::read_committed)}, 0, 1,
                                 52428800});
  auto alone = fetch({"t", 0}, 0, isolation_level::read_committed);
  EXPECT_EQ(after.partitions[0].records, alone.records);
  EXPECT_EQ(after.partitions[0].aborted_transactions.size(), alone.aborted_transactions.size());
  EXPECT_EQ(after.partitions[0].aborted_transactions.size(), 1u);
}

// The consumer against a fake broker that counts the fetches reaching it
// and its three fake partition leaders.
class ConsumerNodeFetchTest : public node_fixture {
protected:
  std::vector<size_t> node_fetches; // partitions per node-level fetch
  std::vector<partition_actor> leaders;
  caf::actor broker_fake;

  void SetUp() override {
    for (int32_t p = 0; p < 3; ++p)
      leaders.push_back(caf::actor_cast<partition_actor>(sys.spawn([this, p](caf::event_based_actor*) -> caf::behavior {
        return {[this, p](const fetch_request& r) {
          fetch_response resp;
          resp.high_watermark = resp.last_stable_offset = 2;
          resp.log_start_offset = 0;
          if (r.fetch_offset < 2) {
            record_batch b;
            b.base_offset = r.fetch_offset;
            for (int64_t o = r.fetch_offset; o < 2; ++o)
              b.records.push_back({"", std::to_string(p) + ":" + std::to_string(o), {}, now_ms});
            resp.records = v2::encode(b);
          }
          return resp;
        }};
      })));
    broker_fake = sys.spawn([this](caf::event_based_actor* self) -> caf::behavior {
      return {[this](const metadata_request&) {
                return metadata_response{{topic_metadata{"t", error_code::none, leaders}}};
              },
              [this, self](node_fetch_request& req) -> caf::result<node_fetch_response> {
                node_fetches.push_back(req.partitions.size());
                auto rp = self->make_response_promise<node_fetch_response>();
                node_fetch(self, std::move(req),
                           [this](const topic_partition& tp) {
                             return leaders.at(static_cast<size_t>(tp.partition));
                           },
                           1000, rp);
                return rp;
              }};
    });
  }

  void TearDown() override {
    for (auto& l : leaders)
      caf::anon_send_exit(l, caf::exit_reason::kill);
    caf::anon_send_exit(broker_fake, caf::exit_reason::kill);
    sched.run();
  }
};

TEST_F(ConsumerNodeFetchTest, APollFetchesEveryAssignedPartitionOfTheNodeInOneRequest) {
  consumer c{sys, broker_fake, properties{}};
  c.set_driver(deterministic_driver());
  c.assign({{"t", 0}, {"t", 1}, {"t", 2}});
  for (int32_t p = 0; p < 3; ++p)
    c.seek({"t", p}, 0);
  auto records = c.poll(std::chrono::milliseconds(0));
  EXPECT_EQ(node_fetches, std::vector<size_t>{3}); // one request, three partitions
  std::vector<std::string> values;
  for (auto& r : records)
    values.push_back(r.value);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, (std::vector<std::string>{"0:0", "0:1", "1:0", "1:1", "2:0", "2:1"}));
  for (int32_t p = 0; p < 3; ++p)
    EXPECT_EQ(c.position({"t", p}), 2);
}

} // namespace
} // namespace caftx::testing
