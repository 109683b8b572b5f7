// A request that arrives late never acts on a later transaction (KIP-890):
// every EndTxn bumps the producer epoch and coordinator markers carry it
// (part 2), and a transactional write that would open a transaction on a
// partition or offsets partition is verified with the coordinator (part 1).
// Also: the coordinator shard restarted by its supervisor in each state,
// and a card whose write fails. One node on the deterministic scheduler.
#include "fixture.hpp"

#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};
const topic_partition u0{"u", 0};

class FencingTest : public node_fixture {
protected:
  void SetUp() override {
    start_node();
    create_topic("t", 1);
    create_topic("u", 1);
  }

  // A transaction of `id` that wrote `value` to t0 and committed.
  void committed_transaction(init_producer_id_response& id, const std::string& value) {
    ASSERT_EQ(add("tx", id, {t0}).error, error_code::none);
    ASSERT_EQ(produce(t0, "tx", batch(id.pid, id.epoch, 0, {value}, true)).error,
              error_code::none);
    ASSERT_EQ(end("tx", id, true).error, error_code::none);
  }

  caf::actor shard_supervisor(const std::string& tid) {
    return n->coordinator_supervisor(partition_for(tid, 50));
  }

  // Kills the shard's coordinator; its supervisor restarts it.
  void kill_coordinator(const std::string& tid) {
    call<supervisor_stats>(shard_supervisor(tid), kill_child_request{});
    sched.run();
    auto stats = call<supervisor_stats>(shard_supervisor(tid), supervisor_stats_request{});
    EXPECT_EQ(stats.restarts, 1);
  }
};

TEST_F(FencingTest, EndTxnBumpsTheEpochAndItsRetryAnswersTheSameIdentity) {
  auto p = init("tx");
  auto before = p;
  committed_transaction(p, "a");
  EXPECT_EQ(p.pid, before.pid);
  EXPECT_EQ(p.epoch, producer_epoch{1});
  // The EndTxn again (its reply was lost): NONE, nothing written, the same
  // identity to continue with.
  auto retry = end_raw("tx", before.pid, before.epoch, true);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.pid, before.pid);
  EXPECT_EQ(retry.epoch, producer_epoch{1});
  EXPECT_EQ(end_raw("tx", before.pid, before.epoch, false).error, error_code::invalid_txn_state);
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
}

TEST_F(FencingTest, LateEndTxnOfCommittedTransactionCannotEndTheNextOne) {
  auto p = init("tx");
  auto first = p;
  committed_transaction(p, "a");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"n"}, true)).error, error_code::none);
  for (bool commit : {true, false})
    EXPECT_EQ(end_raw("tx", first.pid, first.epoch, commit).error, error_code::producer_fenced);
  sched.run();
  auto d = describe("tx");
  EXPECT_EQ(d.state, "Ongoing");
  EXPECT_EQ(d.partitions, std::vector<topic_partition>{t0});
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"a"});
  EXPECT_EQ(fetch(t0, 0, iso::read_committed).last_stable_offset, 2); // "n" stays open
}

TEST_F(FencingTest, LateAddPartitionsOfFinishedTransactionCannotJoinTheNextOne) {
  auto p = init("tx");
  auto first = p;
  committed_transaction(p, "a");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  EXPECT_EQ(add("tx", first, {u0}).error, error_code::producer_fenced);
  EXPECT_EQ(describe("tx").partitions, std::vector<topic_partition>{t0});
}

TEST_F(FencingTest, LateProduceAfterAbortIsFencedAndLeavesNoHangingTransaction) {
  auto p = init("tx");
  auto first = p;
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, false).error, error_code::none);
  // Writes of the aborted transaction arriving late, to a partition it
  // wrote to and to one it never added.
  EXPECT_EQ(produce(t0, "tx", batch(first.pid, first.epoch, 1, {"late"}, true)).error,
            error_code::invalid_producer_epoch);
  EXPECT_EQ(produce(u0, "tx", batch(first.pid, first.epoch, 0, {"late"}, true)).error,
            error_code::invalid_producer_epoch);
  auto t = fetch(t0, 0, iso::read_uncommitted);
  EXPECT_EQ(t.high_watermark, 2); // a, ABORT
  EXPECT_EQ(t.last_stable_offset, 2);
  auto u = fetch(u0, 0, iso::read_uncommitted);
  EXPECT_EQ(u.high_watermark, 0); // nothing opened a transaction on u-0
  EXPECT_EQ(u.last_stable_offset, 0);
}

TEST_F(FencingTest, TransactionalWriteToPartitionNotAddedIsTransactionAbortable) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  auto r = produce(u0, "tx", batch(p.pid, p.epoch, 0, {"x"}, true));
  EXPECT_EQ(r.error, error_code::transaction_abortable);
  EXPECT_EQ(fetch(u0, 0, iso::read_uncommitted).high_watermark, 0);
  // Without a transactional id the partition cannot ask: INVALID_REQUEST.
  EXPECT_EQ(produce(u0, "", batch(p.pid, p.epoch, 0, {"x"}, true)).error,
            error_code::invalid_request);
  // Added first, the same write goes through.
  ASSERT_EQ(add("tx", p, {u0}).error, error_code::none);
  EXPECT_EQ(produce(u0, "tx", batch(p.pid, p.epoch, 0, {"x"}, true)).error, error_code::none);
}

TEST_F(FencingTest, LateMarkerOfPreviousTransactionCannotEndTheNextOne) {
  auto p = init("tx");
  committed_transaction(p, "a");
  auto cepoch = describe("tx").coordinator_epoch;
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"n"}, true)).error, error_code::none);
  // The first transaction's commit marker (epoch bumped to p.epoch),
  // delivered a second time.
  auto late = call<txn_response>(leader("t", 0),
                                 write_txn_marker_request{p.pid, p.epoch, cepoch, true, t0});
  EXPECT_EQ(late.error, error_code::invalid_producer_epoch);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"a"});
}

TEST_F(FencingTest, LateTxnOffsetCommitAfterRestartCannotWaitForTheNextCommit) {
  const std::string group = "g";
  auto gc = [&] { return call<find_coordinator_response>(broker(), find_coordinator_request{0, group}).coordinator; };
  auto p = init("tx");
  auto first = p;
  ASSERT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_offsets_to_txn_request{"tx", p.pid, p.epoch, group})
              .error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(gc(), txn_offset_commit_request{"tx", group, p.pid, p.epoch, {t0}, {42}})
              .error,
            error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  // The group coordinator forgets what markers it saw; the transaction
  // coordinator's card does not.
  stop_node();
  start_node();
  auto late = call<txn_response>(gc(), txn_offset_commit_request{"tx", group, first.pid,
                                                                 first.epoch, {t0}, {99}});
  EXPECT_EQ(late.error, error_code::invalid_producer_epoch);
  // Not in the current transaction either: TRANSACTION_ABORTABLE.
  auto unadded = call<txn_response>(gc(), txn_offset_commit_request{"tx", group, p.pid, p.epoch,
                                                                    {t0}, {77}});
  EXPECT_EQ(unadded.error, error_code::transaction_abortable);
  // The next transaction commits 50; 99 and 77 never become visible.
  ASSERT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_offsets_to_txn_request{"tx", p.pid, p.epoch, group})
              .error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(gc(), txn_offset_commit_request{"tx", group, p.pid, p.epoch, {t0}, {50}})
              .error,
            error_code::none);
  EXPECT_EQ(call<offset_fetch_response>(gc(), offset_fetch_request{group, {t0}, false}).offsets,
            std::vector<int64_t>{42});
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(call<offset_fetch_response>(gc(), offset_fetch_request{group, {t0}, false}).offsets,
            std::vector<int64_t>{50});
}

TEST_F(FencingTest, ZombieAfterTimeoutAbortIsFencedOnEveryPath) {
  auto p = init("tx", 10000);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"z"}, true)).error, error_code::none);
  now_ms += 10001;
  sched.advance_time(std::chrono::milliseconds(10000)); // the timeout check
  sched.run();
  EXPECT_EQ(describe("tx").state, "CompleteAbort");
  EXPECT_EQ(describe("tx").epoch, producer_epoch{1});
  // The paused producer wakes up with epoch 0.
  EXPECT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 1, {"z2"}, true)).error,
            error_code::invalid_producer_epoch);
  EXPECT_EQ(add("tx", p, {u0}).error, error_code::producer_fenced);
  EXPECT_EQ(end_raw("tx", p.pid, p.epoch, true).error, error_code::producer_fenced);
  EXPECT_EQ(end_raw("tx", p.pid, p.epoch, false).error, error_code::producer_fenced);
  EXPECT_TRUE(visible_values(t0, iso::read_committed).empty());
  EXPECT_EQ(fetch(u0, 0, iso::read_uncommitted).high_watermark, 0);
}

TEST_F(FencingTest, RequestsAtTheWrongShardAreNotCoordinator) {
  auto p = init("tx"); // shard 16
  auto wrong = n->coordinator_supervisor(17);
  EXPECT_EQ(call<txn_response>(wrong, add_partitions_to_txn_request{"tx", p.pid, p.epoch, {t0}})
              .error,
            error_code::not_coordinator);
  EXPECT_EQ(call<end_txn_response>(wrong, end_txn_request{"tx", p.pid, p.epoch, true}).error,
            error_code::not_coordinator);
  init_producer_id_request req{true, "tx", 60000, no_producer_id, no_producer_epoch};
  EXPECT_EQ(call<init_producer_id_response>(wrong, req).error, error_code::not_coordinator);
  EXPECT_EQ(call<describe_transaction_response>(wrong, describe_transaction_request{"tx"}).error,
            error_code::not_coordinator);
  // Nothing happened at either shard.
  EXPECT_EQ(describe("tx").state, "Empty");
  EXPECT_EQ(describe("tx").epoch, p.epoch);
}

// -- coordinator restarted by its supervisor, in each state --------------------------

TEST_F(FencingTest, RestartInOngoingResumesTheTransactionWithItsStartTime) {
  auto p = init("tx", 10000);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"v"}, true)).error, error_code::none);
  now_ms += 6000;
  kill_coordinator("tx");
  auto d = describe("tx");
  EXPECT_EQ(d.state, "Ongoing");
  EXPECT_EQ(d.partitions, std::vector<topic_partition>{t0});
  // The producer goes on with its epoch and commits.
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 1, {"w"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_committed), (std::vector<std::string>{"v", "w"}));
}

TEST_F(FencingTest, RestartInOngoingKeepsTimingTheTransactionFromItsStart) {
  auto p = init("tx", 10000);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"v"}, true)).error, error_code::none);
  now_ms += 6000;
  kill_coordinator("tx");
  // 10 001 ms after the transaction started, not after the restart.
  now_ms += 4001;
  sched.advance_time(std::chrono::milliseconds(10000));
  sched.run();
  EXPECT_EQ(describe("tx").state, "CompleteAbort");
  EXPECT_EQ(end_raw("tx", p.pid, p.epoch, true).error, error_code::producer_fenced);
  EXPECT_TRUE(visible_values(t0, iso::read_committed).empty());
}

TEST_F(FencingTest, RestartInPrepareAbortFinishesTheAbort) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0, u0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_EQ(produce(u0, "tx", batch(p.pid, p.epoch, 0, {"b"}, true)).error, error_code::none);
  auto cepoch = describe("tx").coordinator_epoch;
  auto coordinator = coordinator_for("tx");
  auto r = call_until_reply<end_txn_response>(coordinator,
                                              end_txn_request{"tx", p.pid, p.epoch, false});
  ASSERT_EQ(r.error, error_code::none);
  // PrepareAbort is durable; kill the shard before its markers come back.
  self->send(shard_supervisor("tx"), kill_child_request{});
  sched.run();
  auto stats = call<supervisor_stats>(shard_supervisor("tx"), supervisor_stats_request{});
  EXPECT_EQ(stats.restarts, 1);
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteAbort");
  EXPECT_EQ(d.coordinator_epoch, cepoch); // the same leadership: the same epoch
  for (auto& tp : {t0, u0}) {
    auto f = fetch(tp, 0, iso::read_uncommitted);
    EXPECT_EQ(f.last_stable_offset, f.high_watermark) << to_string(tp);
    EXPECT_TRUE(visible_values(tp, iso::read_committed).empty()) << to_string(tp);
    // The restarted shard re-sent the abort marker.
    ASSERT_FALSE(batches_of(f).empty());
    auto last = parse_control_batch(batches_of(f).back());
    ASSERT_TRUE(last.has_value()) << to_string(tp);
    EXPECT_EQ(last->type, control_type::abort);
    EXPECT_EQ(last->cepoch, coordinator_epoch{cepoch});
  }
  // The producer's retry of its abort: NONE with the bumped epoch.
  auto retry = end_raw("tx", p.pid, p.epoch, false);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.epoch, producer_epoch{1});
}

TEST_F(FencingTest, RestartInCompleteCommitStillRecognisesTheEndTxnRetry) {
  auto p = init("tx");
  auto first = p;
  committed_transaction(p, "a");
  kill_coordinator("tx");
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
  auto retry = end_raw("tx", first.pid, first.epoch, true);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.epoch, producer_epoch{1});
  // The producer continues with the next transaction at epoch 1.
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"b"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_committed), (std::vector<std::string>{"a", "b"}));
}

TEST_F(FencingTest, RestartInCompleteAbortStillRecognisesTheAbortRetry) {
  auto p = init("tx");
  auto first = p;
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, false).error, error_code::none);
  kill_coordinator("tx");
  EXPECT_EQ(describe("tx").state, "CompleteAbort");
  auto retry = end_raw("tx", first.pid, first.epoch, false);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.epoch, producer_epoch{1});
  EXPECT_EQ(end_raw("tx", first.pid, first.epoch, true).error, error_code::invalid_txn_state);
  EXPECT_TRUE(visible_values(t0, iso::read_committed).empty());
  // The producer goes on at epoch 1.
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"b"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"b"});
}

// -- a card that cannot be written ------------------------------------------------------

class FailedWriteTest : public node_fixture {
protected:
  void SetUp() override {
    env = &fenv;
    start_node();
    create_topic("t", 1);
  }
};

TEST_F(FailedWriteTest, FailedCardWriteLeavesCardUnchangedAndAnswersRetriableError) {
  auto p = init("tx");
  ASSERT_EQ(p.error, error_code::none);
  fenv.fail = true;
  auto r = call<txn_response>(coordinator_for("tx"),
                              add_partitions_to_txn_request{"tx", p.pid, p.epoch, {t0}});
  EXPECT_EQ(r.error, error_code::kafka_storage_error);
  EXPECT_NE(r.message.find("IO error: injected"), std::string::npos) << r.message;
  EXPECT_TRUE(is_retriable(r.error));
  // The shard stopped (its memory may differ from the disk); its supervisor
  // answers for it while the disk fails, and restarts it from disk after.
  EXPECT_EQ(describe("tx").error, error_code::kafka_storage_error);
  fenv.fail = false;
  for (int i = 0; i < 20; ++i) {
    now_ms += 100;
    sched.advance_time(std::chrono::milliseconds(100));
    sched.run();
  }
  auto d = describe("tx");
  EXPECT_EQ(d.state, "Empty");
  EXPECT_TRUE(d.partitions.empty());
  EXPECT_EQ(d.epoch, p.epoch);
  // No transition is left pending: the next request is checked as usual.
  auto again = call<txn_response>(coordinator_for("tx"),
                                  add_partitions_to_txn_request{"tx", p.pid, producer_epoch{7}, {t0}});
  EXPECT_EQ(again.error, error_code::producer_fenced);
}

} // namespace
} // namespace caftx::testing

namespace caftx::testing {
namespace {

// Leader epochs fence a stale leader and a stale follow (KIP-320 and
// Kafka's makeFollower): the partition of the embedded node leads at the
// leader epoch its controller gave it, 0.
class LeaderEpochFencingTest : public node_fixture {
protected:
  void SetUp() override {
    start_node();
    create_topic("t", 1);
    ASSERT_EQ(produce(t0, "", batch(no_producer_id, no_producer_epoch, -1, {"a"}, false)).error,
              error_code::none);
    auto h = v2::read_header(fetch(t0, 0, iso::read_uncommitted).records);
    ASSERT_TRUE(h.ok());
    epoch = h->partition_leader_epoch;
    ASSERT_EQ(epoch, 0);
  }
  int32_t epoch = -1;
};

// A reader that has seen a newer leader epoch than this leader's (a
// zombie that has not heard of its successor) is told UNKNOWN_LEADER_EPOCH
// instead of this leader's log end, which would move it back.
TEST_F(LeaderEpochFencingTest, AFetchFromALeaderBelowTheEpochTheReaderSawIsUnknownLeaderEpoch) {
  fetch_request ahead{t0, 5, 1 << 20, iso::read_uncommitted};
  ahead.last_seen_leader_epoch = epoch + 1;
  auto r = call<fetch_response>(leader("t", 0), ahead);
  EXPECT_EQ(r.error, error_code::unknown_leader_epoch);
  EXPECT_EQ(r.message, "the reader has seen leader epoch 1 of t-0, this leader is at 0");
  fetch_request same{t0, 0, 1 << 20, iso::read_uncommitted};
  same.last_seen_leader_epoch = epoch;
  r = call<fetch_response>(leader("t", 0), same);
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(batches_of(r).size(), 1u);
}

// A follow at the leader epoch the partition leads at, or an earlier one
// (a LeaderAndIsr that reached it late, through its fetcher), is refused:
// the partition keeps leading.
TEST_F(LeaderEpochFencingTest, AFollowAtTheLeadersEpochOrAnEarlierOneIsFencedAndThePartitionLeadsOn) {
  auto p = call<replica_position>(leader("t", 0), become_follower_request{2, epoch});
  EXPECT_EQ(p.error, error_code::fenced_leader_epoch);
  EXPECT_EQ(p.message, "partition t-0 is at leader epoch 0; a follow at 0 is stale");
  p = call<replica_position>(leader("t", 0), become_follower_request{2, epoch - 1});
  EXPECT_EQ(p.error, error_code::fenced_leader_epoch);
  EXPECT_EQ(produce(t0, "", batch(no_producer_id, no_producer_epoch, -1, {"b"}, false)).error,
            error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), (std::vector<std::string>{"a", "b"}));
}

} // namespace
} // namespace caftx::testing
