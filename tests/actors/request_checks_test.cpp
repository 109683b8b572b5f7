// The checks a request meets before (or instead of) the coordinator core,
// one test per check, named after it: FindCoordinator at the broker
// (docs/transactions.md §FindCoordinator), the order of InitProducerId's
// checks in the shard (§InitProducerId), AddPartitionsToTxn and
// AddOffsetsToTxn (§AddPartitionsToTxn, §AddOffsetsToTxn) and
// TxnOffsetCommit at the group coordinator (§TxnOffsetCommit). The core's
// checks are tested in tests/unit/coordinator_test.cpp. One node on the deterministic
// scheduler; its disk can be made to fail (fenv).
#include "fixture.hpp"

#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

const topic_partition t0{"t", 0};
const topic_partition u0{"u", 0};
// abs(javaHashCode) % 50: "g" -> 3, "h" -> 4, "tx" -> 16.
const topic_partition offsets_of_g{"__consumer_offsets", 3};

class RequestChecksTest : public node_fixture {
protected:
  void SetUp() override {
    env = &fenv;
    start_node();
    create_topic("t", 1);
    create_topic("u", 1);
  }

  find_coordinator_response find(int8_t key_type, const std::string& key) {
    return call<find_coordinator_response>(broker(), find_coordinator_request{key_type, key});
  }

  caf::actor group_coordinator(const std::string& group) { return find(0, group).coordinator; }

  /// The shard after the one `tid` hashes to.
  caf::actor wrong_shard(const std::string& tid) {
    return n->coordinator_supervisor((partition_for(tid, 50) + 1) % 50);
  }

  txn_response add_offsets(const init_producer_id_response& p, const std::string& group) {
    return call<txn_response>(coordinator_for("tx"),
                              add_offsets_to_txn_request{"tx", p.pid, p.epoch, group});
  }

  /// TxnOffsetCommit of "tx" for `group`, sent to `dest`.
  txn_response commit_offsets(const caf::actor& dest, const std::string& group,
                              const init_producer_id_response& p, std::vector<topic_partition> tps,
                              std::vector<int64_t> offsets) {
    return call<txn_response>(dest, txn_offset_commit_request{"tx", group, p.pid, p.epoch,
                                                              std::move(tps), std::move(offsets)});
  }

  /// Nothing pending and nothing committed for `tp` in group "g".
  void expect_no_offsets_of_g(const topic_partition& tp) {
    auto r = call<offset_fetch_response>(group_coordinator("g"), offset_fetch_request{"g", {tp}, true});
    EXPECT_EQ(r.error, error_code::none);
    EXPECT_EQ(r.offsets, std::vector<int64_t>{-1});
  }
};

// -- FindCoordinator (docs/transactions.md §FindCoordinator) ---------------------

TEST_F(RequestChecksTest, FindCoordinatorForTransactionalIdAnswersTheShardItHashesTo) {
  for (std::string key : {"tx", "order-loader", "polygenelubricants"}) {
    SCOPED_TRACE(key);
    auto r = find(1, key);
    EXPECT_EQ(r.error, error_code::none);
    EXPECT_EQ(r.partition, partition_for(key, 50));
    EXPECT_EQ(r.coordinator, n->coordinator_supervisor(r.partition));
  }
  EXPECT_EQ(find(1, "tx").partition, 16);
  EXPECT_EQ(find(1, "polygenelubricants").partition, 0); // hashCode Integer.MIN_VALUE
}

TEST_F(RequestChecksTest, FindCoordinatorForGroupAnswersTheGroupCoordinatorItHashesTo) {
  auto r = find(0, "g");
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.partition, 3);
  // It owns the group; the coordinator of "h" (partition 4) does not.
  EXPECT_EQ(call<txn_response>(r.coordinator, offset_commit_request{"g", {t0}, {5}}).error,
            error_code::none);
  EXPECT_EQ(call<txn_response>(group_coordinator("h"), offset_commit_request{"g", {t0}, {5}}).error,
            error_code::not_coordinator);
}

TEST_F(RequestChecksTest, FindCoordinatorWithEmptyTransactionalIdIsInvalidRequest) {
  auto r = find(1, "");
  EXPECT_EQ(r.error, error_code::invalid_request);
  EXPECT_FALSE(r.coordinator);
}

TEST_F(RequestChecksTest, FindCoordinatorWithUnknownKeyTypeIsInvalidRequest) {
  // Kafka's CoordinatorType.forId knows GROUP (0) and TRANSACTION (1) here.
  for (int8_t key_type : {2, -1}) {
    auto r = find(key_type, "g");
    EXPECT_EQ(r.error, error_code::invalid_request) << int{key_type};
    EXPECT_EQ(r.message, "unknown coordinator type " + std::to_string(key_type));
    EXPECT_FALSE(r.coordinator);
  }
}

// -- InitProducerId (docs/transactions.md §InitProducerId) -----------------------

TEST_F(RequestChecksTest, InitProducerIdWithoutTransactionalIdGetsAProducerIdWithEpochZero) {
  // Any broker answers an idempotent producer (step 3); a shard of the
  // node allocates from its producer id block, one id after the other.
  init_producer_id_request req{false, "", 60000, no_producer_id, no_producer_epoch};
  auto first = call<init_producer_id_response>(broker(), req);
  EXPECT_EQ(first.error, error_code::none);
  EXPECT_GE(first.pid.value, 0);
  EXPECT_EQ(first.epoch, producer_epoch{0});
  auto second = call<init_producer_id_response>(broker(), req);
  EXPECT_EQ(second.pid, producer_id{first.pid.value + 1});
  EXPECT_EQ(second.epoch, producer_epoch{0});
}

TEST_F(RequestChecksTest, InitProducerIdWithTransactionalIdAtTheBrokerIsNotCoordinator) {
  init_producer_id_request req{true, "tx", 60000, no_producer_id, no_producer_epoch};
  EXPECT_EQ(call<init_producer_id_response>(broker(), req).error, error_code::not_coordinator);
}

TEST_F(RequestChecksTest, InitProducerIdChecksArgumentsBeforeCoordinatorOwnership) {
  // Steps 2, 4 and 5 before step 6, at a shard that does not own "tx".
  auto ask = [&](init_producer_id_request req) {
    return call<init_producer_id_response>(wrong_shard("tx"), req).error;
  };
  EXPECT_EQ(ask({true, "tx", 0, no_producer_id, no_producer_epoch}),
            error_code::invalid_transaction_timeout);
  EXPECT_EQ(ask({true, "tx", 60000, producer_id{3}, no_producer_epoch}),
            error_code::invalid_request);
  EXPECT_EQ(ask({true, "", 0, no_producer_id, no_producer_epoch}), error_code::invalid_request);
  EXPECT_EQ(ask({true, "tx", 60000, no_producer_id, no_producer_epoch}),
            error_code::not_coordinator);
}

// -- AddPartitionsToTxn (docs/transactions.md §AddPartitionsToTxn) ---------------

TEST_F(RequestChecksTest, AddPartitionsWithAnUnknownPartitionAddsNoneOfThem) {
  auto p = init("tx");
  for (auto unknown : {topic_partition{"t", 1}, topic_partition{"t", -1}, topic_partition{"nope", 0}}) {
    SCOPED_TRACE(to_string(unknown));
    EXPECT_EQ(add("tx", p, {t0, unknown, u0}).error, error_code::unknown_topic_or_partition);
  }
  EXPECT_EQ(describe("tx").state, "Empty");
  EXPECT_TRUE(describe("tx").partitions.empty());
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  EXPECT_EQ(add("tx", p, {u0, {"nope", 0}}).error, error_code::unknown_topic_or_partition);
  EXPECT_EQ(describe("tx").partitions, std::vector<topic_partition>{t0});
}

TEST_F(RequestChecksTest, AddPartitionsChecksUnknownPartitionsBeforeTheCoordinator) {
  // Step 2 before steps 3 ("") and 4 (not the coordinator).
  auto p = init("tx");
  auto unknown = std::vector<topic_partition>{{"nope", 0}};
  EXPECT_EQ(call<txn_response>(wrong_shard("tx"),
                               add_partitions_to_txn_request{"tx", p.pid, p.epoch, unknown})
              .error,
            error_code::unknown_topic_or_partition);
  EXPECT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_partitions_to_txn_request{"", p.pid, p.epoch, unknown})
              .error,
            error_code::unknown_topic_or_partition);
}

TEST_F(RequestChecksTest, AddPartitionsAlreadyInTheTransactionAnswersNoneWithoutAWrite) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0, u0}).error, error_code::none);
  fenv.fail = true; // every write fails from now on
  EXPECT_EQ(add("tx", p, {u0}).error, error_code::none);
  EXPECT_EQ(add("tx", p, {u0, t0}).error, error_code::none);
  // A partition not yet in the transaction needs a write.
  EXPECT_EQ(add_offsets(p, "g").error, error_code::kafka_storage_error);
  // The shard is restarted from disk once the disk works again.
  fenv.fail = false;
  for (int i = 0; i < 20; ++i) {
    now_ms += 100;
    sched.advance_time(std::chrono::milliseconds(100));
    sched.run();
  }
  EXPECT_EQ(describe("tx").partitions, (std::vector<topic_partition>{t0, u0}));
}

// -- AddOffsetsToTxn (docs/transactions.md §AddOffsetsToTxn) ---------------------

TEST_F(RequestChecksTest, AddOffsetsToTxnAddsTheConsumerOffsetsPartitionOfTheGroup) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(add_offsets(p, "g").error, error_code::none);
  EXPECT_EQ(describe("tx").partitions, (std::vector<topic_partition>{offsets_of_g, t0}));
  ASSERT_EQ(add_offsets(p, "polygenelubricants").error, error_code::none);
  EXPECT_EQ(describe("tx").partitions,
            (std::vector<topic_partition>{{"__consumer_offsets", 0}, offsets_of_g, t0}));
}

TEST_F(RequestChecksTest, AddOffsetsToTxnWithEmptyGroupIdIsInvalidRequest) {
  auto p = init("tx");
  EXPECT_EQ(add_offsets(p, "").error, error_code::invalid_request);
  EXPECT_EQ(describe("tx").state, "Empty");
}

TEST_F(RequestChecksTest, AddOffsetsToTxnOfFencedProducerIsProducerFenced) {
  // The checks of AddPartitionsToTxn, steps 3-11.
  auto fenced = init("tx");
  init("tx");
  EXPECT_EQ(add_offsets(fenced, "g").error, error_code::producer_fenced);
  EXPECT_TRUE(describe("tx").partitions.empty());
}

// -- TxnOffsetCommit (docs/transactions.md §TxnOffsetCommit) ---------------------

TEST_F(RequestChecksTest, TxnOffsetCommitForUnknownPartitionIsUnknownTopicOrPartition) {
  auto p = init("tx");
  ASSERT_EQ(add_offsets(p, "g").error, error_code::none);
  EXPECT_EQ(commit_offsets(group_coordinator("g"), "g", p, {t0, {"t", 1}}, {1, 2}).error,
            error_code::unknown_topic_or_partition);
  expect_no_offsets_of_g(t0);
}

TEST_F(RequestChecksTest, TxnOffsetCommitChecksUnknownPartitionsBeforeCoordinatorOwnership) {
  // Step 3 before step 4: at the coordinator of "h".
  auto p = init("tx");
  EXPECT_EQ(commit_offsets(group_coordinator("h"), "g", p, {{"nope", 0}}, {1}).error,
            error_code::unknown_topic_or_partition);
}

TEST_F(RequestChecksTest, TxnOffsetCommitAtAnotherGroupCoordinatorIsNotCoordinator) {
  auto p = init("tx");
  ASSERT_EQ(add_offsets(p, "g").error, error_code::none);
  EXPECT_EQ(commit_offsets(group_coordinator("h"), "g", p, {t0}, {1}).error,
            error_code::not_coordinator);
  expect_no_offsets_of_g(t0);
}

TEST_F(RequestChecksTest, TxnOffsetCommitWithEmptyGroupIdIsInvalidRequest) {
  auto p = init("tx");
  EXPECT_EQ(commit_offsets(group_coordinator(""), "", p, {t0}, {1}).error,
            error_code::invalid_request);
}

TEST_F(RequestChecksTest, TxnOffsetCommitWithMorePartitionsThanOffsetsIsInvalidRequest) {
  auto p = init("tx");
  ASSERT_EQ(add_offsets(p, "g").error, error_code::none);
  EXPECT_EQ(commit_offsets(group_coordinator("g"), "g", p, {t0, u0}, {1}).error,
            error_code::invalid_request);
  expect_no_offsets_of_g(t0);
}

TEST_F(RequestChecksTest, TxnOffsetCommitWithNegativeOffsetIsInvalidRequest) {
  auto p = init("tx");
  ASSERT_EQ(add_offsets(p, "g").error, error_code::none);
  EXPECT_EQ(commit_offsets(group_coordinator("g"), "g", p, {t0}, {-1}).error,
            error_code::invalid_request);
  expect_no_offsets_of_g(t0);
}

TEST_F(RequestChecksTest, TxnOffsetCommitOfFencedProducerIsInvalidProducerEpoch) {
  // Verification (step 5) answers PRODUCER_FENCED; the group coordinator
  // maps it to INVALID_PRODUCER_EPOCH.
  auto fenced = init("tx");
  auto current = init("tx");
  ASSERT_EQ(add_offsets(current, "g").error, error_code::none);
  EXPECT_EQ(commit_offsets(group_coordinator("g"), "g", fenced, {t0}, {1}).error,
            error_code::invalid_producer_epoch);
  expect_no_offsets_of_g(t0);
}

} // namespace
} // namespace caftx::testing
