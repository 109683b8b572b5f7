// txn_coordinator_core's admin observers (KIP-664, docs/transactions.md §Admin):
// ListTransactions with its state, producer-id and duration filters (with
// Kafka's quirks), and DescribeTransactions with its errors.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/coordinator/txn_coordinator_core.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

const topic_partition orders0{"orders", 0};
const topic_partition orders1{"orders", 1};

txn_card card_of(const std::string& tid, int64_t pid, txn_state state, int64_t start_ms,
                 std::vector<topic_partition> partitions = {}) {
  txn_card c;
  c.transactional_id = tid;
  c.pid = producer_id{pid};
  c.epoch = producer_epoch{2};
  c.txn_timeout_ms = 60000;
  c.state = state;
  c.partitions = std::move(partitions);
  c.txn_start_ms = start_ms;
  c.last_update_ms = start_ms < 0 ? 500 : start_ms;
  return c;
}

std::vector<std::string> ids(const list_transactions_result& r) {
  std::vector<std::string> out;
  for (auto& t : r.transactions)
    out.push_back(t.transactional_id);
  return out;
}

list_transactions_filter states(std::vector<std::string> names) {
  list_transactions_filter f;
  f.states = std::move(names);
  return f;
}

using names = std::vector<std::string>;

class CoordinatorAdmin : public ::testing::Test {
protected:
  txn_coordinator_core core{txn_coordinator_settings{3, 50, 900000}};
  static constexpr int64_t now = 10000;

  // One id per listable state, loaded as a restarted shard would:
  //   e Empty (start -1), o Ongoing since 4000, pc PrepareCommit since 6000,
  //   pa PrepareAbort since 7000, cc CompleteCommit since 9000,
  //   ca CompleteAbort since 9500.
  void SetUp() override {
    core.load({card_of("o", 53, txn_state::ongoing, 4000, {orders0}),
               card_of("e", 3, txn_state::empty, -1),
               card_of("pc", 103, txn_state::prepare_commit, 6000, {orders1}),
               card_of("pa", 153, txn_state::prepare_abort, 7000, {orders0, orders1}),
               card_of("cc", 203, txn_state::complete_commit, 9000),
               card_of("ca", 253, txn_state::complete_abort, 9500)},
              6);
  }
};

// -- ListTransactions -----------------------------------------------------------

TEST_F(CoordinatorAdmin, ListTransactionsWithoutFiltersListsEveryIdSortedByTransactionalId) {
  auto r = core.list_transactions({}, now);
  EXPECT_TRUE(r.unknown_state_filters.empty());
  EXPECT_EQ(r.transactions,
            (std::vector<transaction_listing>{{"ca", producer_id{253}, "CompleteAbort"},
                                              {"cc", producer_id{203}, "CompleteCommit"},
                                              {"e", producer_id{3}, "Empty"},
                                              {"o", producer_id{53}, "Ongoing"},
                                              {"pa", producer_id{153}, "PrepareAbort"},
                                              {"pc", producer_id{103}, "PrepareCommit"}}));
}

TEST_F(CoordinatorAdmin, ListTransactionsStateFilterKeepsOnlyTheNamedStates) {
  EXPECT_EQ(ids(core.list_transactions(states({"Ongoing"}), now)), names{"o"});
  EXPECT_EQ(ids(core.list_transactions(states({"PrepareCommit", "CompleteAbort", "Empty"}), now)),
            (names{"ca", "e", "pc"}));
}

TEST_F(CoordinatorAdmin, ListTransactionsStateNamesAreCaseSensitive) {
  auto r = core.list_transactions(states({"ongoing", "Ongoing"}), now);
  EXPECT_EQ(r.unknown_state_filters, names{"ongoing"});
  EXPECT_EQ(ids(r), names{"o"});
}

TEST_F(CoordinatorAdmin, ListTransactionsEchoesUnknownStateNamesAndFiltersByTheKnownOnes) {
  auto r = core.list_transactions(states({"Hanging", "CompleteCommit", "Zombie"}), now);
  EXPECT_EQ(r.unknown_state_filters, (names{"Hanging", "Zombie"}));
  EXPECT_EQ(ids(r), names{"cc"});
}

TEST_F(CoordinatorAdmin, ListTransactionsWithOnlyUnknownStateNamesListsEveryState) {
  // Kafka builds its state filter from the known names only; none known
  // means no state filter at all.
  auto r = core.list_transactions(states({"Hanging"}), now);
  EXPECT_EQ(r.unknown_state_filters, names{"Hanging"});
  EXPECT_EQ(ids(r), (names{"ca", "cc", "e", "o", "pa", "pc"}));
}

TEST_F(CoordinatorAdmin, ListTransactionsProducerIdFilterKeepsOnlyThoseProducers) {
  list_transactions_filter f;
  f.producer_ids = {producer_id{153}, producer_id{3}, producer_id{999}};
  EXPECT_EQ(ids(core.list_transactions(f, now)), (names{"e", "pa"}));
}

TEST_F(CoordinatorAdmin, ListTransactionsDurationFilterKeepsOnlyTransactionsStartedMoreThanItAgo) {
  list_transactions_filter f;
  // now - start: o 6000, pc 4000, pa 3000, cc 1000, ca 500; e (start -1) 10001.
  f.duration_ms = 3000; // pa is exactly 3000 old: not more, not listed
  EXPECT_EQ(ids(core.list_transactions(f, now)), (names{"e", "o", "pc"}));
  f.duration_ms = 2999;
  EXPECT_EQ(ids(core.list_transactions(f, now)), (names{"e", "o", "pa", "pc"}));
  f.duration_ms = 0;
  EXPECT_EQ(ids(core.list_transactions(f, now)), (names{"ca", "cc", "e", "o", "pa", "pc"}));
}

TEST_F(CoordinatorAdmin, ListTransactionsDurationFilterAlwaysPassesEmptyIdsWithStartMinusOne) {
  // Kafka's quirk (docs/transactions.md §Admin): Empty has txn_start_ms -1, so
  // now - (-1) exceeds any duration below now + 1.
  list_transactions_filter f;
  f.duration_ms = now;
  EXPECT_EQ(ids(core.list_transactions(f, now)), names{"e"});
  f.duration_ms = now + 1;
  EXPECT_EQ(ids(core.list_transactions(f, now)), names{});
}

TEST_F(CoordinatorAdmin, ListTransactionsNegativeDurationFiltersNothing) {
  list_transactions_filter f;
  f.duration_ms = -1;
  EXPECT_EQ(core.list_transactions(f, now).transactions.size(), 6u);
}

TEST_F(CoordinatorAdmin, ListTransactionsCombinesAllFilters) {
  list_transactions_filter f;
  f.states = {"Ongoing", "PrepareAbort", "Empty"};
  f.producer_ids = {producer_id{53}, producer_id{153}, producer_id{203}, producer_id{3}};
  f.duration_ms = 3500;
  EXPECT_EQ(ids(core.list_transactions(f, now)), (names{"e", "o"}));
}

TEST_F(CoordinatorAdmin, ListTransactionsNeverListsDead) {
  core.load({card_of("gone", 303, txn_state::dead, -1)}, 7);
  ASSERT_NE(core.find("gone"), nullptr);
  EXPECT_EQ(ids(core.list_transactions({}, now)), (names{"ca", "cc", "e", "o", "pa", "pc"}));
  EXPECT_EQ(ids(core.list_transactions(states({"Dead"}), now)), names{});
  list_transactions_filter f;
  f.producer_ids = {producer_id{303}};
  EXPECT_EQ(ids(core.list_transactions(f, now)), names{});
}

TEST_F(CoordinatorAdmin, ListTransactionsShowsTheCurrentStateWhileATransitionIsPending) {
  auto d = core.end_txn("o", producer_id{53}, producer_epoch{2}, true, now);
  ASSERT_TRUE(d.card.has_value());
  ASSERT_TRUE(core.has_pending("o"));
  EXPECT_EQ(core.list_transactions(states({"Ongoing"}), now).transactions,
            (std::vector<transaction_listing>{{"o", producer_id{53}, "Ongoing"}}));
}

// -- DescribeTransactions ---------------------------------------------------------

TEST_F(CoordinatorAdmin, DescribeReturnsTheCurrentCard) {
  auto r = core.describe("pa");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, card_of("pa", 153, txn_state::prepare_abort, 7000, {orders0, orders1}));
  auto e = core.describe("e");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state, txn_state::empty);
  EXPECT_EQ(e->txn_start_ms, -1);
}

TEST_F(CoordinatorAdmin, DescribeUnknownIdIsTransactionalIdNotFound) {
  auto r = core.describe("nobody");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::transactional_id_not_found);
}

TEST_F(CoordinatorAdmin, DescribeDeadIdIsTransactionalIdNotFound) {
  core.load({card_of("gone", 303, txn_state::dead, -1)}, 7);
  auto r = core.describe("gone");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::transactional_id_not_found);
}

TEST_F(CoordinatorAdmin, DescribeEmptyTransactionalIdIsInvalidRequest) {
  auto r = core.describe("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::invalid_request);
}

// -- state names --------------------------------------------------------------------

TEST(TxnStateNames, EveryStateNameParsesBackToItsStateAndOthersDoNot) {
  for (auto s : {txn_state::empty, txn_state::ongoing, txn_state::prepare_commit,
                 txn_state::prepare_abort, txn_state::complete_commit, txn_state::complete_abort,
                 txn_state::dead, txn_state::prepare_epoch_fence})
    EXPECT_EQ(txn_state_from_name(to_string(s)), std::optional<txn_state>{s}) << to_string(s);
  EXPECT_EQ(txn_state_from_name("Unknown"), std::nullopt);
  EXPECT_EQ(txn_state_from_name(""), std::nullopt);
  EXPECT_EQ(txn_state_from_name("COMPLETE_COMMIT"), std::nullopt);
}

} // namespace
} // namespace caftx
