// transaction_manager: the Java client's TransactionManager state machine
// (docs/errors.md §Client-states), abortable vs fatal errors, per-partition sequences.

#include <gtest/gtest.h>

#include <climits>

#include "actors/client/transaction_manager.hpp"
#include "unit_test_support.hpp"

namespace caftx {

void PrintTo(client_txn_state s, std::ostream* os) {
  *os << to_string(s);
}

namespace {

const topic_partition tp0{"orders", 0};
const topic_partition tp1{"orders", 1};

// A transactional manager that is initialized (pid 4000, epoch 0).
transaction_manager ready_manager() {
  transaction_manager tm{true};
  EXPECT_TRUE(tm.begin_init().ok());
  tm.init_succeeded(producer_id{4000}, producer_epoch{0});
  return tm;
}

transaction_manager in_transaction_manager() {
  auto tm = ready_manager();
  EXPECT_TRUE(tm.begin_transaction().ok());
  return tm;
}

TEST(TransactionManager, HappyPathInitBeginCommitAbort) {
  transaction_manager tm{true};
  EXPECT_EQ(tm.state(), client_txn_state::uninitialized);
  ASSERT_TRUE(tm.begin_init().ok());
  EXPECT_EQ(tm.state(), client_txn_state::initializing);
  tm.init_succeeded(producer_id{4000}, producer_epoch{3});
  EXPECT_EQ(tm.state(), client_txn_state::ready);
  EXPECT_EQ(tm.pid(), producer_id{4000});
  EXPECT_EQ(tm.epoch(), producer_epoch{3});
  ASSERT_TRUE(tm.begin_transaction().ok());
  EXPECT_EQ(tm.state(), client_txn_state::in_transaction);
  EXPECT_TRUE(tm.check_send().ok());
  ASSERT_TRUE(tm.begin_commit().ok());
  EXPECT_EQ(tm.state(), client_txn_state::committing_transaction);
  tm.end_succeeded();
  EXPECT_EQ(tm.state(), client_txn_state::ready);
  ASSERT_TRUE(tm.begin_transaction().ok());
  ASSERT_TRUE(tm.begin_abort().ok());
  EXPECT_EQ(tm.state(), client_txn_state::aborting_transaction);
  tm.end_succeeded();
  EXPECT_EQ(tm.state(), client_txn_state::ready);
}

TEST(TransactionManager, CallsBeforeInitAreInvalidTxnState) {
  transaction_manager tm{true};
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.check_send().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.begin_commit().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.begin_abort().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.state(), client_txn_state::uninitialized);
  // While InitProducerId is in flight, still nothing else.
  ASSERT_TRUE(tm.begin_init().ok());
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.state(), client_txn_state::initializing);
}

TEST(TransactionManager, CallsOutOfOrderAreInvalidTxnState) {
  auto tm = ready_manager();
  // Ready: no send, commit or abort without a transaction.
  EXPECT_EQ(tm.check_send().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.begin_commit().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.begin_abort().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.state(), client_txn_state::ready);
  // In a transaction: no second begin, no init.
  ASSERT_TRUE(tm.begin_transaction().ok());
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.begin_init().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.state(), client_txn_state::in_transaction);
  // Committing: no send, no abort, no begin; repeating the commit is the
  // retry of a commit that timed out (KIP-588) and stays committing.
  ASSERT_TRUE(tm.begin_commit().ok());
  EXPECT_EQ(tm.check_send().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.begin_abort().code(), error_code::invalid_txn_state);
  EXPECT_TRUE(tm.begin_commit().ok());
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.state(), client_txn_state::committing_transaction);
  auto st = tm.begin_abort();
  EXPECT_EQ(st.message(), "cannot abort in state COMMITTING_TRANSACTION");
}

TEST(TransactionManager, IdempotentProducerSendsAfterInitAndCannotBeginTransaction) {
  transaction_manager tm{false};
  EXPECT_EQ(tm.check_send().code(), error_code::invalid_txn_state);
  ASSERT_TRUE(tm.begin_init().ok());
  tm.init_succeeded(producer_id{9}, producer_epoch{0});
  EXPECT_TRUE(tm.check_send().ok());
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_txn_state);
  EXPECT_EQ(tm.state(), client_txn_state::ready);
  // An abortable produce error does not change its state.
  tm.fail(error_class::abortable, status{error_code::out_of_order_sequence_number, "gap"});
  EXPECT_EQ(tm.state(), client_txn_state::ready);
  EXPECT_TRUE(tm.check_send().ok());
}

TEST(TransactionManager, AbortableErrorAllowsOnlyAbort) {
  auto tm = in_transaction_manager();
  tm.fail(error_class::abortable, status{error_code::invalid_producer_epoch, "epoch 0 < 1"});
  EXPECT_EQ(tm.state(), client_txn_state::abortable_error);
  for (auto st : {tm.check_send(), tm.begin_commit(), tm.begin_transaction(), tm.begin_init()}) {
    EXPECT_EQ(st.code(), error_code::invalid_producer_epoch);
    EXPECT_EQ(st.message(), "transaction must be aborted first: INVALID_PRODUCER_EPOCH: epoch 0 < 1");
  }
  EXPECT_EQ(tm.state(), client_txn_state::abortable_error);
  ASSERT_TRUE(tm.begin_abort().ok());
  EXPECT_EQ(tm.state(), client_txn_state::aborting_transaction);
  tm.end_succeeded();
  EXPECT_EQ(tm.state(), client_txn_state::ready);
  EXPECT_TRUE(tm.begin_transaction().ok());
}

TEST(TransactionManager, AbortableErrorWhileCommittingAllowsOnlyAbort) {
  auto tm = in_transaction_manager();
  ASSERT_TRUE(tm.begin_commit().ok());
  tm.fail(error_class::abortable, status{error_code::invalid_producer_id_mapping, "x"});
  EXPECT_EQ(tm.state(), client_txn_state::abortable_error);
  EXPECT_EQ(tm.begin_commit().code(), error_code::invalid_producer_id_mapping);
  EXPECT_TRUE(tm.begin_abort().ok());
}

TEST(TransactionManager, AbortableErrorOutsideTransactionIsFatal) {
  auto tm = ready_manager();
  tm.fail(error_class::abortable, status{error_code::invalid_producer_id_mapping, "x"});
  EXPECT_EQ(tm.state(), client_txn_state::fatal_error);
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_producer_id_mapping);
}

TEST(TransactionManager, FatalErrorMakesEveryLaterCallReturnTheSameError) {
  auto tm = in_transaction_manager();
  tm.fail(error_class::fatal, status{error_code::producer_fenced, "epoch 0 is fenced"});
  EXPECT_EQ(tm.state(), client_txn_state::fatal_error);
  for (auto st : {tm.check_send(), tm.begin_commit(), tm.begin_abort(), tm.begin_transaction(),
                  tm.begin_init()}) {
    EXPECT_EQ(st.code(), error_code::producer_fenced);
    EXPECT_EQ(st.message(), "epoch 0 is fenced");
  }
  // Later errors do not replace the first one; the state is terminal.
  tm.fail(error_class::abortable, status{error_code::invalid_txn_state, "later"});
  tm.fail(error_class::fatal, status{error_code::invalid_request, "later"});
  EXPECT_EQ(tm.state(), client_txn_state::fatal_error);
  EXPECT_EQ(tm.last_error().code(), error_code::producer_fenced);
  EXPECT_EQ(tm.begin_abort().message(), "epoch 0 is fenced");
}

TEST(TransactionManager, FatalErrorDuringInitIsTerminal) {
  transaction_manager tm{true};
  ASSERT_TRUE(tm.begin_init().ok());
  tm.fail(error_class::fatal, status{error_code::invalid_transaction_timeout, "too long"});
  EXPECT_EQ(tm.begin_init().code(), error_code::invalid_transaction_timeout);
  EXPECT_EQ(tm.begin_transaction().code(), error_code::invalid_transaction_timeout);
}

TEST(TransactionManager, PartitionsAreForgottenAtTheEndOfATransactionAndOnInit) {
  auto tm = in_transaction_manager();
  tm.mark_added(tp0);
  tm.mark_offsets_added();
  ASSERT_TRUE(tm.begin_commit().ok());
  tm.end_succeeded();
  EXPECT_FALSE(tm.is_added(tp0));
  EXPECT_FALSE(tm.offsets_added());
  ASSERT_TRUE(tm.begin_transaction().ok());
  // After an abortable error with an epoch bump, a new identity starts
  // afresh.
  tm.mark_added(tp0);
  tm.require_epoch_bump();
  tm.fail(error_class::abortable, status{error_code::out_of_order_sequence_number, "gap"});
  ASSERT_TRUE(tm.begin_abort().ok());
  tm.end_succeeded();
  ASSERT_TRUE(tm.begin_init().ok());
  tm.init_succeeded(producer_id{4000}, producer_epoch{1});
  EXPECT_FALSE(tm.epoch_bump_required());
  EXPECT_FALSE(tm.is_added(tp0));
  EXPECT_EQ(tm.epoch(), producer_epoch{1});
}

TEST(TransactionManager, InvalidProducerIdMappingSkipsEndTxnUntilTheNextIdentity) {
  auto tm = in_transaction_manager();
  tm.mark_added(tp0);
  ASSERT_TRUE(tm.needs_end_txn());
  // AddPartitionsToTxn of an expired transactional id (Kafka's
  // beginCompletingTransaction: EndTxn skipped, InitProducerId instead).
  tm.fail(error_class::abortable, status{error_code::invalid_producer_id_mapping, "expired"});
  EXPECT_EQ(tm.state(), client_txn_state::abortable_error);
  EXPECT_TRUE(tm.pid_mapping_lost());
  EXPECT_TRUE(tm.epoch_bump_required());
  EXPECT_FALSE(tm.needs_end_txn());
  ASSERT_TRUE(tm.begin_abort().ok());
  EXPECT_FALSE(tm.needs_end_txn());
  tm.end_succeeded();
  ASSERT_TRUE(tm.begin_init().ok());
  tm.init_succeeded(producer_id{4050}, producer_epoch{0});
  EXPECT_FALSE(tm.pid_mapping_lost());
  EXPECT_FALSE(tm.epoch_bump_required());
  ASSERT_TRUE(tm.begin_transaction().ok());
  tm.mark_added(tp0);
  EXPECT_TRUE(tm.needs_end_txn());
}

TEST(TransactionManager, UnknownProducerIdBumpsTheEpochAfterAnAbortThatStillSendsEndTxn) {
  auto tm = in_transaction_manager();
  tm.mark_added(tp0);
  tm.fail(error_class::abortable, status{error_code::unknown_producer_id, "unknown"});
  EXPECT_TRUE(tm.epoch_bump_required());
  EXPECT_FALSE(tm.pid_mapping_lost());
  ASSERT_TRUE(tm.begin_abort().ok());
  EXPECT_TRUE(tm.needs_end_txn());
}

TEST(TransactionManager, EndTxnNeededOnlyAfterSomethingWasAdded) {
  auto tm = in_transaction_manager();
  EXPECT_FALSE(tm.needs_end_txn());
  tm.mark_offsets_added();
  EXPECT_TRUE(tm.needs_end_txn());
  tm.end_succeeded();
  EXPECT_FALSE(tm.needs_end_txn());
  tm.mark_added(tp1);
  EXPECT_TRUE(tm.is_added(tp1));
  EXPECT_FALSE(tm.is_added(tp0));
  EXPECT_TRUE(tm.needs_end_txn());
}

} // namespace
} // namespace caftx
