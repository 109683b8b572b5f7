// partition_core: producer-state sequence validation (docs/producer-state.md
// §Append, §Sequences), markers (§Markers), LSO (§LSO), the aborted-transaction
// index (§Aborted-index), Fetch and ListOffsets (§Fetch, §ListOffsets),
// replay, and the worked example of §Example.

#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <tuple>
#include <vector>

#include "actors/partition/partition_core.hpp"
#include "partition_harness.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

constexpr int64_t now = 1000;

record_batch data_batch(int64_t pid, int16_t epoch, int32_t base_sequence, int count,
                        bool transactional) {
  record_batch b;
  b.pid = producer_id{pid};
  b.epoch = producer_epoch{epoch};
  b.base_sequence = base_sequence;
  b.attributes = transactional ? attr_transactional : 0;
  for (int i = 0; i < count; ++i)
    b.records.push_back(record{"k" + std::to_string(i), "v" + std::to_string(i), {}, now + i});
  return b;
}

record_batch txn_batch(int64_t pid, int16_t epoch, int32_t seq, int count) {
  return data_batch(pid, epoch, seq, count, true);
}

record_batch idem_batch(int64_t pid, int16_t epoch, int32_t seq, int count) {
  return data_batch(pid, epoch, seq, count, false);
}

end_txn_marker commit_marker(int32_t cepoch) {
  return {control_type::commit, coordinator_epoch{cepoch}};
}

end_txn_marker abort_marker(int32_t cepoch) {
  return {control_type::abort, coordinator_epoch{cepoch}};
}

class PartitionCore : public ::testing::Test {
protected:
  testing::logged_partition p{topic_partition{"orders", 0}};

  // Validates and appends a client batch that must be accepted as new;
  // returns its base offset.
  int64_t produce(record_batch b) {
    auto d = p.validate_produce(b);
    EXPECT_TRUE(d.ok()) << d.error().to_string();
    if (!d.ok())
      return -1;
    EXPECT_FALSE(d->duplicate);
    EXPECT_EQ(d->base_offset, p.log_end_offset());
    return p.append(std::move(b), now).base_offset;
  }

  // Produces and makes the batch durable (RF = 1: HW = LEO).
  int64_t produce_durable(record_batch b) {
    auto off = produce(std::move(b));
    p.set_high_watermark(p.log_end_offset());
    return off;
  }

  // Markers here carry the epoch of the transaction's data, as in Kafka's
  // transaction version 1 (and caftx's admin abort); the coordinator's
  // bumped-epoch markers (version 2) have tests of their own.
  int64_t marker(int64_t pid, int16_t epoch, end_txn_marker m) {
    auto st = p.validate_marker(producer_id{pid}, producer_epoch{epoch}, m, 1);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return p.append_marker(producer_id{pid}, producer_epoch{epoch}, m, now).base_offset;
  }

  int64_t marker_durable(int64_t pid, int16_t epoch, end_txn_marker m) {
    auto off = marker(pid, epoch, m);
    p.set_high_watermark(p.log_end_offset());
    return off;
  }

  error_code produce_error(const record_batch& b) {
    auto d = p.validate_produce(b);
    return d.ok() ? error_code::none : d.error().code();
  }

  const producer_state_entry& entry(int64_t pid) { return p.producers().at(producer_id{pid}); }

  // A fresh partition restored from a snapshot saying it once dropped
  // producer state by expiry: a producer it has no state for is then
  // accepted at any sequence (docs/producer-state.md §First-batches).
  void once_dropped_producer_state() {
    producer_snapshot s;
    s.producer_state_dropped = true;
    p.restore(s, {});
  }
};

using index_row = std::tuple<int64_t, int64_t, int64_t, int64_t>;

std::vector<index_row> index_rows(const partition_core& p) {
  std::vector<index_row> rows;
  for (auto& a : p.aborted_index())
    rows.emplace_back(a.pid.value, a.first_offset, a.last_offset, a.last_stable_offset);
  return rows;
}

std::vector<int64_t> base_offsets(const testing::decoded_fetch& r) {
  std::vector<int64_t> offs;
  for (auto& b : r.batches)
    offs.push_back(b.base_offset);
  return offs;
}

std::vector<std::pair<int64_t, int64_t>> aborted_list(const testing::decoded_fetch& r) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto& a : r.aborted)
    out.emplace_back(a.pid.value, a.first_offset);
  return out;
}

using rc = std::vector<std::pair<int64_t, int64_t>>;
using offsets = std::vector<int64_t>;

// -- sequence validation, docs/producer-state.md §Sequences -------------------

TEST_F(PartitionCore, Q1_UnknownProducersFirstBatchMustStartAtSequenceZero) {
  // A later batch of a new producer whose first batch was lost on the way
  // (docs/producer-state.md §First-batches): not written before it.
  auto refused = p.validate_produce(idem_batch(7, 3, 1, 3));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().to_string(),
            "OUT_OF_ORDER_SEQUENCE_NUMBER: producer 7 has no state on this partition: its first "
            "batch must start at sequence 0, got 1");
  EXPECT_EQ(produce_error(txn_batch(8, 0, 5, 1)), error_code::out_of_order_sequence_number);
  EXPECT_FALSE(p.producer_state_dropped());
  EXPECT_EQ(produce(idem_batch(7, 3, 0, 3)), 0);
  EXPECT_EQ(produce(idem_batch(7, 3, 3, 1)), 3);
  EXPECT_EQ(entry(7).batches.back().last_sequence, 3);
}

TEST_F(PartitionCore, Q1_AfterProducerStateWasDroppedAnUnknownProducerIsAcceptedAtAnySequence) {
  once_dropped_producer_state();
  auto d = p.validate_produce(idem_batch(7, 3, 42, 3));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_FALSE(d->duplicate);
  EXPECT_EQ(d->base_offset, 0);
  EXPECT_EQ(d->last_offset, 2);
  p.append(idem_batch(7, 3, 42, 3), now);
  auto& e = entry(7);
  EXPECT_EQ(e.epoch, producer_epoch{3});
  ASSERT_EQ(e.batches.size(), 1u);
  EXPECT_EQ(e.batches.back().first_sequence, 42);
  EXPECT_EQ(e.batches.back().last_sequence, 44);
  EXPECT_EQ(e.batches.back().base_offset, 0);
  EXPECT_EQ(e.batches.back().last_offset, 2);
  // ... and the new entry continues from this batch.
  EXPECT_EQ(produce_error(idem_batch(7, 3, 45, 1)), error_code::none);
  EXPECT_EQ(produce_error(idem_batch(7, 3, 0, 1)), error_code::out_of_order_sequence_number);
}

TEST_F(PartitionCore, Q2_NextInSequenceAccepted) {
  EXPECT_EQ(produce(idem_batch(7, 0, 0, 3)), 0);
  EXPECT_EQ(produce(idem_batch(7, 0, 3, 2)), 3);
  EXPECT_EQ(produce(idem_batch(7, 0, 5, 1)), 5);
  EXPECT_EQ(p.log_end_offset(), 6);
  EXPECT_EQ(entry(7).batches.back().last_sequence, 5);
}

TEST_F(PartitionCore, Q3_ExactDuplicateOfEachRetainedBatchReturnsOriginalOffsetAndAppendsNothing) {
  // Five batches of pid 7, interleaved with another producer so that the
  // original offsets differ from the sequence numbers.
  std::vector<std::pair<int64_t, int64_t>> originals;
  for (int i = 0; i < 5; ++i) {
    produce(idem_batch(8, 0, i, 1));
    auto base = produce(idem_batch(7, 0, 2 * i, 2));
    originals.emplace_back(base, base + 1);
  }
  ASSERT_EQ(p.log_end_offset(), 15);
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("retry of batch " + std::to_string(i));
    auto d = p.validate_produce(idem_batch(7, 0, 2 * i, 2));
    ASSERT_TRUE(d.ok()) << d.error().to_string();
    EXPECT_TRUE(d->duplicate);
    EXPECT_EQ(d->base_offset, originals[i].first);
    EXPECT_EQ(d->last_offset, originals[i].second);
    EXPECT_EQ(p.log_end_offset(), 15);
  }
  EXPECT_EQ(originals[0].first, 1);
  EXPECT_EQ(originals[4].first, 13);
}

TEST_F(PartitionCore, Q3_DuplicateOfOpenTransactionBatchIsDeduplicated) {
  produce(txn_batch(7, 0, 0, 3));
  produce(txn_batch(7, 0, 3, 2));
  auto d = p.validate_produce(txn_batch(7, 0, 0, 3));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->duplicate);
  EXPECT_EQ(d->base_offset, 0);
  EXPECT_EQ(d->last_offset, 2);
}

TEST_F(PartitionCore, Q4_RetryOfSixthOldestBatchIsOutOfOrderSequence) {
  for (int i = 0; i < 6; ++i)
    produce(idem_batch(7, 0, i, 1));
  ASSERT_EQ(entry(7).batches.size(), 5u);
  EXPECT_EQ(entry(7).batches.front().first_sequence, 1);
  EXPECT_EQ(produce_error(idem_batch(7, 0, 0, 1)), error_code::out_of_order_sequence_number);
  // The oldest still retained one is a duplicate.
  auto d = p.validate_produce(idem_batch(7, 0, 1, 1));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->duplicate);
  EXPECT_EQ(d->base_offset, 1);
}

TEST_F(PartitionCore, Q5_PartialOverlapIsOutOfOrderSequence) {
  produce(idem_batch(7, 0, 0, 5)); // seq 0-4
  produce(idem_batch(7, 0, 5, 4)); // seq 5-8, last = 8
  EXPECT_EQ(produce_error(idem_batch(7, 0, 7, 3)), error_code::out_of_order_sequence_number);
  // Same first sequence as a retained batch but a different last one.
  EXPECT_EQ(produce_error(idem_batch(7, 0, 5, 5)), error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce_error(idem_batch(7, 0, 0, 4)), error_code::out_of_order_sequence_number);
}

TEST_F(PartitionCore, Q6_GapIsOutOfOrderSequence) {
  produce(idem_batch(7, 0, 0, 3)); // last = 2
  auto d = p.validate_produce(idem_batch(7, 0, 4, 1));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), error_code::out_of_order_sequence_number);
  EXPECT_EQ(d.error().message(), "expected sequence 3, got 4");
}

TEST_F(PartitionCore, Q7_Q8_EntryWithOnlyAMarkerAcceptsOnlySequenceZero) {
  // A marker for a producer the partition never saw creates an entry with
  // the marker's epoch and no batches.
  marker(7, 2, abort_marker(0));
  ASSERT_EQ(entry(7).epoch, producer_epoch{2});
  ASSERT_TRUE(entry(7).batches.empty());
  EXPECT_EQ(produce_error(idem_batch(7, 2, 5, 1)), error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce_error(idem_batch(7, 2, 0, 1)), error_code::none);
}

TEST_F(PartitionCore, Q7_Q8_MarkerWithNewEpochClearsBatchesSoOnlySequenceZeroFollows) {
  produce(txn_batch(7, 0, 0, 3));
  marker(7, 1, abort_marker(0)); // fenced abort at epoch 1
  EXPECT_EQ(entry(7).epoch, producer_epoch{1});
  EXPECT_TRUE(entry(7).batches.empty());
  EXPECT_EQ(produce_error(txn_batch(7, 1, 3, 1)), error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce_error(txn_batch(7, 1, 0, 1)), error_code::none);
}

TEST_F(PartitionCore, MarkerWithSameEpochKeepsSequencesRunning) {
  produce(txn_batch(7, 0, 0, 3));
  marker(7, 0, commit_marker(0));
  EXPECT_EQ(entry(7).batches.back().last_sequence, 2);
  EXPECT_EQ(produce_error(txn_batch(7, 0, 3, 1)), error_code::none);
  EXPECT_EQ(produce_error(txn_batch(7, 0, 0, 1)), error_code::out_of_order_sequence_number);
}

TEST_F(PartitionCore, Q9_HigherEpochWithSequenceZeroAccepted) {
  produce(idem_batch(7, 0, 0, 3));
  EXPECT_EQ(produce(idem_batch(7, 1, 0, 2)), 3);
  EXPECT_EQ(entry(7).epoch, producer_epoch{1});
  ASSERT_EQ(entry(7).batches.size(), 1u); // a new epoch clears the retained batches
  EXPECT_EQ(entry(7).batches.back().first_sequence, 0);
  EXPECT_EQ(entry(7).batches.back().last_sequence, 1);
}

TEST_F(PartitionCore, Q10_HigherEpochWithNonZeroSequenceIsOutOfOrderSequence) {
  produce(idem_batch(7, 0, 0, 3));
  EXPECT_EQ(produce_error(idem_batch(7, 1, 3, 1)), error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce_error(idem_batch(7, 1, 1, 1)), error_code::out_of_order_sequence_number);
}

TEST_F(PartitionCore, Q11_LowerEpochIsInvalidProducerEpochBeforeSequenceChecks) {
  produce(idem_batch(7, 0, 0, 3));
  produce(idem_batch(7, 1, 0, 1));
  // In sequence for epoch 0, a gap, and a re-send of an epoch-0 batch: all
  // INVALID_PRODUCER_EPOCH.
  EXPECT_EQ(produce_error(idem_batch(7, 0, 3, 1)), error_code::invalid_producer_epoch);
  EXPECT_EQ(produce_error(idem_batch(7, 0, 99, 1)), error_code::invalid_producer_epoch);
  EXPECT_EQ(produce_error(idem_batch(7, 0, 0, 3)), error_code::invalid_producer_epoch);
}

TEST_F(PartitionCore, Q12_SequenceWrapsToZeroAfterIntMax) {
  once_dropped_producer_state(); // to start near the wrap
  produce(idem_batch(7, 0, INT32_MAX - 2, 3)); // last = 2147483647
  ASSERT_EQ(entry(7).batches.back().last_sequence, INT32_MAX);
  EXPECT_EQ(produce(idem_batch(7, 0, 0, 2)), 3);
  EXPECT_EQ(entry(7).batches.back().last_sequence, 1);
}

TEST_F(PartitionCore, Q13_SequenceOneAfterIntMaxIsOutOfOrderSequence) {
  once_dropped_producer_state(); // to start near the wrap
  produce(idem_batch(7, 0, INT32_MAX, 1));
  EXPECT_EQ(produce_error(idem_batch(7, 0, 1, 1)), error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce_error(idem_batch(7, 0, 0, 1)), error_code::none);
}

TEST_F(PartitionCore, Q14_BatchThatWrapsItselfEndsAtWrappedLastSequence) {
  once_dropped_producer_state(); // to start near the wrap
  // 20 records starting at 2147483637: 2147483637..2147483647 (11) then
  // 0..8 (9), so lastSeq = 8 (Kafka's DefaultRecordBatch.incrementSequence).
  produce(idem_batch(7, 0, INT32_MAX - 10, 20));
  EXPECT_EQ(entry(7).batches.back().last_sequence, 8);
  EXPECT_EQ(produce_error(idem_batch(7, 0, 9, 1)), error_code::none);
}

TEST_F(PartitionCore, NonTransactionalBatchWhileTransactionOpenIsInvalidTxnState) {
  produce(txn_batch(7, 0, 0, 2));
  EXPECT_EQ(produce_error(idem_batch(7, 0, 2, 1)), error_code::invalid_txn_state);
  // Once the transaction is completed the same batch is fine.
  marker(7, 0, commit_marker(0));
  EXPECT_EQ(produce_error(idem_batch(7, 0, 2, 1)), error_code::none);
}

TEST_F(PartitionCore, ControlBatchFromClientIsInvalidRecord) {
  auto b = make_control_batch(producer_id{7}, producer_epoch{0}, commit_marker(0), now);
  b.base_sequence = 0;
  EXPECT_EQ(produce_error(b), error_code::invalid_record);
  EXPECT_EQ(p.log_end_offset(), 0);
}

TEST_F(PartitionCore, MalformedBatchesAreInvalidRecord) {
  EXPECT_EQ(produce_error(idem_batch(7, 0, 0, 0)), error_code::invalid_record); // empty
  EXPECT_EQ(produce_error(idem_batch(7, 0, -1, 1)), error_code::invalid_record); // pid, no seq
  EXPECT_EQ(produce_error(data_batch(-1, -1, -1, 1, true)), error_code::invalid_record);
  EXPECT_EQ(produce_error(data_batch(-1, -1, -1, 1, false)), error_code::none); // plain producer
}

TEST_F(PartitionCore, TransactionalBatchOpensTransactionAtItsBaseOffset) {
  produce(idem_batch(8, 0, 0, 2));
  produce(txn_batch(7, 0, 0, 3));
  produce(txn_batch(7, 0, 3, 1));
  ASSERT_TRUE(entry(7).current_txn_first_offset.has_value());
  EXPECT_EQ(*entry(7).current_txn_first_offset, 2);
  EXPECT_EQ(p.first_unstable_offset(), std::optional<int64_t>{2});
  EXPECT_FALSE(entry(8).current_txn_first_offset.has_value());
}

// -- markers, docs/producer-state.md §Markers -----------------------------------

TEST_F(PartitionCore, MarkerWithLowerCoordinatorEpochIsTransactionCoordinatorFenced) {
  produce(txn_batch(7, 0, 0, 1));
  marker(7, 0, commit_marker(5));
  EXPECT_EQ(entry(7).cepoch, coordinator_epoch{5});
  auto st = p.validate_marker(producer_id{7}, producer_epoch{0}, commit_marker(4));
  EXPECT_EQ(st.code(), error_code::transaction_coordinator_fenced);
  EXPECT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{0}, commit_marker(5)).ok());
  EXPECT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{0}, abort_marker(6)).ok());
  st = p.validate_marker(producer_id{7}, producer_epoch{1}, commit_marker(4));
  EXPECT_EQ(st.code(), error_code::transaction_coordinator_fenced);
}

TEST_F(PartitionCore, MarkerWithLowerProducerEpochIsInvalidProducerEpoch) {
  produce(txn_batch(7, 3, 0, 1));
  auto st = p.validate_marker(producer_id{7}, producer_epoch{2}, abort_marker(0));
  EXPECT_EQ(st.code(), error_code::invalid_producer_epoch);
  // Version 1: equal and higher epochs are fine.
  EXPECT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{3}, abort_marker(0), 1).ok());
  EXPECT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{4}, abort_marker(0), 1).ok());
}

TEST_F(PartitionCore, CoordinatorMarkerWithEpochOfOpenTransactionIsInvalidProducerEpoch) {
  // Version 2 (the coordinator bumps the epoch at EndTxn): a marker with the
  // epoch of the open transaction's data is a delayed marker of the
  // previous transaction and must not end this one.
  produce(txn_batch(7, 3, 0, 1));
  auto st = p.validate_marker(producer_id{7}, producer_epoch{3}, commit_marker(0));
  EXPECT_EQ(st.code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(st.message(), "marker epoch 3 is the epoch of the open transaction, not above it");
  EXPECT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{4}, commit_marker(0)).ok());
}

TEST_F(PartitionCore, CoordinatorMarkerBumpsEpochSoLateWritesAreFencedAndNextStartsAtZero) {
  produce_durable(txn_batch(7, 3, 0, 2));                 // offsets 0-1, txn at epoch 3
  ASSERT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{4}, commit_marker(0)).ok());
  p.append_marker(producer_id{7}, producer_epoch{4}, commit_marker(0), now); // offset 2
  p.set_high_watermark(p.log_end_offset());
  EXPECT_EQ(entry(7).epoch, producer_epoch{4});
  EXPECT_FALSE(entry(7).current_txn_first_offset.has_value());
  // A write of the finished transaction arriving late: fenced by epoch.
  auto late = p.validate_produce(txn_batch(7, 3, 2, 1));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), error_code::invalid_producer_epoch);
  // The next transaction runs at epoch 4 from sequence 0.
  auto wrong = p.validate_produce(txn_batch(7, 4, 2, 1));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce(txn_batch(7, 4, 0, 1)), 3);
  // The same marker repeated once no transaction is open is accepted
  // (a coordinator re-sending after a restart) and completes nothing.
  ASSERT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{5}, commit_marker(0)).ok());
  p.append_marker(producer_id{7}, producer_epoch{5}, commit_marker(0), now);
  EXPECT_TRUE(p.validate_marker(producer_id{7}, producer_epoch{5}, commit_marker(0)).ok());
}

TEST_F(PartitionCore, MarkerChecksProducerEpochBeforeCoordinatorEpoch) {
  // docs/transactions.md §WriteTxnMarkers step 4, as Kafka's
  // appendEndTxnMarker: checkProducerEpoch, then checkCoordinatorEpoch.
  // Producer 7 at epoch 3, coordinator epoch 5 seen, a transaction open
  // again.
  produce(txn_batch(7, 3, 0, 1));
  marker(7, 3, commit_marker(5));
  produce(txn_batch(7, 3, 1, 1));
  // Lower producer epoch and lower coordinator epoch.
  EXPECT_EQ(p.validate_marker(producer_id{7}, producer_epoch{2}, abort_marker(4)).code(),
            error_code::invalid_producer_epoch);
  // The open transaction's epoch (version 2) and a lower coordinator epoch.
  EXPECT_EQ(p.validate_marker(producer_id{7}, producer_epoch{3}, abort_marker(4)).code(),
            error_code::invalid_producer_epoch);
  // Only the coordinator epoch is lower.
  EXPECT_EQ(p.validate_marker(producer_id{7}, producer_epoch{4}, abort_marker(4)).code(),
            error_code::transaction_coordinator_fenced);
}

TEST_F(PartitionCore, TransactionalBatchNeedsVerificationOnlyWithoutOpenTransactionAtItsEpoch) {
  EXPECT_FALSE(p.needs_verification(idem_batch(7, 0, 0, 1)));
  EXPECT_TRUE(p.needs_verification(txn_batch(7, 0, 0, 1)));
  produce(txn_batch(7, 0, 0, 1));
  EXPECT_FALSE(p.needs_verification(txn_batch(7, 0, 1, 1)));
  EXPECT_TRUE(p.needs_verification(txn_batch(7, 1, 0, 1)));
  marker(7, 0, commit_marker(0));
  EXPECT_TRUE(p.needs_verification(txn_batch(7, 0, 1, 1)));
}

TEST_F(PartitionCore, MarkerThatCompletesNothingChangesNeitherLsoNorIndex) {
  produce_durable(txn_batch(7, 0, 0, 3)); // open at 0
  produce_durable(idem_batch(8, 0, 0, 1)); // offset 3
  ASSERT_EQ(p.last_stable_offset(), 0);
  // ABORT and COMMIT markers for producers without an open transaction:
  // a known idempotent one and an unknown one. Each occupies an offset.
  EXPECT_EQ(marker_durable(8, 0, abort_marker(0)), 4);
  EXPECT_EQ(marker_durable(9, 0, commit_marker(0)), 5);
  EXPECT_EQ(p.log_end_offset(), 6);
  EXPECT_EQ(p.high_watermark(), 6);
  EXPECT_EQ(p.last_stable_offset(), 0);
  EXPECT_EQ(p.first_unstable_offset(), std::optional<int64_t>{0});
  EXPECT_TRUE(p.aborted_index().empty());
  // Complete the real transaction, then repeat its marker (a duplicate
  // after a coordinator failover): nothing changes the second time.
  EXPECT_EQ(marker_durable(7, 0, abort_marker(0)), 6);
  EXPECT_EQ(index_rows(p), (std::vector<index_row>{{7, 0, 6, 7}}));
  EXPECT_EQ(p.last_stable_offset(), 7);
  EXPECT_EQ(marker(7, 0, abort_marker(0)), 7);
  EXPECT_EQ(index_rows(p), (std::vector<index_row>{{7, 0, 6, 7}}));
  EXPECT_FALSE(p.first_unstable_offset().has_value());
  EXPECT_EQ(p.last_stable_offset(), 7); // HW not moved yet: LSO = HW
}

TEST_F(PartitionCore, AbortIndexEntryStoresFirstOffsetOfEarliestOtherOpenTransaction) {
  produce_durable(txn_batch(4000, 0, 0, 3)); // 0-2, open at 0
  produce_durable(txn_batch(5000, 2, 0, 2)); // 3-4, open at 3
  EXPECT_EQ(marker_durable(4000, 0, abort_marker(1)), 5);
  // P2 still open at 3: the stored LSO is 3, below the marker.
  EXPECT_EQ(index_rows(p), (std::vector<index_row>{{4000, 0, 5, 3}}));
  EXPECT_EQ(p.last_stable_offset(), 3);
}

TEST_F(PartitionCore, LsoWaitsForMarkerToBeBelowHighWatermark) {
  // docs/producer-state.md §LSO: the commit marker is appended but not yet durable.
  produce_durable(txn_batch(7, 0, 0, 2));
  EXPECT_EQ(p.last_stable_offset(), 0);
  EXPECT_EQ(marker(7, 0, commit_marker(0)), 2);
  EXPECT_EQ(p.high_watermark(), 2);
  EXPECT_EQ(p.first_unstable_offset(), std::optional<int64_t>{0});
  EXPECT_EQ(p.last_stable_offset(), 0);
  p.set_high_watermark(3);
  EXPECT_FALSE(p.first_unstable_offset().has_value());
  EXPECT_EQ(p.last_stable_offset(), 3);
}

TEST_F(PartitionCore, LsoEqualsHighWatermarkWithoutTransactions) {
  produce(idem_batch(7, 0, 0, 3));
  EXPECT_EQ(p.high_watermark(), 0);
  EXPECT_EQ(p.last_stable_offset(), 0);
  p.set_high_watermark(2);
  EXPECT_EQ(p.last_stable_offset(), 2);
  p.set_high_watermark(3);
  EXPECT_EQ(p.last_stable_offset(), 3);
}

// -- the worked example of docs/producer-state.md §Example ---------------------

TEST_F(PartitionCore, WorkedExample71InterleavedTransactionsOffsetsLsoAndIndex) {
  const int64_t p1 = 4000, p2 = 5000, idem = 6000;
  const int32_t c = 7; // coordinator epoch on every marker
  auto rc_fetch = [&](int64_t from) {
    auto r = p.fetch(from, INT32_MAX, isolation_level::read_committed);
    EXPECT_TRUE(r.ok());
    return r.value();
  };
  auto state = [&] {
    return std::make_tuple(p.log_end_offset(), p.high_watermark(), p.last_stable_offset());
  };
  using st = std::tuple<int64_t, int64_t, int64_t>; // LEO, HW, LSO

  // 1. P1 produces seq 0-2 (txn) at 0,1,2.
  EXPECT_EQ(produce_durable(txn_batch(p1, 0, 0, 3)), 0);
  EXPECT_EQ(state(), (st{3, 3, 0}));
  EXPECT_TRUE(rc_fetch(0).batches.empty());
  // 2. P2 produces seq 0-1 (txn) at 3,4.
  EXPECT_EQ(produce_durable(txn_batch(p2, 2, 0, 2)), 3);
  EXPECT_EQ(state(), (st{5, 5, 0}));
  // 3. I produces seq 0 (idempotent) at 5.
  EXPECT_EQ(produce_durable(idem_batch(idem, 0, 0, 1)), 5);
  EXPECT_EQ(state(), (st{6, 6, 0}));
  // 4. P1 produces seq 3 (txn) at 6.
  EXPECT_EQ(produce_durable(txn_batch(p1, 0, 3, 1)), 6);
  EXPECT_EQ(state(), (st{7, 7, 0}));
  // 5. COMMIT marker (5000, e2, c) at 7: P1's open transaction at 0 still
  //    blocks every read_committed reader.
  EXPECT_EQ(marker_durable(p2, 2, commit_marker(c)), 7);
  EXPECT_EQ(state(), (st{8, 8, 0}));
  EXPECT_TRUE(p.aborted_index().empty());
  auto f5 = rc_fetch(0);
  EXPECT_TRUE(f5.batches.empty());
  EXPECT_EQ(f5.high_watermark, 8);
  EXPECT_EQ(f5.last_stable_offset, 0);
  EXPECT_EQ(p.list_offset(-1, isolation_level::read_uncommitted), 8);
  EXPECT_EQ(p.list_offset(-1, isolation_level::read_committed), 0);
  // 6. ABORT marker (4000, e0, c) at 8; index += {4000, 0, 8, lso 9}.
  EXPECT_EQ(marker_durable(p1, 0, abort_marker(c)), 8);
  EXPECT_EQ(state(), (st{9, 9, 9}));
  EXPECT_EQ(index_rows(p), (std::vector<index_row>{{p1, 0, 8, 9}}));
  auto f6 = rc_fetch(0);
  EXPECT_EQ(f6.high_watermark, 9);
  EXPECT_EQ(f6.last_stable_offset, 9);
  EXPECT_EQ(f6.log_start_offset, 0);
  EXPECT_EQ(base_offsets(f6), (offsets{0, 3, 5, 6, 7, 8}));
  EXPECT_EQ(aborted_list(f6), (rc{{p1, 0}}));
  // 7. P1 next transaction, same epoch, seq continues 4-5 at 9,10.
  EXPECT_EQ(produce_durable(txn_batch(p1, 0, 4, 2)), 9);
  EXPECT_EQ(state(), (st{11, 11, 9}));
  // 8. P2 next transaction (epoch 2, seq 2) at 11.
  EXPECT_EQ(produce_durable(txn_batch(p2, 2, 2, 1)), 11);
  EXPECT_EQ(state(), (st{12, 12, 9}));
  // 9. P1 commits: COMMIT marker at 12; RC reads 9, 10 and stops at LSO 11.
  EXPECT_EQ(marker_durable(p1, 0, commit_marker(c)), 12);
  EXPECT_EQ(state(), (st{13, 13, 11}));
  auto f9 = rc_fetch(9);
  EXPECT_EQ(base_offsets(f9), (offsets{9}));
  EXPECT_EQ(f9.batches.front().last_offset(), 10);
  EXPECT_TRUE(f9.aborted.empty());
  EXPECT_EQ(p.list_offset(-1, isolation_level::read_committed), 11);
  EXPECT_EQ(p.list_offset(-1, isolation_level::read_uncommitted), 13);
  // 10. The coordinator fences P2 to epoch 3: ABORT marker (5000, e3) at 13;
  //     index += {5000, 11, 13, lso 14}.
  ASSERT_TRUE(p.validate_marker(producer_id{p2}, producer_epoch{3}, abort_marker(c)).ok());
  EXPECT_EQ(marker_durable(p2, 3, abort_marker(c)), 13);
  EXPECT_EQ(state(), (st{14, 14, 14}));
  EXPECT_EQ(index_rows(p), (std::vector<index_row>{{p1, 0, 8, 9}, {p2, 11, 13, 14}}));
  auto f10 = rc_fetch(9);
  EXPECT_EQ(base_offsets(f10), (offsets{9, 11, 12, 13}));
  EXPECT_EQ(aborted_list(f10), (rc{{p2, 11}}));
  // 11. Zombie P2 (epoch 2) produces seq 3.
  EXPECT_EQ(produce_error(txn_batch(p2, 2, 3, 1)), error_code::invalid_producer_epoch);
  EXPECT_EQ(state(), (st{14, 14, 14}));
  // 12. New P2 instance at epoch 4, seq 0, at 14.
  EXPECT_EQ(produce_durable(txn_batch(p2, 4, 0, 1)), 14);
  EXPECT_EQ(state(), (st{15, 15, 14}));
  // Producer state after step 12.
  EXPECT_EQ(entry(p1).epoch, producer_epoch{0});
  EXPECT_EQ(entry(p1).batches.back().last_sequence, 5);
  EXPECT_EQ(entry(p1).cepoch, coordinator_epoch{c});
  EXPECT_FALSE(entry(p1).current_txn_first_offset.has_value());
  EXPECT_EQ(entry(p2).epoch, producer_epoch{4});
  EXPECT_EQ(entry(p2).batches.back().last_sequence, 0);
  EXPECT_EQ(entry(p2).current_txn_first_offset, std::optional<int64_t>{14});
  EXPECT_EQ(entry(idem).epoch, producer_epoch{0});
  EXPECT_EQ(entry(idem).batches.back().last_sequence, 0);
  EXPECT_EQ(entry(idem).cepoch, coordinator_epoch{-1});
}

// -- replay, fetch, list offsets -----------------------------------------------

// A replicated partition restarts at its high-watermark checkpoint, which
// may lie below its log end: a transaction whose commit marker is above it
// holds the LSO again (it is not committed until a follower has the
// marker), and nothing above the checkpoint is visible to any reader.
TEST_F(PartitionCore, ReplicatedRestartBelowTheLogEndHoldsTheLsoAtAnUncommittedMarker) {
  produce_durable(idem_batch(6000, 0, 0, 2));                   // 0-1
  produce(txn_batch(5000, 0, 0, 2));                            // 2-3
  marker(5000, 0, commit_marker(3));                            // 4
  p.set_high_watermark(4);
  ASSERT_EQ(p.last_stable_offset(), 2);
  p.set_high_watermark(5); // to fetch the whole log
  auto all = p.fetch(0, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(all.ok());
  auto replayed = [&](int64_t hw) {
    auto q = std::make_unique<testing::logged_partition>(topic_partition{"orders", 0});
    for (auto& b : all->batches)
      EXPECT_TRUE(q->replay(b).ok());
    q->load_high_watermark(hw);
    return q;
  };
  auto at_checkpoint = replayed(4);
  EXPECT_EQ(at_checkpoint->high_watermark(), 4);
  EXPECT_EQ(at_checkpoint->last_stable_offset(), 2);
  // Once the marker is committed, the transaction is visible.
  at_checkpoint->set_high_watermark(5);
  EXPECT_EQ(at_checkpoint->last_stable_offset(), 5);
  // Without a checkpoint: the log start; past the log end: the log end.
  EXPECT_EQ(replayed(0)->last_stable_offset(), 0);
  EXPECT_EQ(replayed(99)->high_watermark(), 5);
  EXPECT_EQ(replayed(99)->last_stable_offset(), 5);
}

TEST_F(PartitionCore, ReplayOfLogReproducesProducerStateAndDedupStillWorks) {
  produce(txn_batch(4000, 0, 0, 3));
  produce(txn_batch(5000, 2, 0, 2));
  produce(idem_batch(6000, 0, 0, 1));
  for (int i = 0; i < 6; ++i)
    produce(idem_batch(6000, 0, 1 + i, 1)); // more than 5 retained batches
  marker(5000, 2, commit_marker(3));
  marker(4000, 0, abort_marker(3));
  produce(txn_batch(4000, 0, 3, 2));
  p.set_high_watermark(p.log_end_offset());

  auto all = p.fetch(0, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(all.ok());
  testing::logged_partition q{topic_partition{"orders", 0}};
  for (auto& b : all->batches)
    ASSERT_TRUE(q.replay(b).ok());
  q.load_high_watermark(q.log_end_offset());

  EXPECT_EQ(q.log_end_offset(), p.log_end_offset());
  EXPECT_EQ(q.high_watermark(), p.high_watermark());
  EXPECT_EQ(q.last_stable_offset(), p.last_stable_offset());
  EXPECT_EQ(q.first_unstable_offset(), p.first_unstable_offset());
  EXPECT_EQ(index_rows(q), index_rows(p));
  ASSERT_EQ(q.producers().size(), p.producers().size());
  for (auto& [pid, e] : p.producers()) {
    SCOPED_TRACE("producer " + std::to_string(pid.value));
    auto& r = q.producers().at(pid);
    EXPECT_EQ(r.epoch, e.epoch);
    EXPECT_EQ(r.cepoch, e.cepoch);
    EXPECT_EQ(r.current_txn_first_offset, e.current_txn_first_offset);
    EXPECT_EQ(r.last_timestamp_ms, e.last_timestamp_ms);
    ASSERT_EQ(r.batches.size(), e.batches.size());
    for (size_t i = 0; i < e.batches.size(); ++i) {
      EXPECT_EQ(r.batches[i].first_sequence, e.batches[i].first_sequence);
      EXPECT_EQ(r.batches[i].last_sequence, e.batches[i].last_sequence);
      EXPECT_EQ(r.batches[i].base_offset, e.batches[i].base_offset);
      EXPECT_EQ(r.batches[i].last_offset, e.batches[i].last_offset);
    }
  }
  EXPECT_EQ(index_rows(q), (std::vector<index_row>{{4000, 0, 13, 14}}));
  EXPECT_EQ(q.first_unstable_offset(), std::optional<int64_t>{14});

  // Dedup after replay: retries return the original offsets.
  auto d = q.validate_produce(txn_batch(4000, 0, 3, 2));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->duplicate);
  EXPECT_EQ(d->base_offset, 14);
  auto d2 = q.validate_produce(idem_batch(6000, 0, 2, 1));
  ASSERT_TRUE(d2.ok());
  EXPECT_TRUE(d2->duplicate);
  EXPECT_EQ(d2->base_offset, 7);
  EXPECT_EQ(q.validate_produce(idem_batch(6000, 0, 1, 1)).error().code(),
            error_code::out_of_order_sequence_number); // 6th oldest
  EXPECT_EQ(q.validate_produce(txn_batch(5000, 1, 0, 1)).error().code(),
            error_code::invalid_producer_epoch);
  EXPECT_EQ(q.validate_produce(idem_batch(4000, 0, 5, 1)).error().code(),
            error_code::invalid_txn_state);
}

// A follower appends the leader's batches at the leader's offsets without
// producer checks (a producer whose first batches the leader's log start
// already removed, seq 7, is taken as is: KAFKA-6003) and keeps the same
// producer state, aborted index and LSO; its HW moves only when it is
// told. Promoted, it deduplicates and fences as the old leader did.
TEST_F(PartitionCore, FollowerKeepsTheLeadersExactlyOnceStateFromReplicatedBatches) {
  produce(txn_batch(4000, 0, 0, 3));
  produce(idem_batch(6000, 0, 0, 1));
  for (int i = 0; i < 5; ++i)
    produce(idem_batch(6000, 0, 1 + i, 1));
  marker(4000, 0, abort_marker(3));
  produce(txn_batch(5000, 2, 0, 2));
  p.set_high_watermark(p.log_end_offset());
  auto all = p.fetch(0, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(all.ok());

  testing::logged_partition f{topic_partition{"orders", 0}};
  auto late = idem_batch(7000, 0, 7, 1);
  late.base_offset = 0;
  for (auto& b : all->batches) {
    auto r = f.append_replica(b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->base_offset, b.base_offset);
    EXPECT_EQ(r->aborted.has_value(), b.is_control() && b.base_offset == 9);
  }
  EXPECT_EQ(f.log_end_offset(), 12);
  EXPECT_EQ(f.high_watermark(), 0); // the leader's HW comes with its fetch answers
  EXPECT_EQ(f.last_stable_offset(), 0);
  f.set_high_watermark(12);
  EXPECT_EQ(index_rows(f), index_rows(p));
  EXPECT_EQ(f.last_stable_offset(), p.last_stable_offset());
  EXPECT_EQ(f.first_unstable_offset(), std::optional<int64_t>{10});
  late.base_offset = 12;
  ASSERT_TRUE(f.append_replica(late).ok()); // no sequence check on a follower
  EXPECT_EQ(f.producers().at(producer_id{7000}).batches.back().last_sequence, 7);

  // A batch the follower already has is refused, nothing changes.
  auto again = f.append_replica(all->batches.front());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(f.log_end_offset(), 13);

  // Promoted: each of the last five batches of producer 6000 is a
  // duplicate with its original offset, the one before is not retained.
  for (int seq = 1; seq <= 5; ++seq) {
    auto d = f.validate_produce(idem_batch(6000, 0, seq, 1));
    ASSERT_TRUE(d.ok()) << seq;
    EXPECT_TRUE(d->duplicate);
    EXPECT_EQ(d->base_offset, 3 + seq);
  }
  EXPECT_EQ(f.validate_produce(idem_batch(6000, 0, 0, 1)).error().code(),
            error_code::out_of_order_sequence_number);
  EXPECT_EQ(f.validate_produce(txn_batch(5000, 1, 2, 1)).error().code(),
            error_code::invalid_producer_epoch);
  EXPECT_FALSE(f.validate_produce(txn_batch(5000, 2, 2, 1)).value().duplicate);
}

TEST_F(PartitionCore, ListOffsetLatestIsLsoUnderReadCommittedAndHighWatermarkOtherwise) {
  produce_durable(idem_batch(8, 0, 0, 2)); // 0-1
  produce_durable(txn_batch(7, 0, 0, 3));  // 2-4, open
  produce(idem_batch(8, 0, 2, 1));         // 5, not durable yet
  EXPECT_EQ(p.log_end_offset(), 6);
  EXPECT_EQ(p.list_offset(-1, isolation_level::read_committed), 2);
  EXPECT_EQ(p.list_offset(-1, isolation_level::read_uncommitted), 5);
  EXPECT_EQ(p.list_offset(-2, isolation_level::read_committed), 0);
  EXPECT_EQ(p.list_offset(-2, isolation_level::read_uncommitted), 0);
  // Timestamps: every record of these batches has timestamp now + index.
  EXPECT_EQ(p.list_offset(now + 1, isolation_level::read_uncommitted), 1);
  // The first record with timestamp >= now + 2 is offset 4 (batch 2-4):
  // below the HW but at or above the LSO.
  EXPECT_EQ(p.list_offset(now + 2, isolation_level::read_uncommitted), 4);
  EXPECT_EQ(p.list_offset(now + 2, isolation_level::read_committed), -1);
  EXPECT_EQ(p.list_offset(now + 100, isolation_level::read_uncommitted), -1);
}

TEST_F(PartitionCore, FetchOutsideLogIsOffsetOutOfRange) {
  produce_durable(idem_batch(7, 0, 0, 3));
  auto above = p.fetch(4, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_FALSE(above.ok());
  EXPECT_EQ(above.error().code(), error_code::offset_out_of_range);
  auto below = p.fetch(-1, INT32_MAX, isolation_level::read_committed);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.error().code(), error_code::offset_out_of_range);
  // At the log end: no error, no records (a long poll would wait).
  auto at_end = p.fetch(3, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(at_end.ok());
  EXPECT_TRUE(at_end->batches.empty());
  EXPECT_EQ(at_end->high_watermark, 3);
}

TEST_F(PartitionCore, FetchStopsAtHighWatermarkForReadUncommitted) {
  produce_durable(idem_batch(7, 0, 0, 2)); // 0-1
  produce(idem_batch(7, 0, 2, 2));         // 2-3, not durable
  auto r = p.fetch(0, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(base_offsets(*r), (offsets{0}));
  EXPECT_TRUE(r->aborted.empty());
  // A fetch from inside a batch returns the whole batch.
  auto mid = p.fetch(1, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(base_offsets(*mid), (offsets{0}));
}

TEST_F(PartitionCore, FetchReturnsAtLeastOneBatchAndRespectsMaxBytes) {
  for (int i = 0; i < 4; ++i)
    produce_durable(idem_batch(7, 0, i, 1));
  auto one = p.fetch(0, 1, isolation_level::read_uncommitted);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(base_offsets(*one), (offsets{0}));
  auto all = p.fetch(0, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(base_offsets(*all), (offsets{0, 1, 2, 3}));
}

TEST_F(PartitionCore, ReadUncommittedFetchCarriesNoAbortedTransactions) {
  produce_durable(txn_batch(7, 0, 0, 2));
  marker_durable(7, 0, abort_marker(0));
  auto ru = p.fetch(0, INT32_MAX, isolation_level::read_uncommitted);
  ASSERT_TRUE(ru.ok());
  EXPECT_EQ(base_offsets(*ru), (offsets{0, 2}));
  EXPECT_TRUE(ru->aborted.empty());
  auto rcf = p.fetch(0, INT32_MAX, isolation_level::read_committed);
  ASSERT_TRUE(rcf.ok());
  EXPECT_EQ(aborted_list(*rcf), (rc{{7, 0}}));
  // A fetch starting after the abort marker gets no aborted entry.
  produce_durable(idem_batch(8, 0, 0, 1));
  auto later = p.fetch(3, INT32_MAX, isolation_level::read_committed);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->aborted.empty());
}

// The index lookup skips entries ending before the fetch offset and stops at
// the first entry whose recorded LSO reaches the fetch's end; it must return
// exactly what a scan of the whole index returns, with interleaved
// transactions of several producers, aborted and committed.
TEST_F(PartitionCore, AbortedListOfEveryFetchEqualsAScanOfTheWholeIndex) {
  std::mt19937 rng{42};
  struct open_txn {
    int16_t epoch = 0;
    int32_t seq = 0;
    bool open = false;
  };
  std::vector<open_txn> producers(6);
  for (int step = 0; step < 600; ++step) {
    auto k = rng() % producers.size();
    auto& t = producers[k];
    auto pid = static_cast<int64_t>(k + 1);
    if (t.open && rng() % 3 == 0) {
      marker_durable(pid, t.epoch, rng() % 2 == 0 ? abort_marker(0) : commit_marker(0));
      t.open = false; // same epoch (version 1 marker): sequences run on
      continue;
    }
    auto n = static_cast<int>(1 + rng() % 3);
    produce_durable(txn_batch(pid, t.epoch, t.seq, n));
    t.seq += n;
    t.open = true;
  }
  ASSERT_GT(p.aborted_index().size(), 20u);
  for (int64_t from = 0; from < p.log_end_offset(); from += 7)
    for (int32_t max_bytes : {1, 400, 4000, INT32_MAX}) {
      auto r = p.fetch(from, max_bytes, isolation_level::read_committed);
      ASSERT_TRUE(r.ok());
      if (r->batches.empty())
        continue;
      int64_t end = r->batches.back().last_offset() + 1;
      rc expected;
      for (auto& a : p.aborted_index())
        if (a.last_offset >= from && a.first_offset < end)
          expected.emplace_back(a.pid.value, a.first_offset);
      EXPECT_EQ(aborted_list(*r), expected) << "fetch from " << from << ", " << max_bytes << " bytes";
    }
}

} // namespace
} // namespace caftx

namespace caftx {
namespace {

// docs/producer-state.md §Expiration: an idle producer expires after
// producer.id.expiration.ms counted from its last timestamp; a producer
// with an open transaction never does.
TEST_F(PartitionCore, ProducerExpiresAtExactlyExpirationMsUnlessItHasAnOpenTransaction) {
  produce(idem_batch(7, 0, 0, 2)); // last timestamp now + 1
  produce(txn_batch(8, 0, 0, 1));  // last timestamp now
  const int64_t expiration = 86400000;
  EXPECT_EQ(p.remove_expired_producers(now + 1 + expiration - 1, expiration), 0u);
  EXPECT_EQ(p.producers().size(), 2u);
  EXPECT_FALSE(p.producer_state_dropped());
  EXPECT_EQ(produce_error(idem_batch(9, 0, 40, 1)), error_code::out_of_order_sequence_number);
  EXPECT_EQ(p.remove_expired_producers(now + 1 + expiration, expiration), 1u);
  EXPECT_EQ(p.producers().count(producer_id{7}), 0u);
  EXPECT_EQ(p.producers().count(producer_id{8}), 1u);
  // Unknown again, and the partition knows it dropped state: any sequence
  // is accepted (Q1, §First-batches), for any producer it has no state for.
  EXPECT_TRUE(p.producer_state_dropped());
  EXPECT_EQ(produce_error(idem_batch(7, 0, 40, 1)), error_code::none);
  EXPECT_EQ(produce_error(idem_batch(9, 0, 40, 1)), error_code::none);
  // Snapshots keep it.
  partition_core restored{p.tp()};
  restored.restore(p.snapshot(), {});
  EXPECT_TRUE(restored.producer_state_dropped());
  EXPECT_TRUE(restored.validate_produce(info_of(idem_batch(9, 0, 40, 1))).ok());
}

// -- DescribeProducers, docs/producer-state.md §DescribeProducers ----------------

active_producer row(int64_t pid, int16_t epoch, int32_t last_sequence, int64_t last_timestamp_ms,
                    int32_t cepoch, int64_t txn_start) {
  return {producer_id{pid}, producer_epoch{epoch}, last_sequence, last_timestamp_ms, cepoch,
          txn_start};
}

TEST_F(PartitionCore, DescribeProducersReportsEveryProducerByIdWithItsOpenTransactionStart) {
  produce_durable(idem_batch(9, 1, 0, 2));  // offsets 0-1, timestamps 1000-1001
  produce_durable(txn_batch(7, 0, 0, 3));   // 2-4, open at 2
  produce_durable(txn_batch(7, 0, 3, 1));   // 5
  EXPECT_EQ(p.active_producers(), (std::vector<active_producer>{row(7, 0, 3, 1002, -1, 2),
                                                                row(9, 1, 1, 1001, -1, -1)}));
}

TEST_F(PartitionCore, DescribeProducersAfterAMarkerReportsItsCoordinatorEpochAndNoOpenTransaction) {
  produce_durable(txn_batch(7, 0, 0, 2));
  marker_durable(7, 0, commit_marker(4));
  EXPECT_EQ(p.active_producers(), (std::vector<active_producer>{row(7, 0, 1, now + 1, 4, -1)}));
  produce_durable(txn_batch(7, 0, 2, 1)); // the next transaction opens at 3
  EXPECT_EQ(p.active_producers(), (std::vector<active_producer>{row(7, 0, 2, now + 1, 4, 3)}));
}

TEST_F(PartitionCore, DescribeProducersOfAProducerWithOnlyAMarkerReportsLastSequenceMinusOne) {
  produce_durable(txn_batch(7, 0, 0, 2));
  // A marker with a newer epoch (the coordinator fenced the producer)
  // clears the retained batches.
  marker_durable(7, 1, abort_marker(2));
  EXPECT_EQ(p.active_producers(), (std::vector<active_producer>{row(7, 1, -1, now + 1, 2, -1)}));
  // A marker for a producer the partition never saw creates its entry.
  marker_durable(11, 0, abort_marker(0));
  EXPECT_EQ(p.active_producers().back(), row(11, 0, -1, now, 0, -1));
}

TEST_F(PartitionCore, DescribeProducersOfAnEmptyPartitionIsEmpty) {
  EXPECT_TRUE(p.active_producers().empty());
  produce_durable(data_batch(-1, -1, -1, 2, false)); // no producer id: no state
  EXPECT_TRUE(p.active_producers().empty());
}

TEST(BatchWindow, KeepsTheLastFiveBatchesOldestFirstAcrossWrapAround) {
  batch_window w;
  for (int i = 0; i < 7; ++i)
    w.push_back({i * 10, i * 10 + 9, i * 100, i * 100 + 9});
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w.front().first_sequence, 20);
  EXPECT_EQ(w.back().first_sequence, 60);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(w[k].first_sequence, static_cast<int32_t>(20 + 10 * k));
    EXPECT_EQ(w[k].last_sequence, static_cast<int32_t>(29 + 10 * k));
    EXPECT_EQ(w[k].base_offset, static_cast<int64_t>(200 + 100 * k));
    EXPECT_EQ(w[k].last_offset, static_cast<int64_t>(209 + 100 * k));
  }
  // Ten records from 2147483645: three up to INT32_MAX, then 0..6.
  w.push_back({2147483645, 6, 1000, 1009});
  EXPECT_EQ(w.back().last_sequence, 6);
  w.clear();
  EXPECT_TRUE(w.empty());
}

} // namespace
} // namespace caftx
