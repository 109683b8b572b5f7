// Markers (docs/transactions.md §Markers, §WriteTxnMarkers): a
// WriteTxnMarkers entry for a partition its receiver does not host, and
// how the coordinator treats the answers to its markers —
// INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED stop the
// markers of that transaction for good (someone newer owns it: no
// Complete* is written), any other failure is retried until the partition
// acknowledges, and only then is Complete* written. One node on the
// deterministic scheduler with simulated time; its disk can be made to
// fail (fenv).
#include "fixture.hpp"

#include "actors/common/node_metrics.hpp"

#include <functional>

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};
const topic_partition offsets_of_g{"__consumer_offsets", 3}; // abs(javaHashCode("g")) % 50

class MarkersTest : public node_fixture {
protected:
  void SetUp() override {
    env = &fenv;
    metrics = std::make_shared<metrics::registry>();
    ncfg.producer_id_expiration_ms = 60000;
    ncfg.producer_id_expiration_check_interval_ms = 1000;
    start_node();
    create_topic("t", 1);
  }

  caf::actor group_coordinator(const std::string& group) {
    return call<find_coordinator_response>(broker(), find_coordinator_request{0, group}).coordinator;
  }

  /// "tx" writes "a" to t-0 and commits offset 42 of t-0 for group "g" in
  /// one open transaction: its markers go to t-0 and __consumer_offsets-3.
  init_producer_id_response open_transaction_with_offsets() {
    auto p = init("tx");
    EXPECT_EQ(add("tx", p, {t0}).error, error_code::none);
    EXPECT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
    EXPECT_EQ(call<txn_response>(coordinator_for("tx"),
                                 add_offsets_to_txn_request{"tx", p.pid, p.epoch, "g"})
                .error,
              error_code::none);
    EXPECT_EQ(call<txn_response>(group_coordinator("g"),
                                 txn_offset_commit_request{"tx", "g", p.pid, p.epoch, {t0}, {42}})
                .error,
              error_code::none);
    return p;
  }

  /// The node's markers-in-flight gauge (docs/metrics.md).
  double markers_in_flight() {
    return metrics->get_gauge(node_metrics::txn_markers_in_flight).value();
  }

  template <class Handle>
  int32_t restarts(const Handle& h) {
    return call<supervisor_stats>(supervisor(h), supervisor_stats_request{}).restarts;
  }

  /// Lets `ms` of simulated time pass in steps of caftx.marker.retry.backoff.ms
  /// (100), so that every marker retry due meanwhile is sent and answered.
  void let_time_pass(int64_t ms) {
    for (int64_t passed = 0; passed < ms; passed += 100) {
      now_ms += 100;
      sched.advance_time(std::chrono::milliseconds(100));
      sched.run();
    }
  }

  /// "tx" writes "a" to t-0; `newer(p, coordinator epoch)` is then written
  /// to t-0, as by a newer owner of the transaction, and must make t-0
  /// answer the coordinator's commit marker with `answer`. The commit's
  /// markers stop there: after 61 s, when t-0 has forgotten the producer
  /// and would take the marker, the transaction is still PrepareCommit.
  void expect_markers_stopped_by(
    const std::function<write_txn_marker_request(const init_producer_id_response&, int32_t)>& newer,
    error_code answer) {
    auto p = init("tx");
    ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
    ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
    auto cepoch = describe("tx").coordinator_epoch;
    ASSERT_EQ(call<txn_response>(leader("t", 0), newer(p, cepoch)).error, error_code::none);
    auto bumped = producer_epoch{static_cast<int16_t>(p.epoch.value + 1)};
    write_txn_marker_request coordinators{p.pid, bumped, cepoch, true, t0};
    ASSERT_EQ(call<txn_response>(leader("t", 0), coordinators).error, answer);
    ASSERT_EQ(end("tx", p, true).error, error_code::none); // PrepareCommit is durable
    EXPECT_EQ(describe("tx").state, "PrepareCommit");
    EXPECT_EQ(markers_in_flight(), 0); // the round was dropped, not left in flight
    let_time_pass(61000); // producer.id.expiration.ms + a check
    EXPECT_EQ(describe("tx").state, "PrepareCommit");
    EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).high_watermark, 2); // "a", the newer marker
    // The same marker would be taken now: had it been retried, it would
    // have been written and the transaction completed.
    EXPECT_EQ(call<txn_response>(leader("t", 0), coordinators).error, error_code::none);
  }
};

TEST_F(MarkersTest, MarkerForPartitionNotHostedIsUnknownTopicOrPartition) {
  auto p = open_transaction_with_offsets();
  auto cepoch = describe("tx").coordinator_epoch;
  auto bumped = producer_epoch{static_cast<int16_t>(p.epoch.value + 1)};
  // A partition leader and a group coordinator, each asked for another partition.
  for (auto tp : {topic_partition{"t", 1}, topic_partition{"nope", 0}, offsets_of_g})
    EXPECT_EQ(call<txn_response>(leader("t", 0), write_txn_marker_request{p.pid, bumped, cepoch,
                                                                          true, tp})
                .error,
              error_code::unknown_topic_or_partition)
      << to_string(tp);
  for (auto tp : {topic_partition{"__consumer_offsets", 4}, t0})
    EXPECT_EQ(call<txn_response>(group_coordinator("g"),
                                 write_txn_marker_request{p.pid, bumped, cepoch, true, tp})
                .error,
              error_code::unknown_topic_or_partition)
      << to_string(tp);
  // Nothing was written or completed.
  auto f = fetch(t0, 0, iso::read_uncommitted);
  EXPECT_EQ(f.high_watermark, 1);
  EXPECT_EQ(f.last_stable_offset, 0);
  auto offsets = call<offset_fetch_response>(group_coordinator("g"), offset_fetch_request{"g", {t0}, true});
  EXPECT_EQ(offsets.error, error_code::unstable_offset_commit);
  EXPECT_EQ(offsets.offsets, std::vector<int64_t>{-1});
}

TEST_F(MarkersTest, InvalidProducerEpochStopsTheMarkersAndCompleteCommitIsNeverWritten) {
  // The transaction was aborted on t-0 with a higher producer epoch.
  expect_markers_stopped_by(
    [](const init_producer_id_response& p, int32_t cepoch) {
      auto higher = producer_epoch{static_cast<int16_t>(p.epoch.value + 5)};
      return write_txn_marker_request{p.pid, higher, cepoch, false, t0, 1};
    },
    error_code::invalid_producer_epoch);
}

TEST_F(MarkersTest, TransactionCoordinatorFencedStopsTheMarkersAndCompleteCommitIsNeverWritten) {
  // A coordinator with a higher coordinator epoch aborted it on t-0.
  expect_markers_stopped_by(
    [](const init_producer_id_response& p, int32_t cepoch) {
      return write_txn_marker_request{p.pid, p.epoch, cepoch + 1, false, t0, 1};
    },
    error_code::transaction_coordinator_fenced);
}

TEST_F(MarkersTest, MarkersAreRetriedUntilAcknowledgedThenCompleteCommitIsWritten) {
  auto p = open_transaction_with_offsets();
  auto r = call_until_reply<end_txn_response>(coordinator_for("tx"),
                                              end_txn_request{"tx", p.pid, p.epoch, true});
  ASSERT_EQ(r.error, error_code::none);
  // The markers are on their way when the disk starts failing: t-0's leader
  // and the group coordinator answer KAFKA_STORAGE_ERROR and stop; their
  // supervisors keep them down while the disk fails, answering
  // KAFKA_STORAGE_ERROR themselves.
  fenv.fail = true;
  sched.run();
  EXPECT_EQ(describe("tx").state, "PrepareCommit");
  // Both markers (t-0, __consumer_offsets-3) are in flight.
  EXPECT_EQ(markers_in_flight(), 2);
  // Down for a while: every retry fails the same way.
  let_time_pass(200);
  EXPECT_EQ(markers_in_flight(), 2);
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).error, error_code::kafka_storage_error);
  EXPECT_EQ(call<offset_fetch_response>(group_coordinator("g"), offset_fetch_request{"g", {t0}, true})
              .error,
            error_code::kafka_storage_error);
  EXPECT_EQ(describe("tx").state, "PrepareCommit");
  // Back: both are restarted from disk (not counted against the restart
  // intensity), the next retry is acknowledged by both, then CompleteCommit.
  fenv.fail = false;
  let_time_pass(1000);
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteCommit");
  EXPECT_EQ(markers_in_flight(), 0);
  EXPECT_EQ(d.epoch, producer_epoch{1});
  EXPECT_TRUE(d.partitions.empty());
  EXPECT_EQ(restarts(leader("t", 0)), 0);
  EXPECT_EQ(restarts(group_coordinator("g")), 0);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"a"});
  auto f = fetch(t0, 0, iso::read_uncommitted);
  ASSERT_EQ(batches_of(f).size(), 2u); // "a" and one COMMIT marker
  EXPECT_EQ(batches_of(f)[1].epoch, producer_epoch{1});
  EXPECT_EQ(parse_control_batch(batches_of(f)[1])->type, control_type::commit);
  EXPECT_EQ(call<offset_fetch_response>(group_coordinator("g"), offset_fetch_request{"g", {t0}, true})
              .offsets,
            std::vector<int64_t>{42});
}

// The next transaction's AddPartitionsToTxn, arriving while the previous
// one's markers are on their way, is parked and answered once
// CompleteCommit is durable (Kafka answers CONCURRENT_TRANSACTIONS and the
// client retries after a backoff).
TEST_F(MarkersTest, AddPartitionsDuringTheMarkersIsAnsweredOnceCompleteCommitIsDurable) {
  auto p = open_transaction_with_offsets();
  auto coordinator = coordinator_for("tx");
  auto r = call_until_reply<end_txn_response>(coordinator, end_txn_request{"tx", p.pid, p.epoch, true});
  ASSERT_EQ(r.error, error_code::none);
  auto next = call<txn_response>(coordinator, add_partitions_to_txn_request{"tx", r.pid, r.epoch, {t0}});
  EXPECT_EQ(next.error, error_code::none);
  auto d = describe("tx");
  EXPECT_EQ(d.state, "Ongoing");
  EXPECT_EQ(d.epoch, r.epoch);
  EXPECT_EQ(d.partitions, std::vector<topic_partition>{t0});
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"a"});
}

TEST_F(MarkersTest, ParkedAddPartitionsIsAnsweredConcurrentTransactionsAfterASecond) {
  auto p = open_transaction_with_offsets();
  auto coordinator = coordinator_for("tx");
  auto r = call_until_reply<end_txn_response>(coordinator, end_txn_request{"tx", p.pid, p.epoch, true});
  ASSERT_EQ(r.error, error_code::none);
  fenv.fail = true; // the markers fail and are retried every 100 ms
  sched.run();
  auto handle = self->request(coordinator, caf::infinite,
                              add_partitions_to_txn_request{"tx", r.pid, r.epoch, {t0}});
  sched.run();
  EXPECT_TRUE(self->mailbox().empty()); // parked
  now_ms += 999;
  sched.advance_time(std::chrono::milliseconds(999));
  sched.run();
  EXPECT_TRUE(self->mailbox().empty()); // still parked
  now_ms += 1;
  sched.advance_time(std::chrono::milliseconds(1));
  sched.run();
  ASSERT_FALSE(self->mailbox().empty()) << "no answer after a second";
  txn_response answer;
  handle.receive([&](txn_response& x) { answer = x; },
                 [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(answer.error, error_code::concurrent_transactions);
  EXPECT_EQ(describe("tx").state, "PrepareCommit");
  fenv.fail = false;
  let_time_pass(1000); // t-0's leader is restarted once the disk works
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
  EXPECT_EQ(call<txn_response>(coordinator, add_partitions_to_txn_request{"tx", r.pid, r.epoch, {t0}})
              .error,
            error_code::none);
}

TEST_F(MarkersTest, AbortOutsideTransactionCompletesAbortAtOnceWithoutMarkers) {
  // T12: EndTxn(abort) in Empty with the current epoch bumps the epoch;
  // there is no partition to write a marker to.
  auto p = init("tx");
  auto r = end_raw("tx", p.pid, p.epoch, false);
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.pid, p.pid);
  EXPECT_EQ(r.epoch, producer_epoch{1});
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteAbort");
  EXPECT_EQ(d.epoch, producer_epoch{1});
  EXPECT_TRUE(d.partitions.empty());
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).high_watermark, 0);
}

// A topic deleted while a transaction writes to it (Kafka's
// TransactionMarkerChannelManager drops the markers of a deleted
// partition): the commit completes with the markers of the partitions
// that remain, the deleted one is unknown from then on, and groups lose
// their committed offsets of it.
TEST_F(MarkersTest, TopicDeletedDuringATransactionCommitsWithoutItsMarker) {
  create_topic("u", 1);
  const topic_partition u0{"u", 0};
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0, u0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_EQ(produce(u0, "tx", batch(p.pid, p.epoch, 0, {"b"}, true)).error, error_code::none);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"),
                               offset_commit_request{"g", {t0, u0}, {7, 9}})
              .error,
            error_code::none);
  auto deleted = call<txn_response>(broker(), delete_topic_request{"t"});
  ASSERT_EQ(deleted.error, error_code::none) << deleted.message;
  auto meta = call<metadata_response>(broker(), metadata_request{{"t"}});
  EXPECT_EQ(meta.topics.at(0).error, error_code::unknown_topic_or_partition);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  let_time_pass(200);
  auto d = describe("tx");
  EXPECT_EQ(d.state, "CompleteCommit");
  EXPECT_EQ(markers_in_flight(), 0);
  EXPECT_EQ(visible_values(u0, iso::read_committed), std::vector<std::string>{"b"});
  // The group's offsets of the deleted topic are gone (Kafka's
  // onPartitionsDeleted), the others stay.
  auto offsets = call<offset_fetch_response>(group_coordinator("g"), offset_fetch_request{"g", {}, false});
  EXPECT_EQ(offsets.partitions, std::vector<topic_partition>{u0});
  EXPECT_EQ(offsets.offsets, std::vector<int64_t>{9});
  // The name is free: a new "t" starts empty.
  create_topic("t", 1);
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).high_watermark, 0);
}

} // namespace
} // namespace caftx::testing
