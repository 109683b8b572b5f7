// The admin calls for hanging transactions (KIP-664, docs/transactions.md §Admin)
// against one node on the deterministic scheduler with simulated time,
// through admin_client: ListTransactions over every coordinator shard,
// DescribeTransactions, DescribeProducers, find-hanging and abort.
#include "fixture.hpp"

#include <functional>
#include <memory>

#include "actors/client/admin.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"

#include <leveldb/write_batch.h>
#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};
const topic_partition t1{"t", 1};

class AdminTest : public node_fixture {
protected:
  std::unique_ptr<admin_client> admin;
  // Runs after the n-th request of the admin client was answered, before
  // the client reads the answer: a change racing the admin call.
  int requests = 0;
  int race_after = -1;
  std::function<void()> race;

  void SetUp() override {
    start_node();
    create_topic("t", 2);
    make_admin();
  }

  void make_admin() {
    admin_options o;
    o.clock_ms = [this] { return now_ms; };
    o.after_send = [this] {
      sched.run();
      if (++requests == race_after)
        race();
    };
    admin = std::make_unique<admin_client>(sys, broker(), std::move(o));
  }

  void TearDown() override { admin.reset(); }

  std::vector<std::string> listed_ids(const list_transactions_filter& filter) {
    auto r = admin->list_transactions(filter);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    std::vector<std::string> ids;
    if (r.ok())
      for (auto& t : r->transactions)
        ids.push_back(t.transactional_id);
    return ids;
  }

  /// Gives up the supervisor of shard `shard` (more restarts than allowed).
  void take_down_shard(int32_t shard) {
    auto sup = n->coordinator_supervisor(shard);
    for (int i = 0; i < 6; ++i) {
      call<supervisor_stats>(sup, kill_child_request{});
      sched.run();
    }
    ASSERT_TRUE(call<supervisor_stats>(sup, supervisor_stats_request{}).gave_up);
  }

  /// A transactional batch of `tid`'s producer written straight to `tp`,
  /// which the coordinator never added to the transaction: it opens a
  /// transaction there that no coordinator will end.
  init_producer_id_response stray_write(const std::string& tid, const topic_partition& tp) {
    auto p = init(tid);
    write_behind_the_leaders_back(tp, batch(p.pid, p.epoch, 0, {"stray"}, true));
    return p;
  }

  /// Appends `b` to `tp`'s log. A partition leader verifies a transactional
  /// write with the coordinator (KIP-890) and refuses a stray one, so it
  /// goes straight into the log while the node is down, as data written
  /// before the defence existed, or under a lost card, would be there.
  void write_behind_the_leaders_back(const topic_partition& tp, record_batch b) {
    b.base_offset = fetch(tp, 0, iso::read_uncommitted).high_watermark;
    admin.reset();
    stop_node();
    {
      auto store = node_store::open(dir, node_store_options{});
      ASSERT_TRUE(store.ok());
      leveldb::WriteBatch wb;
      wb.Put(keys::log_entry(tp, b.base_offset), v2::encode(b, 0));
      EXPECT_TRUE(store.value()->write_now(wb).ok());
    }
    start_node();
    make_admin();
  }
};

using names = std::vector<std::string>;

// -- DescribeTopics ---------------------------------------------------------------

// The embedded single node describes its topics as their one replica, the
// leader and ISR itself, internal topics flagged, an unknown topic with
// UNKNOWN_TOPIC_OR_PARTITION, and a replication factor above one refused.
TEST_F(AdminTest, DescribeTopicsOnTheSingleNodeNamesItselfAsLeaderReplicaAndIsr) {
  ASSERT_TRUE(admin->create_topic("u", 3).ok());
  init("alpha"); // creates __transaction_state
  auto all = admin->describe_topics();
  ASSERT_TRUE(all.ok()) << all.error().to_string();
  std::map<std::string, const topic_description*> by_name;
  for (auto& t : *all)
    by_name[t.name] = &t;
  ASSERT_TRUE(by_name.count("t") && by_name.count("u") && by_name.count("__transaction_state"));
  EXPECT_FALSE(by_name["u"]->internal);
  EXPECT_TRUE(by_name["__transaction_state"]->internal);
  auto& u = *by_name["u"];
  EXPECT_EQ(u.error, error_code::none);
  ASSERT_EQ(u.partitions.size(), 3u);
  auto self = u.partitions[0].leader;
  EXPECT_GE(self, 0);
  for (int32_t p = 0; p < 3; ++p) {
    EXPECT_EQ(u.partitions[p].partition, p);
    EXPECT_EQ(u.partitions[p].leader, self);
    EXPECT_EQ(u.partitions[p].replicas, std::vector<int32_t>{self});
    EXPECT_EQ(u.partitions[p].isr, std::vector<int32_t>{self});
  }
  auto unknown = admin->describe_topics({"nope"});
  ASSERT_TRUE(unknown.ok());
  ASSERT_EQ(unknown->size(), 1u);
  EXPECT_EQ(unknown->front().error, error_code::unknown_topic_or_partition);
  EXPECT_TRUE(unknown->front().partitions.empty());
  EXPECT_EQ(admin->create_topic("w", 1, {}, 2).code(), error_code::invalid_replication_factor);
  EXPECT_EQ(admin->create_topic("w", 1, {}, 0).code(), error_code::invalid_replication_factor);
  EXPECT_EQ(admin->describe_topics({"w"})->front().error, error_code::unknown_topic_or_partition);
}

// -- ListTransactions -----------------------------------------------------------

TEST_F(AdminTest, ListTransactionsGathersEveryShardOfTheNodeSortedById) {
  ASSERT_EQ(partition_for("alpha", 50), 18);
  ASSERT_EQ(partition_for("beta", 50), 22);
  ASSERT_EQ(partition_for("gamma", 50), 15);
  auto a = init("alpha");
  auto b = init("beta");
  auto g = init("gamma");
  ASSERT_EQ(add("beta", b, {t0}).error, error_code::none);
  auto all = admin->list_transactions();
  ASSERT_TRUE(all.ok()) << all.error().to_string();
  EXPECT_TRUE(all->unknown_state_filters.empty());
  EXPECT_EQ(all->transactions, (std::vector<transaction_listing>{{"alpha", a.pid, "Empty"},
                                                                 {"beta", b.pid, "Ongoing"},
                                                                 {"gamma", g.pid, "Empty"}}));
}

TEST_F(AdminTest, ListTransactionsFiltersByStateProducerIdAndDuration) {
  init("alpha");
  auto b = init("beta");
  auto g = init("gamma");
  ASSERT_EQ(add("beta", b, {t0}).error, error_code::none);
  list_transactions_filter by_state;
  by_state.states = {"Ongoing", "Stuck"};
  auto r = admin->list_transactions(by_state);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->unknown_state_filters, names{"Stuck"});
  EXPECT_EQ(r->transactions, (std::vector<transaction_listing>{{"beta", b.pid, "Ongoing"}}));
  list_transactions_filter by_pid;
  by_pid.producer_ids = {g.pid};
  EXPECT_EQ(listed_ids(by_pid), names{"gamma"});
  // beta started at the old now; the Empty ids have start -1 and pass any
  // duration filter (Kafka's quirk).
  now_ms += 5000;
  list_transactions_filter by_duration;
  by_duration.duration_ms = 5000;
  EXPECT_EQ(listed_ids(by_duration), (names{"alpha", "gamma"}));
  by_duration.duration_ms = 4999;
  EXPECT_EQ(listed_ids(by_duration), (names{"alpha", "beta", "gamma"}));
}

TEST_F(AdminTest, ListTransactionsIsCoordinatorNotAvailableWhileAShardIsDown) {
  init("alpha");
  take_down_shard(3);
  auto r = admin->list_transactions();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::coordinator_not_available);
  auto shard = call<list_transactions_response>(n->coordinator_supervisor(3),
                                                list_transactions_request{});
  EXPECT_EQ(shard.error, error_code::coordinator_not_available);
  EXPECT_TRUE(shard.transactions.empty());
}

// -- DescribeTransactions ---------------------------------------------------------

TEST_F(AdminTest, DescribeTransactionReportsStateProducerTimeoutStartPartitionsAndCoordinatorEpoch) {
  auto p = init("tx", 45000);
  auto empty = admin->describe_transaction("tx");
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_EQ(empty->state, "Empty");
  EXPECT_EQ(empty->transaction_start_ms, -1);
  EXPECT_EQ(empty->transaction_timeout_ms, 45000);
  EXPECT_TRUE(empty->partitions.empty());
  now_ms += 10;
  ASSERT_EQ(add("tx", p, {t1, t0}).error, error_code::none);
  auto d = admin->describe_transaction("tx");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->state, "Ongoing");
  EXPECT_EQ(d->pid, p.pid);
  EXPECT_EQ(d->epoch, producer_epoch{0});
  EXPECT_EQ(d->transaction_timeout_ms, 45000);
  EXPECT_EQ(d->transaction_start_ms, now_ms);
  EXPECT_EQ(d->partitions, (std::vector<topic_partition>{t0, t1}));
  EXPECT_EQ(d->coordinator_epoch, 0); // the shard's first start
}

TEST_F(AdminTest, DescribeTransactionOfUnknownIdIsTransactionalIdNotFound) {
  auto r = admin->describe_transaction("nobody");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::transactional_id_not_found);
  EXPECT_EQ(describe("nobody").error, error_code::transactional_id_not_found);
}

TEST_F(AdminTest, DescribeTransactionOfEmptyIdIsInvalidRequest) {
  auto r = admin->describe_transaction("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::invalid_request);
  auto shard = call<describe_transaction_response>(n->coordinator_supervisor(0),
                                                   describe_transaction_request{""});
  EXPECT_EQ(shard.error, error_code::invalid_request);
}

// -- DescribeProducers ------------------------------------------------------------

TEST_F(AdminTest, DescribeProducersReportsOpenTransactionThenTheCommitMarker) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a", "b"}, true)).error, error_code::none);
  auto open = admin->describe_producers(t0);
  ASSERT_TRUE(open.ok()) << open.error().to_string();
  EXPECT_EQ(*open, (std::vector<active_producer>{{p.pid, p.epoch, 1, now_ms, -1, 0}}));
  // A commit marker of coordinator epoch 3 with the next producer epoch:
  // the transaction is closed and the new epoch has no batches yet.
  now_ms += 7;
  producer_epoch next{static_cast<int16_t>(p.epoch.value + 1)};
  ASSERT_EQ(call<txn_response>(leader("t", 0), write_txn_marker_request{p.pid, next, 3, true, t0})
              .error,
            error_code::none);
  auto done = admin->describe_producers(t0);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(*done, (std::vector<active_producer>{{p.pid, next, -1, now_ms, 3, -1}}));
  EXPECT_TRUE(admin->describe_producers(t1)->empty());
}

TEST_F(AdminTest, DescribeProducersOfUnknownPartitionIsUnknownTopicOrPartition) {
  EXPECT_EQ(admin->describe_producers({"t", 2}).error().code(),
            error_code::unknown_topic_or_partition);
  EXPECT_EQ(admin->describe_producers({"nope", 0}).error().code(),
            error_code::unknown_topic_or_partition);
  // A leader asked for a partition it does not lead.
  auto r = call<describe_producers_response>(leader("t", 0), describe_producers_request{t1});
  EXPECT_EQ(r.error, error_code::unknown_topic_or_partition);
}

// -- find-hanging and abort ---------------------------------------------------------

TEST_F(AdminTest, HangingTransactionIsFoundAfterTheMaxTimeoutAndItsAbortMovesTheLsoToTheHighWatermark) {
  auto start_ms = now_ms;
  auto p = stray_write("tx", t0); // offset 0
  // Data of an idempotent producer after it is held back by it.
  ASSERT_EQ(produce(t0, "", batch(producer_id{777}, producer_epoch{0}, 0, {"later"}, false)).error,
            error_code::none); // offset 1
  auto held = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(held.high_watermark, 2);
  EXPECT_EQ(held.last_stable_offset, 0);
  // Idle for exactly 15 minutes: not more than the max, not a candidate.
  now_ms += default_max_transaction_timeout_ms;
  auto early = admin->find_hanging_transactions();
  ASSERT_TRUE(early.ok()) << early.error().to_string();
  EXPECT_TRUE(early->empty());
  now_ms += 1;
  auto found = admin->find_hanging_transactions({"t"});
  ASSERT_TRUE(found.ok()) << found.error().to_string();
  ASSERT_EQ(found->size(), 1u);
  auto& h = found->front();
  EXPECT_EQ(h.tp, t0);
  EXPECT_EQ(h.pid, p.pid);
  EXPECT_EQ(h.epoch, p.epoch);
  EXPECT_EQ(h.coordinator_epoch, -1);
  EXPECT_EQ(h.start_offset, 0);
  EXPECT_EQ(h.last_timestamp_ms, start_ms);
  EXPECT_EQ(h.transactional_id, "tx");
  EXPECT_EQ(h.reason, hanging_reason::partition_not_in_transaction);

  auto aborted = admin->abort_transaction(t0, h.start_offset);
  ASSERT_TRUE(aborted.ok()) << aborted.to_string();
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.high_watermark, 3);
  EXPECT_EQ(f.last_stable_offset, 3);
  ASSERT_EQ(batches_of(f).size(), 3u);
  auto marker = batches_of(f)[2];
  EXPECT_EQ(marker.base_offset, 2);
  EXPECT_EQ(marker.pid, p.pid);
  EXPECT_EQ(marker.epoch, p.epoch);
  ASSERT_TRUE(parse_control_batch(marker).has_value());
  EXPECT_EQ(parse_control_batch(marker)->type, control_type::abort);
  EXPECT_EQ(parse_control_batch(marker)->cepoch, coordinator_epoch{0});
  ASSERT_EQ(f.aborted_transactions.size(), 1u);
  EXPECT_EQ(f.aborted_transactions[0].pid, p.pid);
  EXPECT_EQ(f.aborted_transactions[0].first_offset, 0);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"later"});
  auto after = admin->find_hanging_transactions();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
  // The coordinator's card of "tx" was never involved.
  EXPECT_EQ(describe("tx").state, "Empty");
}

TEST_F(AdminTest, NormalOngoingTransactionIsNotReportedAsHanging) {
  // A producer no transactional id maps to has an open transaction on t-1.
  producer_id ghost{999999};
  write_behind_the_leaders_back(t1, batch(ghost, producer_epoch{3}, 0, {"lost"}, true));
  auto ok = init("ok", 900000);
  ASSERT_EQ(add("ok", ok, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "ok", batch(ok.pid, ok.epoch, 0, {"fine"}, true)).error, error_code::none);
  now_ms += 60001;
  // Both are candidates at a 60 s max; only the ghost is hanging.
  auto found = admin->find_hanging_transactions({}, 60000);
  ASSERT_TRUE(found.ok()) << found.error().to_string();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().tp, t1);
  EXPECT_EQ(found->front().pid, ghost);
  EXPECT_EQ(found->front().epoch, producer_epoch{3});
  EXPECT_EQ(found->front().start_offset, 0);
  EXPECT_EQ(found->front().transactional_id, "");
  EXPECT_EQ(found->front().reason, hanging_reason::no_transactional_id);
  EXPECT_EQ(describe("ok").state, "Ongoing");
  // With the default 15 minutes neither is a candidate yet.
  EXPECT_TRUE(admin->find_hanging_transactions()->empty());
}

TEST_F(AdminTest, FindHangingOfUnknownTopicIsUnknownTopicOrPartition) {
  auto r = admin->find_hanging_transactions({"t", "nope"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::unknown_topic_or_partition);
}

TEST_F(AdminTest, AbortWithoutOpenTransactionAtThatOffsetIsInvalidRequestAndWritesNothing) {
  stray_write("tx", t0); // open at 0
  auto r = admin->abort_transaction(t0, 1);
  EXPECT_EQ(r.code(), error_code::invalid_request);
  EXPECT_EQ(r.message(), "no open transaction starts at offset 1 of t-0");
  EXPECT_EQ(admin->abort_transaction(t1, 0).code(), error_code::invalid_request);
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.high_watermark, 1);
  EXPECT_EQ(f.last_stable_offset, 0);
}

TEST_F(AdminTest, AbortOfUnknownPartitionIsUnknownTopicOrPartition) {
  EXPECT_EQ(admin->abort_transaction({"t", 2}, 0).code(), error_code::unknown_topic_or_partition);
  EXPECT_EQ(admin->abort_transaction({"nope", 0}, 0).code(),
            error_code::unknown_topic_or_partition);
}

TEST_F(AdminTest, AbortRacingAProducerEpochBumpIsInvalidProducerEpoch) {
  auto p = stray_write("tx", t0);
  // Between DescribeProducers (2nd request) and the marker, the producer
  // writes to its open transaction with a bumped epoch.
  race_after = 2;
  race = [&] {
    // The producer restarts (InitProducerId: epoch + 1) and writes to t-0
    // in a transaction of its own.
    auto bumped = init("tx");
    ASSERT_EQ(bumped.epoch.value, p.epoch.value + 1);
    ASSERT_EQ(add("tx", bumped, {t0}).error, error_code::none);
    ASSERT_EQ(produce(t0, "tx", batch(p.pid, bumped.epoch, 0, {"bumped"}, true)).error,
              error_code::none);
  };
  auto r = admin->abort_transaction(t0, 0);
  EXPECT_EQ(r.code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(requests, 3);
  EXPECT_EQ(fetch(t0, 0, iso::read_committed).last_stable_offset, 0);
}

TEST_F(AdminTest, AbortRacingACoordinatorMarkerIsTransactionCoordinatorFenced) {
  auto p = stray_write("tx", t0);
  // Between DescribeProducers and the marker, a coordinator with epoch 5
  // commits the transaction.
  race_after = 2;
  race = [&] {
    // Version 1 (the data's epoch), so that only the coordinator epoch differs.
    ASSERT_EQ(call<txn_response>(leader("t", 0),
                                 write_txn_marker_request{p.pid, p.epoch, 5, true, t0, 1})
                .error,
              error_code::none);
  };
  auto r = admin->abort_transaction(t0, 0);
  EXPECT_EQ(r.code(), error_code::transaction_coordinator_fenced);
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.high_watermark, 2); // data and the commit marker only
  EXPECT_TRUE(f.aborted_transactions.empty());
}

TEST_F(AdminTest, AbortMarkerCarriesTheProducerAndCoordinatorEpochZeroForNoMarkerSeen) {
  active_producer never{producer_id{42}, producer_epoch{7}, 3, 1000, -1, 12};
  auto m = abort_marker_request(t1, never);
  EXPECT_EQ(m.pid, producer_id{42});
  EXPECT_EQ(m.epoch, producer_epoch{7});
  EXPECT_EQ(m.coordinator_epoch, 0);
  EXPECT_FALSE(m.committed);
  EXPECT_EQ(m.tp, t1);
  EXPECT_EQ(m.transaction_version, 1);
  active_producer seen{producer_id{42}, producer_epoch{7}, 3, 1000, 4, 12};
  EXPECT_EQ(abort_marker_request(t1, seen).coordinator_epoch, 4);
}

} // namespace
} // namespace caftx::testing
