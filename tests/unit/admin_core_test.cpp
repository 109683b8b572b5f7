// The decisions of find-hanging and abort (KIP-664, Kafka's
// kafka-transactions.sh; docs/transactions.md §Admin, §KIPs): candidates, the hanging
// verdict per reason, and the open transaction at a start offset.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/client/admin_core.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

const topic_partition t0{"t", 0};
const topic_partition t1{"t", 1};
constexpr int64_t max_ms = default_max_transaction_timeout_ms;
constexpr int64_t now = 100 * max_ms;

active_producer producer(int64_t pid, int64_t last_timestamp_ms, int64_t txn_start,
                         int32_t cepoch = -1) {
  return {producer_id{pid}, producer_epoch{4}, 9, last_timestamp_ms, cepoch, txn_start};
}

std::vector<int64_t> pids(const std::vector<open_transaction>& xs) {
  std::vector<int64_t> out;
  for (auto& x : xs)
    out.push_back(x.producer.pid.value);
  return out;
}

using partitions_by_id = std::map<std::string, std::optional<std::vector<topic_partition>>>;

TEST(FindHanging, DefaultMaxTransactionTimeoutIsFifteenMinutes) {
  EXPECT_EQ(default_max_transaction_timeout_ms, 15 * 60 * 1000);
}

TEST(FindHanging, CandidatesAreOpenTransactionsIdleLongerThanTheMaxTimeout) {
  std::vector<active_producer> ps{producer(1, now - max_ms - 1, 10),  // idle just too long
                                  producer(2, now - max_ms, 20),      // exactly the max: not more
                                  producer(3, now - 1, 30),           // active
                                  producer(4, now - 10 * max_ms, 0)}; // long gone
  auto c = hanging_candidates(t0, ps, now, max_ms);
  EXPECT_EQ(pids(c), (std::vector<int64_t>{1, 4}));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].tp, t0);
  EXPECT_EQ(c[0].producer, ps[0]);
}

TEST(FindHanging, ProducerWithoutOpenTransactionIsNeverACandidate) {
  std::vector<active_producer> ps{producer(1, 0, -1), producer(2, 0, 7)};
  EXPECT_EQ(pids(hanging_candidates(t0, ps, now, max_ms)), std::vector<int64_t>{2});
}

TEST(FindHanging, MaxTimeoutIsAParameter) {
  std::vector<active_producer> ps{producer(1, now - 61000, 5)};
  EXPECT_TRUE(hanging_candidates(t0, ps, now, 61000).empty());
  EXPECT_EQ(pids(hanging_candidates(t0, ps, now, 60000)), std::vector<int64_t>{1});
}

TEST(FindHanging, CandidateWithoutTransactionalIdIsHangingWithItsProducerState) {
  auto c = hanging_candidates(t1, {producer(8, 0, 42, 3)}, now, max_ms);
  auto h = filter_hanging(c, {{"other", producer_id{9}, "Ongoing"}}, {{"other", {{t1}}}});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].tp, t1);
  EXPECT_EQ(h[0].pid, producer_id{8});
  EXPECT_EQ(h[0].epoch, producer_epoch{4});
  EXPECT_EQ(h[0].coordinator_epoch, 3);
  EXPECT_EQ(h[0].start_offset, 42);
  EXPECT_EQ(h[0].last_timestamp_ms, 0);
  EXPECT_EQ(h[0].transactional_id, "");
  EXPECT_EQ(h[0].reason, hanging_reason::no_transactional_id);
}

TEST(FindHanging, CandidateWhoseTransactionalIdIsNotFoundIsHanging) {
  auto c = hanging_candidates(t0, {producer(8, 0, 42)}, now, max_ms);
  auto h = filter_hanging(c, {{"tx", producer_id{8}, "Ongoing"}}, {{"tx", std::nullopt}});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].transactional_id, "tx");
  EXPECT_EQ(h[0].reason, hanging_reason::transactional_id_not_found);
  // A listed id that was not described counts as not found.
  auto missing = filter_hanging(c, {{"tx", producer_id{8}, "Ongoing"}}, {});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].reason, hanging_reason::transactional_id_not_found);
}

TEST(FindHanging, CandidateWhosePartitionIsNotInTheCurrentTransactionIsHanging) {
  auto c = hanging_candidates(t0, {producer(8, 0, 42)}, now, max_ms);
  auto h = filter_hanging(c, {{"tx", producer_id{8}, "Ongoing"}}, {{"tx", {{t1}}}});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].transactional_id, "tx");
  EXPECT_EQ(h[0].reason, hanging_reason::partition_not_in_transaction);
  auto empty = filter_hanging(c, {{"tx", producer_id{8}, "Empty"}},
                              {{"tx", std::vector<topic_partition>{}}});
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].reason, hanging_reason::partition_not_in_transaction);
}

TEST(FindHanging, CandidateWhosePartitionIsInTheCurrentTransactionIsNotHanging) {
  auto c = hanging_candidates(t0, {producer(8, 0, 42)}, now, max_ms);
  EXPECT_TRUE(filter_hanging(c, {{"tx", producer_id{8}, "Ongoing"}}, {{"tx", {{t1, t0}}}}).empty());
}

TEST(FindHanging, VerdictIsPerPartitionInCandidateOrder) {
  std::vector<open_transaction> c{{t0, producer(8, 0, 1)}, {t1, producer(8, 0, 2)},
                                  {t0, producer(5, 0, 3)}};
  auto h = filter_hanging(c, {{"tx", producer_id{8}, "PrepareCommit"}}, {{"tx", {{t1}}}});
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].start_offset, 1);
  EXPECT_EQ(h[0].reason, hanging_reason::partition_not_in_transaction);
  EXPECT_EQ(h[1].start_offset, 3);
  EXPECT_EQ(h[1].reason, hanging_reason::no_transactional_id);
}

TEST(FindHanging, ReasonNames) {
  EXPECT_STREQ(to_string(hanging_reason::no_transactional_id), "no_transactional_id");
  EXPECT_STREQ(to_string(hanging_reason::transactional_id_not_found), "transactional_id_not_found");
  EXPECT_STREQ(to_string(hanging_reason::partition_not_in_transaction),
               "partition_not_in_transaction");
}

TEST(AbortTransaction, OpenTransactionAtFindsTheProducerWhoseTransactionStartsThere) {
  std::vector<active_producer> ps{producer(1, 0, -1), producer(2, 0, 17), producer(3, 0, 40)};
  EXPECT_EQ(open_transaction_at(ps, 17), std::optional<active_producer>{ps[1]});
  EXPECT_EQ(open_transaction_at(ps, 40), std::optional<active_producer>{ps[2]});
  EXPECT_EQ(open_transaction_at(ps, 18), std::nullopt);
  EXPECT_EQ(open_transaction_at(ps, -1), std::nullopt); // no open transaction is not one at -1
}

} // namespace
} // namespace caftx
