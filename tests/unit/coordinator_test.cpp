// txn_coordinator_core: every transition with the card it persists
// (docs/transactions.md §Durability, §Transitions), the request checks of
// §InitProducerId, §AddPartitionsToTxn and §EndTxn with KIP-890's epoch
// bump at EndTxn, the timeout abort (T10), load (§Load) and
// producer id allocation per shard.
//
// CHECKLIST. Every check of docs/transactions.md §Request checks, every
// row of the §States table and every transition of §Transitions (section
// names below are that page's), with the test that fails without it
// (or why there is none). Tests are named Suite.Test; the suites
// TxnCoordinatorCore, EndTxnTable, CardInFlight, LegalPreviousStates and
// InitProducerIdFromCompletedState are in this file, PartitionCore,
// GroupCoordinatorCore, StorageCodec, VerificationError in tests/unit, and
// RequestChecksTest, MarkersTest, FencingTest, FailedWriteTest,
// TransactionsTest and AdminTest in tests/actors.
// caftx has no authorization: the ACL checks (the steps marked ACL:
// FindCoordinator 1, InitProducerId 1, AddPartitionsToTxn 1-2's WRITE,
// AddOffsetsToTxn 1-2, TxnOffsetCommit 1-3's READ, WriteTxnMarkers 1) do
// not exist.
//
// §States legal previous states, 8 rows x 8 states . LegalPreviousStates.* (64 cells)
// §States Dead / PrepareEpochFence never persisted ... StorageCodec.CardWithAStateThatIsNeverPersistedIsCorrupt,
//                                                     StorageCodec.CardInPrepareEpochFenceIsCorrupt
// §Durability only the pending card completes ...... CompleteAppliesOnlyThePendingCard
// §Durability memory changes only once durable; meanwhile
//      CONCURRENT_TRANSACTIONS; failed write undone . CardInFlight.* (9 transitions), AbortPendingLeavesStateUnchanged
// §Durability failed write answers a retriable error FailedWriteTest.FailedCardWriteLeavesCardUnchangedAndAnswersRetriableError
// §Durability completion invariants (Kafka's asserts) none beyond the two above: caftx's complete() checks
//                                                     only the pending state and the legal transition
// §Transitions T1 new id -> Empty (pid, 0) ......... InitProducerIdForNewIdAllocatesProducerIdWithEpochZero
// T2 Empty/Complete* -> Empty, E+1 .................. InitProducerIdFromCompletedState.* (3 states)
// T3 rotation at 32766 ............................ InitProducerIdAtExhaustedEpochRotatesToNewProducerId,
//    only for no/current expected epoch ............ InitProducerIdAtExhaustedEpochRotatesOnlyWhenExpectedEpochIsCurrent
//    KIP-360 retry with the previous pid ........... InitProducerIdRetryAfterRotationReturnsRotatedProducerId
// T4 fence Ongoing, CONCURRENT_TRANSACTIONS, +2 .... InitProducerIdOnOngoingAbortsWithEpochPlusOneThenRetryBumpsAgain
//    at 32766 -> 32767, then rotation .............. FencingOngoingAtEpoch32766AbortsWith32767ThenRetryRotates
//    at 32767 no bump .............................. FencingOngoingAtEpoch32767AbortsWithoutBumpThenRetryRotates
// T5 Prepare* or pending ........................... InitProducerIdInPrepareCommitIsConcurrentTransactions,
//                                                     InitProducerIdInPrepareAbortIsConcurrentTransactions,
//                                                     InitProducerIdWhileTransitionPendingIsConcurrentTransactions
// T6 -> Ongoing, union, start time ................. AddPartitionsFromEmptyWritesOngoingWithStartTimestamp,
//                                                     AddPartitionsWhileOngoingAddsUnionAndKeepsStartTimestamp,
//                                                     AddPartitionsAfterCompleteCommitStartsNewTransaction
// T7/T8 EndTxn -> Prepare*, E+1 .................... EndTxnTable.CommitInOngoing..., EndTxnTable.AbortInOngoing...
// T9 markers acknowledged -> Complete* ............. EndTxnCommitThenMarkersWrittenCompletesCommit,
//                                                     MarkersTest.MarkersAreRetriedUntilAcknowledgedThenCompleteCommitIsWritten;
//    "leader no longer exists": unreachable, AddPartitions refuses unknown partitions and topics are never deleted
// T10 timeout abort ................................ AbortTimedOutFencesWithEpochPlusOneAfterStartPlusTimeout,
//                                                     TimedOutTransactionAtEpoch32766AbortsWith32767ThenInitProducerIdRotates
// T11 expiration ................................... not on this branch (transactional-id expiration is added elsewhere)
// T12 abort in Empty/Complete* ..................... EndTxnTable.AbortInEmptyBumpsWithoutMarkers, ...AbortWithBumpedEpochInComplete*,
//                                                     MarkersTest.AbortOutsideTransactionCompletesAbortAtOnceWithoutMarkers
// §Identifiers EndTxn bump exhausts the epoch: next pid EndTxnAtExhaustedEpochRotatesToNextProducerIdOnCompletion
//
// §FindCoordinator
//  2 abs(hash) % 50, transaction and group ......... RequestChecksTest.FindCoordinatorForTransactionalIdAnswersTheShardItHashesTo,
//                                                     RequestChecksTest.FindCoordinatorForGroupAnswersTheGroupCoordinatorItHashesTo
//  3-4 no internal topic / leader ................... unreachable: every shard's supervisor exists from node start; a shard
//                                                     given up answers COORDINATOR_NOT_AVAILABLE itself (TransactionsTest.SupervisorGivesUpAfterTooManyRestarts)
//  unknown key type -> INVALID_REQUEST ............. RequestChecksTest.FindCoordinatorWithUnknownKeyTypeIsInvalidRequest
//  empty transactional id -> INVALID_REQUEST ....... RequestChecksTest.FindCoordinatorWithEmptyTransactionalIdIsInvalidRequest
// §InitProducerId
//  2 half (pid, epoch) pair ......................... InitProducerIdWithOnlyOneOfProducerIdAndEpochIsInvalidRequest
//  3 no transactional id, any broker ............... RequestChecksTest.InitProducerIdWithoutTransactionalIdGetsAProducerIdWithEpochZero,
//                                                     RequestChecksTest.InitProducerIdWithTransactionalIdAtTheBrokerIsNotCoordinator
//    ... while shard 0 loads ....................... uncovered: loading is over before a deterministic test can ask
//  4 "" ............................................ InitProducerIdWithEmptyTransactionalIdIsInvalidRequest
//  5 timeout ....................................... InitProducerIdTimeoutOutOfRangeIsInvalidTransactionTimeout
//    order 2, 4, 5 ................................. InitArgsCheckPairThenEmptyIdThenTimeout
//  6 loading, not coordinator ...................... AdmitChecksEmptyIdThenLoadingThenOwnership,
//                                                     FencingTest.RequestsAtTheWrongShardAreNotCoordinator
//    order 2-5 before 6 ............................ RequestChecksTest.InitProducerIdChecksArgumentsBeforeCoordinatorOwnership
//  7 new metadata ................................... T1
//  8 pending ........................................ InitProducerIdWhileTransitionPendingIsConcurrentTransactions
//    order 8 before 9 .............................. InitProducerIdChecksPendingBeforeProducerId
//  9 other producer id ............................. InitProducerIdWithCurrentProducerBumpsAndRetryKeepsEpoch
//    epoch -1 metadata accepts any ................. InitProducerIdWithProducerOfUnknownIdStartsAFreshProducerId
//    previous pid only with exhausted epoch ........ InitProducerIdRetryAfterRotationReturnsRotatedProducerId,
//                                                     InitProducerIdWithPreviousProducerIdAndUnexhaustedEpochIsProducerFenced
//    next pid of a Prepare* card waits ............. InitProducerIdWithNextProducerIdWhilePrepareCommitIsConcurrentTransactions
//    order 9 before 10 and 12 ...................... InitProducerIdChecksProducerIdBeforeState
// 10 Prepare* ...................................... T5
// 11 rotation ...................................... T3
//    no expected epoch: E+1, last epoch forgotten .. InitProducerIdForKnownIdBumpsEpoch, InitProducerIdWithoutExpectedEpochForgetsTheLastEpoch
//    expected == E: E+1; == last: kept (lost reply) InitProducerIdWithCurrentProducerBumpsAndRetryKeepsEpoch
//    last epoch not persisted ...................... InitProducerIdRetryOfLostBumpAfterLoadIsProducerFenced
//    any other epoch: PRODUCER_FENCED .............. InitProducerIdWithCurrentProducerBumpsAndRetryKeepsEpoch,
//                                                     InitProducerIdAtExhaustedEpochRotatesOnlyWhenExpectedEpochIsCurrent
// 12 Ongoing ....................................... T4
// 13 write, mapped error ........................... FailedWriteTest.FailedCardWriteLeavesCardUnchangedAndAnswersRetriableError
// §AddPartitionsToTxn (one error for the whole request: caftx has no per-partition results,
//      so no OPERATION_NOT_ATTEMPTED)
//  2 unknown partition, nothing added .............. RequestChecksTest.AddPartitionsWithAnUnknownPartitionAddsNoneOfThem
//    order 2 before 3-4 ............................ RequestChecksTest.AddPartitionsChecksUnknownPartitionsBeforeTheCoordinator
//  3 "" ............................................ AddPartitionsWithEmptyTransactionalIdIsInvalidRequest
//  4 loading, not coordinator ...................... AdmitChecksEmptyIdThenLoadingThenOwnership, FencingTest.RequestsAtTheWrongShardAreNotCoordinator
//  5 no metadata ................................... AddPartitionsForUnknownIdIsInvalidProducerIdMapping
//  6 other producer id (before 7) .................. AddPartitionsWithWrongProducerIdIsInvalidProducerIdMapping
//    the rotated id of a Prepare* card waits ....... EndTxnAtExhaustedEpochRotatesToNextProducerIdOnCompletion
//  7 other epoch ................................... AddPartitionsWithLowerOrHigherEpochIsProducerFenced
//  8 pending (after 7) ............................. AddPartitionsWhileTransitionPendingIsConcurrentTransactions
//  9 Prepare* (after 7) ............................ AddPartitionsInPrepareCommitOrPrepareAbortIsConcurrentTransactions
//    order 8 before 10 ............................. AddPartitionsChecksPendingBeforeAlreadyPresent
// 10 all present: NONE, no write .................. AddPartitionsAlreadyOngoingWithSamePartitionsWritesNothing,
//                                                     RequestChecksTest.AddPartitionsAlreadyInTheTransactionAnswersNoneWithoutAWrite
// 11 write ......................................... T6
//    verify_only (§Verification): mapping, epoch, Prepare*/EndTxn
//    pending, not in the transaction ............... VerifyChecksMappingThenEpochThenPrepare, VerifyPartitionNotAddedIsTransactionAbortable,
//                                                     VerifyPartitionOfOngoingTransactionIsNone
//    a pending AddPartitions does not block ........ VerifyWhileAddPartitionsIsBeingWrittenAnswersFromTheDurableCard
// §AddOffsetsToTxn
//  3 adds __consumer_offsets-(hash(group) % 50) .... RequestChecksTest.AddOffsetsToTxnAddsTheConsumerOffsetsPartitionOfTheGroup
//    steps 3-11 of AddPartitionsToTxn .............. RequestChecksTest.AddOffsetsToTxnOfFencedProducerIsProducerFenced (same core)
//    empty group id -> INVALID_REQUEST ............. RequestChecksTest.AddOffsetsToTxnWithEmptyGroupIdIsInvalidRequest
// §TxnOffsetCommit
//  3 unknown partition ............................. RequestChecksTest.TxnOffsetCommitForUnknownPartitionIsUnknownTopicOrPartition
//    order 3 before 4 .............................. RequestChecksTest.TxnOffsetCommitChecksUnknownPartitionsBeforeCoordinatorOwnership
//  4 not the group's coordinator ................... RequestChecksTest.TxnOffsetCommitAtAnotherGroupCoordinatorIsNotCoordinator
//    (no loading state: a group coordinator loads before it takes requests)
//  5 verification and its mapping ................. VerificationError.* (5), FencingTest.LateTxnOffsetCommitAfterRestartCannotWaitForTheNextCommit,
//                                                     RequestChecksTest.TxnOffsetCommitOfFencedProducerIsInvalidProducerEpoch
//  6-7 generation/member, metadata size ............ do not exist: caftx has no group membership and no offset metadata
//  8 stale epoch ................................... GroupCoordinatorCore.TxnOffsetCommitWithStaleEpochIsInvalidProducerEpoch,
//                                                     GroupCoordinatorCore.LateTxnOffsetCommitAfterTheMarkerIsInvalidProducerEpoch
//  9 pending until the marker ...................... GroupCoordinatorCore.TxnOffsetsInvisibleUntilCommitMarker, ...AbortMarkerDiscardsPendingOffsets,
//                                                     TransactionsTest.OffsetsBecomeVisibleOnlyWithTheCommitMarker
//    empty group, partitions/offsets length, negative offset -> INVALID_REQUEST:
//                                                     RequestChecksTest.TxnOffsetCommitWithEmptyGroupIdIsInvalidRequest,
//                                                     ...WithMorePartitionsThanOffsetsIsInvalidRequest, ...WithNegativeOffsetIsInvalidRequest
// §EndTxn
//  2-7 "", no metadata, other pid, other epoch,
//      pending, in that order ...................... EndTxnChecksIdThenProducerIdThenEpochThenPending, EndTxnFromFencedProducerIsProducerFenced
//  3 loading, not coordinator ...................... AdmitChecksEmptyIdThenLoadingThenOwnership, FencingTest.RequestsAtTheWrongShardAreNotCoordinator
//    retry = (ended_by_pid, ended_by_epoch) ........ EndTxnTable.Retried* (8 cells), FencingTest.EndTxnBumpsTheEpochAndItsRetryAnswersTheSameIdentity,
//                                                     FencingTest.RestartInCompleteCommitStillRecognisesTheEndTxnRetry
//    no retry of a coordinator's abort ............. EndTxnOfZombieAfterTimeoutAbortIsProducerFencedNotARetry
//    a late EndTxn never ends the next transaction . LateEndTxnOfCommittedTransactionCannotEndTheNextOne
//    a retry while a transition is pending ......... EndTxnRetryWhileTransitionPendingIsConcurrentTransactions
//  8 state dispatch ................................ EndTxnTable.* (19 cells)
//  9 re-validation after the write ................. complete() refusing: CompleteAppliesOnlyThePendingCard; the shell's
//                                                     NOT_COORDINATOR for it cannot happen within one incarnation: uncovered
// §WriteTxnMarkers
//  2 partition not hosted here ..................... MarkersTest.MarkerForPartitionNotHostedIsUnknownTopicOrPartition,
//                                                     AdminTest.AbortOfUnknownPartitionIsUnknownTopicOrPartition
//  3 one control batch, one offset ................. PartitionCore.MarkerThatCompletesNothingChangesNeitherLsoNorIndex
//  4 lower producer epoch .......................... PartitionCore.MarkerWithLowerProducerEpochIsInvalidProducerEpoch
//    version 2: not above the open transaction ..... PartitionCore.CoordinatorMarkerWithEpochOfOpenTransactionIsInvalidProducerEpoch
//    repeated marker without open transaction ok ... PartitionCore.CoordinatorMarkerBumpsEpochSoLateWritesAreFencedAndNextStartsAtZero,
//                                                     TransactionsTest.PrepareCommitIsCompletedAfterNodeRestartAndTheResentMarkerChangesNothing
//    lower coordinator epoch ....................... PartitionCore.MarkerWithLowerCoordinatorEpochIsTransactionCoordinatorFenced
//    order: producer epoch before coordinator epoch  PartitionCore.MarkerChecksProducerEpochBeforeCoordinatorEpoch
//    no open transaction: an offset, no LSO/index .. PartitionCore.MarkerThatCompletesNothingChangesNeitherLsoNorIndex
//  5 offsets partition: marker epoch checks ........ GroupCoordinatorCore.MarkerWithEpochBelowPendingIsInvalidProducerEpoch,
//                                                     GroupCoordinatorCore.MarkerWithEpochOfPendingOffsetsIsInvalidProducerEpoch
//    offsets partition: lower coordinator epoch .... missing in the group coordinator (it keeps no coordinator epochs)
// §Markers: the coordinator's markers
//    INVALID_PRODUCER_EPOCH stops them, no Complete* MarkersTest.InvalidProducerEpochStopsTheMarkersAndCompleteCommitIsNeverWritten
//    TRANSACTION_COORDINATOR_FENCED likewise ....... MarkersTest.TransactionCoordinatorFencedStopsTheMarkersAndCompleteCommitIsNeverWritten
//    other errors, no answer: retried (the failed
//    partitions, once per backoff) until acked ..... MarkersTest.MarkersAreRetriedUntilAcknowledgedThenCompleteCommitIsWritten
//    failed Complete* write: markers again ......... uncovered: the write follows the last acknowledgement in one step
//    re-sent after a restart in Prepare* ........... FencingTest.RestartInPrepareAbortFinishesTheAbort,
//                                                     TransactionsTest.SupervisorRestartsKilledCoordinatorWhichFinishesPrepareCommit

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "actors/coordinator/txn_coordinator_core.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

const topic_partition orders0{"orders", 0};
const topic_partition orders1{"orders", 1};
const topic_partition payments0{"payments", 0};

using parts = std::vector<topic_partition>;

txn_card make_card(const std::string& tid, int64_t pid, int16_t epoch, txn_state state,
                   parts partitions, int64_t start_ms, int64_t update_ms,
                   int32_t timeout_ms = 60000, int64_t previous_pid = -1) {
  txn_card c;
  c.transactional_id = tid;
  c.pid = producer_id{pid};
  c.previous_pid = producer_id{previous_pid};
  c.epoch = producer_epoch{epoch};
  c.txn_timeout_ms = timeout_ms;
  c.state = state;
  c.partitions = std::move(partitions);
  c.txn_start_ms = start_ms;
  c.last_update_ms = update_ms;
  return c;
}

// `c` after a bump from `epoch` (KIP-360's last epoch, kept in the card).
txn_card bumped_from(txn_card c, int16_t epoch) {
  c.last_epoch = producer_epoch{epoch};
  return c;
}

// `c` as decided by the EndTxn of (pid, epoch).
txn_card ended_by(txn_card c, int64_t pid, int16_t epoch) {
  c.ended_by_pid = producer_id{pid};
  c.ended_by_epoch = producer_epoch{epoch};
  return c;
}

init_producer_id_args init_args(const std::string& tid, int32_t timeout_ms = 60000) {
  init_producer_id_args a;
  a.transactional_id = tid;
  a.transaction_timeout_ms = timeout_ms;
  return a;
}

init_producer_id_args init_args_expecting(const std::string& tid, int64_t pid, int16_t epoch) {
  auto a = init_args(tid);
  a.expected_pid = producer_id{pid};
  a.expected_epoch = producer_epoch{epoch};
  return a;
}

class TxnCoordinatorCore : public ::testing::Test {
protected:
  // Shard 3 of 50: producer ids 3, 53, 103, ...
  txn_coordinator_core core{txn_coordinator_settings{3, 50, 900000}};

  // The shell's part: the card is durable, apply it.
  txn_card persist(const txn_decision& d) {
    EXPECT_EQ(d.error, error_code::none) << d.message;
    EXPECT_TRUE(d.card.has_value());
    if (!d.card)
      return {};
    EXPECT_TRUE(core.complete(d));
    EXPECT_FALSE(core.has_pending(d.card->transactional_id));
    return *d.card;
  }

  txn_card init(const std::string& tid, int64_t now_ms) {
    return persist(core.init_producer_id(init_args(tid), now_ms));
  }

  // InitProducerId of txn-A from a producer that knows its (pid, epoch)
  // (KIP-360), persisted.
  txn_card init_expecting(int64_t pid, int16_t epoch, int64_t now_ms) {
    return persist(core.init_producer_id(init_args_expecting("txn-A", pid, epoch), now_ms));
  }

  void expect_init_fenced(int64_t pid, int16_t epoch, int64_t now_ms);

  // txn-A: pid 3, epoch 0, Ongoing{orders-0, orders-1} since 1500.
  void start_ongoing() {
    init("txn-A", 1000);
    persist(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders1, orders0}, 1500));
  }

  const txn_card& card(const std::string& tid) {
    auto c = core.find(tid);
    EXPECT_NE(c, nullptr);
    static txn_card none;
    return c ? *c : none;
  }
};

void expect_rejected(const txn_decision& d, error_code code) {
  EXPECT_EQ(d.error, code) << d.message;
  EXPECT_FALSE(d.card.has_value());
  EXPECT_FALSE(d.send_markers);
}

void TxnCoordinatorCore::expect_init_fenced(int64_t pid, int16_t epoch, int64_t now_ms) {
  expect_rejected(core.init_producer_id(init_args_expecting("txn-A", pid, epoch), now_ms),
                  error_code::producer_fenced);
}

// -- InitProducerId (docs/transactions.md §InitProducerId, T1-T5) --------------

TEST_F(TxnCoordinatorCore, InitProducerIdForNewIdAllocatesProducerIdWithEpochZero) {
  auto d = core.init_producer_id(init_args("txn-A", 45000), 1000);
  EXPECT_EQ(d.error, error_code::none);
  EXPECT_EQ(d.error_after_write, error_code::none);
  EXPECT_FALSE(d.send_markers);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("txn-A", 3, 0, txn_state::empty, {}, -1, 1000, 45000));
  EXPECT_TRUE(core.has_pending("txn-A"));
  EXPECT_EQ(core.next_pid_counter(), 1);
  ASSERT_TRUE(core.complete(d));
  EXPECT_EQ(card("txn-A"), *d.card);
  EXPECT_FALSE(core.has_pending("txn-A"));
}

// Cluster mode (Kafka's ZooKeeper-mode ProducerIdManager): ids come from
// the claimed blocks in order, the next block once one is used up, and
// never from the shard's stripe.
TEST_F(TxnCoordinatorCore, ProducerIdsComeFromClaimedBlocksInOrder) {
  core.use_pid_blocks();
  EXPECT_EQ(core.pids_left(), 0);
  core.add_pid_block(2000, 2001);
  core.add_pid_block(5000, 5999);
  EXPECT_EQ(core.pids_left(), 1002);
  EXPECT_EQ(init("txn-A", 1000).pid, producer_id{2000});
  EXPECT_EQ(core.allocate_idempotent_pid(), producer_id{2001});
  EXPECT_EQ(core.pids_left(), 1000);
  EXPECT_EQ(init("txn-B", 1000).pid, producer_id{5000});
  EXPECT_EQ(core.pids_left(), 999);
  EXPECT_EQ(core.next_pid_counter(), 0); // the stripe's counter is not used
}

TEST_F(TxnCoordinatorCore, StripeModeHasNoBlockCount) {
  EXPECT_EQ(core.pids_left(), -1);
  EXPECT_EQ(init("txn-A", 1000).pid, producer_id{3});
}

TEST_F(TxnCoordinatorCore, InitProducerIdForKnownIdBumpsEpoch) {
  init("txn-A", 1000);
  auto d = core.init_producer_id(init_args("txn-A", 30000), 2000);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("txn-A", 3, 1, txn_state::empty, {}, -1, 2000, 30000));
  persist(d);
  EXPECT_EQ(init("txn-A", 3000), make_card("txn-A", 3, 2, txn_state::empty, {}, -1, 3000));
  EXPECT_EQ(core.next_pid_counter(), 1); // no new producer id
}

TEST_F(TxnCoordinatorCore, InitProducerIdOnOngoingAbortsWithEpochPlusOneThenRetryBumpsAgain) {
  start_ongoing();
  auto fence = core.init_producer_id(init_args("txn-A"), 3000);
  EXPECT_EQ(fence.error, error_code::none);
  EXPECT_EQ(fence.error_after_write, error_code::concurrent_transactions);
  EXPECT_TRUE(fence.send_markers);
  ASSERT_TRUE(fence.card.has_value());
  EXPECT_EQ(*fence.card, make_card("txn-A", 3, 1, txn_state::prepare_abort, {orders0, orders1},
                                   1500, 3000));
  // Memory changes only once the card is durable.
  EXPECT_EQ(card("txn-A").state, txn_state::ongoing);
  EXPECT_EQ(card("txn-A").epoch, producer_epoch{0});
  persist(fence);
  EXPECT_EQ(card("txn-A"), *fence.card);
  // A retry before the markers are written.
  expect_rejected(core.init_producer_id(init_args("txn-A"), 3050),
                  error_code::concurrent_transactions);
  auto done = core.markers_written("txn-A", 3100);
  ASSERT_TRUE(done.has_value());
  EXPECT_FALSE(done->send_markers);
  ASSERT_TRUE(done->card.has_value());
  EXPECT_EQ(*done->card, make_card("txn-A", 3, 1, txn_state::complete_abort, {}, 1500, 3100));
  persist(*done);
  // The retry: epoch + 2 in all.
  EXPECT_EQ(init("txn-A", 3200), make_card("txn-A", 3, 2, txn_state::empty, {}, -1, 3200));
}

TEST_F(TxnCoordinatorCore, InitProducerIdInPrepareCommitIsConcurrentTransactions) {
  start_ongoing();
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000));
  expect_rejected(core.init_producer_id(init_args("txn-A"), 2100),
                  error_code::concurrent_transactions);
  EXPECT_EQ(card("txn-A").state, txn_state::prepare_commit);
  EXPECT_FALSE(core.has_pending("txn-A"));
}

TEST_F(TxnCoordinatorCore, InitProducerIdInPrepareAbortIsConcurrentTransactions) {
  start_ongoing();
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, false, 2000));
  expect_rejected(core.init_producer_id(init_args("txn-A"), 2100),
                  error_code::concurrent_transactions);
  EXPECT_EQ(card("txn-A").state, txn_state::prepare_abort);
  EXPECT_EQ(card("txn-A").epoch, producer_epoch{1}); // bumped by EndTxn, not by InitProducerId
}

TEST_F(TxnCoordinatorCore, InitProducerIdWhileTransitionPendingIsConcurrentTransactions) {
  auto first = core.init_producer_id(init_args("txn-A"), 1000);
  ASSERT_TRUE(first.card.has_value());
  expect_rejected(core.init_producer_id(init_args("txn-A"), 1001),
                  error_code::concurrent_transactions);
  persist(first);
  auto add = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500);
  ASSERT_TRUE(add.card.has_value());
  expect_rejected(core.init_producer_id(init_args("txn-A"), 1501),
                  error_code::concurrent_transactions);
}

TEST_F(TxnCoordinatorCore, InitProducerIdTimeoutOutOfRangeIsInvalidTransactionTimeout) {
  for (int32_t bad : {0, -1, 900001}) {
    SCOPED_TRACE(bad);
    expect_rejected(core.init_producer_id(init_args("txn-A", bad), 1000),
                    error_code::invalid_transaction_timeout);
  }
  EXPECT_EQ(core.find("txn-A"), nullptr);
  EXPECT_EQ(core.next_pid_counter(), 0);
  EXPECT_EQ(init("txn-A", 1000).txn_timeout_ms, 60000);
  EXPECT_EQ(persist(core.init_producer_id(init_args("txn-A", 900000), 1100)).txn_timeout_ms,
            900000);
  EXPECT_EQ(persist(core.init_producer_id(init_args("txn-A", 1), 1200)).txn_timeout_ms, 1);
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithEmptyTransactionalIdIsInvalidRequest) {
  expect_rejected(core.init_producer_id(init_args(""), 1000), error_code::invalid_request);
  // Checked before the timeout (docs/transactions.md §InitProducerId step 4
  // before step 5).
  expect_rejected(core.init_producer_id(init_args("", 0), 1000), error_code::invalid_request);
  EXPECT_EQ(core.find(""), nullptr);
  EXPECT_EQ(core.next_pid_counter(), 0);
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithOnlyOneOfProducerIdAndEpochIsInvalidRequest) {
  auto a = init_args("txn-A");
  a.expected_pid = producer_id{3};
  expect_rejected(core.init_producer_id(a, 1000), error_code::invalid_request);
  auto b = init_args("txn-A");
  b.expected_epoch = producer_epoch{0};
  expect_rejected(core.init_producer_id(b, 1000), error_code::invalid_request);
  // Checked before the timeout (docs/transactions.md §InitProducerId step 2
  // before step 5).
  b.transaction_timeout_ms = 0;
  expect_rejected(core.init_producer_id(b, 1000), error_code::invalid_request);
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithCurrentProducerBumpsAndRetryKeepsEpoch) {
  init("txn-A", 1000);
  // KIP-360: the producer bumps its own epoch after an abortable error.
  EXPECT_EQ(init_expecting(3, 0, 2000),
            bumped_from(make_card("txn-A", 3, 1, txn_state::empty, {}, -1, 2000), 0));
  // Its reply was lost: the retry with the old epoch keeps epoch 1.
  EXPECT_EQ(init_expecting(3, 0, 2100),
            bumped_from(make_card("txn-A", 3, 1, txn_state::empty, {}, -1, 2100), 0));
  // Any other epoch, or another producer id, is fenced.
  expect_init_fenced(3, 5, 2200);
  expect_init_fenced(99, 1, 2200);
  EXPECT_EQ(card("txn-A").epoch, producer_epoch{1});
}

TEST_F(TxnCoordinatorCore, InitProducerIdAtExhaustedEpochRotatesToNewProducerId) {
  core.load({make_card("txn-A", 3, 32765, txn_state::complete_commit, {}, 100, 200)}, 1);
  // 32765 is not exhausted: a plain bump to 32766.
  EXPECT_EQ(init("txn-A", 1000), make_card("txn-A", 3, 32766, txn_state::empty, {}, -1, 1000));
  // 32766 is: new producer id with epoch 0, the old one remembered.
  EXPECT_EQ(init("txn-A", 2000),
            make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 2000, 60000, /*previous*/ 3));
  EXPECT_EQ(core.next_pid_counter(), 2);
  EXPECT_EQ(init("txn-A", 3000),
            make_card("txn-A", 53, 1, txn_state::empty, {}, -1, 3000, 60000, 3));
}

TEST_F(TxnCoordinatorCore, FencingOngoingAtEpoch32766AbortsWith32767ThenRetryRotates) {
  core.load({make_card("txn-A", 3, 32766, txn_state::ongoing, {orders0}, 100, 100)}, 1);
  auto fence = core.init_producer_id(init_args("txn-A"), 1000);
  ASSERT_TRUE(fence.card.has_value());
  EXPECT_EQ(*fence.card, make_card("txn-A", 3, 32767, txn_state::prepare_abort, {orders0}, 100, 1000));
  persist(fence);
  persist(*core.markers_written("txn-A", 1100));
  EXPECT_EQ(init("txn-A", 1200),
            make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1200, 60000, 3));
}

TEST_F(TxnCoordinatorCore, InitProducerIdRetryAfterRotationReturnsRotatedProducerId) {
  // KIP-360: the producer at (3, 32766) bumps; the coordinator rotates to
  // (53, 0); the reply is lost and the producer retries with (3, 32766).
  core.load({make_card("txn-A", 3, 32766, txn_state::empty, {}, -1, 100)}, 1);
  EXPECT_EQ(init_expecting(3, 32766, 1000),
            bumped_from(make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1000, 60000, 3),
                        32766));
  EXPECT_EQ(init_expecting(3, 32766, 1100),
            bumped_from(make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1100, 60000, 3),
                        32766));
  EXPECT_EQ(core.next_pid_counter(), 2); // no second rotation
  // The previous producer id with an unexhausted epoch is fenced.
  expect_init_fenced(3, 5, 1200);
}

struct completed_state {
  const char* name;
  txn_state state;
};

void PrintTo(const completed_state& c, std::ostream* os) {
  *os << c.name;
}

class InitProducerIdFromCompletedState : public ::testing::TestWithParam<completed_state> {};

// T2 from each legal previous state of Empty: epoch + 1, the partitions,
// start timestamp and record of the last EndTxn dropped, the new timeout kept.
TEST_P(InitProducerIdFromCompletedState, BumpsEpochAndWritesEmpty) {
  txn_coordinator_core core{txn_coordinator_settings{3, 50, 900000}};
  auto state = GetParam().state;
  auto loaded = make_card("txn-A", 3, 4, state, {}, state == txn_state::empty ? -1 : 100, 200);
  if (state != txn_state::empty)
    loaded = ended_by(loaded, 3, 3);
  core.load({loaded}, 1);
  auto d = core.init_producer_id(init_args("txn-A", 30000), 1000);
  EXPECT_EQ(d.error, error_code::none) << d.message;
  EXPECT_EQ(d.error_after_write, error_code::none);
  EXPECT_FALSE(d.send_markers);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("txn-A", 3, 5, txn_state::empty, {}, -1, 1000, 30000));
  EXPECT_EQ(core.next_pid_counter(), 1);
}

INSTANTIATE_TEST_SUITE_P(
  T2, InitProducerIdFromCompletedState,
  ::testing::Values(completed_state{"Empty", txn_state::empty},
                    completed_state{"CompleteCommit", txn_state::complete_commit},
                    completed_state{"CompleteAbort", txn_state::complete_abort}),
  [](const ::testing::TestParamInfo<completed_state>& info) { return std::string(info.param.name); });

TEST_F(TxnCoordinatorCore, InitProducerIdChecksPendingBeforeProducerId) {
  init("txn-A", 1000);
  ASSERT_TRUE(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500)
                .card.has_value());
  // Another producer id would be fenced, but the pending write answers first
  // (docs/transactions.md §InitProducerId step 8 before step 9).
  expect_rejected(core.init_producer_id(init_args_expecting("txn-A", 99, 0), 1600),
                  error_code::concurrent_transactions);
}

TEST_F(TxnCoordinatorCore, InitProducerIdChecksProducerIdBeforeState) {
  // §InitProducerId step 9 before steps 10 (Prepare*) and 12 (Ongoing is
  // fenced).
  for (auto state : {txn_state::prepare_commit, txn_state::prepare_abort, txn_state::ongoing}) {
    SCOPED_TRACE(to_string(state));
    txn_coordinator_core c{txn_coordinator_settings{3, 50, 900000}};
    auto loaded = make_card("txn-A", 3, 4, state, {orders0}, 100, 200);
    c.load({loaded}, 1);
    expect_rejected(c.init_producer_id(init_args_expecting("txn-A", 99, 4), 1000),
                    error_code::producer_fenced);
    EXPECT_EQ(*c.find("txn-A"), loaded); // an Ongoing transaction is not fenced
    EXPECT_FALSE(c.has_pending("txn-A"));
  }
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithProducerOfUnknownIdStartsAFreshProducerId) {
  // KIP-360: a producer whose transactional id expired (or never reached
  // this coordinator) asks with its old identity: epoch -1 metadata accepts it.
  auto d = core.init_producer_id(init_args_expecting("txn-A", 777, 3), 1000);
  EXPECT_EQ(persist(d), make_card("txn-A", 3, 0, txn_state::empty, {}, -1, 1000));
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithNextProducerIdWhilePrepareCommitIsConcurrentTransactions) {
  // The EndTxn reply handed out (53, 0) before its card completes (KIP-890
  // part 2 rotation): that producer waits, it is not fenced (KAFKA-18660).
  core.load({make_card("txn-A", 3, 32765, txn_state::ongoing, {orders0}, 100, 200)}, 1);
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{32765}, true, 1000));
  expect_rejected(core.init_producer_id(init_args_expecting("txn-A", 53, 0), 1100),
                  error_code::concurrent_transactions);
  persist(*core.markers_written("txn-A", 1200));
  EXPECT_EQ(init_expecting(53, 0, 1300),
            bumped_from(make_card("txn-A", 53, 1, txn_state::empty, {}, -1, 1300, 60000, 3), 0));
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithoutExpectedEpochForgetsTheLastEpoch) {
  init("txn-A", 1000);                                                    // (3, 0)
  init_expecting(3, 0, 2000); // (3, 1), last 0
  init("txn-A", 3000); // a new instance: (3, 2), no last epoch
  // The first instance's retries of its bump are fenced now.
  expect_init_fenced(3, 0, 3100);
  expect_init_fenced(3, 1, 3100);
  EXPECT_EQ(card("txn-A"), make_card("txn-A", 3, 2, txn_state::empty, {}, -1, 3000));
}

TEST_F(TxnCoordinatorCore, InitProducerIdRetryOfLostBumpIsRecognisedFromTheLoadedCard) {
  // The last epoch is in the card (docs/transactions.md §Card; Kafka keeps
  // it in memory only and fences this retry after a coordinator change):
  // loaded back, the retry of the bump to (3, 1) gets (3, 1) again.
  core.load({bumped_from(make_card("txn-A", 3, 1, txn_state::empty, {}, -1, 100), 0)}, 1);
  EXPECT_EQ(init_expecting(3, 0, 1000),
            bumped_from(make_card("txn-A", 3, 1, txn_state::empty, {}, -1, 1000), 0));
  // A card without it (no bump since the last fresh InitProducerId) fences.
  core.load({make_card("txn-B", 3, 1, txn_state::empty, {}, -1, 100)}, 1);
  expect_rejected(core.init_producer_id(init_args_expecting("txn-B", 3, 0), 1000),
                  error_code::producer_fenced);
}

TEST_F(TxnCoordinatorCore, InitProducerIdAtExhaustedEpochRotatesOnlyWhenExpectedEpochIsCurrent) {
  core.load({make_card("txn-A", 3, 32765, txn_state::empty, {}, -1, 100)}, 1);
  EXPECT_EQ(init_expecting(3, 32765, 1000),
            bumped_from(make_card("txn-A", 3, 32766, txn_state::empty, {}, -1, 1000), 32765));
  // The retry of that bump (its reply was lost) keeps 32766: no rotation.
  EXPECT_EQ(init_expecting(3, 32765, 1100),
            bumped_from(make_card("txn-A", 3, 32766, txn_state::empty, {}, -1, 1100), 32765));
  // A stale epoch is fenced, not rotated.
  expect_init_fenced(3, 32764, 1200);
  EXPECT_EQ(core.next_pid_counter(), 1);
  // The current epoch rotates (T3).
  EXPECT_EQ(init_expecting(3, 32766, 1300),
            bumped_from(make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1300, 60000, 3),
                        32766));
}

TEST_F(TxnCoordinatorCore, InitProducerIdWithPreviousProducerIdAndUnexhaustedEpochIsProducerFenced) {
  // Only a retry from the exhausted epoch may use the previous producer id
  // (§InitProducerId step 9): a zombie of (3, 0) must not bump the rotated
  // (53, 0).
  core.load({make_card("txn-A", 3, 32766, txn_state::empty, {}, -1, 100)}, 1);
  init_expecting(3, 32766, 1000); // (53, 0)
  expect_init_fenced(3, 0, 1100);
  EXPECT_EQ(card("txn-A"),
            bumped_from(make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1000, 60000, 3),
                        32766));
}

TEST_F(TxnCoordinatorCore, FencingOngoingAtEpoch32767AbortsWithoutBumpThenRetryRotates) {
  // Only a card written before every EndTxn bumped can be Ongoing at 32767:
  // there is no higher epoch, so the abort keeps it (Kafka 4.x).
  core.load({make_card("txn-A", 3, 32767, txn_state::ongoing, {orders0}, 100, 100)}, 1);
  auto fence = core.init_producer_id(init_args("txn-A"), 1000);
  EXPECT_EQ(fence.error_after_write, error_code::concurrent_transactions);
  ASSERT_TRUE(fence.card.has_value());
  EXPECT_EQ(*fence.card, make_card("txn-A", 3, 32767, txn_state::prepare_abort, {orders0}, 100, 1000));
  persist(fence);
  persist(*core.markers_written("txn-A", 1100));
  EXPECT_EQ(init("txn-A", 1200), make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1200, 60000, 3));
}

TEST_F(TxnCoordinatorCore, TimedOutTransactionAtEpoch32766AbortsWith32767ThenInitProducerIdRotates) {
  // T10 at the edge of the epoch range (KAFKA-20090).
  core.load({make_card("txn-A", 3, 32766, txn_state::ongoing, {orders0}, 100, 100)}, 1);
  auto timed_out = core.abort_timed_out(60101);
  ASSERT_EQ(timed_out.size(), 1u);
  EXPECT_EQ(persist(timed_out[0]),
            make_card("txn-A", 3, 32767, txn_state::prepare_abort, {orders0}, 100, 60101));
  persist(*core.markers_written("txn-A", 60200));
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{32766}, true, 60300),
                  error_code::producer_fenced);
  EXPECT_EQ(init("txn-A", 60400),
            make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 60400, 60000, 3));
}

// -- AddPartitionsToTxn (docs/transactions.md §AddPartitionsToTxn, T6) ---------

TEST_F(TxnCoordinatorCore, AddPartitionsFromEmptyWritesOngoingWithStartTimestamp) {
  init("txn-A", 1000);
  auto d = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0},
                               {payments0, orders1, orders0, orders1}, 1500);
  EXPECT_FALSE(d.send_markers);
  EXPECT_EQ(d.error_after_write, error_code::none);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("txn-A", 3, 0, txn_state::ongoing, {orders0, orders1, payments0},
                               1500, 1500));
  EXPECT_EQ(card("txn-A").state, txn_state::empty);
  persist(d);
  EXPECT_EQ(card("txn-A"), *d.card);
}

TEST_F(TxnCoordinatorCore, AddPartitionsAlreadyOngoingWithSamePartitionsWritesNothing) {
  start_ongoing();
  for (auto req : {parts{orders0, orders1}, parts{orders1}, parts{orders0, orders0}}) {
    auto d = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, req, 2000);
    EXPECT_EQ(d.error, error_code::none);
    EXPECT_FALSE(d.card.has_value());
    EXPECT_FALSE(core.has_pending("txn-A"));
  }
  EXPECT_EQ(card("txn-A").last_update_ms, 1500);
}

TEST_F(TxnCoordinatorCore, AddPartitionsWhileOngoingAddsUnionAndKeepsStartTimestamp) {
  start_ongoing();
  auto d = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {payments0, orders0}, 2000);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("txn-A", 3, 0, txn_state::ongoing, {orders0, orders1, payments0},
                               1500, 2000));
}

TEST_F(TxnCoordinatorCore, AddPartitionsAfterCompleteCommitStartsNewTransaction) {
  start_ongoing();
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000));
  persist(*core.markers_written("txn-A", 2100));
  EXPECT_EQ(card("txn-A"),
            ended_by(make_card("txn-A", 3, 1, txn_state::complete_commit, {}, 1500, 2100), 3, 0));
  // The next transaction runs with the epoch the EndTxn reply carried; the
  // record of the last EndTxn is dropped with it.
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {payments0}, 3000),
                  error_code::producer_fenced);
  auto d = core.add_partitions("txn-A", producer_id{3}, producer_epoch{1}, {payments0}, 3000);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("txn-A", 3, 1, txn_state::ongoing, {payments0}, 3000, 3000));
}

TEST_F(TxnCoordinatorCore, AddPartitionsWithEmptyTransactionalIdIsInvalidRequest) {
  expect_rejected(core.add_partitions("", producer_id{3}, producer_epoch{0}, {orders0}, 1000),
                  error_code::invalid_request);
}

TEST_F(TxnCoordinatorCore, AddPartitionsForUnknownIdIsInvalidProducerIdMapping) {
  expect_rejected(core.add_partitions("nobody", producer_id{3}, producer_epoch{0}, {orders0}, 1000),
                  error_code::invalid_producer_id_mapping);
  EXPECT_EQ(core.find("nobody"), nullptr);
}

TEST_F(TxnCoordinatorCore, AddPartitionsWithWrongProducerIdIsInvalidProducerIdMapping) {
  init("txn-A", 1000);
  expect_rejected(core.add_partitions("txn-A", producer_id{53}, producer_epoch{0}, {orders0}, 1500),
                  error_code::invalid_producer_id_mapping);
  // Checked before the epoch.
  expect_rejected(core.add_partitions("txn-A", producer_id{53}, producer_epoch{7}, {orders0}, 1500),
                  error_code::invalid_producer_id_mapping);
}

TEST_F(TxnCoordinatorCore, AddPartitionsWithLowerOrHigherEpochIsProducerFenced) {
  init("txn-A", 1000);
  init("txn-A", 1100); // epoch 1
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500),
                  error_code::producer_fenced);
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{2}, {orders0}, 1500),
                  error_code::producer_fenced);
  EXPECT_EQ(card("txn-A").state, txn_state::empty);
}

TEST_F(TxnCoordinatorCore, AddPartitionsInPrepareCommitOrPrepareAbortIsConcurrentTransactions) {
  for (bool commit : {true, false}) {
    SCOPED_TRACE(commit ? "PrepareCommit" : "PrepareAbort");
    txn_coordinator_core c{txn_coordinator_settings{3, 50, 900000}};
    c.load({make_card("txn-A", 3, 4, commit ? txn_state::prepare_commit : txn_state::prepare_abort,
                      {orders0}, 100, 200)},
           1);
    expect_rejected(c.add_partitions("txn-A", producer_id{3}, producer_epoch{4}, {orders0}, 1000),
                    error_code::concurrent_transactions);
    // The epoch is checked first.
    expect_rejected(c.add_partitions("txn-A", producer_id{3}, producer_epoch{3}, {orders0}, 1000),
                    error_code::producer_fenced);
  }
}

TEST_F(TxnCoordinatorCore, AddPartitionsWhileTransitionPendingIsConcurrentTransactions) {
  init("txn-A", 1000);
  auto first = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500);
  ASSERT_TRUE(first.card.has_value());
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders1}, 1501),
                  error_code::concurrent_transactions);
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{1}, {orders1}, 1501),
                  error_code::producer_fenced);
}

TEST_F(TxnCoordinatorCore, AddPartitionsChecksPendingBeforeAlreadyPresent) {
  start_ongoing();
  // EndTxn is being written: a late AddPartitions of a partition already in
  // the transaction must not be answered NONE (docs/transactions.md
  // §AddPartitionsToTxn step 8 before step 10).
  ASSERT_TRUE(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000).card.has_value());
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 2001),
                  error_code::concurrent_transactions);
}

// -- EndTxn with the epoch bump of KIP-890 part 2, cell by cell ------------------
//
// Loaded card: producer id 3. Ongoing and Empty run at epoch 4; Prepare* and
// Complete* at epoch 5 after the EndTxn of (3, 4). A "retry" carries (3, 4),
// "current" the card's epoch.

struct end_txn_cell {
  const char* name;
  txn_state state;
  bool commit;
  bool retry;
  error_code error;
  bool writes;       // a Prepare* card is produced
  txn_state written; // its state, epoch + 1, ended by the request
};

void PrintTo(const end_txn_cell& c, std::ostream* os) {
  *os << c.name;
}

class EndTxnTable : public ::testing::TestWithParam<end_txn_cell> {};

TEST_P(EndTxnTable, AnswersPerStateResultAndEpoch) {
  auto cell = GetParam();
  txn_coordinator_core core{txn_coordinator_settings{3, 50, 900000}};
  bool in_txn = cell.state == txn_state::ongoing || cell.state == txn_state::prepare_commit
                || cell.state == txn_state::prepare_abort;
  bool after_end = cell.state != txn_state::ongoing && cell.state != txn_state::empty;
  int16_t epoch = after_end ? 5 : 4;
  auto start = cell.state == txn_state::empty ? -1 : 100;
  auto loaded = make_card("txn-A", 3, epoch, cell.state,
                          in_txn ? parts{orders0, orders1} : parts{}, start, 200);
  if (after_end)
    loaded = ended_by(loaded, 3, 4);
  core.load({loaded}, 1);
  // A retry in Ongoing/Empty is simply an older epoch.
  int16_t retry_epoch = after_end ? 4 : static_cast<int16_t>(epoch - 1);
  auto request_epoch = producer_epoch{cell.retry ? retry_epoch : epoch};
  auto d = core.end_txn("txn-A", producer_id{3}, request_epoch, cell.commit, 5000);
  EXPECT_EQ(d.error, cell.error) << d.message;
  if (cell.writes) {
    ASSERT_TRUE(d.card.has_value());
    EXPECT_TRUE(d.send_markers);
    EXPECT_EQ(d.error_after_write, error_code::none);
    EXPECT_EQ(*d.card, ended_by(make_card("txn-A", 3, static_cast<int16_t>(epoch + 1),
                                          cell.written, loaded.partitions, start, 5000),
                                3, epoch));
    EXPECT_TRUE(core.has_pending("txn-A"));
  } else {
    EXPECT_FALSE(d.card.has_value());
    EXPECT_FALSE(d.send_markers);
    EXPECT_FALSE(core.has_pending("txn-A"));
  }
  EXPECT_EQ(*core.find("txn-A"), loaded); // memory unchanged until complete()
}

using s_ = txn_state;
constexpr auto none_ = error_code::none;
constexpr auto cc_ = error_code::concurrent_transactions;
constexpr auto its_ = error_code::invalid_txn_state;
constexpr auto pf_ = error_code::producer_fenced;

INSTANTIATE_TEST_SUITE_P(
  Cells, EndTxnTable,
  ::testing::Values(
    end_txn_cell{"CommitInOngoingWritesPrepareCommitWithEpochPlusOne", s_::ongoing, true, false,
                 none_, true, s_::prepare_commit},
    end_txn_cell{"AbortInOngoingWritesPrepareAbortWithEpochPlusOne", s_::ongoing, false, false,
                 none_, true, s_::prepare_abort},
    end_txn_cell{"RetriedCommitInPrepareCommitIsConcurrentTransactions", s_::prepare_commit, true,
                 true, cc_, false, s_::empty},
    end_txn_cell{"RetriedAbortInPrepareCommitIsInvalidTxnState", s_::prepare_commit, false, true,
                 its_, false, s_::empty},
    end_txn_cell{"RetriedCommitInPrepareAbortIsInvalidTxnState", s_::prepare_abort, true, true,
                 its_, false, s_::empty},
    end_txn_cell{"RetriedAbortInPrepareAbortIsConcurrentTransactions", s_::prepare_abort, false,
                 true, cc_, false, s_::empty},
    end_txn_cell{"RetriedCommitInCompleteCommitIsNoneWithoutWrite", s_::complete_commit, true,
                 true, none_, false, s_::empty},
    end_txn_cell{"RetriedAbortInCompleteCommitIsInvalidTxnState", s_::complete_commit, false, true,
                 its_, false, s_::empty},
    end_txn_cell{"RetriedCommitInCompleteAbortIsInvalidTxnState", s_::complete_abort, true, true,
                 its_, false, s_::empty},
    end_txn_cell{"RetriedAbortInCompleteAbortIsNoneWithoutWrite", s_::complete_abort, false, true,
                 none_, false, s_::empty},
    end_txn_cell{"CommitWithBumpedEpochInPrepareCommitIsConcurrentTransactions",
                 s_::prepare_commit, true, false, cc_, false, s_::empty},
    end_txn_cell{"AbortWithBumpedEpochInPrepareAbortIsConcurrentTransactions", s_::prepare_abort,
                 false, false, cc_, false, s_::empty},
    end_txn_cell{"CommitWithBumpedEpochInCompleteCommitIsInvalidTxnState", s_::complete_commit,
                 true, false, its_, false, s_::empty},
    end_txn_cell{"AbortWithBumpedEpochInCompleteCommitBumpsWithoutMarkers", s_::complete_commit,
                 false, false, none_, true, s_::prepare_abort},
    end_txn_cell{"AbortWithBumpedEpochInCompleteAbortBumpsWithoutMarkers", s_::complete_abort,
                 false, false, none_, true, s_::prepare_abort},
    end_txn_cell{"CommitInEmptyIsInvalidTxnState", s_::empty, true, false, its_, false, s_::empty},
    end_txn_cell{"AbortInEmptyBumpsWithoutMarkers", s_::empty, false, false, none_, true,
                 s_::prepare_abort},
    end_txn_cell{"OlderEpochInOngoingIsProducerFenced", s_::ongoing, true, true, pf_, false,
                 s_::empty},
    end_txn_cell{"OlderEpochInEmptyIsProducerFenced", s_::empty, false, true, pf_, false,
                 s_::empty}),
  [](const ::testing::TestParamInfo<end_txn_cell>& info) { return std::string(info.param.name); });

TEST_F(TxnCoordinatorCore, LateEndTxnOfCommittedTransactionCannotEndTheNextOne) {
  start_ongoing();
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000));
  persist(*core.markers_written("txn-A", 2100));
  persist(core.add_partitions("txn-A", producer_id{3}, producer_epoch{1}, {payments0}, 3000));
  // The first EndTxn, delivered again while the next transaction is open.
  for (bool commit : {true, false})
    expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, commit, 3100),
                    error_code::producer_fenced);
  EXPECT_EQ(card("txn-A"), make_card("txn-A", 3, 1, txn_state::ongoing, {payments0}, 3000, 3000));
  EXPECT_FALSE(core.has_pending("txn-A"));
}

TEST_F(TxnCoordinatorCore, EndTxnOfZombieAfterTimeoutAbortIsProducerFencedNotARetry) {
  start_ongoing(); // epoch 0, start 1500, timeout 60000
  auto fenced = core.abort_timed_out(1500 + 60001);
  ASSERT_EQ(fenced.size(), 1u);
  persist(fenced[0]);
  persist(*core.markers_written("txn-A", 70000));
  EXPECT_EQ(card("txn-A"),
            make_card("txn-A", 3, 1, txn_state::complete_abort, {}, 1500, 70000));
  for (bool commit : {true, false})
    expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, commit, 70100),
                    error_code::producer_fenced);
}

TEST_F(TxnCoordinatorCore, EndTxnAtExhaustedEpochRotatesToNextProducerIdOnCompletion) {
  core.load({make_card("txn-A", 3, 32765, txn_state::ongoing, {orders0}, 100, 200)}, 1);
  auto prepare = core.end_txn("txn-A", producer_id{3}, producer_epoch{32765}, true, 1000);
  ASSERT_TRUE(prepare.card.has_value());
  auto expected = ended_by(make_card("txn-A", 3, 32767, txn_state::prepare_commit, {orders0}, 100,
                                     1000),
                           3, 32765);
  expected.next_pid = producer_id{53};
  EXPECT_EQ(persist(prepare), expected);
  EXPECT_EQ(next_identity(card("txn-A")), std::make_pair(producer_id{53}, producer_epoch{0}));
  // The producer already holds (53, 0): it waits like any other (KAFKA-18660).
  expect_rejected(core.add_partitions("txn-A", producer_id{53}, producer_epoch{0}, {orders0}, 1100),
                  error_code::concurrent_transactions);
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{32765}, true, 1100),
                  error_code::concurrent_transactions);
  auto done = persist(*core.markers_written("txn-A", 1200));
  EXPECT_EQ(done, ended_by(make_card("txn-A", 53, 0, txn_state::complete_commit, {}, 100, 1200,
                                     60000, 3),
                           3, 32765));
  EXPECT_EQ(next_identity(done), std::make_pair(producer_id{53}, producer_epoch{0}));
  // A retry of the EndTxn with the old producer id is still recognised.
  auto retry = core.end_txn("txn-A", producer_id{3}, producer_epoch{32765}, true, 1300);
  EXPECT_EQ(retry.error, error_code::none) << retry.message;
  EXPECT_FALSE(retry.card.has_value());
  persist(core.add_partitions("txn-A", producer_id{53}, producer_epoch{0}, {orders1}, 1400));
}

TEST_F(TxnCoordinatorCore, EndTxnRetryWhileTransitionPendingIsConcurrentTransactions) {
  start_ongoing();
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000));
  persist(*core.markers_written("txn-A", 2100));
  // A new instance's InitProducerId is being written; the retry of the
  // EndTxn waits for it instead of being answered from the old card.
  ASSERT_TRUE(core.init_producer_id(init_args("txn-A"), 2200).card.has_value());
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2201),
                  error_code::concurrent_transactions);
}

// -- verification, KIP-890 part 1 ------------------------------------------------

TEST_F(TxnCoordinatorCore, VerifyPartitionOfOngoingTransactionIsNone) {
  start_ongoing(); // orders0, orders1 at epoch 0
  auto d = core.verify_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders1});
  EXPECT_EQ(d.error, error_code::none) << d.message;
  EXPECT_FALSE(d.card.has_value());
}

TEST_F(TxnCoordinatorCore, VerifyPartitionNotAddedIsTransactionAbortable) {
  start_ongoing();
  expect_rejected(core.verify_partitions("txn-A", producer_id{3}, producer_epoch{0},
                                         {orders0, payments0}),
                  error_code::transaction_abortable);
  init("txn-B", 100);
  expect_rejected(core.verify_partitions("txn-B", producer_id{53}, producer_epoch{0}, {orders0}),
                  error_code::transaction_abortable); // Empty: no transaction at all
}

TEST_F(TxnCoordinatorCore, VerifyChecksMappingThenEpochThenPrepare) {
  start_ongoing();
  expect_rejected(core.verify_partitions("", producer_id{3}, producer_epoch{0}, {orders0}),
                  error_code::invalid_request);
  expect_rejected(core.verify_partitions("nope", producer_id{3}, producer_epoch{0}, {orders0}),
                  error_code::invalid_producer_id_mapping);
  expect_rejected(core.verify_partitions("txn-A", producer_id{53}, producer_epoch{0}, {orders0}),
                  error_code::invalid_producer_id_mapping);
  expect_rejected(core.verify_partitions("txn-A", producer_id{3}, producer_epoch{1}, {orders0}),
                  error_code::producer_fenced);
  // Once EndTxn is being written, no write may join the transaction.
  auto prepare = core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000);
  expect_rejected(core.verify_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}),
                  error_code::concurrent_transactions);
  persist(prepare);
  // Prepare*: the epoch moved on, so the old one is fenced first.
  expect_rejected(core.verify_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}),
                  error_code::producer_fenced);
  expect_rejected(core.verify_partitions("txn-A", producer_id{3}, producer_epoch{1}, {orders0}),
                  error_code::concurrent_transactions);
}

TEST_F(TxnCoordinatorCore, VerifyWhileAddPartitionsIsBeingWrittenAnswersFromTheDurableCard) {
  start_ongoing(); // orders0, orders1
  ASSERT_TRUE(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {payments0}, 2000)
                .card.has_value());
  // A pending Ongoing card does not block writes to the transaction...
  auto d = core.verify_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders1});
  EXPECT_EQ(d.error, error_code::none) << d.message;
  // ...and the partition being added is not in it until its card is durable.
  expect_rejected(core.verify_partitions("txn-A", producer_id{3}, producer_epoch{0}, {payments0}),
                  error_code::transaction_abortable);
}

// -- admission: the first checks of every request --------------------------------

TEST_F(TxnCoordinatorCore, AdmitChecksEmptyIdThenLoadingThenOwnership) {
  // Shard 3 of 50 owns "id-5" (abs(javaHashCode) % 50 == 3), not "txn-A" (26).
  EXPECT_TRUE(core.admit("id-5", false).ok());
  EXPECT_EQ(core.admit("", true).code(), error_code::invalid_request);
  EXPECT_EQ(core.admit("txn-A", true).code(), error_code::coordinator_load_in_progress);
  auto other = core.admit("txn-A", false);
  EXPECT_EQ(other.code(), error_code::not_coordinator);
  EXPECT_EQ(other.message(), "transactional.id 'txn-A' belongs to shard 26, not 3");
}

TEST_F(TxnCoordinatorCore, InitArgsCheckPairThenEmptyIdThenTimeout) {
  auto half = init_args("");
  half.expected_pid = producer_id{3};
  half.transaction_timeout_ms = 0;
  EXPECT_EQ(core.validate_init_args(half).code(), error_code::invalid_request);
  EXPECT_EQ(core.validate_init_args(init_args("", 0)).code(), error_code::invalid_request);
  EXPECT_EQ(core.validate_init_args(init_args("id-5", 0)).code(),
            error_code::invalid_transaction_timeout);
  EXPECT_EQ(core.validate_init_args(init_args("id-5", 900001)).code(),
            error_code::invalid_transaction_timeout);
  EXPECT_TRUE(core.validate_init_args(init_args("id-5", 900000)).ok());
  EXPECT_TRUE(core.validate_init_args(init_args("id-5", 1)).ok());
}

TEST_F(TxnCoordinatorCore, EndTxnCommitThenMarkersWrittenCompletesCommit) {
  start_ongoing();
  auto prepare = core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000);
  EXPECT_TRUE(prepare.send_markers);
  EXPECT_EQ(persist(prepare),
            ended_by(make_card("txn-A", 3, 1, txn_state::prepare_commit, {orders0, orders1}, 1500,
                               2000),
                     3, 0));
  auto done = core.markers_written("txn-A", 2500);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(persist(*done),
            ended_by(make_card("txn-A", 3, 1, txn_state::complete_commit, {}, 1500, 2500), 3, 0));
  // No Prepare* card any more: nothing to complete.
  EXPECT_FALSE(core.markers_written("txn-A", 2600).has_value());
}

// Kafka's transaction version 1 (EndTxn v0-4 from a Kafka client): the
// epoch stays through the end, the card records the version for the
// markers, the next transaction runs at the same epoch, a retry of the
// completed EndTxn is NONE and an abort with nothing open is refused.
TEST_F(TxnCoordinatorCore, EndTxnOfTransactionVersionOneKeepsTheEpoch) {
  start_ongoing();
  auto prepare = core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2000, 1);
  EXPECT_TRUE(prepare.send_markers);
  auto want = ended_by(make_card("txn-A", 3, 0, txn_state::prepare_commit, {orders0, orders1},
                                 1500, 2000),
                       3, 0);
  want.client_transaction_version = 1;
  EXPECT_EQ(persist(prepare), want);
  auto done = core.markers_written("txn-A", 2500);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(persist(*done).epoch, producer_epoch{0});
  // A retry of the commit: NONE, nothing written; the other result is refused.
  auto retry = core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2600, 1);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_FALSE(retry.card.has_value());
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, false, 2600, 1),
                  error_code::invalid_txn_state);
  // The next transaction at the same epoch, aborted.
  persist(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 3000));
  auto abort = core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, false, 3100, 1);
  ASSERT_TRUE(abort.card.has_value());
  EXPECT_EQ(abort.card->epoch, producer_epoch{0});
  EXPECT_EQ(abort.card->state, txn_state::prepare_abort);
  persist(abort);
  persist(*core.markers_written("txn-A", 3200));
  // Fresh InitProducerId, nothing open: an abort is INVALID_TXN_STATE
  // (version 2 would accept it with a bump, T12).
  init("txn-A", 4000);
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{1}, false, 4100, 1),
                  error_code::invalid_txn_state);
}

TEST_F(TxnCoordinatorCore, EndTxnChecksIdThenProducerIdThenEpochThenPending) {
  start_ongoing();
  expect_rejected(core.end_txn("", producer_id{3}, producer_epoch{0}, true, 2000),
                  error_code::invalid_request);
  expect_rejected(core.end_txn("nobody", producer_id{3}, producer_epoch{0}, true, 2000),
                  error_code::invalid_producer_id_mapping);
  expect_rejected(core.end_txn("txn-A", producer_id{53}, producer_epoch{9}, true, 2000),
                  error_code::invalid_producer_id_mapping);
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{1}, true, 2000),
                  error_code::producer_fenced);
  auto pending = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {payments0}, 2000);
  ASSERT_TRUE(pending.card.has_value());
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 2001),
                  error_code::concurrent_transactions);
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{1}, true, 2001),
                  error_code::producer_fenced);
}

TEST_F(TxnCoordinatorCore, EndTxnFromFencedProducerIsProducerFenced) {
  start_ongoing();
  persist(core.init_producer_id(init_args("txn-A"), 3000)); // fence to epoch 1
  expect_rejected(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 3001),
                  error_code::producer_fenced);
}

// -- timeouts (T10) -------------------------------------------------------------

TEST_F(TxnCoordinatorCore, AbortTimedOutFencesWithEpochPlusOneAfterStartPlusTimeout) {
  core.load({make_card("old", 3, 5, txn_state::ongoing, {orders0}, 1000, 1200, 5000),
             make_card("young", 53, 0, txn_state::ongoing, {orders1}, 4000, 4000, 5000),
             make_card("idle", 103, 2, txn_state::empty, {}, -1, 0, 1),
             make_card("done", 153, 2, txn_state::complete_commit, {}, 10, 20, 1)},
            4);
  EXPECT_TRUE(core.abort_timed_out(6000).empty()); // 1000 + 5000 is not < 6000
  auto ds = core.abort_timed_out(6001);
  ASSERT_EQ(ds.size(), 1u);
  auto& d = ds.front();
  EXPECT_EQ(d.error, error_code::none);
  EXPECT_EQ(d.error_after_write, error_code::none);
  EXPECT_TRUE(d.send_markers);
  ASSERT_TRUE(d.card.has_value());
  EXPECT_EQ(*d.card, make_card("old", 3, 6, txn_state::prepare_abort, {orders0}, 1000, 6001, 5000));
  // Pending: not aborted twice.
  EXPECT_TRUE(core.abort_timed_out(6002).empty());
  persist(d);
  // The old producer is fenced.
  expect_rejected(core.end_txn("old", producer_id{3}, producer_epoch{5}, true, 6100),
                  error_code::producer_fenced);
  persist(*core.markers_written("old", 6200));
  EXPECT_EQ(card("old"), make_card("old", 3, 6, txn_state::complete_abort, {}, 1000, 6200, 5000));
  // The young one times out later.
  auto later = core.abort_timed_out(9001);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later.front().card->transactional_id, "young");
  EXPECT_EQ(later.front().card->epoch, producer_epoch{1});
}

// -- transactional-id expiration (T11) ------------------------------------------------

constexpr int64_t expiration_ms = 604800000; // transactional.id.expiration.ms

TEST_F(TxnCoordinatorCore, ExpirationRemovesIdsIdleExactlyExpirationMsAndKeepsOneMsYounger) {
  auto empty = make_card("empty", 3, 0, txn_state::empty, {}, -1, 1000);
  auto commit = make_card("commit", 53, 4, txn_state::complete_commit, {}, 500, 1000);
  auto abort = make_card("abort", 103, 7, txn_state::complete_abort, {}, 500, 1000);
  auto younger = make_card("younger", 153, 1, txn_state::empty, {}, -1, 1001);
  core.load({empty, commit, abort, younger}, 4);
  // Idle expiration - 1 ms: nothing.
  EXPECT_TRUE(core.expire_transactional_ids(1000 + expiration_ms - 1, expiration_ms).empty());
  EXPECT_FALSE(core.has_pending("empty"));
  // Idle exactly expiration ms (last update <= now - expiration): gone.
  auto ids = core.expire_transactional_ids(1000 + expiration_ms, expiration_ms);
  EXPECT_EQ(ids, (std::vector<std::string>{"abort", "commit", "empty"}));
  for (auto& id : ids)
    EXPECT_TRUE(core.has_pending(id)) << id;
  EXPECT_FALSE(core.has_pending("younger"));
  // Until the tombstones are durable the cards stay.
  EXPECT_EQ(card("commit"), commit);
  EXPECT_EQ(core.size(), 4u);
  EXPECT_EQ(core.tombstones_written(ids), 3u);
  EXPECT_EQ(core.find("empty"), nullptr);
  EXPECT_EQ(core.find("commit"), nullptr);
  EXPECT_EQ(core.find("abort"), nullptr);
  EXPECT_EQ(card("younger"), younger);
  EXPECT_EQ(core.size(), 1u);
  // One ms later the younger one goes too.
  EXPECT_EQ(core.expire_transactional_ids(1001 + expiration_ms, expiration_ms),
            std::vector<std::string>{"younger"});
}

TEST_F(TxnCoordinatorCore, ExpirationNeverRemovesOngoingOrPrepareCommitOrPrepareAbort) {
  auto ongoing = make_card("ongoing", 3, 0, txn_state::ongoing, {orders0}, 0, 0, 900000);
  auto pc = make_card("pc", 53, 0, txn_state::prepare_commit, {orders0}, 0, 0);
  auto pa = make_card("pa", 103, 0, txn_state::prepare_abort, {orders0}, 0, 0);
  core.load({ongoing, pc, pa}, 3);
  EXPECT_TRUE(core.expire_transactional_ids(10 * expiration_ms, expiration_ms).empty());
  EXPECT_FALSE(core.has_pending("ongoing"));
  EXPECT_FALSE(core.has_pending("pc"));
  EXPECT_FALSE(core.has_pending("pa"));
  EXPECT_EQ(core.size(), 3u);
}

TEST_F(TxnCoordinatorCore, PendingTransitionBlocksExpirationAndPendingDeadBlocksTransitions) {
  init("busy", 1000);
  init("idle", 1000);
  // "busy" has an AddPartitionsToTxn being written.
  auto add = core.add_partitions("busy", producer_id{3}, producer_epoch{0}, {orders0}, 1000);
  ASSERT_TRUE(add.card.has_value());
  auto ids = core.expire_transactional_ids(1000 + expiration_ms, expiration_ms);
  EXPECT_EQ(ids, std::vector<std::string>{"idle"});
  // While its tombstone is written, "idle" takes no transition and is not
  // expired a second time.
  expect_rejected(core.init_producer_id(init_args("idle"), 1000 + expiration_ms),
                  error_code::concurrent_transactions);
  expect_rejected(core.end_txn("idle", producer_id{53}, producer_epoch{0}, false,
                               1000 + expiration_ms),
                  error_code::concurrent_transactions);
  EXPECT_TRUE(core.expire_transactional_ids(2000 + expiration_ms, expiration_ms).empty());
  EXPECT_EQ(core.tombstones_written(ids), 1u);
  EXPECT_EQ(core.find("idle"), nullptr);
  // The pending transition of "busy" still completes.
  EXPECT_TRUE(core.complete(add));
  EXPECT_EQ(card("busy").state, txn_state::ongoing);
}

TEST_F(TxnCoordinatorCore, FailedTombstoneWriteKeepsTheCardAndClearsPendingDead) {
  auto before = init("txn-A", 1000);
  auto ids = core.expire_transactional_ids(1000 + expiration_ms, expiration_ms);
  ASSERT_EQ(ids, std::vector<std::string>{"txn-A"});
  core.tombstones_failed(ids);
  EXPECT_FALSE(core.has_pending("txn-A"));
  EXPECT_EQ(card("txn-A"), before);
  // The id goes on as before: InitProducerId bumps its epoch...
  EXPECT_EQ(init("txn-A", 2000 + expiration_ms),
            make_card("txn-A", 3, 1, txn_state::empty, {}, -1, 2000 + expiration_ms));
  // ...and a late success of the failed write removes nothing.
  EXPECT_EQ(core.tombstones_written(ids), 0u);
  EXPECT_NE(core.find("txn-A"), nullptr);
}

TEST_F(TxnCoordinatorCore, EntryReplacedWhileItsTombstoneIsWrittenIsKept) {
  core.load({make_card("a", 3, 2, txn_state::complete_commit, {}, 10, 20)}, 1);
  auto ids = core.expire_transactional_ids(20 + expiration_ms, expiration_ms);
  ASSERT_EQ(ids, std::vector<std::string>{"a"});
  auto newer = make_card("a", 3, 3, txn_state::ongoing, {orders0}, 30, 30);
  std::vector<txn_card> chunk{newer};
  std::vector<std::string> in_prepare;
  core.install(chunk, in_prepare);
  EXPECT_EQ(core.tombstones_written(ids), 0u);
  EXPECT_EQ(card("a"), newer);
  EXPECT_FALSE(core.has_pending("a"));
}

TEST_F(TxnCoordinatorCore, ExpiredIdComesBackAsNewWithFreshProducerIdAndEpochZero) {
  init("txn-A", 1000);
  persist(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1100));
  persist(core.end_txn("txn-A", producer_id{3}, producer_epoch{0}, true, 1200));
  persist(*core.markers_written("txn-A", 1300));
  ASSERT_EQ(card("txn-A").state, txn_state::complete_commit);
  ASSERT_EQ(card("txn-A").epoch, producer_epoch{1});
  auto ids = core.expire_transactional_ids(1300 + expiration_ms, expiration_ms);
  ASSERT_EQ(ids, std::vector<std::string>{"txn-A"});
  ASSERT_EQ(core.tombstones_written(ids), 1u);
  // The old producer is unknown now.
  expect_rejected(core.add_partitions("txn-A", producer_id{3}, producer_epoch{1}, {orders0},
                                      1400 + expiration_ms),
                  error_code::invalid_producer_id_mapping);
  // A returning id: T1, the next producer id of the shard, epoch 0.
  EXPECT_EQ(init("txn-A", 1500 + expiration_ms),
            make_card("txn-A", 53, 0, txn_state::empty, {}, -1, 1500 + expiration_ms));
}

// -- completion -------------------------------------------------------------------

TEST_F(TxnCoordinatorCore, CompleteAppliesOnlyThePendingCard) {
  init("txn-A", 1000);
  auto add = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500);
  ASSERT_TRUE(add.card.has_value());
  // A card for a state other than the pending one is refused, even for a
  // legal transition (Empty -> Empty).
  txn_decision wrong = add;
  wrong.card->state = txn_state::empty;
  EXPECT_FALSE(core.complete(wrong));
  EXPECT_EQ(card("txn-A").state, txn_state::empty);
  EXPECT_TRUE(core.has_pending("txn-A"));
  // An unknown id and a decision without a card are refused.
  txn_decision unknown = add;
  unknown.card->transactional_id = "nobody";
  EXPECT_FALSE(core.complete(unknown));
  EXPECT_FALSE(core.complete(txn_decision{}));
  // The real one applies once.
  EXPECT_TRUE(core.complete(add));
  EXPECT_EQ(card("txn-A"), *add.card);
  EXPECT_FALSE(core.complete(add));
  EXPECT_EQ(card("txn-A"), *add.card);
}

TEST_F(TxnCoordinatorCore, AbortPendingLeavesStateUnchanged) {
  init("txn-A", 1000);
  auto add = core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500);
  ASSERT_TRUE(add.card.has_value());
  core.abort_pending("txn-A");
  EXPECT_FALSE(core.has_pending("txn-A"));
  EXPECT_EQ(card("txn-A"), make_card("txn-A", 3, 0, txn_state::empty, {}, -1, 1000));
  EXPECT_FALSE(core.complete(add)); // the failed write can no longer apply
  // A failed fence: the retry fences with the same epoch + 1, not + 2.
  persist(core.add_partitions("txn-A", producer_id{3}, producer_epoch{0}, {orders0}, 1500));
  auto fence = core.init_producer_id(init_args("txn-A"), 2000);
  ASSERT_TRUE(fence.card.has_value());
  EXPECT_EQ(fence.card->epoch, producer_epoch{1});
  core.abort_pending("txn-A");
  EXPECT_EQ(card("txn-A").state, txn_state::ongoing);
  EXPECT_EQ(card("txn-A").epoch, producer_epoch{0});
  auto again = core.init_producer_id(init_args("txn-A"), 2100);
  ASSERT_TRUE(again.card.has_value());
  EXPECT_EQ(*again.card, make_card("txn-A", 3, 1, txn_state::prepare_abort, {orders0}, 1500, 2100));
  // A failed first InitProducerId of a new id: the id stays without epoch.
  auto fresh = core.init_producer_id(init_args("txn-B"), 3000);
  ASSERT_TRUE(fresh.card.has_value());
  core.abort_pending("txn-B");
  EXPECT_EQ(card("txn-B").epoch, no_producer_epoch);
  EXPECT_FALSE(core.has_pending("txn-B"));
}

// -- memory changes only after the card is durable (§Durability) ----------------
//
// For every kind of transition: while its card is being written the state
// is the old one and every request of the producer answers
// CONCURRENT_TRANSACTIONS; a failed write (abort_pending) leaves the state
// exactly as before.

struct in_flight_case {
  const char* name;
  txn_card loaded;
  std::function<txn_decision(txn_coordinator_core&)> start;
};

void PrintTo(const in_flight_case& c, std::ostream* os) {
  *os << c.name;
}

class CardInFlight : public ::testing::TestWithParam<in_flight_case> {};

TEST_P(CardInFlight, LeavesStateUnchangedAndMakesRequestsWait) {
  txn_coordinator_core core{txn_coordinator_settings{3, 50, 900000}};
  auto before = GetParam().loaded;
  core.load({before}, 1);
  auto d = GetParam().start(core);
  ASSERT_TRUE(d.card.has_value()) << d.message;
  EXPECT_TRUE(core.has_pending("txn-A"));
  EXPECT_EQ(*core.find("txn-A"), before);
  expect_rejected(core.init_producer_id(init_args("txn-A"), 90000),
                  error_code::concurrent_transactions);
  expect_rejected(core.add_partitions("txn-A", before.pid, before.epoch, {payments0}, 90000),
                  error_code::concurrent_transactions);
  for (bool commit : {true, false})
    expect_rejected(core.end_txn("txn-A", before.pid, before.epoch, commit, 90000),
                    error_code::concurrent_transactions);
  EXPECT_TRUE(core.abort_timed_out(1000000).empty());
  EXPECT_FALSE(core.markers_written("txn-A", 90000).has_value());
  EXPECT_EQ(*core.find("txn-A"), before);
  // The write failed.
  core.abort_pending("txn-A");
  EXPECT_FALSE(core.has_pending("txn-A"));
  EXPECT_EQ(*core.find("txn-A"), before);
  EXPECT_FALSE(core.complete(d));
  EXPECT_EQ(*core.find("txn-A"), before);
}

txn_card empty_at_4() {
  return make_card("txn-A", 3, 4, txn_state::empty, {}, -1, 200);
}

txn_card ongoing_at_4() {
  return make_card("txn-A", 3, 4, txn_state::ongoing, {orders0}, 100, 200);
}

INSTANTIATE_TEST_SUITE_P(
  Transitions, CardInFlight,
  ::testing::Values(
    in_flight_case{"InitProducerIdBump", empty_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.init_producer_id(init_args("txn-A"), 1000);
                   }},
    in_flight_case{"AddPartitionsFromEmpty", empty_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.add_partitions("txn-A", producer_id{3}, producer_epoch{4}, {orders0},
                                             1000);
                   }},
    in_flight_case{"AddPartitionsWhileOngoing", ongoing_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.add_partitions("txn-A", producer_id{3}, producer_epoch{4}, {orders1},
                                             1000);
                   }},
    in_flight_case{"EndTxnCommit", ongoing_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.end_txn("txn-A", producer_id{3}, producer_epoch{4}, true, 1000);
                   }},
    in_flight_case{"EndTxnAbort", ongoing_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.end_txn("txn-A", producer_id{3}, producer_epoch{4}, false, 1000);
                   }},
    in_flight_case{"EndTxnAbortOutsideTransaction", empty_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.end_txn("txn-A", producer_id{3}, producer_epoch{4}, false, 1000);
                   }},
    in_flight_case{"EpochFence", ongoing_at_4(),
                   [](txn_coordinator_core& c) {
                     return c.init_producer_id(init_args("txn-A"), 1000);
                   }},
    in_flight_case{"TimeoutAbort", ongoing_at_4(),
                   [](txn_coordinator_core& c) {
                     auto ds = c.abort_timed_out(60101);
                     return ds.empty() ? txn_decision{} : ds.front();
                   }},
    in_flight_case{"MarkersWritten",
                   make_card("txn-A", 3, 4, txn_state::prepare_commit, {orders0}, 100, 200),
                   [](txn_coordinator_core& c) {
                     auto d = c.markers_written("txn-A", 1000);
                     return d ? *d : txn_decision{};
                   }}),
  [](const ::testing::TestParamInfo<in_flight_case>& info) { return std::string(info.param.name); });

// -- load and producer ids --------------------------------------------------------

TEST_F(TxnCoordinatorCore, InstallInChunksGathersPrepareIdsAndALaterCardReplacesAnEarlierOne) {
  std::vector<std::string> in_prepare;
  std::vector<txn_card> first{make_card("a", 3, 0, txn_state::prepare_commit, {orders0}, 1, 2),
                              make_card("c", 53, 0, txn_state::empty, {}, -1, 3)};
  core.install(first, in_prepare);
  EXPECT_TRUE(first.empty()); // taken over
  auto b = make_card("b", 103, 0, txn_state::prepare_abort, {orders1}, 4, 5);
  auto c = make_card("c", 53, 1, txn_state::empty, {}, -1, 6);
  std::vector<txn_card> second{b, c};
  core.install(second, in_prepare);
  EXPECT_EQ(in_prepare, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(core.size(), 3u);
  EXPECT_EQ(card("b"), b);
  EXPECT_EQ(card("c"), c);
}

TEST_F(TxnCoordinatorCore, LoadReturnsIdsInPrepareCommitOrPrepareAbort) {
  auto a = make_card("a", 3, 0, txn_state::empty, {}, -1, 10);
  auto b = make_card("b", 53, 1, txn_state::prepare_commit, {orders0}, 20, 30);
  auto c = make_card("c", 103, 2, txn_state::ongoing, {orders1}, 40, 50);
  auto d = make_card("d", 153, 3, txn_state::prepare_abort, {orders0, orders1}, 60, 70);
  auto e = make_card("e", 203, 4, txn_state::complete_abort, {}, 80, 90);
  auto ids = core.load({a, b, c, d, e}, 5);
  EXPECT_EQ(ids, (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(card("a"), a);
  EXPECT_EQ(card("b"), b);
  EXPECT_EQ(card("c"), c);
  EXPECT_EQ(card("d"), d);
  EXPECT_EQ(card("e"), e);
  EXPECT_EQ(core.next_pid_counter(), 5);
  EXPECT_EQ(init("new", 100).pid, producer_id{3 + 50 * 5});
  // The loaded Prepare* cards complete after their markers.
  EXPECT_EQ(persist(*core.markers_written("d", 1000)),
            make_card("d", 153, 3, txn_state::complete_abort, {}, 60, 1000));
  // An Ongoing card resumes with its producer and start timestamp.
  EXPECT_EQ(persist(core.end_txn("c", producer_id{103}, producer_epoch{2}, true, 1100)),
            ended_by(make_card("c", 103, 3, txn_state::prepare_commit, {orders1}, 40, 1100), 103, 2));
}

TEST_F(TxnCoordinatorCore, ProducerIdsOfShardAreShardPlusShardCountTimesK) {
  EXPECT_EQ(init("a", 1).pid, producer_id{3});
  EXPECT_EQ(init("b", 1).pid, producer_id{53});
  EXPECT_EQ(core.allocate_idempotent_pid(), producer_id{103});
  EXPECT_EQ(init("c", 1).pid, producer_id{153});
  EXPECT_EQ(core.next_pid_counter(), 4);

  txn_coordinator_core last{txn_coordinator_settings{49, 50, 900000}};
  EXPECT_EQ(last.allocate_idempotent_pid(), producer_id{49});
  EXPECT_EQ(last.allocate_idempotent_pid(), producer_id{99});
  txn_coordinator_core three{txn_coordinator_settings{0, 3, 900000}};
  three.load({}, 7);
  EXPECT_EQ(three.allocate_idempotent_pid(), producer_id{21});
}


// -- legal previous states (docs/transactions.md §States), all 64 cells ----------

// Kafka's table (docs/transactions.md §States), with caftx's KIP-890 part 2
// addition: PrepareAbort also follows Empty, CompleteCommit and
// CompleteAbort (T12).
bool legal_previous_state(txn_state from, txn_state to) {
  using s = txn_state;
  static const std::map<s, std::set<s>> previous{
    {s::empty, {s::empty, s::complete_commit, s::complete_abort}},
    {s::ongoing, {s::ongoing, s::empty, s::complete_commit, s::complete_abort}},
    {s::prepare_commit, {s::ongoing}},
    {s::prepare_abort,
     {s::ongoing, s::prepare_epoch_fence, s::empty, s::complete_commit, s::complete_abort}},
    {s::complete_commit, {s::prepare_commit}},
    {s::complete_abort, {s::prepare_abort}},
    {s::dead, {s::empty, s::complete_commit, s::complete_abort}},
    {s::prepare_epoch_fence, {s::ongoing}},
  };
  return previous.at(to).count(from) > 0;
}

class LegalPreviousStates : public ::testing::TestWithParam<std::tuple<int, int>> {
protected:
  static txn_state from() { return static_cast<txn_state>(std::get<0>(GetParam())); }
  static txn_state to() { return static_cast<txn_state>(std::get<1>(GetParam())); }
};

TEST_P(LegalPreviousStates, IsValidTransitionFollowsTheTable) {
  EXPECT_EQ(is_valid_transition(from(), to()), legal_previous_state(from(), to()));
}

INSTANTIATE_TEST_SUITE_P(
  AllCells, LegalPreviousStates, ::testing::Combine(::testing::Range(0, 8), ::testing::Range(0, 8)),
  [](const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
    auto from = static_cast<txn_state>(std::get<0>(info.param));
    auto to = static_cast<txn_state>(std::get<1>(info.param));
    return std::string(to_string(from)) + "To" + to_string(to)
           + (legal_previous_state(from, to) ? "IsLegal" : "IsIllegal");
  });


// The cards are hashed by transactional id: what a walk over them decides
// comes out in id order, whatever order the cards were loaded in, so a
// replay (and the simulator) sees the same decisions in the same order.
TEST_F(TxnCoordinatorCore, TimeoutAbortsExpirationsAndListingsComeInTransactionalIdOrder) {
  std::vector<txn_card> ongoing, ended;
  std::vector<std::string> ongoing_ids, ended_ids;
  for (int i = 39; i >= 0; --i) {
    auto n = std::to_string(100 + i);
    ongoing.push_back(make_card("ongoing-" + n, 3 + 50 * i, 0, txn_state::ongoing, {orders0}, 0, 0));
    ended.push_back(make_card("ended-" + n, 2003 + 50 * i, 0, txn_state::complete_commit, {}, 0, 0));
    ongoing_ids.insert(ongoing_ids.begin(), "ongoing-" + n);
    ended_ids.insert(ended_ids.begin(), "ended-" + n);
  }
  core.load(ongoing, 100);
  core.load(ended, 100);
  std::vector<std::string> aborted;
  for (auto& d : core.abort_timed_out(1000000))
    aborted.push_back(d.card ? d.card->transactional_id : "");
  EXPECT_EQ(aborted, ongoing_ids);
  EXPECT_EQ(core.expire_transactional_ids(1000000000, 604800000), ended_ids);
  std::vector<std::string> listed;
  for (auto& t : core.list_transactions({}, 1000000).transactions)
    listed.push_back(t.transactional_id);
  auto all = ended_ids;
  all.insert(all.end(), ongoing_ids.begin(), ongoing_ids.end());
  EXPECT_EQ(listed, all);
}

} // namespace
} // namespace caftx
