// The producer session's core: batches, sequences, the in-flight window
// (one batch until a partition acknowledged one of the producer id,
// docs/producer-state.md §First-batches), in-order retries and the KIP-360 epoch bump
// (docs/errors.md §Produce-errors, §Classification).
#include <gtest/gtest.h>

#include "actors/client/record_accumulator.hpp"

namespace caftx {
namespace {

const topic_partition tp0{"t", 0};
const topic_partition tp1{"t", 1};

record rec(const std::string& v) {
  return {"", v, {}, 1};
}

class RecordAccumulator : public ::testing::Test {
protected:
  accumulator_settings settings{/*batch_size=*/1, /*max_in_flight=*/5, /*retries=*/100,
                                /*delivery_timeout_ms=*/1000, /*transactional=*/false};
  record_accumulator acc{settings};
  uint64_t next_id = 1;

  void SetUp() override { acc.set_identity(producer_id{7}, producer_epoch{0}); }

  // batch.size 1 byte: every record is a batch of its own.
  void add(const topic_partition& tp, int n) {
    for (int i = 0; i < n; ++i)
      acc.append(tp, next_id++, rec(std::to_string(i)), 0);
  }

  /// Sends one batch of `tp` (sequence 0) and acknowledges it, so that
  /// `tp`'s window opens to max.in.flight; its outcome is taken.
  void open_window(record_accumulator& a, const topic_partition& tp) {
    a.append(tp, next_id++, rec("first"), 0);
    a.seal_all(0);
    auto sent = a.ready();
    ASSERT_EQ(sent.size(), 1u);
    ASSERT_EQ(sent[0].batch.base_sequence, 0);
    a.on_reply(tp, sent[0].generation, error_code::none, {}, 0, 0);
    ASSERT_EQ(a.take_outcomes().size(), 1u);
  }

  static std::vector<int32_t> sequences(const std::vector<batch_to_send>& v) {
    std::vector<int32_t> out;
    for (auto& b : v)
      out.push_back(b.batch.base_sequence);
    return out;
  }
};

TEST_F(RecordAccumulator, SealsAtBatchSizeAndNumbersBatchesWithConsecutiveSequences) {
  record_accumulator big{{/*batch_size=*/63, 5, 100, 1000, false}};
  big.set_identity(producer_id{7}, producer_epoch{3});
  EXPECT_TRUE(big.append(tp0, 1, rec("a"), 0));   // first record: arm linger
  EXPECT_FALSE(big.append(tp0, 2, rec("b"), 0));  // 42 bytes so far: open
  EXPECT_TRUE(big.ready().empty());
  big.append(tp0, 3, rec("c"), 0);                // 63 bytes, batch.size: sealed
  auto sent = big.ready();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].batch.record_count(), 3);
  EXPECT_EQ(sent[0].batch.base_sequence, 0);
  EXPECT_EQ(sent[0].batch.pid, producer_id{7});
  EXPECT_EQ(sent[0].batch.epoch, producer_epoch{3});
  big.append(tp0, 4, rec("d"), 0);
  big.seal_all(0);
  EXPECT_TRUE(big.ready().empty()); // behind the epoch's first batch
  big.on_reply(tp0, sent[0].generation, error_code::none, {}, 0, 0);
  EXPECT_EQ(sequences(big.ready()), std::vector<int32_t>{3});
}

TEST_F(RecordAccumulator, FirstBatchOfAProducerIdAtAPartitionGoesAloneUntilAcknowledged) {
  add(tp0, 3);
  add(tp1, 1);
  auto first = acc.ready();
  ASSERT_EQ(first.size(), 2u); // one per partition
  EXPECT_EQ(first[0].tp, tp0);
  EXPECT_EQ(first[0].batch.base_sequence, 0);
  EXPECT_TRUE(acc.ready().empty());
  // Lost (a leader restart): it goes out again alone.
  acc.on_reply(tp0, first[0].generation, error_code::request_timed_out, "lost", -1, 0);
  ASSERT_TRUE(acc.wants_retry_timer());
  acc.retry_backoff_elapsed();
  auto again = acc.ready();
  EXPECT_EQ(sequences(again), std::vector<int32_t>{0});
  // Acknowledged: the partition knows the producer, the rest is pipelined.
  acc.on_reply(tp0, again[0].generation, error_code::none, {}, 0, 0);
  auto rest = acc.ready();
  EXPECT_EQ(sequences(rest), (std::vector<int32_t>{1, 2}));
  for (auto& b : rest)
    acc.on_reply(tp0, b.generation, error_code::none, {}, b.batch.base_sequence, 0);
  // A new epoch of the same producer id (EndTxn, InitProducerId): the
  // partition knows the id and takes the new epoch only from sequence 0,
  // so the window stays open.
  acc.set_identity(producer_id{7}, producer_epoch{1});
  add(tp0, 2);
  auto bumped = acc.ready();
  EXPECT_EQ(sequences(bumped), (std::vector<int32_t>{0, 1}));
  for (auto& b : bumped)
    acc.on_reply(tp0, b.generation, error_code::none, {}, 10 + b.batch.base_sequence, 0);
  // A new producer id (rotation at epoch exhaustion, a new session): alone again.
  acc.set_identity(producer_id{8}, producer_epoch{0});
  add(tp0, 2);
  auto next = acc.ready();
  ASSERT_EQ(sequences(next), std::vector<int32_t>{0});
  acc.on_reply(tp0, next[0].generation, error_code::none, {}, 12, 0);
  EXPECT_EQ(sequences(acc.ready()), std::vector<int32_t>{1});
}

// The same producer id and epoch set again continues the sequences: a
// restart at 0 would make the leader answer the next batch as a duplicate
// of the first (its offset, its records never written).
TEST_F(RecordAccumulator, TheSameIdentityAgainKeepsTheSequences) {
  open_window(acc, tp0);
  acc.set_identity(producer_id{7}, producer_epoch{0});
  add(tp0, 2);
  EXPECT_EQ(sequences(acc.ready()), (std::vector<int32_t>{1, 2}));
}

TEST_F(RecordAccumulator, WithoutIdempotenceBatchesArePipelinedFromTheStart) {
  record_accumulator plain{{/*batch_size=*/1, 5, 100, 1000, false}};
  for (uint64_t id = 1; id <= 3; ++id)
    plain.append(tp0, id, rec("a"), 0);
  EXPECT_EQ(plain.ready().size(), 3u);
}

TEST_F(RecordAccumulator, AtMostMaxInFlightBatchesPerPartition) {
  open_window(acc, tp0);
  open_window(acc, tp1);
  add(tp0, 7);
  add(tp1, 2);
  auto sent = acc.ready();
  int on_tp0 = 0;
  for (auto& b : sent)
    on_tp0 += b.tp == tp0;
  EXPECT_EQ(on_tp0, 5);
  EXPECT_EQ(sent.size(), 7u);
  EXPECT_TRUE(acc.ready().empty());
  acc.on_reply(tp0, sent[0].generation, error_code::none, {}, 1, 0);
  auto more = acc.ready();
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].batch.base_sequence, 6);
}

TEST_F(RecordAccumulator, RetriesResendTheSameSequencesInOrderAfterTheBackoff) {
  open_window(acc, tp0);
  add(tp0, 3);
  auto sent = acc.ready();
  ASSERT_EQ(sequences(sent), (std::vector<int32_t>{1, 2, 3}));
  acc.on_reply(tp0, sent[0].generation, error_code::request_timed_out, "lost", -1, 0);
  acc.on_reply(tp0, sent[1].generation, error_code::out_of_order_sequence_number, "gap", -1, 0);
  acc.on_reply(tp0, sent[2].generation, error_code::out_of_order_sequence_number, "gap", -1, 0);
  EXPECT_TRUE(acc.wants_retry_timer());
  EXPECT_FALSE(acc.wants_retry_timer()); // one timer at a time
  EXPECT_TRUE(acc.ready().empty());       // nothing before the backoff
  acc.retry_backoff_elapsed();
  auto again = acc.ready();
  EXPECT_EQ(sequences(again), (std::vector<int32_t>{1, 2, 3}));
  for (size_t i = 0; i < again.size(); ++i)
    acc.on_reply(tp0, again[i].generation, error_code::none, {}, 10 + static_cast<int64_t>(i), 0);
  auto outcomes = acc.take_outcomes();
  ASSERT_EQ(outcomes.size(), 3u);
  for (auto& o : outcomes)
    EXPECT_EQ(o.error, error_code::none);
  EXPECT_EQ(acc.unresolved(), 0u);
}

TEST_F(RecordAccumulator, ReplyOfASupersededSendIsIgnored) {
  add(tp0, 1);
  auto first = acc.ready();
  acc.on_reply(tp0, first[0].generation, error_code::request_timed_out, "lost", -1, 0);
  (void) acc.wants_retry_timer();
  acc.retry_backoff_elapsed();
  auto second = acc.ready();
  acc.on_reply(tp0, first[0].generation, error_code::none, {}, 99, 0); // late reply
  EXPECT_TRUE(acc.take_outcomes().empty());
  acc.on_reply(tp0, second[0].generation, error_code::none, {}, 4, 0);
  auto outcomes = acc.take_outcomes();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].offset, 4);
}

TEST_F(RecordAccumulator, OutOfOrderBehindAnAcknowledgedBatchFailsItInsteadOfGuessingItWasWritten) {
  // The later batch may have landed first at a partition that dropped the
  // producer's state meanwhile (expired: any sequence accepted): the
  // earlier one was not written.
  open_window(acc, tp0);
  add(tp0, 2);
  auto sent = acc.ready();
  ASSERT_EQ(sent.size(), 2u);
  acc.on_reply(tp0, sent[1].generation, error_code::none, {}, 1, 0); // the later one landed
  acc.on_reply(tp0, sent[0].generation, error_code::request_timed_out, "lost", -1, 0);
  (void) acc.wants_retry_timer();
  acc.retry_backoff_elapsed();
  auto retry = acc.ready();
  ASSERT_EQ(retry.size(), 1u);
  acc.on_reply(tp0, retry[0].generation, error_code::out_of_order_sequence_number, "old", -1, 0);
  auto outcomes = acc.take_outcomes();
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].error, error_code::none);
  EXPECT_EQ(outcomes[0].offset, 1);
  EXPECT_EQ(outcomes[1].error, error_code::out_of_order_sequence_number); // reported, not lost
  EXPECT_EQ(outcomes[1].offset, -1);
  EXPECT_EQ(acc.epoch(), producer_epoch{1}); // KIP-360 bump
}

TEST_F(RecordAccumulator, GenuineGapFailsLaterBatchesAndBumpsTheIdempotentEpoch) {
  open_window(acc, tp0);
  add(tp0, 3);
  auto sent = acc.ready();
  ASSERT_EQ(sent.size(), 3u);
  acc.on_reply(tp0, sent[0].generation, error_code::none, {}, 1, 0);
  acc.on_reply(tp0, sent[1].generation, error_code::out_of_order_sequence_number, "gap", -1, 0);
  // The third is still in flight: the bump waits for it; its reply is moot.
  EXPECT_EQ(acc.epoch(), producer_epoch{0});
  auto outcomes = acc.take_outcomes();
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[1].error, error_code::out_of_order_sequence_number);
  EXPECT_EQ(outcomes[2].error, error_code::out_of_order_sequence_number);
  acc.on_reply(tp0, sent[2].generation, error_code::none, {}, 3, 0);
  EXPECT_TRUE(acc.take_outcomes().empty());
  add(tp0, 1);
  auto next = acc.ready();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(acc.epoch(), producer_epoch{1});
  EXPECT_EQ(next[0].batch.epoch, producer_epoch{1});
  EXPECT_EQ(next[0].batch.base_sequence, 0);
}

TEST_F(RecordAccumulator, TransactionalFailureDoesNotBumpTheEpoch) {
  record_accumulator txn{{1, 5, 100, 1000, /*transactional=*/true}};
  txn.set_identity(producer_id{7}, producer_epoch{2});
  txn.append(tp0, 1, rec("a"), 0);
  auto sent = txn.ready();
  EXPECT_TRUE(sent[0].batch.is_transactional());
  txn.on_reply(tp0, sent[0].generation, error_code::invalid_producer_epoch, "fenced", -1, 0);
  EXPECT_EQ(txn.take_outcomes().at(0).error, error_code::invalid_producer_epoch);
  EXPECT_EQ(txn.epoch(), producer_epoch{2});
}

TEST_F(RecordAccumulator, DeliveryTimeoutEndsTheRetries) {
  add(tp0, 1);
  auto sent = acc.ready();
  acc.on_reply(tp0, sent[0].generation, error_code::not_leader_or_follower, "moved", -1, 1000);
  auto outcomes = acc.take_outcomes();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].error, error_code::request_timed_out);
  // Its outcome is unknown: KIP-360, the idempotent producer moves on with
  // a new epoch from sequence 0.
  EXPECT_EQ(acc.epoch(), producer_epoch{1});
  add(tp0, 1);
  auto next = acc.ready();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].batch.base_sequence, 0);
}

// retries 0 (Kafka's producer with idempotence off): a retriable answer
// ends the batch with that answer's error and message, not a timeout, as
// Kafka's Sender fails a batch it may not retry.
TEST_F(RecordAccumulator, RetriesUsedUpEndTheBatchWithTheLeadersError) {
  accumulator_settings once = settings;
  once.retries = 0;
  record_accumulator a{once};
  a.append(tp0, next_id++, rec("x"), 0);
  a.seal_all(0);
  auto sent = a.ready();
  ASSERT_EQ(sent.size(), 1u);
  a.on_reply(tp0, sent[0].generation, error_code::not_enough_replicas, "ISR [1] < 2", -1, 10);
  auto outcomes = a.take_outcomes();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].error, error_code::not_enough_replicas);
  EXPECT_EQ(outcomes[0].message, "ISR [1] < 2");
  EXPECT_TRUE(a.ready().empty()) << "resent with no retries left";
}

TEST_F(RecordAccumulator, DiscardUnsentFailsOpenAndQueuedRecordsButNotThoseInFlight) {
  record_accumulator small{{/*batch_size=*/1, /*max_in_flight=*/1, 100, 1000, true}};
  small.set_identity(producer_id{7}, producer_epoch{0});
  small.append(tp0, 1, rec("a"), 0);
  small.append(tp0, 2, rec("b"), 0);
  auto sent = small.ready(); // only the first: window of one
  ASSERT_EQ(sent.size(), 1u);
  small.discard_unsent();
  auto outcomes = small.take_outcomes();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].id, 2u);
  EXPECT_EQ(outcomes[0].error, error_code::invalid_txn_state);
  EXPECT_EQ(small.unresolved(), 1u);
  small.on_reply(tp0, sent[0].generation, error_code::none, {}, 0, 0);
  EXPECT_EQ(small.unresolved(), 0u);
}

TEST_F(RecordAccumulator, LingerSealsOnlyTheBatchItWasArmedFor) {
  record_accumulator big{{1000, 5, 100, 1000, false}};
  big.set_identity(producer_id{7}, producer_epoch{0});
  ASSERT_TRUE(big.append(tp0, 1, rec("a"), 0));
  auto generation = big.linger_generation(tp0);
  big.seal_all(0); // a flush sealed it already
  auto first = big.ready();
  ASSERT_EQ(first.size(), 1u);
  big.on_reply(tp0, first[0].generation, error_code::none, {}, 0, 0);
  ASSERT_TRUE(big.append(tp0, 2, rec("b"), 0));
  big.linger_expired(tp0, generation, 5); // stale timer
  EXPECT_TRUE(big.ready().empty());
  big.linger_expired(tp0, big.linger_generation(tp0), 5);
  EXPECT_EQ(big.ready().size(), 1u);
}

// AddPartitionsToTxn in the background: a partition new to the
// transaction is held until the coordinator added it.
TEST_F(RecordAccumulator, HeldPartitionSendsNothingUntilReleasedThenInSequenceOrder) {
  record_accumulator txn{{1, 5, 100, 1000, /*transactional=*/true}};
  txn.set_identity(producer_id{7}, producer_epoch{2});
  txn.hold(tp0);
  txn.append(tp0, 1, rec("a"), 0);
  txn.append(tp0, 2, rec("b"), 0);
  txn.append(tp1, 3, rec("c"), 0); // not held
  auto first = txn.ready();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].tp, tp1);
  EXPECT_TRUE(txn.held(tp0));
  txn.seal_all(0);
  EXPECT_TRUE(txn.ready().empty());
  txn.release(tp0);
  EXPECT_FALSE(txn.held(tp0));
  auto released = txn.ready();
  EXPECT_EQ(sequences(released), std::vector<int32_t>{0}); // the epoch's first, alone
  txn.on_reply(tp0, released[0].generation, error_code::none, {}, 0, 0);
  EXPECT_EQ(sequences(txn.ready()), std::vector<int32_t>{1});
}

TEST_F(RecordAccumulator, FailedAddFailsEveryHeldRecordMarkedAndReusesTheirSequences) {
  record_accumulator txn{{/*batch_size=*/45, 5, 100, 1000, /*transactional=*/true}};
  txn.set_identity(producer_id{7}, producer_epoch{2});
  txn.hold(tp0);
  txn.append(tp0, 1, rec("a"), 0);
  txn.append(tp0, 2, rec("b"), 0); // 42 bytes: still open
  txn.append(tp0, 3, rec("c"), 0); // sealed: sequences 0..2
  txn.append(tp0, 4, rec("d"), 0); // open
  EXPECT_EQ(txn.unresolved(), 4u);
  txn.fail_held(tp0, error_code::producer_fenced, "fenced");
  auto outcomes = txn.take_outcomes();
  ASSERT_EQ(outcomes.size(), 4u);
  std::vector<uint64_t> ids;
  for (auto& o : outcomes) {
    ids.push_back(o.id);
    EXPECT_EQ(o.error, error_code::producer_fenced);
    EXPECT_EQ(o.offset, -1);
    EXPECT_TRUE(o.add_failed);
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(txn.unresolved(), 0u);
  EXPECT_FALSE(txn.held(tp0));
  // Nothing of them was sent: the partition's sequence did not move.
  txn.append(tp0, 5, rec("e"), 0);
  txn.seal_all(0);
  EXPECT_EQ(sequences(txn.ready()), std::vector<int32_t>{0});
}

TEST_F(RecordAccumulator, DiscardReleasesHeldPartitionsAndFailsTheirRecordsAsAborted) {
  record_accumulator txn{{1, 5, 100, 1000, /*transactional=*/true}};
  txn.set_identity(producer_id{7}, producer_epoch{2});
  txn.hold(tp0);
  txn.append(tp0, 1, rec("a"), 0);
  txn.discard_unsent();
  auto outcomes = txn.take_outcomes();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].error, error_code::invalid_txn_state);
  EXPECT_FALSE(outcomes[0].add_failed);
  EXPECT_FALSE(txn.held(tp0));
  txn.append(tp0, 2, rec("b"), 0);
  EXPECT_EQ(txn.ready().size(), 1u);
}

} // namespace
} // namespace caftx

namespace caftx {
namespace {

// One record to each of many partitions, sent as a fast producer does
// (ready() after every append): ready() looks at the partitions whose
// state changed, so the whole costs a bounded number of visits per
// partition, not one visit of every partition per record (quadratic).
TEST(RecordAccumulatorCost, ReadyVisitsOnlyThePartitionsWhoseStateChanged) {
  record_accumulator acc{{/*batch_size=*/1, 5, 100, 1000, false}};
  acc.set_identity(producer_id{7}, producer_epoch{0});
  constexpr int partitions = 2000;
  std::vector<batch_to_send> sent;
  for (int p = 0; p < partitions; ++p) {
    acc.append({"t", p}, static_cast<uint64_t>(p + 1), rec("v"), 0);
    for (auto& b : acc.ready())
      sent.push_back(std::move(b));
  }
  ASSERT_EQ(sent.size(), static_cast<size_t>(partitions));
  for (auto& b : sent)
    acc.on_reply(b.tp, b.generation, error_code::none, {}, 0, 0);
  EXPECT_TRUE(acc.ready().empty());
  EXPECT_EQ(acc.take_outcomes().size(), static_cast<size_t>(partitions));
  EXPECT_LE(acc.partitions_visited(), 2u * partitions);
}

// As Kafka's RecordAccumulator: a record that does not fit the open batch
// goes to the next one, so a batch exceeds batch.size only when its one
// record does (a batch of a large record plus small ones before it could
// pass max.message.bytes at the partition).
TEST(RecordAccumulatorBatching, ARecordThatDoesNotFitTheOpenBatchStartsTheNext) {
  record_accumulator acc{{/*batch_size=*/100, 5, 100, 1000, false}};
  acc.set_identity(no_producer_id, no_producer_epoch);
  acc.append(tp0, 1, rec(std::string(10, 'a')), 0);
  acc.append(tp0, 2, rec(std::string(200, 'b')), 0); // larger than batch.size alone
  acc.append(tp0, 3, rec(std::string(10, 'c')), 0);
  acc.seal_all(0);
  auto sent = acc.ready();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].batch.record_count(), 1);
  EXPECT_EQ(sent[1].batch.records.at(0).value, std::string(200, 'b'));
  EXPECT_EQ(sent[1].batch.record_count(), 1);
  EXPECT_EQ(sent[2].batch.record_count(), 1);
}

} // namespace
} // namespace caftx
