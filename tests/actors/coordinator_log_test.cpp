// A transaction coordinator shard writes through its own partition of
// `__transaction_state` (docs/transactions.md §Load, docs/coordinator-records.md):
// its cards are records there, its coordinator epoch is the partition's
// leader epoch, clients cannot write the partition, a retried KIP-360 bump
// is recognised across a coordinator restart, and markers wait for a
// partition without a leader instead of dropping it. One node on the
// deterministic scheduler with simulated time.
#include "fixture.hpp"

#include "runtime/coordinator_records.hpp"
#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

const topic_partition t0{"t", 0};
const topic_partition t1{"t", 1};

class CoordinatorLogTest : public node_fixture {
protected:
  topic_partition shard_of(const std::string& tid) {
    return {transaction_state_topic, partition_for(tid, 50)};
  }

  /// The batches of `tid`'s shard partition, as a read_uncommitted
  /// consumer fetches them.
  std::vector<record_batch> shard_batches(const std::string& tid) {
    return batches_of(fetch(shard_of(tid), 0, isolation_level::read_uncommitted));
  }

  /// The states of `tid`'s cards in its shard partition, in log order.
  std::vector<std::string> card_states(const std::string& tid) {
    std::vector<std::string> states;
    auto key = coordinator_records::encode_txn_key(tid);
    for (auto& b : shard_batches(tid))
      for (auto& r : b.records)
        if (r.key == key) {
          auto card = coordinator_records::decode_txn_value(tid, r.value);
          EXPECT_TRUE(card.ok()) << card.error().to_string();
          states.push_back(card.ok() ? to_string(card->state) : "?");
        }
    return states;
  }

  /// `tid`'s shard partition after the node started and `tid` got its
  /// producer id, elected by the test as a coordinator incarnation elects
  /// it at its start.
  std::pair<partition_actor, become_leader_response> elect_shard(const std::string& tid) {
    start_node();
    EXPECT_EQ(init(tid).error, error_code::none);
    auto tp = shard_of(tid);
    auto partition = leader(tp.topic, tp.partition);
    auto elected = call<become_leader_response>(partition, become_leader_request{});
    EXPECT_EQ(elected.error, error_code::none);
    return {partition, elected};
  }

  void kill_coordinator(const std::string& tid) {
    call<supervisor_stats>(n->coordinator_supervisor(partition_for(tid, 50)),
                           kill_child_request{});
    sched.run();
  }
};

TEST_F(CoordinatorLogTest, EveryTransitionIsACardRecordOfTheShardsPartition) {
  start_node();
  create_topic("t", 1);
  auto p = init("tx");
  ASSERT_EQ(p.error, error_code::none);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(card_states("tx"), (std::vector<std::string>{"Empty", "Ongoing", "PrepareCommit",
                                                         "CompleteCommit"}));
  // Not idempotent records (producer id -1), one record per batch, the
  // TransactionLogKey of the id.
  for (auto& b : shard_batches("tx")) {
    EXPECT_EQ(b.pid, no_producer_id);
    EXPECT_EQ(b.records.size(), 1u);
  }
  // The same cards come back after a restart, read from the partition.
  stop_node();
  start_node();
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
  EXPECT_EQ(describe("tx").pid, p.pid);
}

TEST_F(CoordinatorLogTest, CoordinatorEpochIsTheLeaderEpochOfTheShardsPartition) {
  start_node();
  create_topic("t", 1);
  ASSERT_EQ(init("tx").error, error_code::none);
  auto first = describe("tx").coordinator_epoch;
  auto batches = shard_batches("tx");
  ASSERT_EQ(batches.size(), 1u);
  auto raw = fetch(shard_of("tx"), 0, isolation_level::read_uncommitted).records;
  auto h = v2::read_header(raw);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->partition_leader_epoch, first);
  // A shard its supervisor restarts leads on under the same leadership:
  // the same epoch.
  kill_coordinator("tx");
  EXPECT_EQ(describe("tx").coordinator_epoch, first);
  ASSERT_EQ(init("tx").error, error_code::none);
  // A restarted node too: its controller finds it leading the partition
  // (Kafka's onControllerFailover leaves an online partition as it is).
  stop_node();
  start_node();
  EXPECT_EQ(describe("tx").coordinator_epoch, first);
  ASSERT_EQ(init("tx").error, error_code::none);
  std::vector<int32_t> epochs;
  auto all = fetch(shard_of("tx"), 0, isolation_level::read_uncommitted).records;
  ASSERT_TRUE(v2::for_each_batch(all, [&](const v2::batch_header& bh, std::string_view) {
                epochs.push_back(bh.partition_leader_epoch);
                return true;
              }).ok());
  EXPECT_EQ(epochs, (std::vector<int32_t>{first, first, first}));
}

TEST_F(CoordinatorLogTest, AClientsProduceToAnInternalTopicIsInvalidTopicException) {
  start_node();
  record_batch b;
  b.records.push_back({"k", "v", {}, now_ms});
  auto r = call<produce_response>(leader(transaction_state_topic, 0),
                                  produce_request{{transaction_state_topic, 0}, "", v2::encode(b)});
  EXPECT_EQ(r.error, error_code::invalid_topic_exception);
  EXPECT_EQ(r.message, "cannot append to internal topic __transaction_state");
  // An append claiming to be the coordinator's at a stale leader epoch is
  // fenced, nothing appended.
  produce_request stale{{transaction_state_topic, 0}, "", v2::encode(b)};
  stale.from_coordinator = true;
  stale.leader_epoch = 99;
  EXPECT_EQ(call<produce_response>(leader(transaction_state_topic, 0), stale).error,
            error_code::fenced_leader_epoch);
  EXPECT_TRUE(fetch({transaction_state_topic, 0}, 0, isolation_level::read_uncommitted)
                .records.empty());
}

TEST_F(CoordinatorLogTest, AnAppendOfAnEarlierElectionIsFencedThoughTheLeaderEpochStayed) {
  // A writer elected the partition and appends a tombstone of an id
  // nobody uses.
  auto tp = shard_of("tx");
  auto [partition, elected] = elect_shard("tx");
  record_batch b;
  b.records.push_back(
    {coordinator_records::encode_txn_key("ghost"), {}, {}, now_ms, /*null_value=*/true});
  produce_request late{tp, "", v2::encode(b)};
  late.from_coordinator = true;
  late.leader_epoch = elected.leader_epoch;
  late.load_generation = elected.load_generation;
  ASSERT_EQ(call<produce_response>(partition, late).error, error_code::none);
  auto before = shard_batches("tx").size();
  // The shard's restart elects the partition again at the same leader
  // epoch: the earlier election's append no longer lands.
  kill_coordinator("tx");
  ASSERT_EQ(describe("tx").coordinator_epoch, elected.leader_epoch);
  auto r = call<produce_response>(partition, late);
  EXPECT_EQ(r.error, error_code::not_coordinator);
  EXPECT_EQ(r.message, "an append of an earlier coordinator election of " + to_string(tp)
                         + " (generation " + std::to_string(elected.load_generation) + ", now "
                         + std::to_string(elected.load_generation + 1) + ")");
  EXPECT_EQ(shard_batches("tx").size(), before);
  // The restarted shard's own writes go on.
  ASSERT_EQ(init("tx").error, error_code::none);
  EXPECT_EQ(shard_batches("tx").size(), before + 1);
}

TEST_F(CoordinatorLogTest, ALoadReadOfAnElectionThePartitionNoLongerKnowsIsNotCoordinator) {
  auto tp = shard_of("tx");
  auto [partition, elected] = elect_shard("tx");
  fetch_request load_read{tp, 0};
  load_read.load_generation = elected.load_generation;
  EXPECT_EQ(call<fetch_response>(partition, load_read).error, error_code::none);
  // The partition's supervisor restarts it: no election is known to it
  // until a coordinator elects it again, so a load reading under the old
  // one would wait for a high watermark nothing moves.
  call<supervisor_stats>(caf::actor_cast<caf::actor>(partition), kill_child_request{});
  sched.run();
  auto r = call<fetch_response>(partition, load_read);
  EXPECT_EQ(r.error, error_code::not_coordinator);
  EXPECT_EQ(r.message, "a load read of an earlier coordinator election of " + to_string(tp)
                         + " (generation " + std::to_string(elected.load_generation)
                         + ", now 0)");
  // Any other reader is served as before.
  EXPECT_EQ(call<fetch_response>(partition, fetch_request{tp, 0}).error, error_code::none);
}

TEST_F(CoordinatorLogTest, RetriedBumpWhoseReplyWasLostIsRecognisedAfterACoordinatorRestart) {
  start_node();
  auto p = init("tx");
  ASSERT_EQ(p.error, error_code::none);
  // KIP-360: the producer bumps its own epoch; the reply is "lost" (the
  // shard dies before the client sees it).
  init_producer_id_request bump{true, "tx", 60000, p.pid, p.epoch};
  auto lost = call<init_producer_id_response>(coordinator_for("tx"), bump);
  ASSERT_EQ(lost.error, error_code::none);
  kill_coordinator("tx");
  // The retry of the same request gets the same answer, not
  // PRODUCER_FENCED (Kafka keeps the last epoch in memory only).
  auto retry = call<init_producer_id_response>(coordinator_for("tx"), bump);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.pid, lost.pid);
  EXPECT_EQ(retry.epoch, lost.epoch);
  // Across a node restart as well.
  stop_node();
  start_node();
  auto again = call<init_producer_id_response>(coordinator_for("tx"), bump);
  EXPECT_EQ(again.error, error_code::none);
  EXPECT_EQ(again.epoch, lost.epoch);
}

TEST_F(CoordinatorLogTest, MarkersWaitForAPartitionWithoutALeaderInsteadOfDroppingIt) {
  // t-1 exists but has no leader known to the node's directory (as in a
  // cluster between a leader's death and the next election).
  network = [](const std::string& address, const caf::actor& a) {
    return address == "partition:t-1" ? caf::actor{} : a;
  };
  start_node();
  // The broker answers CreateTopics once each partition has a leader
  // handle, or at request.timeout.ms: t-1 never gets one here.
  auto created = self->request(broker(), caf::infinite, create_topic_request{"t", 2, {}});
  for (int64_t waited = 0; waited <= ncfg.request_timeout_ms; waited += 1000) {
    now_ms += 1000;
    sched.advance_time(std::chrono::milliseconds(1000));
    sched.run();
  }
  created.receive([](const txn_response& r) { EXPECT_EQ(r.error, error_code::none) << r.message; },
                  [&](const caf::error& e) { ADD_FAILURE() << sys.render(e); });
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0, t1}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  // t-0 got its marker; t-1's is retried, so the transaction stays
  // PrepareCommit instead of completing without it.
  for (int i = 0; i < 20; ++i) {
    now_ms += 100;
    sched.advance_time(std::chrono::milliseconds(100));
    sched.run();
  }
  EXPECT_EQ(describe("tx").state, "PrepareCommit");
  EXPECT_EQ(describe("tx").partitions, (std::vector<topic_partition>{t0, t1}));
  EXPECT_EQ(visible_values(t0, isolation_level::read_committed), (std::vector<std::string>{"a"}));
}

} // namespace
} // namespace caftx::testing
