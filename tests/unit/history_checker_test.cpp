// The simulator's history checker: for each rule, a minimal history holding
// exactly that anomaly is reported with exactly that name and event; a
// clean history with two transactional producers, an idempotent producer,
// an abort, offsets in transactions and readers of both isolation levels
// passes; near misses pass too.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tools/sim/history_checker.hpp"

namespace caftx::sim {
namespace {

using found = std::vector<std::pair<std::string, uint64_t>>; // (name, seq)

found names(const std::vector<violation>& vs) {
  found out;
  for (auto& v : vs)
    out.emplace_back(to_string(v.kind), v.seq);
  return out;
}

std::string dump(const std::vector<violation>& vs) {
  std::string s;
  for (auto& v : vs)
    s += "\n  " + to_string(v);
  return s;
}

const topic_partition orders{"orders", 0};
const topic_partition out0{"out", 0};
const topic_partition in0{"in", 0};
const topic_partition in1{"in", 1};

const std::string txn_a = "txn-A";
const std::string txn_b = "txn-B";
constexpr int64_t bound_ms = 60000;

producer_id pid(int64_t v) {
  return producer_id{v};
}

producer_epoch ep(int16_t v) {
  return producer_epoch{v};
}

class HistoryChecker : public ::testing::Test {
protected:
  history h;
  int64_t now = 0; // 10 ms per event

  uint64_t rec(event_body b) {
    now += 10;
    return h.record(now, std::move(b));
  }

  // -- client events -------------------------------------------------------

  uint64_t send_txn(const std::string& tid, int64_t p, int16_t e, const topic_partition& tp,
                    value_id v, txn_number txn) {
    return rec(send_event{tid + "-client", tid, pid(p), ep(e), tp, v, txn});
  }
  uint64_t send_idempotent(int64_t p, int16_t e, const topic_partition& tp, value_id v) {
    return rec(send_event{"idempotent-client", std::nullopt, pid(p), ep(e), tp, v, std::nullopt});
  }
  uint64_t ack(value_id v, int64_t offset) { return rec(ack_event{v, offset}); }
  uint64_t send_failed(value_id v, error_code err) { return rec(send_failed_event{v, err}); }
  uint64_t init(const std::string& tid, int64_t p, int16_t e) {
    return rec(init_transactions_event{tid, pid(p), ep(e)});
  }
  uint64_t begin(const std::string& tid, txn_number txn) { return rec(txn_begin_event{tid, txn}); }
  uint64_t offsets(const std::string& tid, txn_number txn, const std::string& group,
                   const topic_partition& tp, int64_t offset) {
    return rec(txn_offsets_event{tid, txn, group, tp, offset});
  }
  uint64_t commit_ok(const std::string& tid, txn_number txn, int64_t p, int16_t next_epoch) {
    return rec(end_txn_event{tid, txn, control_type::commit, error_code::none, pid(p), ep(next_epoch)});
  }
  uint64_t commit_failed(const std::string& tid, txn_number txn, error_code err) {
    return rec(end_txn_event{tid, txn, control_type::commit, err, no_producer_id, no_producer_epoch});
  }
  uint64_t abort_ok(const std::string& tid, txn_number txn, int64_t p, int16_t next_epoch) {
    return rec(end_txn_event{tid, txn, control_type::abort, error_code::none, pid(p), ep(next_epoch)});
  }

  // -- server events -------------------------------------------------------

  uint64_t write(const topic_partition& tp, int64_t base, int64_t last, int64_t p, int16_t e,
                 bool transactional) {
    return rec(write_accepted_event{tp, base, last, pid(p), ep(e), transactional});
  }
  uint64_t poll(const std::string& reader, isolation_level iso, const topic_partition& tp,
                int64_t fetch_offset, std::vector<polled_record> records, int64_t lso, int64_t hw) {
    return rec(poll_event{reader, iso, tp, fetch_offset, std::move(records), lso, hw});
  }
  uint64_t poll_rc(const std::string& reader, const topic_partition& tp, int64_t fetch_offset,
                   std::vector<polled_record> records, int64_t lso, int64_t hw) {
    return poll(reader, isolation_level::read_committed, tp, fetch_offset, std::move(records), lso, hw);
  }
  uint64_t poll_ru(const std::string& reader, const topic_partition& tp, int64_t fetch_offset,
                   std::vector<polled_record> records, int64_t lso, int64_t hw) {
    return poll(reader, isolation_level::read_uncommitted, tp, fetch_offset, std::move(records), lso,
                hw);
  }
  uint64_t offset_fetch(const std::string& group, const topic_partition& tp, int64_t offset) {
    return rec(offset_fetch_event{group, tp, offset});
  }

  // -- final state ---------------------------------------------------------

  partition_final_state& part(const topic_partition& tp) {
    for (auto& p : h.final.partitions)
      if (p.tp == tp)
        return p;
    h.final.partitions.push_back(partition_final_state{tp, {}, 0, 0, {}, {}});
    return h.final.partitions.back();
  }
  int64_t next_offset(const topic_partition& tp) {
    auto& log = part(tp).log;
    return log.empty() ? 0 : log.back().offset + 1;
  }
  int64_t data(const topic_partition& tp, value_id v, int64_t p, int16_t e, bool transactional) {
    auto off = next_offset(tp);
    part(tp).log.push_back(log_entry::data(off, v, pid(p), ep(e), transactional));
    return off;
  }
  int64_t marker(const topic_partition& tp, control_type type, int64_t p, int16_t e) {
    auto off = next_offset(tp);
    part(tp).log.push_back(log_entry::control(off, type, pid(p), ep(e)));
    return off;
  }

  // init_transactions gives txn-A producer id 4000 epoch 0, and it begins
  // transaction 0: seq 1 and 2.
  void start_txn_a() {
    init(txn_a, 4000, 0);
    begin(txn_a, 0);
  }

  // A transaction's records on `tp`, each value one record written with
  // epoch `e`, then its marker, written with the epoch the EndTxn handed
  // out (e + 1).
  void log_txn(const topic_partition& tp, std::vector<value_id> values, int64_t p, int16_t e,
               control_type end) {
    for (auto v : values)
      data(tp, v, p, e, true);
    marker(tp, end, p, static_cast<int16_t>(e + 1));
  }

  // The run is quiescent from now on; later events come after the bound.
  void quiesce() {
    h.final.quiescent_since_ms = now;
    h.final.liveness_bound_ms = bound_ms;
    now += bound_ms;
  }

  // Final seq and time; every partition settled: high watermark at the log
  // end, last stable offset at the first open transaction (or the HW), and
  // the producer ids with an open transaction.
  void finish() {
    h.final.seq = (h.events.empty() ? 0 : h.events.back().seq) + 1;
    h.final.time_ms = now + 1;
    for (auto& p : h.final.partitions) {
      p.high_watermark = p.log.empty() ? 0 : p.log.back().offset + 1;
      std::map<producer_id, int64_t> open;
      for (auto& e : p.log)
        if (e.is_control)
          open.erase(e.pid);
        else if (e.transactional)
          open.emplace(e.pid, e.offset);
      p.last_stable_offset = p.high_watermark;
      p.open_transactions.clear();
      for (auto& [id, first] : open) {
        p.last_stable_offset = std::min(p.last_stable_offset, first);
        p.open_transactions.push_back(id);
      }
    }
  }

  std::vector<violation> checked() {
    finish();
    return check_history(h);
  }
};

// -- a clean history -----------------------------------------------------------

// docs/producer-state.md §Example and docs/transactions.md
// §Consume-transform-produce with caftx's epoch bump at every EndTxn: txn-A
// aborts its first transaction and commits its second (with offsets),
// txn-B commits one with offsets, an idempotent producer writes in
// between; read_committed and read_uncommitted readers, offset fetches.
TEST_F(HistoryChecker, CleanHistoryWithTwoTransactionalProducersIdempotentProducerAbortAndOffsetsPasses) {
  init(txn_a, 4000, 0);
  init(txn_b, 5000, 2);
  begin(txn_a, 0);
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  write(orders, 0, 1, 4000, 0, true);
  ack(1, 0);
  ack(2, 1);
  begin(txn_b, 0);
  send_txn(txn_b, 5000, 2, orders, 3, 0);
  write(orders, 2, 2, 5000, 2, true);
  ack(3, 2);
  offsets(txn_b, 0, "group", in0, 45);
  send_idempotent(6000, 0, orders, 4);
  write(orders, 3, 3, 6000, 0, false);
  ack(4, 3);
  // txn-A's open transaction at offset 0 holds the LSO for everybody.
  poll_rc("rc-early", orders, 0, {}, 0, 4);
  commit_ok(txn_b, 0, 5000, 3); // COMMIT(5000, epoch 3) at 4
  offset_fetch("group", in0, 45);
  abort_ok(txn_a, 0, 4000, 1); // ABORT(4000, epoch 1) at 5
  begin(txn_a, 1);
  send_txn(txn_a, 4000, 1, orders, 5, 1);
  write(orders, 6, 6, 4000, 1, true);
  ack(5, 6);
  send_txn(txn_a, 4000, 1, out0, 6, 1);
  write(out0, 0, 0, 4000, 1, true);
  ack(6, 0);
  offsets(txn_a, 1, "group", in1, 10);
  commit_ok(txn_a, 1, 4000, 2); // COMMIT(4000, epoch 2) at orders 7, out 1
  quiesce();
  poll_rc("rc", orders, 0, {{2, 3}, {3, 4}, {6, 5}}, 8, 8);
  poll_ru("ru", orders, 0, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {6, 5}}, 8, 8);
  poll_rc("rc", out0, 0, {{0, 6}}, 2, 2);
  offset_fetch("group", in0, 45);
  offset_fetch("group", in1, 10);

  data(orders, 1, 4000, 0, true);
  data(orders, 2, 4000, 0, true);
  data(orders, 3, 5000, 2, true);
  data(orders, 4, 6000, 0, false);
  marker(orders, control_type::commit, 5000, 3);
  marker(orders, control_type::abort, 4000, 1);
  log_txn(orders, {5}, 4000, 1, control_type::commit);
  log_txn(out0, {6}, 4000, 1, control_type::commit);

  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// -- lost_write ------------------------------------------------------------------

TEST_F(HistoryChecker, LostWrite_AcknowledgedValueOfCommittedTransactionMissingFromFinalLog) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  auto acked = ack(1, 0);
  commit_ok(txn_a, 0, 4000, 1);
  part(orders);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"lost_write", acked}})) << dump(vs);
  EXPECT_EQ(acked, 4u);
}

TEST_F(HistoryChecker, LostWrite_AcknowledgedIdempotentValueMissingFromFinalLog) {
  send_idempotent(6000, 0, orders, 1);
  auto acked = ack(1, 0);
  part(orders);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"lost_write", acked}})) << dump(vs);
  EXPECT_EQ(acked, 2u);
}

TEST_F(HistoryChecker, LostWrite_ValueOfTransactionWhoseCommitReturnedOkIsAbortedInTheLog) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  commit_ok(txn_a, 0, 4000, 1);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"lost_write", 4}})) << dump(vs);
}

TEST_F(HistoryChecker, LostWrite_UnacknowledgedValueOfTransactionWhoseCommitReturnedOkMissing) {
  start_txn_a();
  auto sent = send_txn(txn_a, 4000, 0, orders, 1, 0);
  commit_ok(txn_a, 0, 4000, 1);
  part(orders);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"lost_write", sent}})) << dump(vs);
  EXPECT_EQ(sent, 3u);
}

// -- duplicate_write ---------------------------------------------------------------

TEST_F(HistoryChecker, DuplicateWrite_ValueAtTwoOffsetsOfTheFinalLog) {
  send_idempotent(6000, 0, orders, 1);
  ack(1, 0);
  data(orders, 1, 6000, 0, false);
  data(orders, 1, 6000, 0, false);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"duplicate_write", 1}})) << dump(vs);
}

// -- ack_offset_mismatch -------------------------------------------------------------

TEST_F(HistoryChecker, AckOffsetMismatch_AckedOffsetDoesNotHoldTheValue) {
  send_idempotent(6000, 0, orders, 1);
  send_idempotent(6000, 0, orders, 2);
  ack(1, 0);
  auto wrong = ack(2, 0);
  data(orders, 1, 6000, 0, false);
  data(orders, 2, 6000, 0, false);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"ack_offset_mismatch", wrong}})) << dump(vs);
  EXPECT_EQ(wrong, 4u);
}

// -- non_dense_offsets -----------------------------------------------------------------

TEST_F(HistoryChecker, NonDenseOffsets_GapInTheFinalLog) {
  send_idempotent(6000, 0, orders, 1);
  send_idempotent(6000, 0, orders, 2);
  ack(1, 0);
  ack(2, 2);
  part(orders).log = {log_entry::data(0, 1, pid(6000), ep(0), false),
                      log_entry::data(2, 2, pid(6000), ep(0), false)};
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"non_dense_offsets", 5}})) << dump(vs);
  EXPECT_EQ(h.final.seq, 5u);
}

TEST_F(HistoryChecker, NonDenseOffsets_OverlapInTheFinalLog) {
  send_idempotent(6000, 0, orders, 1);
  send_idempotent(6000, 0, orders, 2);
  ack(1, 0);
  part(orders).log = {log_entry::data(0, 1, pid(6000), ep(0), false),
                      log_entry::data(0, 2, pid(6000), ep(0), false)};
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"non_dense_offsets", 4}})) << dump(vs);
}

// -- readers_disagree -------------------------------------------------------------------

TEST_F(HistoryChecker, ReadersDisagree_PollReturnsAnotherValueThanTheFinalLogAtAnOffset) {
  send_idempotent(6000, 0, orders, 1);
  send_idempotent(6000, 0, orders, 2);
  ack(1, 0);
  ack(2, 1);
  poll_ru("r1", orders, 0, {{0, 1}, {1, 2}}, 2, 2);
  auto disagreeing = poll_ru("r2", orders, 0, {{0, 2}}, 2, 2);
  data(orders, 1, 6000, 0, false);
  data(orders, 2, 6000, 0, false);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"readers_disagree", disagreeing}})) << dump(vs);
  EXPECT_EQ(disagreeing, 6u);
}

TEST_F(HistoryChecker, ReadersDisagree_TwoPollsOfAPartitionWithoutFinalLogDiffer) {
  poll_ru("r1", orders, 0, {{0, 1}}, 1, 1);
  poll_ru("r2", orders, 0, {{0, 2}}, 1, 1);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"readers_disagree", 2}})) << dump(vs);
}

// -- aborted_read ------------------------------------------------------------------------

TEST_F(HistoryChecker, AbortedRead_ReadCommittedPollReturnsValueOfAbortedTransaction) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  abort_ok(txn_a, 0, 4000, 1);
  auto read = poll_rc("rc", orders, 0, {{0, 1}}, 2, 2);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"aborted_read", read}})) << dump(vs);
  EXPECT_EQ(read, 6u);
}

// -- uncommitted_read ------------------------------------------------------------------------

// txn-B's open transaction at offset 0 holds the LSO at 0 (head-of-line
// blocking, docs/producer-state.md §LSO): txn-A's committed record at 1 is not readable
// yet although its marker is below the high watermark.
TEST_F(HistoryChecker, UncommittedRead_ReadCommittedPollReturnsRecordAtOrAboveItsLastStableOffset) {
  init(txn_a, 4000, 0);
  init(txn_b, 5000, 0);
  begin(txn_b, 0);
  send_txn(txn_b, 5000, 0, orders, 1, 0);
  ack(1, 0);
  begin(txn_a, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  ack(2, 1);
  commit_ok(txn_a, 0, 4000, 1);
  auto read = poll_rc("rc", orders, 0, {{1, 2}}, 0, 3);
  data(orders, 1, 5000, 0, true);
  log_txn(orders, {2}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"uncommitted_read", read}})) << dump(vs);
  EXPECT_EQ(read, 10u);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].message, "read_committed reader rc got orders-0 offset 1 (value 2), at or above the "
                           "last stable offset 0 it reported");
}

// The partition reported a last stable offset past the open transaction;
// the transaction's marker was not below the high watermark of the poll.
TEST_F(HistoryChecker, UncommittedRead_RecordOfTransactionWhoseMarkerWasNotBelowTheHighWatermark) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  auto read = poll_rc("rc", orders, 0, {{0, 1}}, 1, 1);
  commit_ok(txn_a, 0, 4000, 1);
  log_txn(orders, {1}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"uncommitted_read", read}})) << dump(vs);
}

TEST_F(HistoryChecker, UncommittedRead_RecordOfTransactionStillOpenAtTheEnd) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  auto read = poll_rc("rc", orders, 0, {{0, 1}}, 1, 1);
  data(orders, 1, 4000, 0, true);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"uncommitted_read", read}})) << dump(vs);
}

// -- partial_transaction_read ------------------------------------------------------------------

TEST_F(HistoryChecker, PartialTransactionRead_ReaderSkipsAnEarlierValueOfACommittedTransaction) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  ack(1, 0);
  ack(2, 1);
  commit_ok(txn_a, 0, 4000, 1);
  auto read = poll_rc("rc", orders, 0, {{1, 2}}, 3, 3);
  log_txn(orders, {1, 2}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"partial_transaction_read", read}})) << dump(vs);
  EXPECT_EQ(read, 8u);
}

// -- offsets_without_outputs / outputs_without_offsets ------------------------------------------

TEST_F(HistoryChecker, OffsetsWithoutOutputs_OffsetsOfAbortedTransactionVisible) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, out0, 1, 0);
  ack(1, 0);
  offsets(txn_a, 0, "group", in0, 45);
  abort_ok(txn_a, 0, 4000, 1);
  auto fetched = offset_fetch("group", in0, 45);
  log_txn(out0, {1}, 4000, 0, control_type::abort);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"offsets_without_outputs", fetched}})) << dump(vs);
  EXPECT_EQ(fetched, 7u);
}

TEST_F(HistoryChecker, OutputsWithoutOffsets_CommittedTransactionsOffsetsMissingAtTheEnd) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, out0, 1, 0);
  ack(1, 0);
  offsets(txn_a, 0, "group", in0, 45);
  commit_ok(txn_a, 0, 4000, 1);
  quiesce();
  auto fetched = offset_fetch("group", in0, -1);
  log_txn(out0, {1}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"outputs_without_offsets", fetched}})) << dump(vs);
  EXPECT_EQ(fetched, 7u);
}

// -- epoch_regression -----------------------------------------------------------------------------

TEST_F(HistoryChecker, EpochRegression_InitTransactionsReturnsLowerEpochForSameProducerId) {
  init(txn_a, 4000, 3);
  auto second = init(txn_a, 4000, 2);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"epoch_regression", second}})) << dump(vs);
  EXPECT_EQ(second, 2u);
}

// caftx bumps at every EndTxn: the next InitProducerId must go above the
// epoch the commit handed out, or the committing instance is not fenced.
TEST_F(HistoryChecker, EpochRegression_InitTransactionsNotAboveTheEpochAnEndTxnHandedOut) {
  start_txn_a();
  commit_ok(txn_a, 0, 4000, 1);
  auto second = init(txn_a, 4000, 1);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"epoch_regression", second}})) << dump(vs);
  EXPECT_EQ(second, 4u);
}

// -- zombie_write -----------------------------------------------------------------------------------

// Instance 1 of txn-A (epoch 0) keeps writing after instance 2's
// init_transactions returned epoch 1.
TEST_F(HistoryChecker, ZombieWrite_WriteOfEpochOlderThanInitTransactionsReturned) {
  start_txn_a();
  init(txn_a, 4000, 1);
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  auto accepted = write(orders, 0, 0, 4000, 0, true);
  data(orders, 1, 4000, 0, true);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"zombie_write", accepted}})) << dump(vs);
  EXPECT_EQ(accepted, 5u);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].message, "orders-0 accepted offsets 0-0 of producer id 4000 epoch 0 after epoch 1 had "
                           "been handed out");
}

// The abort of transaction 0 handed out epoch 1; a write of epoch 0 then
// opens a transaction on a partition that transaction 0 never touched.
TEST_F(HistoryChecker, ZombieWrite_TransactionalWriteOfEpochLeftBehindByEndTxn) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, out0, 2, 0);
  write(orders, 0, 0, 4000, 0, true);
  ack(1, 0);
  abort_ok(txn_a, 0, 4000, 1);
  auto accepted = write(out0, 0, 0, 4000, 0, true);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  data(out0, 2, 4000, 0, true);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"zombie_write", accepted}})) << dump(vs);
  EXPECT_EQ(accepted, 8u);
}

// The partition had already written the ABORT marker of epoch 1 and still
// accepted epoch 0 (no init_transactions or EndTxn in the history).
TEST_F(HistoryChecker, ZombieWrite_PartitionAcceptsEpochBelowOneItAlreadyHeld) {
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  write(orders, 0, 0, 4000, 0, true);
  auto accepted = write(orders, 2, 2, 4000, 0, true);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  data(orders, 2, 4000, 0, true);
  marker(orders, control_type::abort, 4000, 2);
  // Value 2 sits in a second range of transaction 0 on orders as well.
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"late_request_effect", 2}, {"zombie_write", accepted}})) << dump(vs);
  ASSERT_EQ(vs.size(), 2u);
  EXPECT_EQ(vs[0].message, "value 2 of txn-A#0 sits at orders-0 offset 2, in a second range of its transaction");
  EXPECT_EQ(vs[1].message, "orders-0 accepted offsets 2-2 of producer id 4000 epoch 0 after the partition "
                           "held epoch 1 at offset 1");
}

// With replicas, a leader that was deposed may have accepted a batch no
// follower had: the new leader's log holds other records at its offsets
// (here the marker of epoch 1 where the old leader put value 2), and the
// write reached nobody. Only writes the final log holds are judged.
TEST_F(HistoryChecker, ZombieWrite_NotForAWriteTruncatedWithADeposedLeader) {
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  write(orders, 0, 0, 4000, 0, true);
  write(orders, 2, 2, 4000, 0, true);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  data(orders, 7, 5000, 0, false);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// -- replica_divergence ----------------------------------------------------------------------------

// Below the high watermark every replica holds the leader's records; above
// it a follower may hold a tail it will truncate.
TEST_F(HistoryChecker, ReplicaDivergence_ADifferentRecordBelowTheHighWatermark) {
  send_idempotent(6000, 0, orders, 1);
  ack(1, 0);
  send_idempotent(6000, 0, orders, 2);
  ack(2, 1);
  data(orders, 1, 6000, 0, false);
  data(orders, 2, 6000, 0, false);
  auto& p = part(orders);
  p.replicas.push_back({1, p.log});
  auto diverged = p.log;
  diverged[1].value = 9;
  p.replicas.push_back({2, diverged});
  auto tail = p.log;
  tail.push_back(log_entry::data(2, 7, pid(6000), ep(0), false)); // above the HW: not judged
  p.replicas.push_back({3, tail});
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"replica_divergence", 5}})) << dump(vs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].message, "orders-0 on node 2: offset 1 holds value 9 of producer id 6000 epoch 0, "
                           "the leader value 2 of producer id 6000 epoch 0");
}

// When quiescent, a replica that lacks a committed record has not caught up:
// its ISR is not whole again.
TEST_F(HistoryChecker, ReplicaDivergence_AReplicaLackingACommittedRecordAtQuiescence) {
  send_idempotent(6000, 0, orders, 1);
  ack(1, 0);
  data(orders, 1, 6000, 0, false);
  data(orders, 2, 6000, 0, false);
  auto& p = part(orders);
  p.replicas.push_back({1, p.log});
  p.replicas.push_back({2, {p.log[0]}});
  quiesce();
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"replica_divergence", 3}})) << dump(vs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].message, "orders-0 on node 2: lacks offset 1 (value 2 of producer id 6000 epoch 0), "
                           "below the high watermark 2");
}

// -- no_progress ------------------------------------------------------------------------------------

// Once the faults stopped a transaction must commit within the bound: an
// abort, a failed commit, or a commit from before the faults stopped do
// not count.
TEST_F(HistoryChecker, NoProgress_NothingCommittedAfterTheFaultsStopped) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  log_txn(orders, {1}, 4000, 0, control_type::commit);
  commit_ok(txn_a, 0, 4000, 1); // before the faults stopped
  h.final.progress_since_ms = now + 1;
  h.final.progress_bound_ms = bound_ms;
  begin(txn_a, 1);
  send_txn(txn_a, 4000, 1, orders, 2, 1);
  log_txn(orders, {2}, 4000, 1, control_type::abort);
  abort_ok(txn_a, 1, 4000, 2);
  begin(txn_a, 2);
  commit_failed(txn_a, 2, error_code::request_timed_out);
  now += bound_ms;
  auto late = begin(txn_a, 3); // the first event after the bound
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"no_progress", late}})) << dump(vs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].message, "no transaction committed in the 60000 ms after the faults stopped");
}

// A commit within the bound is progress; without progress_since_ms the
// rule is not judged at all.
TEST_F(HistoryChecker, NoProgress_ACommitWithinTheBoundPasses) {
  start_txn_a();
  h.final.progress_since_ms = now;
  h.final.progress_bound_ms = bound_ms;
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  log_txn(orders, {1}, 4000, 0, control_type::commit);
  commit_ok(txn_a, 0, 4000, 1);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
  history quiet;
  EXPECT_TRUE(check_history(quiet).empty());
}

// -- late_request_effect ----------------------------------------------------------------------------

// A delayed write of transaction 0 lands inside transaction 1's range on
// orders and is committed with it.
TEST_F(HistoryChecker, LateRequestEffect_ValueOfTransactionLandsInsideALaterTransactionsRange) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  auto late = send_txn(txn_a, 4000, 0, orders, 2, 0);
  ack(1, 0);
  abort_ok(txn_a, 0, 4000, 1);
  begin(txn_a, 1);
  send_txn(txn_a, 4000, 1, orders, 3, 1);
  ack(3, 2);
  commit_ok(txn_a, 1, 4000, 2);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  data(orders, 3, 4000, 1, true);
  data(orders, 2, 4000, 0, true);
  marker(orders, control_type::commit, 4000, 2);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"late_request_effect", late}})) << dump(vs);
  EXPECT_EQ(late, 4u);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].message, "value 2 of txn-A#0 sits at orders-0 offset 3, in the range of txn-A#1");
}

TEST_F(HistoryChecker, LateRequestEffect_ValueOfTransactionWhoseAbortReturnedOkIsCommitted) {
  start_txn_a();
  auto sent = send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  abort_ok(txn_a, 0, 4000, 1);
  log_txn(orders, {1}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"late_request_effect", sent}})) << dump(vs);
  EXPECT_EQ(sent, 3u);
}

// -- stuck_lso ------------------------------------------------------------------------------------------

TEST_F(HistoryChecker, StuckLso_LastStableOffsetBelowHighWatermarkAfterQuiescence) {
  send_idempotent(6000, 0, orders, 1);
  ack(1, 0);
  quiesce();
  data(orders, 1, 6000, 0, false);
  finish();
  part(orders).last_stable_offset = 0;
  auto vs = check_history(h);
  EXPECT_EQ(names(vs), (found{{"stuck_lso", 3}})) << dump(vs);
  EXPECT_EQ(h.final.seq, 3u);
}

TEST_F(HistoryChecker, StuckLso_CoordinatorStillHoldsATransactionOpenAfterQuiescence) {
  start_txn_a();
  quiesce();
  part(orders);
  h.final.coordinator_open_transactions = {{txn_a, pid(4000), ep(0), {orders}}};
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"stuck_lso", 3}})) << dump(vs);
}

// -- open_state_disagreement -----------------------------------------------------------------------------

TEST_F(HistoryChecker, OpenStateDisagreement_PartitionHoldsTransactionTheCoordinatorDoesNot) {
  init(txn_a, 4000, 0);
  quiesce();
  finish();
  part(orders).open_transactions = {pid(4000)};
  auto vs = check_history(h);
  EXPECT_EQ(names(vs), (found{{"open_state_disagreement", 2}})) << dump(vs);
}

// -- ordering and names ---------------------------------------------------------------------------------------

TEST_F(HistoryChecker, ViolationsAreSortedBySequenceNumberThenKind) {
  send_idempotent(6000, 0, orders, 1);
  ack(1, 7);                         // seq 2: offset 7 holds nothing, value 1 is at 0
  init(txn_a, 4000, 3);
  init(txn_a, 4000, 3);              // seq 4
  send_idempotent(6000, 0, orders, 2);
  ack(2, 1);                         // seq 6: lost
  data(orders, 1, 6000, 0, false);
  auto vs = checked();
  EXPECT_EQ(names(vs), (found{{"ack_offset_mismatch", 2}, {"epoch_regression", 4}, {"lost_write", 6}}))
    << dump(vs);
  ASSERT_EQ(vs.size(), 3u);
  EXPECT_EQ(vs[0].message, "value 1 acknowledged at orders-0 offset 7, where the final log holds nothing");
  EXPECT_EQ(vs[1].message, "txn-A was handed producer id 4000 epoch 3 after epoch 3");
  EXPECT_EQ(vs[2].message, "acknowledged value 2 (no transaction) is not in the final log");
}

TEST(HistoryCheckerNames, EveryViolationKindHasItsStableName) {
  using k = violation_kind;
  std::vector<std::pair<violation_kind, std::string>> expected{
    {k::lost_write, "lost_write"},
    {k::duplicate_write, "duplicate_write"},
    {k::ack_offset_mismatch, "ack_offset_mismatch"},
    {k::non_dense_offsets, "non_dense_offsets"},
    {k::readers_disagree, "readers_disagree"},
    {k::aborted_read, "aborted_read"},
    {k::uncommitted_read, "uncommitted_read"},
    {k::partial_transaction_read, "partial_transaction_read"},
    {k::offsets_without_outputs, "offsets_without_outputs"},
    {k::outputs_without_offsets, "outputs_without_offsets"},
    {k::epoch_regression, "epoch_regression"},
    {k::zombie_write, "zombie_write"},
    {k::late_request_effect, "late_request_effect"},
    {k::stuck_lso, "stuck_lso"},
    {k::open_state_disagreement, "open_state_disagreement"},
    {k::replica_divergence, "replica_divergence"},
  };
  for (auto& [kind, text] : expected)
    EXPECT_EQ(to_string(kind), text);
  EXPECT_EQ(to_string(violation{k::stuck_lso, 9, "orders-0"}), "stuck_lso at seq 9: orders-0");
}

// -- near misses: clean ------------------------------------------------------------------------------------------

TEST_F(HistoryChecker, ReadUncommittedReaderSeeingAbortedDataIsClean) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  abort_ok(txn_a, 0, 4000, 1);
  poll_ru("ru", orders, 0, {{0, 1}}, 2, 2);
  poll_rc("rc", orders, 0, {}, 2, 2);
  log_txn(orders, {1}, 4000, 0, control_type::abort);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

TEST_F(HistoryChecker, SendFailedValueMissingFromTheLogIsClean) {
  send_idempotent(6000, 0, orders, 1);
  send_failed(1, error_code::request_timed_out);
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  send_failed(2, error_code::not_enough_replicas);
  commit_failed(txn_a, 0, error_code::transaction_abortable);
  abort_ok(txn_a, 0, 4000, 1);
  part(orders);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

TEST_F(HistoryChecker, ValueWhoseAckWasLostInACommittedTransactionIsClean) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  ack(1, 0);
  commit_ok(txn_a, 0, 4000, 1);
  log_txn(orders, {1, 2}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// The commit timed out on the client, but PrepareCommit was durable and
// the markers committed the transaction.
TEST_F(HistoryChecker, FailedCommitWhoseMarkersCommittedIsClean) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  offsets(txn_a, 0, "group", in0, 45);
  commit_failed(txn_a, 0, error_code::request_timed_out);
  quiesce();
  offset_fetch("group", in0, 45);
  log_txn(orders, {1}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// A consumer restarted from a committed offset inside a transaction (after
// max.poll.records split it) only has to see the rest of it.
TEST_F(HistoryChecker, ReadCommittedReaderResumingInsideATransactionIsClean) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  send_txn(txn_a, 4000, 0, orders, 3, 0);
  commit_ok(txn_a, 0, 4000, 1);
  poll_rc("rc-1", orders, 0, {{0, 1}}, 4, 4);
  poll_rc("rc-1", orders, 1, {{1, 2}}, 4, 4);
  poll_rc("rc-2", orders, 1, {{1, 2}, {2, 3}}, 4, 4);
  log_txn(orders, {1, 2, 3}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// The abort handed out epoch 1 before the ABORT marker reached orders; a
// write of epoch 0 still in flight got in before the marker and was aborted
// with the transaction: a straggler, not a zombie.
TEST_F(HistoryChecker, StragglerWrittenBeforeTheAbortMarkerIsNotAZombieWrite) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  send_txn(txn_a, 4000, 0, orders, 2, 0);
  write(orders, 0, 0, 4000, 0, true);
  ack(1, 0);
  send_failed(2, error_code::request_timed_out);
  abort_ok(txn_a, 0, 4000, 1);
  write(orders, 1, 1, 4000, 0, true);
  log_txn(orders, {1, 2}, 4000, 0, control_type::abort);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// Transaction 0 aborted with offset 45; transaction 1 re-read the same
// input and committed offset 45 again.
TEST_F(HistoryChecker, OffsetOfAbortedTransactionCommittedAgainByALaterOneIsClean) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, out0, 1, 0);
  offsets(txn_a, 0, "group", in0, 45);
  abort_ok(txn_a, 0, 4000, 1);
  begin(txn_a, 1);
  send_txn(txn_a, 4000, 1, out0, 2, 1);
  offsets(txn_a, 1, "group", in0, 45);
  commit_ok(txn_a, 1, 4000, 2);
  quiesce();
  offset_fetch("group", in0, 45);
  log_txn(out0, {1}, 4000, 0, control_type::abort);
  log_txn(out0, {2}, 4000, 1, control_type::commit);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

// An offset fetch made before the run had been quiescent for the bound
// may precede the commit marker on the offsets partition: not judged.
TEST_F(HistoryChecker, OffsetFetchBeforeTheLivenessBoundIsNotJudgedForMissingOffsets) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, out0, 1, 0);
  offsets(txn_a, 0, "group", in0, 45);
  commit_ok(txn_a, 0, 4000, 1);
  h.final.quiescent_since_ms = now;
  h.final.liveness_bound_ms = bound_ms;
  offset_fetch("group", in0, -1);
  now += bound_ms;
  log_txn(out0, {1}, 4000, 0, control_type::commit);
  auto vs = checked();
  EXPECT_TRUE(vs.empty()) << dump(vs);
}

TEST_F(HistoryChecker, LivenessRulesWaitForTheBound) {
  start_txn_a();
  send_txn(txn_a, 4000, 0, orders, 1, 0);
  ack(1, 0);
  data(orders, 1, 4000, 0, true);
  h.final.coordinator_open_transactions = {{txn_a, pid(4000), ep(0), {orders}}};
  h.final.quiescent_since_ms = now;
  h.final.liveness_bound_ms = bound_ms;
  finish();
  h.final.time_ms = now + bound_ms - 1;
  auto early = check_history(h);
  EXPECT_TRUE(early.empty()) << dump(early);
  h.final.time_ms = now + bound_ms;
  auto vs = check_history(h);
  EXPECT_EQ(names(vs), (found{{"stuck_lso", 5}, {"stuck_lso", 5}})) << dump(vs);
  EXPECT_EQ(vs.at(0).message, "orders-0: last stable offset 0 below high watermark 1 after quiescence");
  EXPECT_EQ(vs.at(1).message,
            "the transaction coordinator still holds txn-A (producer id 4000) open after quiescence");
}

} // namespace
} // namespace caftx::sim
