// Actor-level tests of one node on the deterministic scheduler: the whole
// request path through broker, coordinator shard (under its supervisor),
// partition leaders and group coordinators, with durable writes.
#include "fixture.hpp"

#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};

class TransactionsTest : public node_fixture {
protected:
  void SetUp() override {
    start_node();
    create_topic("t", 1);
  }

};

TEST_F(TransactionsTest, NewTransactionalIdGetsEpochZeroAndKnownIdGetsEpochPlusOne) {
  auto a = init("tx");
  ASSERT_EQ(a.error, error_code::none);
  EXPECT_EQ(a.epoch, producer_epoch{0});
  auto b = init("tx");
  ASSERT_EQ(b.error, error_code::none);
  EXPECT_EQ(b.pid, a.pid);
  EXPECT_EQ(b.epoch, producer_epoch{1});
  EXPECT_EQ(describe("tx").state, "Empty");
}

TEST_F(TransactionsTest, ZombieProducerIsFencedAfterNewInitTransactions) {
  auto zombie = init("tx");
  ASSERT_EQ(add("tx", zombie, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(zombie.pid, zombie.epoch, 0, {"z0"}, true)).error,
            error_code::none);
  // A new instance: its InitProducerId fences the zombie (epoch + 1, abort)
  // and, retried, gets epoch + 2.
  init_producer_id_request req{true, "tx", 60000, no_producer_id, no_producer_epoch};
  auto first = call<init_producer_id_response>(coordinator_for("tx"), req);
  EXPECT_EQ(first.error, error_code::concurrent_transactions);
  auto fresh = init("tx");
  ASSERT_EQ(fresh.error, error_code::none);
  EXPECT_EQ(fresh.pid, zombie.pid);
  EXPECT_EQ(fresh.epoch, producer_epoch{2});
  EXPECT_EQ(describe("tx").state, "Empty");
  // The zombie's produce and commit are rejected.
  EXPECT_EQ(produce(t0, "tx", batch(zombie.pid, zombie.epoch, 1, {"z1"}, true)).error,
            error_code::invalid_producer_epoch);
  EXPECT_EQ(end("tx", zombie, true).error, error_code::producer_fenced);
  EXPECT_EQ(add("tx", zombie, {t0}).error, error_code::producer_fenced);
  // Its data was aborted: offset 0 data, offset 1 the ABORT marker.
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{});
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), std::vector<std::string>{"z0"});
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.high_watermark, 2);
  EXPECT_EQ(f.last_stable_offset, 2);
  ASSERT_EQ(f.aborted_transactions.size(), 1u);
  EXPECT_EQ(f.aborted_transactions[0].first_offset, 0);
}

TEST_F(TransactionsTest, AbortedDataInvisibleToReadCommittedVisibleToReadUncommitted) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a", "b"}, true)).error, error_code::none);
  // Open transaction: the LSO stays at its first offset.
  auto open = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(open.high_watermark, 2);
  EXPECT_EQ(open.last_stable_offset, 0);
  EXPECT_TRUE(batches_of(open).empty());
  ASSERT_EQ(end("tx", p, false).error, error_code::none);
  sched.run();
  EXPECT_EQ(describe("tx").state, "CompleteAbort");
  // The abort bumped the epoch: the next transaction's sequences start at 0.
  EXPECT_EQ(p.epoch, producer_epoch{1});
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"c"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  sched.run();
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"c"});
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), (std::vector<std::string>{"a", "b", "c"}));
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.high_watermark, 5); // a b ABORT c COMMIT
  EXPECT_EQ(f.last_stable_offset, 5);
  auto lo = call<list_offsets_response>(leader("t", 0), list_offsets_request{t0, -1, iso::read_committed});
  EXPECT_EQ(lo.offset, 5);
}

// fetch.max.wait.ms: a fetch with nothing to return is held by the leader
// and answered when something becomes visible at its offset: for
// read_committed only when the last stable offset passes it (the commit
// marker), not when the open transaction's data arrives.
TEST_F(TransactionsTest, HeldFetchIsAnsweredWhenDataBecomesVisibleAtItsIsolationLevel) {
  auto p = init("tx");
  auto dest = leader("t", 0);
  auto committed = self->request(dest, caf::infinite,
                                 fetch_request{t0, 0, 1 << 20, iso::read_committed, 500});
  auto uncommitted = self->request(dest, caf::infinite,
                                   fetch_request{t0, 0, 1 << 20, iso::read_uncommitted, 500});
  sched.run();
  EXPECT_TRUE(self->mailbox().empty()); // both held: nothing in the log
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_FALSE(self->mailbox().empty()) << "read_uncommitted fetch still held";
  fetch_response r;
  uncommitted.receive([&](fetch_response& x) { r = std::move(x); },
                      [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  ASSERT_EQ(batches_of(r).size(), 1u);
  EXPECT_EQ(r.high_watermark, 1);
  EXPECT_EQ(r.last_stable_offset, 0);
  EXPECT_TRUE(self->mailbox().empty()); // read_committed still held: LSO 0
  ASSERT_EQ(end("tx", p, true).error, error_code::none); // and its markers
  ASSERT_FALSE(self->mailbox().empty()) << "read_committed fetch still held";
  committed.receive([&](fetch_response& x) { r = std::move(x); },
                    [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  ASSERT_EQ(batches_of(r).size(), 2u); // "a" and the COMMIT marker
  EXPECT_EQ(r.last_stable_offset, 2);
}

TEST_F(TransactionsTest, HeldFetchIsAnsweredEmptyAfterItsMaxWait) {
  auto held = self->request(leader("t", 0), caf::infinite,
                            fetch_request{t0, 0, 1 << 20, iso::read_uncommitted, 100});
  sched.run();
  sched.advance_time(std::chrono::milliseconds(99));
  sched.run();
  EXPECT_TRUE(self->mailbox().empty());
  sched.advance_time(std::chrono::milliseconds(1));
  sched.run();
  ASSERT_FALSE(self->mailbox().empty());
  fetch_response r;
  held.receive([&](fetch_response& x) { r = std::move(x); },
               [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_TRUE(batches_of(r).empty());
  EXPECT_EQ(r.high_watermark, 0);
}

TEST_F(TransactionsTest, RetryOfAcknowledgedBatchReturnsOriginalOffsetAndAppendsNothing) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  auto b = batch(p.pid, p.epoch, 0, {"x", "y"}, true);
  auto first = produce(t0, "tx", b);
  ASSERT_EQ(first.error, error_code::none);
  EXPECT_EQ(first.base_offset, 0);
  auto retry = produce(t0, "tx", b);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 0);
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).high_watermark, 2);
  auto gap = produce(t0, "tx", batch(p.pid, p.epoch, 5, {"g"}, true));
  EXPECT_EQ(gap.error, error_code::out_of_order_sequence_number);
}

TEST_F(TransactionsTest, OffsetsBecomeVisibleOnlyWithTheCommitMarker) {
  auto p = init("tx");
  const std::string group = "g";
  auto gc = call<find_coordinator_response>(broker(), find_coordinator_request{0, group});
  ASSERT_EQ(gc.partition, partition_for(group, 50));
  ASSERT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_offsets_to_txn_request{"tx", p.pid, p.epoch, group})
              .error,
            error_code::none);
  EXPECT_EQ(describe("tx").partitions,
            (std::vector<topic_partition>{{consumer_offsets_topic, gc.partition}}));
  ASSERT_EQ(call<txn_response>(gc.coordinator,
                               txn_offset_commit_request{"tx", group, p.pid, p.epoch, {t0}, {42}})
              .error,
            error_code::none);
  auto before = call<offset_fetch_response>(gc.coordinator, offset_fetch_request{group, {t0}, false});
  EXPECT_EQ(before.offsets, std::vector<int64_t>{-1});
  auto stable = call<offset_fetch_response>(gc.coordinator, offset_fetch_request{group, {t0}, true});
  EXPECT_EQ(stable.error, error_code::unstable_offset_commit);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  sched.run();
  auto after = call<offset_fetch_response>(gc.coordinator, offset_fetch_request{group, {t0}, true});
  EXPECT_EQ(after.error, error_code::none);
  EXPECT_EQ(after.offsets, std::vector<int64_t>{42});
  // An aborted transaction's offsets are discarded.
  ASSERT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_offsets_to_txn_request{"tx", p.pid, p.epoch, group})
              .error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(gc.coordinator,
                               txn_offset_commit_request{"tx", group, p.pid, p.epoch, {t0}, {99}})
              .error,
            error_code::none);
  ASSERT_EQ(end("tx", p, false).error, error_code::none);
  sched.run();
  EXPECT_EQ(call<offset_fetch_response>(gc.coordinator, offset_fetch_request{group, {t0}, false}).offsets,
            std::vector<int64_t>{42});
}

TEST_F(TransactionsTest, TransactionTimeoutAboveMaxIsInvalidTransactionTimeout) {
  auto r = init("tx", 900001);
  EXPECT_EQ(r.error, error_code::invalid_transaction_timeout);
  EXPECT_EQ(init("tx", 0).error, error_code::invalid_transaction_timeout);
  EXPECT_EQ(init("tx", 900000).error, error_code::none);
}

TEST_F(TransactionsTest, ProduceToUnknownPartitionAndAddPartitionsToUnknownTopicAreRejected) {
  auto p = init("tx");
  auto r = add("tx", p, {{"nope", 0}});
  EXPECT_EQ(r.error, error_code::unknown_topic_or_partition);
  auto m = call<metadata_response>(broker(), metadata_request{{"nope"}});
  ASSERT_EQ(m.topics.size(), 1u);
  EXPECT_EQ(m.topics[0].error, error_code::unknown_topic_or_partition);
  EXPECT_EQ(add("tx", p, {{"t", 1}}).error, error_code::unknown_topic_or_partition);
  EXPECT_EQ(describe("tx").state, "Empty");
}

TEST_F(TransactionsTest, TimedOutTransactionIsAbortedWithEpochBump) {
  auto p = init("tx", 5000);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"late"}, true)).error, error_code::none);
  now_ms += 6000; // past transaction.timeout.ms
  sched.advance_time(std::chrono::milliseconds(10000)); // the abort scan fires
  sched.run();
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteAbort");
  EXPECT_EQ(d.epoch, producer_epoch{1});
  EXPECT_EQ(end("tx", p, true).error, error_code::producer_fenced);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{});
}

TEST_F(TransactionsTest, PrepareCommitIsCompletedAfterNodeRestartAndTheResentMarkerChangesNothing) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"v"}, true)).error, error_code::none);
  auto epoch_before = describe("tx").coordinator_epoch;
  // Run only until the EndTxn reply arrives: PrepareCommit is durable, the
  // marker request is on its way; then the whole node goes down before
  // CompleteCommit is written.
  auto r = call_until_reply<end_txn_response>(coordinator_for("tx"),
                                              end_txn_request{"tx", p.pid, p.epoch, true});
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.epoch, producer_epoch{1});
  stop_node();
  start_node();
  // The restarted shard loaded PrepareCommit, re-sent the marker and
  // completed the transaction. It leads at the same leader epoch: its
  // controller found it leading (Kafka's onControllerFailover).
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteCommit");
  EXPECT_EQ(d.coordinator_epoch, epoch_before);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"v"});
  // The first marker reached the partition before the crash; the re-sent
  // one occupies an offset but completes nothing: LSO and index unchanged.
  auto f = fetch(t0, 0, iso::read_committed);
  ASSERT_EQ(batches_of(f).size(), 3u);
  EXPECT_EQ(parse_control_batch(batches_of(f)[1])->cepoch, coordinator_epoch{epoch_before});
  EXPECT_EQ(parse_control_batch(batches_of(f)[2])->cepoch, coordinator_epoch{epoch_before});
  EXPECT_EQ(parse_control_batch(batches_of(f)[2])->type, control_type::commit);
  EXPECT_EQ(f.last_stable_offset, 3);
  EXPECT_TRUE(f.aborted_transactions.empty());
  // A marker with the data's producer epoch, delivered late, is not above
  // the marker's.
  auto late = call<txn_response>(
    leader("t", 0), write_txn_marker_request{p.pid, p.epoch, epoch_before, true, t0});
  EXPECT_EQ(late.error, error_code::invalid_producer_epoch);
}

TEST_F(TransactionsTest, SupervisorRestartsKilledCoordinatorWhichFinishesPrepareCommit) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"v"}, true)).error, error_code::none);
  auto sup = n->coordinator_supervisor(partition_for("tx", 50));
  auto epoch_before = describe("tx").coordinator_epoch;
  auto r = call_until_reply<end_txn_response>(sup, end_txn_request{"tx", p.pid, p.epoch, true});
  EXPECT_EQ(r.error, error_code::none);
  p.epoch = r.epoch;
  auto stats = call<supervisor_stats>(sup, kill_child_request{});
  EXPECT_EQ(stats.restarts, 0);
  sched.run();
  stats = call<supervisor_stats>(sup, supervisor_stats_request{});
  EXPECT_EQ(stats.restarts, 1);
  EXPECT_FALSE(stats.gave_up);
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteCommit");
  // The coordinator epoch is the partition's leader epoch (Kafka's rule):
  // a restart under the same leadership keeps it.
  EXPECT_EQ(d.coordinator_epoch, epoch_before);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"v"});
  // The same producer goes on with the next transaction.
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
}

TEST_F(TransactionsTest, SupervisorGivesUpAfterTooManyRestarts) {
  auto sup = n->coordinator_supervisor(0);
  for (int i = 0; i < 5; ++i) {
    call<supervisor_stats>(sup, kill_child_request{});
    sched.run();
  }
  auto stats = call<supervisor_stats>(sup, supervisor_stats_request{});
  EXPECT_EQ(stats.restarts, 5);
  EXPECT_FALSE(stats.gave_up);
  call<supervisor_stats>(sup, kill_child_request{});
  sched.run();
  stats = call<supervisor_stats>(sup, supervisor_stats_request{});
  EXPECT_TRUE(stats.gave_up);
  auto r = call<init_producer_id_response>(sup, init_producer_id_request{true, "x", 1000, no_producer_id, no_producer_epoch});
  EXPECT_EQ(r.error, error_code::coordinator_not_available);
  // Escalated to the node, which lists it; nothing else failed.
  EXPECT_EQ(n->failed_components(),
            std::vector<std::string>{"txn-coordinator-0: gave up after 5 restarts"});
}

TEST_F(TransactionsTest, RestartIntensityCountsOnlyRestartsWithinTheWindow) {
  auto sup = n->coordinator_supervisor(0);
  auto kill = [&] {
    call<supervisor_stats>(sup, kill_child_request{});
    sched.run();
  };
  for (int i = 0; i < 4; ++i)
    kill();
  // caftx.supervisor.restart.window.ms (10 s) later the old restarts no
  // longer count: four more are allowed.
  sched.advance_time(std::chrono::milliseconds(10001));
  sched.run();
  for (int i = 0; i < 4; ++i)
    kill();
  auto stats = call<supervisor_stats>(sup, supervisor_stats_request{});
  EXPECT_EQ(stats.restarts, 8);
  EXPECT_FALSE(stats.gave_up);
  EXPECT_TRUE(n->failed_components().empty());
  kill(); // the fifth within the window
  stats = call<supervisor_stats>(sup, supervisor_stats_request{});
  EXPECT_EQ(stats.restarts, 9);
  EXPECT_FALSE(stats.gave_up);
  kill();
  EXPECT_TRUE(call<supervisor_stats>(sup, supervisor_stats_request{}).gave_up);
}

TEST_F(TransactionsTest, CrashedPartitionLeaderIsRestartedWithItsLogAndProducerState) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  auto b = batch(p.pid, p.epoch, 0, {"a", "b"}, true);
  ASSERT_EQ(produce(t0, "tx", b).base_offset, 0);
  auto stats = call<supervisor_stats>(supervisor(leader("t", 0)), kill_child_request{});
  EXPECT_EQ(stats.restarts, 0);
  sched.run();
  EXPECT_EQ(call<supervisor_stats>(supervisor(leader("t", 0)), supervisor_stats_request{}).restarts, 1);
  // The retry is still recognised, the open transaction still holds the LSO.
  auto retry = produce(t0, "tx", b);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 0);
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.high_watermark, 2);
  EXPECT_EQ(f.last_stable_offset, 0);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  sched.run();
  EXPECT_EQ(visible_values(t0, iso::read_committed), (std::vector<std::string>{"a", "b"}));
}

TEST_F(TransactionsTest, IdleProducerExpiresAfterProducerIdExpirationButNotWithAnOpenTransaction) {
  // A transaction that may stay open longer than a day.
  stop_node();
  ncfg.transaction_max_timeout_ms = 2147483647;
  start_node();
  producer_id idle{9001};
  ASSERT_EQ(produce(t0, "", batch(idle, producer_epoch{0}, 0, {"i"}, false)).error, error_code::none);
  auto p = init("tx", 2 * 86400000);
  auto in_txn = p.pid;
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"t"}, true)).error, error_code::none);
  // Just before producer.id.expiration.ms (1 day) nothing expires.
  now_ms += 86400000 - 1;
  sched.advance_time(std::chrono::milliseconds(600000)); // the expiration check fires
  sched.run();
  EXPECT_EQ(produce(t0, "", batch(idle, producer_epoch{0}, 5, {"gap"}, false)).error,
            error_code::out_of_order_sequence_number);
  now_ms += 1;
  sched.advance_time(std::chrono::milliseconds(600000));
  sched.run();
  // The idle producer is unknown now, and the partition dropped producer
  // state: any sequence is accepted (KIP-360, docs/producer-state.md
  // §First-batches).
  EXPECT_EQ(produce(t0, "", batch(idle, producer_epoch{0}, 5, {"resumed"}, false)).error,
            error_code::none);
  // The producer with an open transaction kept its state.
  EXPECT_EQ(produce(t0, "tx", batch(in_txn, p.epoch, 7, {"gap"}, true)).error,
            error_code::out_of_order_sequence_number);
}

TEST_F(TransactionsTest, EverythingAcknowledgedSurvivesANodeRestart) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  auto ran_with = p;
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(p.epoch, producer_epoch{1});
  sched.run();
  stop_node();
  start_node();
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"a"});
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
  // Producer state came back too: the committed transaction's batch,
  // delivered again, is fenced by the marker's bumped epoch...
  auto late = produce(t0, "tx", batch(ran_with.pid, ran_with.epoch, 0, {"a"}, true));
  EXPECT_EQ(late.error, error_code::invalid_producer_epoch);
  // ...and a write at the new epoch without AddPartitionsToTxn is refused
  // by the coordinator's verification (KIP-890 part 1).
  auto unadded = produce(t0, "tx", batch(p.pid, p.epoch, 0, {"x"}, true));
  EXPECT_EQ(unadded.error, error_code::transaction_abortable);
  auto f = fetch(t0, 0, iso::read_uncommitted);
  EXPECT_EQ(f.high_watermark, 2);
  EXPECT_EQ(f.last_stable_offset, 2); // nothing left open
  auto again = init("tx");
  EXPECT_EQ(again.pid, p.pid);
  EXPECT_EQ(again.epoch, producer_epoch{2});
}

} // namespace
} // namespace caftx::testing
