// group_coordinator_core: transactional offsets (TxnOffsetCommit) stay
// pending until the producer's marker (docs/transactions.md §TxnOffsetCommit
// step 9, §Consume-transform-produce).

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "actors/group/group_coordinator_core.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

const group_offset_key in0{"group", topic_partition{"in", 0}};
const group_offset_key in1{"group", topic_partition{"in", 1}};
const group_offset_key other_group_in0{"other", topic_partition{"in", 0}};

using offset_list = std::vector<std::pair<group_offset_key, offset_and_metadata>>;

offset_and_metadata om(int64_t offset, std::string metadata = "") {
  return {offset, std::move(metadata)};
}

class GroupCoordinatorCore : public ::testing::Test {
protected:
  group_coordinator_core g;

  void txn_commit(int64_t pid, int16_t epoch, const offset_list& offsets) {
    auto r = g.txn_offset_commit(producer_id{pid}, producer_epoch{epoch}, offsets);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
  }
};

TEST_F(GroupCoordinatorCore, TxnOffsetsInvisibleUntilCommitMarker) {
  g.commit(in0, om(40));
  auto r = g.txn_offset_commit(producer_id{4000}, producer_epoch{0}, {{in0, om(45, "m")}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->epoch, producer_epoch{0});
  ASSERT_EQ(r->offsets.size(), 1u);
  EXPECT_EQ(r->offsets.at(in0), om(45, "m"));
  // OffsetFetch still answers the previous value; require_stable would say
  // UNSTABLE_OFFSET_COMMIT.
  EXPECT_EQ(g.fetch(in0), om(40));
  EXPECT_TRUE(g.has_pending(in0));
  EXPECT_FALSE(g.has_pending(in1));
  EXPECT_FALSE(g.has_pending(other_group_in0));

  // The coordinator's marker carries the epoch bumped at EndTxn.
  auto done = g.complete_txn(producer_id{4000}, producer_epoch{1}, control_type::commit);
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_EQ(done->front().first, in0);
  EXPECT_EQ(done->front().second, om(45, "m"));
  EXPECT_EQ(g.fetch(in0), om(45, "m"));
  EXPECT_FALSE(g.has_pending(in0));
  EXPECT_TRUE(g.pending().empty());
}

TEST_F(GroupCoordinatorCore, AbortMarkerDiscardsPendingOffsets) {
  g.commit(in0, om(40));
  txn_commit(4000, 0, {{in0, om(45)}, {in1, om(7)}});
  auto done = g.complete_txn(producer_id{4000}, producer_epoch{1}, control_type::abort);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->empty());
  EXPECT_EQ(g.fetch(in0), om(40));
  EXPECT_EQ(g.fetch(in1), om(-1)); // never committed
  EXPECT_FALSE(g.has_pending(in0));
  EXPECT_FALSE(g.has_pending(in1));
  EXPECT_TRUE(g.pending().empty());
}

TEST_F(GroupCoordinatorCore, TxnOffsetCommitWithStaleEpochIsInvalidProducerEpoch) {
  txn_commit(4000, 3, {{in0, om(45)}});
  auto r = g.txn_offset_commit(producer_id{4000}, producer_epoch{2}, {{in0, om(99)}, {in1, om(5)}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::invalid_producer_epoch);
  // Nothing of the stale request was kept.
  auto& p = g.pending().at(producer_id{4000});
  EXPECT_EQ(p.epoch, producer_epoch{3});
  ASSERT_EQ(p.offsets.size(), 1u);
  EXPECT_EQ(p.offsets.at(in0), om(45));
  EXPECT_FALSE(g.has_pending(in1));
}

TEST_F(GroupCoordinatorCore, TxnOffsetCommitsOfOneTransactionAccumulate) {
  txn_commit(4000, 0, {{in0, om(45)}});
  auto r = g.txn_offset_commit(producer_id{4000}, producer_epoch{0}, {{in0, om(50)}, {in1, om(3)}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->offsets.size(), 2u);
  EXPECT_EQ(r->offsets.at(in0), om(50));
  EXPECT_EQ(r->offsets.at(in1), om(3));
}

TEST_F(GroupCoordinatorCore, HigherEpochDropsOffsetsLeftByFencedEpoch) {
  txn_commit(4000, 0, {{in0, om(45)}});
  auto r = g.txn_offset_commit(producer_id{4000}, producer_epoch{1}, {{in1, om(3)}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->epoch, producer_epoch{1});
  ASSERT_EQ(r->offsets.size(), 1u);
  EXPECT_EQ(r->offsets.at(in1), om(3));
  EXPECT_FALSE(g.has_pending(in0));
}

TEST_F(GroupCoordinatorCore, MarkerWithEpochBelowPendingIsInvalidProducerEpoch) {
  txn_commit(4000, 2, {{in0, om(45)}});
  auto r = g.complete_txn(producer_id{4000}, producer_epoch{1}, control_type::commit);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::invalid_producer_epoch);
  EXPECT_TRUE(g.has_pending(in0));
  EXPECT_EQ(g.fetch(in0), om(-1));
  // A fencing abort marker carries a higher epoch and discards them.
  auto fenced = g.complete_txn(producer_id{4000}, producer_epoch{3}, control_type::abort);
  ASSERT_TRUE(fenced.ok());
  EXPECT_FALSE(g.has_pending(in0));
}

TEST_F(GroupCoordinatorCore, MarkerWithoutPendingOffsetsChangesNothing) {
  g.commit(in0, om(40));
  auto r = g.complete_txn(producer_id{4000}, producer_epoch{0}, control_type::commit);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(g.fetch(in0), om(40));
}

TEST_F(GroupCoordinatorCore, MarkersOfOneProducerLeaveOtherProducersPending) {
  txn_commit(4000, 0, {{in0, om(45)}});
  txn_commit(5000, 2, {{in1, om(8)}});
  auto r = g.complete_txn(producer_id{5000}, producer_epoch{3}, control_type::commit);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(g.fetch(in1), om(8));
  EXPECT_EQ(g.fetch(in0), om(-1));
  EXPECT_TRUE(g.has_pending(in0));
  EXPECT_EQ(g.pending().size(), 1u);
  EXPECT_EQ(g.pending().count(producer_id{4000}), 1u);
}

TEST_F(GroupCoordinatorCore, LoadRestoresCommittedAndPendingOffsets) {
  pending_txn_offsets p;
  p.epoch = producer_epoch{1};
  p.offsets[in1] = om(9);
  g.load({{in0, om(40)}}, {{producer_id{4000}, p}});
  EXPECT_EQ(g.fetch(in0), om(40));
  EXPECT_TRUE(g.has_pending(in1));
  auto r = g.complete_txn(producer_id{4000}, producer_epoch{2}, control_type::commit);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(g.fetch(in1), om(9));
}

TEST_F(GroupCoordinatorCore, MarkerWithEpochOfPendingOffsetsIsInvalidProducerEpoch) {
  // A delayed marker of the previous transaction (its bumped epoch is the
  // epoch of the offsets now pending) must not commit them (KIP-890 part 2).
  txn_commit(4000, 1, {{in0, om(45)}});
  auto late = g.complete_txn(producer_id{4000}, producer_epoch{1}, control_type::commit);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(g.fetch(in0), om(-1));
  EXPECT_TRUE(g.has_pending(in0));
  // Transaction version 1 (equal epochs) is still accepted.
  auto v1 = g.complete_txn(producer_id{4000}, producer_epoch{1}, control_type::commit, 1);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(g.fetch(in0), om(45));
}

TEST_F(GroupCoordinatorCore, LateTxnOffsetCommitAfterTheMarkerIsInvalidProducerEpoch) {
  txn_commit(4000, 0, {{in0, om(45)}});
  ASSERT_TRUE(g.complete_txn(producer_id{4000}, producer_epoch{1}, control_type::commit).ok());
  // The same TxnOffsetCommit delivered again after its transaction ended.
  auto late = g.txn_offset_commit(producer_id{4000}, producer_epoch{0}, {{in0, om(99)}});
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), error_code::invalid_producer_epoch);
  EXPECT_TRUE(g.pending().empty());
  // The next transaction, at the bumped epoch, goes on.
  EXPECT_TRUE(g.txn_offset_commit(producer_id{4000}, producer_epoch{1}, {{in0, om(50)}}).ok());
}

TEST_F(GroupCoordinatorCore, VerificationNeededUntilOffsetsArePendingAtThatEpoch) {
  EXPECT_TRUE(g.needs_verification(producer_id{4000}, producer_epoch{0}));
  txn_commit(4000, 0, {{in0, om(45)}});
  EXPECT_FALSE(g.needs_verification(producer_id{4000}, producer_epoch{0}));
  EXPECT_TRUE(g.needs_verification(producer_id{4000}, producer_epoch{1}));
  EXPECT_TRUE(g.needs_verification(producer_id{5000}, producer_epoch{0}));
}

TEST_F(GroupCoordinatorCore, PlainCommitIsVisibleAtOnce) {
  EXPECT_EQ(g.fetch(in0), om(-1));
  g.commit(in0, om(12, "meta"));
  EXPECT_EQ(g.fetch(in0), om(12, "meta"));
  EXPECT_EQ(g.fetch(other_group_in0), om(-1));
}

} // namespace
} // namespace caftx
