// The pure replication core: the leader epoch cache (Kafka's
// LeaderEpochFileCacheTest cases), the leader's view of its followers (HW,
// ISR shrink and expand with one change in flight, acks=all against
// min.insync.replicas, KIP-320 fencing and the diverging epoch of a
// follower fetch) and a follower's truncation point, including the KIP-101
// and KIP-279 scenarios (docs/replication.md).

#include <gtest/gtest.h>

#include "actors/partition/leader_epoch_cache.hpp"
#include "actors/partition/replication_core.hpp"

namespace caftx {
namespace {

using replication::acks;
using replication::acks_state;
using replication::follower_fetch;
using replication::follower_truncation;
using replication::isr_proposal;
using replication::leader_replication;
using replication::truncation;

leader_epoch_cache cache_of(std::initializer_list<epoch_entry> xs) {
  leader_epoch_cache c;
  for (const auto& x : xs)
    EXPECT_TRUE(c.assign(x.epoch, x.start_offset));
  return c;
}

std::vector<epoch_entry> entries(const leader_epoch_cache& c) {
  return c.entries();
}

// -- leader epoch cache --------------------------------------------------------

TEST(LeaderEpochCache, AssignKeepsTheFirstStartOfAnEpoch) {
  leader_epoch_cache c;
  EXPECT_TRUE(c.assign(2, 6));
  EXPECT_FALSE(c.assign(2, 7)); // a later batch of the same epoch
  EXPECT_FALSE(c.assign(2, 6));
  EXPECT_TRUE(c.assign(3, 9));
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{2, 6}, {3, 9}}));
  EXPECT_EQ(c.latest_epoch(), 3);
}

TEST(LeaderEpochCache, AssignDropsEntriesThatWouldBreakMonotonicity) {
  auto c = cache_of({{1, 0}, {2, 5}, {4, 10}});
  // Epoch 3 at 8: epoch 4 (a higher epoch) goes.
  EXPECT_TRUE(c.assign(3, 8));
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{1, 0}, {2, 5}, {3, 8}}));
  // Epoch 5 at 5: epochs starting at or after 5 go (2 and 3).
  EXPECT_TRUE(c.assign(5, 5));
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{1, 0}, {5, 5}}));
  // The same epoch at an earlier start replaces it.
  EXPECT_TRUE(c.assign(5, 3));
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{1, 0}, {5, 3}}));
}

TEST(LeaderEpochCache, EndOffsetForFollowsKafka) {
  auto c = cache_of({{1, 0}, {3, 4}, {5, 9}});
  const int64_t leo = 12;
  EXPECT_EQ(c.end_offset_for(5, leo), (epoch_end{5, 12}));  // latest: the log end
  EXPECT_EQ(c.end_offset_for(3, leo), (epoch_end{3, 9}));   // next epoch's start
  EXPECT_EQ(c.end_offset_for(4, leo), (epoch_end{3, 9}));   // unknown: the largest below
  EXPECT_EQ(c.end_offset_for(2, leo), (epoch_end{1, 4}));
  EXPECT_EQ(c.end_offset_for(0, leo), (epoch_end{0, 0}));   // below every epoch
  EXPECT_EQ(c.end_offset_for(6, leo), (epoch_end{}));       // above every epoch
  EXPECT_EQ(c.end_offset_for(undefined_epoch, leo), (epoch_end{}));
  EXPECT_EQ(leader_epoch_cache{}.end_offset_for(1, leo), (epoch_end{}));
}

TEST(LeaderEpochCache, TruncateFromEndDropsEpochsStartingAtOrAfter) {
  auto c = cache_of({{1, 0}, {3, 4}, {5, 9}});
  c.truncate_from_end(10); // inside epoch 5: nothing goes
  EXPECT_EQ(entries(c).size(), 3u);
  c.truncate_from_end(9);
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{1, 0}, {3, 4}}));
  c.truncate_from_end(-1); // undefined: nothing
  EXPECT_EQ(entries(c).size(), 2u);
  c.truncate_from_end(0);
  EXPECT_TRUE(c.empty());
}

TEST(LeaderEpochCache, TruncateFromStartMovesTheFirstKeptEpoch) {
  auto c = cache_of({{1, 0}, {3, 4}, {5, 9}});
  c.truncate_from_start(2); // inside epoch 1
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{1, 2}, {3, 4}, {5, 9}}));
  c.truncate_from_start(6); // inside epoch 3: epoch 1 goes
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{3, 6}, {5, 9}}));
  c.truncate_from_start(9); // exactly at epoch 5's start
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{5, 9}}));
  c.truncate_from_start(3); // below the first: nothing
  EXPECT_EQ(entries(c), (std::vector<epoch_entry>{{5, 9}}));
}

TEST(LeaderEpochCache, FromEntriesChecksTheOrder) {
  auto c = leader_epoch_cache::from_entries({{0, 0}, {3, 7}, {4, 7}});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->end_offset_for(3, 20), (epoch_end{3, 7}));
  auto expect_error = [](std::vector<epoch_entry> xs, const std::string& message) {
    auto d = leader_epoch_cache::from_entries(std::move(xs));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), error_code::kafka_storage_error);
    EXPECT_EQ(d.error().message(), message);
  };
  expect_error({{1, 0}, {1, 5}},
               "leader epoch cache: entry 1 (epoch 1 at 5) is negative or not after the one before");
  expect_error({{1, 4}, {2, 3}},
               "leader epoch cache: entry 1 (epoch 2 at 3) is negative or not after the one before");
  expect_error({{-2, 0}},
               "leader epoch cache: entry 0 (epoch -2 at 0) is negative or not after the one before");
}

// -- the leader's view of its followers ---------------------------------------

// Leader 1 at epoch 4 (partition epoch 10) with replicas 1, 2, 3 all in the
// ISR; its log ended at 100 when it was elected.
leader_replication leader_of_three(int64_t now_ms = 1000) {
  return leader_replication(1, 4, 10, {1, 2, 3}, {1, 2, 3}, 100, now_ms, 30000);
}

TEST(LeaderReplication, HighWatermarkIsTheMinimumLogEndOverTheIsr) {
  auto l = leader_of_three();
  // Nobody fetched yet: the followers in the ISR hold the HW where it is.
  EXPECT_EQ(l.advanced_high_watermark(100, 120, 1000), std::nullopt);
  l.record_fetch(2, 115, 120, 1100);
  EXPECT_EQ(l.advanced_high_watermark(100, 120, 1100), std::nullopt); // 3 unknown
  l.record_fetch(3, 110, 120, 1100);
  EXPECT_EQ(l.advanced_high_watermark(100, 120, 1100), 110);
  l.record_fetch(3, 120, 120, 1200);
  EXPECT_EQ(l.advanced_high_watermark(110, 120, 1200), 115);
  // Never backwards: a follower reporting less does not lower it.
  EXPECT_EQ(l.advanced_high_watermark(118, 120, 1200), std::nullopt);
}

TEST(LeaderReplication, AFollowerOutsideTheIsrCountsOnlyWhileCaughtUp) {
  // ISR {1, 2}; 3 is a replica outside it.
  leader_replication l(1, 4, 10, {1, 2, 3}, {1, 2}, 100, 1000, 30000);
  l.record_fetch(2, 150, 150, 1000);
  l.record_fetch(3, 150, 150, 1000); // 3 caught up at 1000
  l.record_fetch(3, 120, 200, 2000); // behind: stays caught up as of 1000
  l.record_fetch(2, 200, 200, 2000);
  // Within replica.lag.time.max.ms 3 holds the HW at its log end (it is
  // about to join, so it must have everything below the HW).
  EXPECT_EQ(l.advanced_high_watermark(100, 200, 2000), 120);
  // Past the lag time it no longer counts.
  EXPECT_EQ(l.advanced_high_watermark(100, 200, 1000 + 30001), 200);
}

// KIP-841: a caught-up follower whose node left (the controller refused
// its expand with INELIGIBLE_REPLICA) stops holding the HW at once instead
// of for replica.lag.time.max.ms, and is not proposed again until it
// fetches after the retry delay (it came back).
TEST(LeaderReplication, AFollowerRefusedAsIneligibleNoLongerHoldsTheHighWatermark) {
  leader_replication l(1, 4, 10, {1, 2, 3}, {1, 2}, 100, 1000, 30000);
  l.record_fetch(2, 150, 150, 1000);
  l.record_fetch(3, 150, 150, 1000); // caught up: proposed
  auto p = l.maybe_expand(3, 150);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->isr, (std::vector<int32_t>{1, 2, 3}));
  l.record_fetch(2, 200, 200, 2000); // 3 fetches no more (its node stopped)
  EXPECT_EQ(l.advanced_high_watermark(150, 200, 2000), std::nullopt) << "3 is in the maximal ISR";
  EXPECT_EQ(l.isr_refused_ineligible(2000, 1000), std::vector<int32_t>{3});
  EXPECT_FALSE(l.change_in_flight());
  EXPECT_EQ(l.advanced_high_watermark(150, 200, 2000), 200);
  EXPECT_EQ(l.maybe_expand(3, 200), std::nullopt);
  l.record_fetch(3, 200, 200, 2500); // before the retry delay: still out
  EXPECT_EQ(l.maybe_expand(3, 200), std::nullopt);
  l.record_fetch(3, 200, 200, 3000); // back: proposed again
  EXPECT_TRUE(l.maybe_expand(3, 200).has_value());
}

// A leader restarted at the leader epoch it led at knows the ISR {1, 2}
// (partition epoch 10), but its predecessor's expand to {1, 2, 3} may
// have been written with the answer lost: until the controller answers
// the confirming proposal, replica 3 holds the HW (it has not fetched),
// so nothing it lacks is acknowledged; the controller's answer with the
// current ISR ends it (multi-node simulation seed 9734).
TEST(LeaderReplication, ARestartedLeaderCountsEveryReplicaUntilItsIsrIsConfirmed) {
  leader_replication l(1, 4, 10, {1, 2, 3}, {1, 2}, 100, 1000, 30000);
  auto p = l.start_unconfirmed();
  EXPECT_EQ(p, (isr_proposal{{1, 2}, 4, 10}));
  EXPECT_TRUE(l.unconfirmed());
  EXPECT_EQ(l.maximal_isr(), (std::vector<int32_t>{1, 2, 3}));
  l.record_fetch(2, 150, 150, 1000);
  EXPECT_EQ(l.advanced_high_watermark(100, 150, 1000), std::nullopt) << "3 holds it";
  EXPECT_EQ(l.maybe_expand(3, 100), std::nullopt) << "one change at a time";
  l.isr_replaced({1, 2, 3}, 11); // INVALID_UPDATE_VERSION: the expand was written
  EXPECT_FALSE(l.unconfirmed());
  EXPECT_EQ(l.isr(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(l.advanced_high_watermark(100, 150, 1000), std::nullopt) << "3 is in the ISR";
  l.record_fetch(3, 150, 150, 1100);
  EXPECT_EQ(l.advanced_high_watermark(100, 150, 1100), 150);
  // Confirmed as it was: the same ISR written again.
  leader_replication same(1, 4, 10, {1, 2, 3}, {1, 2}, 100, 1000, 30000);
  same.start_unconfirmed();
  same.record_fetch(2, 150, 150, 1000);
  same.isr_committed({1, 2}, 11);
  EXPECT_FALSE(same.unconfirmed());
  EXPECT_EQ(same.advanced_high_watermark(100, 150, 1000), 150);
  // A late same-epoch answer to the confirmation settles no later expand.
  same.record_fetch(3, 150, 150, 1200);
  ASSERT_TRUE(same.maybe_expand(3, 150).has_value());
  same.isr_committed({1, 2}, 11);
  EXPECT_TRUE(same.change_in_flight());
  same.isr_committed({1, 2, 3}, 12);
  EXPECT_EQ(same.isr(), (std::vector<int32_t>{1, 2, 3}));
}

TEST(LeaderReplication, CheckFetchFencesEpochsAndFindsDivergence) {
  auto l = leader_of_three();
  auto epochs = cache_of({{1, 0}, {4, 100}});
  auto check = [&](follower_fetch f) { return l.check_fetch(f, epochs, 120); };

  auto fenced = check({2, 100, 4, 3});
  ASSERT_FALSE(fenced.ok());
  EXPECT_EQ(fenced.error().code(), error_code::fenced_leader_epoch);
  auto unknown = check({2, 100, 4, 5});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), error_code::unknown_leader_epoch);
  auto stranger = check({7, 100, 4, 4});
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.error().code(), error_code::not_leader_or_follower);

  // In step: the follower's last epoch 4 is the latest here.
  auto fine = check({2, 110, 4, 4});
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(*fine, std::nullopt);
  // Its epoch 1 ends here at 100, and it fetches at 100: in step.
  auto at_end = check({2, 100, 1, 4});
  ASSERT_TRUE(at_end.ok());
  EXPECT_EQ(*at_end, std::nullopt);
  // Epoch 1 ended here at 100 but the follower has 105 in it: diverging.
  auto ahead = check({2, 105, 1, 4});
  ASSERT_TRUE(ahead.ok());
  EXPECT_EQ(*ahead, (epoch_end{1, 100}));
  // An epoch this leader never saw (3, written by a deposed leader).
  auto unseen = check({2, 103, 3, 4});
  ASSERT_TRUE(unseen.ok());
  EXPECT_EQ(*unseen, (epoch_end{1, 100}));
  // Past the log end in the current epoch: told to truncate to the end
  // (Kafka answers a diverging epoch before any range check).
  auto past = check({2, 121, 4, 4});
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(*past, (epoch_end{4, 120}));
  // No epochs sent (an old follower): only the range check.
  auto plain = check({2, 50, undefined_epoch, undefined_epoch});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, std::nullopt);
  auto beyond = check({2, 121, undefined_epoch, undefined_epoch});
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.error().code(), error_code::offset_out_of_range);
}

TEST(LeaderReplication, ExpandNeedsTheHighWatermarkAndTheEpochStart) {
  leader_replication l(1, 4, 10, {1, 2, 3}, {1, 2}, 100, 1000, 30000);
  l.record_fetch(3, 95, 130, 1000);
  EXPECT_EQ(l.maybe_expand(3, 90), std::nullopt); // above the HW, below the epoch start (KAFKA-7128)
  l.record_fetch(3, 105, 130, 1100);
  EXPECT_EQ(l.maybe_expand(3, 110), std::nullopt); // below the HW
  EXPECT_EQ(l.maybe_expand(2, 90), std::nullopt);  // already in the ISR
  EXPECT_EQ(l.maybe_expand(9, 90), std::nullopt);  // not a replica
  auto p = l.maybe_expand(3, 105);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, (isr_proposal{{1, 2, 3}, 4, 10}));
  // In flight: the maximal ISR counts 3, the committed ISR does not.
  EXPECT_TRUE(l.change_in_flight());
  EXPECT_EQ(l.isr(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(l.maximal_isr(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(l.maybe_shrink(130, 1000 + 60000), std::nullopt); // one change at a time
  // A stale answer (same partition epoch) changes nothing.
  l.isr_committed({1, 2, 3}, 10);
  EXPECT_TRUE(l.change_in_flight());
  l.isr_committed({1, 2, 3}, 11);
  EXPECT_FALSE(l.change_in_flight());
  EXPECT_EQ(l.isr(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(l.partition_epoch(), 11);
  EXPECT_TRUE(l.out_of_isr().empty());
}

TEST(LeaderReplication, ShrinkRemovesOnlyFollowersLaggingPastTheLagTime) {
  auto l = leader_of_three(1000);
  l.record_fetch(2, 130, 130, 5000);  // at the log end
  l.record_fetch(3, 110, 130, 5000);  // behind since the election at 1000
  EXPECT_EQ(l.maybe_shrink(130, 31000), std::nullopt); // exactly the lag time: kept
  auto p = l.maybe_shrink(130, 31001);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, (isr_proposal{{1, 2}, 4, 10}));
  // While the shrink is in flight the maximal ISR is the old one: 3 still
  // holds the HW.
  EXPECT_EQ(l.maximal_isr(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(l.advanced_high_watermark(100, 130, 31001), 110);
  l.isr_rejected(); // e.g. INVALID_UPDATE_VERSION
  EXPECT_FALSE(l.change_in_flight());
  EXPECT_EQ(l.isr(), (std::vector<int32_t>{1, 2, 3}));
  ASSERT_TRUE(l.maybe_shrink(130, 31002)); // proposed again
  l.isr_committed({1, 2}, 11);
  EXPECT_EQ(l.advanced_high_watermark(100, 130, 31002), 130);
  EXPECT_EQ(l.out_of_isr(), (std::vector<int32_t>{3}));
}

TEST(LeaderReplication, AStuckFollowerThatNeverFetchedIsShrunk) {
  auto l = leader_of_three(1000);
  // 3 never fetches from the new leader while 2 keeps up with a growing log.
  l.record_fetch(2, 140, 140, 31000);
  auto p = l.maybe_shrink(140, 1000 + 30001);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->isr, (std::vector<int32_t>{1, 2}));
}

TEST(LeaderReplication, AFollowerThatKeepsUpWithTheLeadersPreviousEndStaysCaughtUp) {
  auto l = leader_of_three(1000);
  // Each fetch reaches what the leader had at the previous fetch, never the
  // current end (a steady stream of appends): caught up as of the previous fetch.
  l.record_fetch(2, 100, 110, 2000);
  l.record_fetch(2, 110, 120, 20000);
  l.record_fetch(2, 120, 130, 40000);
  l.record_fetch(3, 130, 130, 40000);
  EXPECT_EQ(l.follower(2)->last_caught_up_time_ms, 20000);
  EXPECT_EQ(l.maybe_shrink(130, 45000), std::nullopt);
}

TEST(LeaderReplication, AcksAllAgainstMinInsyncReplicas) {
  auto l = leader_of_three(1000);
  EXPECT_TRUE(l.check_append(acks::all, 3).ok());
  EXPECT_TRUE(l.check_append(acks::leader, 5).ok()); // acks=1: no check
  auto low = l.check_append(acks::all, 4);
  EXPECT_EQ(low.code(), error_code::not_enough_replicas);
  EXPECT_EQ(low.message(),
            "The size of the current ISR [1,2,3] is insufficient to satisfy the min.isr "
            "requirement of 4");

  EXPECT_EQ(l.check_acks(110, 100, 2), acks_state::waiting);
  EXPECT_EQ(l.check_acks(110, 110, 2), acks_state::done);
  // The ISR shrank to the leader alone after the append: the HW passes the
  // batch but the write is not on two replicas.
  l.record_fetch(2, 100, 100, 1000);
  l.record_fetch(3, 100, 100, 1000);
  ASSERT_TRUE(l.maybe_shrink(120, 40000));
  l.isr_committed({1}, 11);
  EXPECT_EQ(l.check_acks(110, 120, 2), acks_state::not_enough_replicas_after_append);
  EXPECT_EQ(l.check_acks(110, 120, 1), acks_state::done);
  EXPECT_EQ(l.check_append(acks::all, 2).code(), error_code::not_enough_replicas);
}

TEST(LeaderReplication, AnIsrFromTheControllerReplacesAProposalInFlight) {
  auto l = leader_of_three(1000);
  l.record_fetch(2, 100, 100, 1000);
  ASSERT_TRUE(l.maybe_shrink(120, 40000));
  l.isr_replaced({1, 3}, 12);
  EXPECT_FALSE(l.change_in_flight());
  EXPECT_EQ(l.isr(), (std::vector<int32_t>{1, 3}));
  l.isr_replaced({1}, 11); // older: ignored
  EXPECT_EQ(l.isr(), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(l.partition_epoch(), 12);
}

// -- follower truncation ---------------------------------------------------------

// KIP-101 scenario 2 (divergent logs after consecutive hard failures): A
// wrote offset 1 in epoch 0 that B never got; B became leader at epoch 1
// and wrote its own offset 1. A, following B, must drop its offset 1.
TEST(FollowerTruncation, Kip101DivergentLogsConverge) {
  auto leader_epochs = cache_of({{0, 0}, {1, 1}});
  leader_replication b(2, 1, 5, {1, 2}, {2}, 1, 0, 30000);
  auto a_epochs = cache_of({{0, 0}});
  const int64_t a_leo = 2;
  auto answer = b.check_fetch({1, a_leo, 0, 1}, leader_epochs, 2);
  ASSERT_TRUE(answer.ok());
  ASSERT_TRUE(*answer);
  EXPECT_EQ(**answer, (epoch_end{0, 1}));
  EXPECT_EQ(follower_truncation(**answer, a_epochs, a_leo), (truncation{1, true}));
}

// KIP-101 scenario 1: truncating to a lagging HW would lose an acknowledged
// record; by epoch the follower keeps everything its leader still has.
TEST(FollowerTruncation, Kip101NoTruncationWhenTheLeaderHasTheSameEpochEnd) {
  auto leader_epochs = cache_of({{0, 0}, {1, 2}}); // new leader B, elected at 2
  leader_replication b(2, 1, 5, {1, 2}, {2}, 2, 0, 30000);
  // A restarted with offsets 0 and 1 in epoch 0 and a HW of 1.
  auto answer = b.check_fetch({1, 2, 0, 1}, leader_epochs, 2);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(*answer, std::nullopt); // fetch from 2: offset 1 is kept
}

// KIP-279 fast double failover: the follower's latest epoch (2) is unknown
// to the leader, and the leader's answer (epoch 1) is unknown to the
// follower; two rounds find the common point.
TEST(FollowerTruncation, Kip279TwoRoundsFindTheCommonPrefix) {
  auto leader_epochs = cache_of({{0, 0}, {1, 4}, {3, 6}});
  leader_replication l(2, 3, 9, {1, 2}, {2}, 6, 0, 30000);
  auto follower_epochs = cache_of({{0, 0}, {2, 5}});
  int64_t follower_leo = 8;

  auto first = l.check_fetch({1, follower_leo, 2, 3}, leader_epochs, 9);
  ASSERT_TRUE(first.ok() && *first);
  EXPECT_EQ(**first, (epoch_end{1, 6}));
  auto t1 = follower_truncation(**first, follower_epochs, follower_leo);
  EXPECT_EQ(t1, (truncation{5, false})); // end of its epoch 0 here
  follower_leo = t1.offset;
  follower_epochs.truncate_from_end(follower_leo);

  auto second = l.check_fetch({1, follower_leo, follower_epochs.latest_epoch(), 3},
                              leader_epochs, 9);
  ASSERT_TRUE(second.ok() && *second);
  EXPECT_EQ(**second, (epoch_end{0, 4}));
  auto t2 = follower_truncation(**second, follower_epochs, follower_leo);
  EXPECT_EQ(t2, (truncation{4, true}));
  follower_epochs.truncate_from_end(t2.offset);

  // In step now.
  auto third = l.check_fetch({1, t2.offset, follower_epochs.latest_epoch(), 3}, leader_epochs, 9);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, std::nullopt);
}

TEST(FollowerTruncation, EdgeCases) {
  auto local = cache_of({{2, 0}, {4, 10}});
  // The leader's epoch is below every local one: the local cache answers
  // that epoch with its first start offset, 0.
  EXPECT_EQ(follower_truncation({1, 7}, local, 15), (truncation{0, true}));
  // The leader's epoch is above every local one: its end offset, bounded.
  EXPECT_EQ(follower_truncation({6, 12}, local, 15), (truncation{12, true}));
  EXPECT_EQ(follower_truncation({6, 20}, local, 15), (truncation{15, true}));
  // Equal epoch: the smaller of the two ends.
  EXPECT_EQ(follower_truncation({2, 8}, local, 15), (truncation{8, true}));
  EXPECT_EQ(follower_truncation({2, 12}, local, 15), (truncation{10, true}));
  // No local epochs, undefined leader epoch or offset.
  EXPECT_EQ(follower_truncation({3, 5}, leader_epoch_cache{}, 9), (truncation{5, true}));
  EXPECT_EQ(follower_truncation({undefined_epoch, 5}, local, 9), (truncation{5, true}));
  EXPECT_EQ(follower_truncation({}, local, 9), (truncation{9, true}));
  EXPECT_EQ(replication::follower_high_watermark(20, 15), 15);
  EXPECT_EQ(replication::follower_high_watermark(12, 15), 12);
}

} // namespace
} // namespace caftx
