// filter_fetched: the consumer side of read_committed (docs/producer-state.md
// §read_committed, Kafka's CompletedFetch), traced on the log of §Example there.

#include <gtest/gtest.h>

#include <vector>

#include "actors/client/read_committed_filter.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

const topic_partition orders0{"orders", 0};

record_batch data(int64_t base_offset, int64_t pid, int count, bool transactional) {
  record_batch b;
  b.base_offset = base_offset;
  b.pid = producer_id{pid};
  b.epoch = producer_epoch{0};
  b.base_sequence = 0;
  b.attributes = transactional ? attr_transactional : 0;
  for (int i = 0; i < count; ++i) {
    auto off = std::to_string(base_offset + i);
    b.records.push_back(record{"k" + off, "v" + off, {}, 100 + base_offset + i});
  }
  return b;
}

record_batch control(int64_t offset, int64_t pid, control_type type) {
  auto b = make_control_batch(producer_id{pid}, producer_epoch{0}, {type, coordinator_epoch{7}}, 100);
  b.base_offset = offset;
  return b;
}

// The log of docs/producer-state.md §Example after step 6.
std::vector<record_batch> log_after_step6() {
  return {
    data(0, 4000, 3, true),                  // P1 txn#1 (aborted)
    data(3, 5000, 2, true),                  // P2 (committed)
    data(5, 6000, 1, false),                 // idempotent
    data(6, 4000, 1, true),                  // P1 txn#1 (aborted)
    control(7, 5000, control_type::commit),  // COMMIT(5000)
    control(8, 4000, control_type::abort),   // ABORT(4000)
  };
}

// Steps 7-10 of docs/producer-state.md §Example: the batches from offset 9 on.
std::vector<record_batch> log_steps7to10() {
  return {
    data(9, 4000, 2, true),                  // P1 txn#2 (committed)
    data(11, 5000, 1, true),                 // P2 (aborted by timeout)
    control(12, 4000, control_type::commit), // COMMIT(4000)
    control(13, 5000, control_type::abort),  // ABORT(5000, e3)
  };
}

std::vector<int64_t> offsets_of(const filtered_fetch& f) {
  std::vector<int64_t> out;
  for (auto& r : f.records)
    out.push_back(r.offset);
  return out;
}

using offsets = std::vector<int64_t>;

TEST(ReadCommittedFilter, Step6FetchDeliversThreeFourFiveAndEndsAtNine) {
  auto f = filter_fetched(orders0, 0, log_after_step6(), {{producer_id{4000}, 0}},
                          isolation_level::read_committed, 500);
  EXPECT_EQ(offsets_of(f), (offsets{3, 4, 5}));
  EXPECT_EQ(f.next_offset, 9);
}

TEST(ReadCommittedFilter, ReadUncommittedDeliversAbortedDataButNoControlRecords) {
  auto f = filter_fetched(orders0, 0, log_after_step6(), {{producer_id{4000}, 0}},
                          isolation_level::read_uncommitted, 500);
  EXPECT_EQ(offsets_of(f), (offsets{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.next_offset, 9);
}

TEST(ReadCommittedFilter, AbortMarkerEndsTheAbortedRangeOfItsProducer) {
  // Fetch from 9 after step 10: P1's second transaction committed, P2's
  // batch at 11 aborted.
  auto f = filter_fetched(orders0, 9, log_steps7to10(), {{producer_id{5000}, 11}},
                          isolation_level::read_committed, 500);
  EXPECT_EQ(offsets_of(f), (offsets{9, 10}));
  EXPECT_EQ(f.next_offset, 14);
  // The whole log in one fetch: P1's ABORT at 8 ends its aborted range, so
  // its later transaction at 9-10 is delivered.
  auto all = log_after_step6();
  for (auto& b : log_steps7to10())
    all.push_back(b);
  auto g = filter_fetched(orders0, 0, all, {{producer_id{4000}, 0}, {producer_id{5000}, 11}},
                          isolation_level::read_committed, 500);
  EXPECT_EQ(offsets_of(g), (offsets{3, 4, 5, 9, 10}));
  EXPECT_EQ(g.next_offset, 14);
}

TEST(ReadCommittedFilter, ControlRecordsAreNeverDeliveredAtEitherLevel) {
  std::vector<record_batch> markers{control(0, 1, control_type::commit),
                                    control(1, 2, control_type::abort)};
  for (auto iso : {isolation_level::read_committed, isolation_level::read_uncommitted}) {
    auto f = filter_fetched(orders0, 0, markers, {}, iso, 500);
    EXPECT_TRUE(f.records.empty());
    EXPECT_EQ(f.next_offset, 2);
  }
}

TEST(ReadCommittedFilter, IdempotentBatchOfAbortedProducerIsStillDelivered) {
  // pid 4000 is in the aborted set from offset 0; its non-transactional
  // batch at 2 is not skipped, its transactional ones are.
  std::vector<record_batch> batches{data(0, 4000, 2, true), data(2, 4000, 1, false),
                                    data(3, 4000, 1, true), control(4, 4000, control_type::abort)};
  auto f = filter_fetched(orders0, 0, batches, {{producer_id{4000}, 0}},
                          isolation_level::read_committed, 500);
  EXPECT_EQ(offsets_of(f), (offsets{2}));
  EXPECT_EQ(f.next_offset, 5);
}

TEST(ReadCommittedFilter, AbortedEntryAppliesOnlyFromItsFirstOffset) {
  // pid 4000 committed a transaction at 0-1, then aborted one at 3.
  std::vector<record_batch> batches{data(0, 4000, 2, true), control(2, 4000, control_type::commit),
                                    data(3, 4000, 2, true), control(5, 4000, control_type::abort)};
  auto f = filter_fetched(orders0, 0, batches, {{producer_id{4000}, 3}},
                          isolation_level::read_committed, 500);
  EXPECT_EQ(offsets_of(f), (offsets{0, 1}));
  EXPECT_EQ(f.next_offset, 6);
}

TEST(ReadCommittedFilter, MaxRecordsCutsAndPositionStopsAfterLastReturnedRecord) {
  auto f = filter_fetched(orders0, 0, log_after_step6(), {{producer_id{4000}, 0}},
                          isolation_level::read_committed, 2);
  EXPECT_EQ(offsets_of(f), (offsets{3, 4}));
  EXPECT_EQ(f.next_offset, 5);
  auto ru = filter_fetched(orders0, 0, log_after_step6(), {}, isolation_level::read_uncommitted, 4);
  EXPECT_EQ(offsets_of(ru), (offsets{0, 1, 2, 3}));
  EXPECT_EQ(ru.next_offset, 4);
  // The next poll resumes at the returned position.
  auto rest = filter_fetched(orders0, ru.next_offset, log_after_step6(), {},
                             isolation_level::read_uncommitted, 4);
  EXPECT_EQ(offsets_of(rest), (offsets{4, 5, 6}));
  EXPECT_EQ(rest.next_offset, 9);
}

TEST(ReadCommittedFilter, RecordsBelowFetchOffsetAreDropped) {
  auto f = filter_fetched(orders0, 4, log_after_step6(), {{producer_id{4000}, 0}},
                          isolation_level::read_committed, 500);
  EXPECT_EQ(offsets_of(f), (offsets{4, 5}));
  EXPECT_EQ(f.next_offset, 9);
}

TEST(ReadCommittedFilter, DeliveredRecordCarriesTopicPartitionOffsetAndContent) {
  auto b = data(3, 5000, 1, true);
  b.records[0].headers.push_back({"h", "x"});
  auto f = filter_fetched(orders0, 0, {b}, {}, isolation_level::read_committed, 500);
  ASSERT_EQ(f.records.size(), 1u);
  auto& r = f.records[0];
  EXPECT_EQ(r.topic, "orders");
  EXPECT_EQ(r.partition, 0);
  EXPECT_EQ(r.offset, 3);
  EXPECT_EQ(r.timestamp_ms, 103);
  EXPECT_EQ(r.key, "k3");
  EXPECT_EQ(r.value, "v3");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].key, "h");
  EXPECT_EQ(r.headers[0].value, "x");
}

TEST(ReadCommittedFilter, EmptyFetchKeepsPosition) {
  auto f = filter_fetched(orders0, 9, {}, {}, isolation_level::read_committed, 500);
  EXPECT_TRUE(f.records.empty());
  EXPECT_EQ(f.next_offset, 9);
}

} // namespace
} // namespace caftx
