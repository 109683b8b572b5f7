// Retention and DeleteRecords in the partition core (docs/producer-state.md
// §Retention): the log start moves over whole batches that are too old or
// beyond retention.bytes, never to or above the last stable offset or the
// high watermark; producer state outlives its deleted batches (KAFKA-7190).
#include <gtest/gtest.h>

#include "partition_harness.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

record_batch batch_at(int64_t pid, int32_t seq, int64_t ts, bool transactional = false) {
  record_batch b;
  b.pid = producer_id{pid};
  b.epoch = producer_epoch{0};
  b.base_sequence = seq;
  b.attributes = transactional ? attr_transactional : 0;
  b.records.push_back({"k", "v" + std::to_string(seq), {}, ts});
  return b;
}

class Retention : public ::testing::Test {
protected:
  testing::logged_partition p{topic_partition{"t", 0}};

  int64_t produce(record_batch b) {
    EXPECT_TRUE(p.validate_produce(b).ok());
    auto off = p.append(std::move(b), 0).base_offset;
    p.set_high_watermark(p.log_end_offset());
    return off;
  }

  // The log start retention would move to (the current one if none).
  int64_t planned(retention_policy policy, int64_t now) {
    auto m = p.plan_retention(p.reader(), policy, now);
    EXPECT_TRUE(m.ok());
    return m.ok() && *m ? (*m)->log_start_offset : p.log_start_offset();
  }

  void apply(retention_policy policy, int64_t now) {
    auto m = p.plan_retention(p.reader(), policy, now);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(m->has_value());
    p.apply_log_start(**m);
  }
};

TEST_F(Retention, ByTimeRemovesTheOldBatchesFromTheStartAndStopsAtTheFirstThatStays) {
  produce(batch_at(7, 0, 1000));
  produce(batch_at(7, 1, 2000));
  produce(batch_at(7, 2, 9000)); // young
  produce(batch_at(7, 3, 1500)); // old, but behind a young batch
  EXPECT_EQ(planned({5000, -1}, 10000), 2);
  EXPECT_EQ(planned({5000, -1}, 6500), 1);   // only the batch of 1000 is older than 1500
  EXPECT_EQ(planned({-1, -1}, 1000000), 0);  // unlimited
  EXPECT_EQ(planned({20000, -1}, 10000), 0); // nothing old enough
}

TEST_F(Retention, ByBytesKeepsAtLeastRetentionBytes) {
  for (int i = 0; i < 4; ++i)
    produce(batch_at(7, i, 1000));
  auto one = p.log_size_bytes() / 4;
  EXPECT_EQ(p.log_size_bytes(), 4 * one);
  EXPECT_EQ(planned({-1, 2 * one}, 1000), 2);
  EXPECT_EQ(planned({-1, 2 * one + 1}, 1000), 1);
  EXPECT_EQ(planned({-1, 4 * one}, 1000), 0);
  apply({-1, 2 * one}, 1000);
  EXPECT_EQ(p.log_start_offset(), 2);
  EXPECT_EQ(p.log_size_bytes(), 2 * one);
}

TEST_F(Retention, NeverRemovesAnUndecidedTransactionOrDataAfterIt) {
  produce(batch_at(7, 0, 1000));
  produce(batch_at(8, 0, 1000, true)); // offset 1: open transaction
  produce(batch_at(7, 1, 1000));
  EXPECT_EQ(p.last_stable_offset(), 1);
  EXPECT_EQ(planned({1, -1}, 100000), 1);
  EXPECT_EQ(planned({-1, 0}, 100000), 1);
  p.append_marker(producer_id{8}, producer_epoch{0}, {control_type::commit, coordinator_epoch{0}}, 1000);
  p.set_high_watermark(p.log_end_offset());
  EXPECT_EQ(planned({1, -1}, 100000), 4); // decided: all of it, the marker too
}

TEST_F(Retention, NeverMovesTheLogStartAboveTheHighWatermark) {
  produce(batch_at(7, 0, 1000));
  p.append(batch_at(7, 1, 1000), 0); // not yet durable
  EXPECT_EQ(p.high_watermark(), 1);
  EXPECT_EQ(planned({1, -1}, 100000), 1);
}

TEST_F(Retention, ProducerStateOutlivesItsDeletedBatchesAndAbortedEntriesGoWithThem) {
  produce(batch_at(7, 0, 1000));
  produce(batch_at(9, 0, 1000, true));
  p.append_marker(producer_id{9}, producer_epoch{0}, {control_type::abort, coordinator_epoch{0}}, 1000);
  p.set_high_watermark(p.log_end_offset());
  ASSERT_EQ(p.aborted_index().size(), 1u);
  auto m = p.plan_retention(p.reader(), {1, -1}, 100000);
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->log_start_offset, 3);
  EXPECT_EQ((*m)->dropped_aborted, std::vector<int64_t>{2});
  p.apply_log_start(**m);
  EXPECT_TRUE(p.aborted_index().empty());
  // The retry of producer 7's deleted batch is still a duplicate, and its
  // next batch must continue the sequence: nothing was forgotten.
  auto retry = p.validate_produce(batch_at(7, 0, 1000));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->base_offset, 0);
  EXPECT_EQ(p.validate_produce(batch_at(7, 2, 1000)).error().code(),
            error_code::out_of_order_sequence_number);
  EXPECT_TRUE(p.validate_produce(batch_at(7, 1, 1000)).ok());
}

TEST_F(Retention, FetchBelowTheLogStartIsOffsetOutOfRangeAndEarliestIsTheLogStart) {
  for (int i = 0; i < 3; ++i)
    produce(batch_at(7, i, 1000));
  apply({1, -1}, 100000);
  EXPECT_EQ(p.log_start_offset(), 3);
  auto below = p.fetch(2, 1 << 20, isolation_level::read_uncommitted);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.error().code(), error_code::offset_out_of_range);
  EXPECT_EQ(p.list_offset(-2, isolation_level::read_committed), 3);
  auto at = p.fetch(3, 1 << 20, isolation_level::read_uncommitted);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->log_start_offset, 3);
  EXPECT_TRUE(at->batches.empty());
}

TEST_F(Retention, DeleteRecordsMovesTheLogStartUpToTheHighWatermark) {
  for (int i = 0; i < 3; ++i)
    produce(batch_at(7, i, 1000));
  auto above = p.plan_delete_records(p.reader(), 4);
  ASSERT_FALSE(above.ok());
  EXPECT_EQ(above.error().code(), error_code::offset_out_of_range);
  EXPECT_EQ(p.plan_delete_records(p.reader(), -2).error().code(), error_code::offset_out_of_range);
  auto none = p.plan_delete_records(p.reader(), 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto two = p.plan_delete_records(p.reader(), 2);
  ASSERT_TRUE(two.ok() && two->has_value());
  p.apply_log_start(**two);
  EXPECT_EQ(p.log_start_offset(), 2);
  auto all = p.plan_delete_records(p.reader(), -1); // the high watermark
  ASSERT_TRUE(all.ok() && all->has_value());
  EXPECT_EQ((*all)->log_start_offset, 3);
}

} // namespace
} // namespace caftx
