// The pure core of a transaction coordinator shard: one partition of
// `__transaction_state` and the state cards of the transactional ids that
// hash to it. Mirrors Kafka's TransactionCoordinator / TransactionMetadata
// for transaction.version 1 (docs/transactions.md). No CAF, no clock, no
// disk: every handler takes `now_ms` and returns a decision; the actor shell
// persists the card, then calls complete(). Not thread-safe.
//
//            AddPartitions            EndTxn(commit)           markers acked
//   Empty ----------------> Ongoing ----------------> PrepareCommit ------> CompleteCommit
//     ^                      |   \  EndTxn(abort), timeout,                     |
//     |  InitProducerId      |    \ InitProducerId (epoch fence)                |
//     +----------------------+     +------------> PrepareAbort ------> CompleteAbort
//     (from Empty / CompleteCommit / CompleteAbort; Ongoing is fenced first)
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ids.hpp"
#include "runtime/status.hpp"
#include "runtime/transaction_admin.hpp"
#include "runtime/txn_card.hpp"

namespace caftx {

/// What the shell must do for a request.
struct txn_decision {
  /// Reply right away with this error when `card` is empty.
  error_code error = error_code::none;
  std::string message;
  /// A transition to persist; the reply waits until it is durable, then
  /// the shell calls complete(card) and replies.
  std::optional<txn_card> card;
  /// The error to reply after the card is durable (CONCURRENT_TRANSACTIONS
  /// after InitProducerId fenced an ongoing transaction), else NONE.
  error_code error_after_write = error_code::none;
  /// After the card is durable, write markers to card->partitions.
  bool send_markers = false;
};

/// Inputs of InitProducerId (docs/transactions.md §InitProducerId).
struct init_producer_id_args {
  std::string transactional_id;
  int32_t transaction_timeout_ms = 60000;
  producer_id expected_pid = no_producer_id;
  producer_epoch expected_epoch = no_producer_epoch;
};

/// ListTransactions of one shard (docs/transactions.md §Admin).
struct list_transactions_result {
  /// Filter state names that name no state, in request order.
  std::vector<std::string> unknown_state_filters;
  /// Sorted by transactional id.
  std::vector<transaction_listing> transactions;
};

/// Static settings of a shard.
struct txn_coordinator_settings {
  int32_t shard = 0;
  int32_t shard_count = 50;
  int32_t transaction_max_timeout_ms = 900000;
};

/// The producer id and epoch a producer continues with after `card`: the
/// next producer id with epoch 0 while a rotation is pending, else the
/// card's own.
inline std::pair<producer_id, producer_epoch> next_identity(const txn_card& card) {
  if (card.next_pid != no_producer_id)
    return {card.next_pid, producer_epoch{0}};
  return {card.pid, card.epoch};
}

class txn_coordinator_core {
public:
  explicit txn_coordinator_core(txn_coordinator_settings settings);

  // -- loading --------------------------------------------------------------

  /// Installs the cards read back from storage and the producer id counter.
  /// Returns the ids whose card is PrepareCommit/PrepareAbort: the shell
  /// re-sends their markers, then completes them (docs/transactions.md §Load).
  std::vector<std::string> load(std::vector<txn_card> cards, int64_t next_pid_counter);

  /// One chunk of a load: installs `cards` (taken over) as read back from
  /// storage, each replacing any entry of its id as a later record of the
  /// compacted `__transaction_state` would, and appends the ids whose card
  /// is PrepareCommit/PrepareAbort to `in_prepare` (docs/transactions.md §Load). Each
  /// card is installed in amortised constant time, whatever the order of
  /// the log.
  void install(std::vector<txn_card>& cards, std::vector<std::string>& in_prepare);
  /// Room for `ids` transactional ids without rehashing (a load's hint).
  void reserve(size_t ids) { txns_.reserve(ids); }

  /// A tombstone read back at load (the id expired): the id is forgotten,
  /// as a later null-value record of the compacted `__transaction_state`
  /// removes its key.
  void forget(const std::string& transactional_id) { txns_.erase(transactional_id); }

  /// Sets the counter behind the next producer id (read back from storage).
  void set_next_pid_counter(int64_t counter) { next_pid_counter_ = counter; }

  /// Cluster mode: producer ids come from blocks claimed cluster-wide on
  /// /producer_id_block (Kafka's ZooKeeper-mode ProducerIdManager, blocks of
  /// 1000) instead of the shard's stripe, so that shards on different nodes,
  /// and a shard that moves, never hand out an id twice. Call once, before
  /// any block is added.
  void use_pid_blocks() { pid_blocks_ = true; }
  /// Adds the block [first, last] (both inclusive); used after the ones
  /// added before.
  void add_pid_block(int64_t first, int64_t last) { blocks_.emplace_back(first, last); }
  /// Ids left in the added blocks; -1 when ids come from the stripe. The
  /// shell answers a call that may need an id with
  /// COORDINATOR_LOAD_IN_PROGRESS while this is 0 (KIP-730).
  int64_t pids_left() const;

  // -- requests ------------------------------------------------------------

  /// The first checks of every request for a transactional id
  /// (docs/transactions.md §InitProducerId steps 4 and 6, §AddPartitionsToTxn
  /// steps 3-4, §EndTxn steps 2-3, §Admin):
  /// INVALID_REQUEST for "", COORDINATOR_LOAD_IN_PROGRESS while the shard
  /// is `loading`, NOT_COORDINATOR if the id hashes
  /// (abs(javaHashCode) % shard_count) to another shard.
  status admit(const std::string& transactional_id, bool loading) const;

  /// InitProducerId's checks before admit() (docs/transactions.md
  /// §InitProducerId steps 2, 4, 5):
  /// INVALID_REQUEST for a half-set (producer id, epoch) pair or "",
  /// INVALID_TRANSACTION_TIMEOUT outside [1, transaction.max.timeout.ms].
  status validate_init_args(const init_producer_id_args& args) const;

  /// InitProducerId with checks 4-13 of docs/transactions.md
  /// §InitProducerId: INVALID_REQUEST
  /// for "", INVALID_TRANSACTION_TIMEOUT for a timeout <= 0 or above
  /// transaction.max.timeout.ms, CONCURRENT_TRANSACTIONS while a transition
  /// is pending or the id is in PrepareCommit/PrepareAbort, PRODUCER_FENCED
  /// for a stale (pid, epoch); an Ongoing transaction is fenced (epoch + 1,
  /// PrepareAbort) and the reply is CONCURRENT_TRANSACTIONS.
  txn_decision init_producer_id(const init_producer_id_args& args, int64_t now_ms);

  /// AddPartitionsToTxn (docs/transactions.md §AddPartitionsToTxn, checks 3 and 5-11).
  txn_decision add_partitions(const std::string& transactional_id, producer_id pid,
                              producer_epoch epoch,
                              const std::vector<topic_partition>& partitions, int64_t now_ms);

  /// EndTxn (docs/transactions.md §EndTxn) with KIP-890 part 2's epoch bump: from
  /// Ongoing the Prepare* card carries epoch E+1 (or 32767 and a next
  /// producer id when E+1 is exhausted) and the producer continues with
  /// next_identity(card). Checks in order: INVALID_REQUEST (""),
  /// INVALID_PRODUCER_ID_MAPPING, a retry of the EndTxn that ended the last
  /// transaction (same producer id and epoch as card.ended_by_*: NONE when
  /// completed with the same result, CONCURRENT_TRANSACTIONS while Prepare*,
  /// INVALID_TXN_STATE for the other result), PRODUCER_FENCED for any other
  /// epoch, CONCURRENT_TRANSACTIONS while a transition is pending or the
  /// id is in Prepare*; commit in Empty/Complete* is INVALID_TXN_STATE,
  /// abort there bumps the epoch without markers (T12). A late EndTxn of a
  /// finished transaction can therefore never end a later one.
  /// `client_transaction_version` 1 is a Kafka client's EndTxn v0-4
  /// (Kafka's TV_1): the epoch stays, the markers carry the data's own
  /// epoch (the card keeps the version, so a coordinator that takes over
  /// sends them the same way), a retry is recognised as with version 2
  /// (same producer id and epoch), and an abort in Empty/Complete* is
  /// INVALID_TXN_STATE as in Kafka before KIP-890.
  txn_decision end_txn(const std::string& transactional_id, producer_id pid,
                       producer_epoch epoch, bool commit, int64_t now_ms,
                       int16_t client_transaction_version = 2);

  /// KIP-890 part 1 verification (AddPartitionsToTxn verify_only), asked
  /// by a partition leader or group coordinator before the first
  /// transactional write of a producer there: NONE if `tps` are all in the
  /// ongoing transaction of (pid, epoch); INVALID_REQUEST,
  /// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS
  /// (Prepare*, or an EndTxn being written), else TRANSACTION_ABORTABLE.
  /// Writes nothing.
  txn_decision verify_partitions(const std::string& transactional_id, producer_id pid,
                                 producer_epoch epoch,
                                 const std::vector<topic_partition>& tps) const;

  /// A producer id for an idempotent (non-transactional) producer, epoch 0
  /// (docs/transactions.md §InitProducerId step 3). The shell persists
  /// next_pid_counter().
  producer_id allocate_idempotent_pid() { return allocate_pid(); }

  /// Ongoing transactions whose start + timeout < now: fence (epoch + 1)
  /// and abort, as InitProducerId would (T10).
  std::vector<txn_decision> abort_timed_out(int64_t now_ms);

  /// Transactional-id expiration (docs/transactions.md §Transitions T11): the ids whose
  /// state is Empty, CompleteCommit or CompleteAbort, with no pending
  /// transition, and whose card was last written at or before
  /// `now_ms - expiration_ms` (transactional.id.expiration.ms; the
  /// boundary expires). Each is marked pending Dead, which blocks every
  /// other transition (CONCURRENT_TRANSACTIONS) until
  /// tombstones_written() or tombstones_failed(). Dead is never persisted:
  /// the shell deletes the ids' card keys in one write. In key order.
  std::vector<std::string> expire_transactional_ids(int64_t now_ms, int64_t expiration_ms);

  /// The deletion of `ids`' cards is durable: each id still pending Dead
  /// is removed, so it comes back as a new id (new producer id, epoch 0).
  /// An id whose entry changed meanwhile (no longer pending Dead, or no
  /// longer Empty/Complete*) is kept, with a pending Dead cleared. Returns
  /// the number of ids removed.
  size_t tombstones_written(const std::vector<std::string>& ids);

  /// The deletion of `ids`' cards failed: their pending Dead is cleared and
  /// they stay as they were.
  void tombstones_failed(const std::vector<std::string>& ids);

  /// Every marker of `transactional_id`'s Prepare* card was acknowledged:
  /// the CompleteCommit/CompleteAbort card to persist (T9).
  std::optional<txn_decision> markers_written(const std::string& transactional_id,
                                              int64_t now_ms);

  // -- completion ------------------------------------------------------------

  /// Applies a durable card: the state changes only here. Returns false
  /// (and changes nothing) if no matching transition is pending.
  bool complete(const txn_decision& d);

  /// The card's write failed: drops the pending transition, the state stays.
  void abort_pending(const std::string& transactional_id);

  // -- observers -------------------------------------------------------------

  const txn_card* find(const std::string& transactional_id) const;
  bool has_pending(const std::string& transactional_id) const;

  /// ListTransactions (KIP-664, duration filter KIP-994) as Kafka's
  /// TransactionStateManager.listTransactionStates: every id in its current
  /// state, except Dead (never listed), that passes all filters. Unknown
  /// state names are returned in unknown_state_filters and filter nothing,
  /// so a filter of only unknown names lists every state, as in Kafka.
  /// Duration: listed only if now_ms - txn_start_ms > duration_ms; Empty
  /// ids have txn_start_ms -1 and so pass every duration filter (Kafka's
  /// quirk, docs/transactions.md §Admin). The shell answers COORDINATOR_LOAD_IN_PROGRESS
  /// itself while loading.
  list_transactions_result list_transactions(const list_transactions_filter& filter,
                                             int64_t now_ms) const;

  /// DescribeTransactions (docs/transactions.md §Admin): the current card of
  /// `transactional_id`. Errors: INVALID_REQUEST for "",
  /// TRANSACTIONAL_ID_NOT_FOUND if the id is absent or Dead.
  status_or<txn_card> describe(const std::string& transactional_id) const;

  /// Number of transactional ids known to the shard.
  size_t size() const { return txns_.size(); }
  /// The cards by state (index: txn_state's value), for the node's metrics.
  std::vector<size_t> count_by_state() const;
  /// The counter behind the next producer id this shard hands out; the
  /// shell persists it with every card that allocated a producer id.
  int64_t next_pid_counter() const { return next_pid_counter_; }

private:
  struct metadata {
    txn_card card;
    std::optional<txn_state> pending;
  };

  producer_id allocate_pid();
  /// INVALID_REQUEST (""), INVALID_PRODUCER_ID_MAPPING (unknown id or
  /// another producer id), PRODUCER_FENCED (another epoch), in that order.
  std::optional<txn_decision> check_identity(const std::string& tid, producer_id pid,
                                             producer_epoch epoch) const;
  /// Checks shared by AddPartitionsToTxn and EndTxn, in Kafka's order:
  /// INVALID_REQUEST, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
  /// CONCURRENT_TRANSACTIONS (pending). Sets `found` when all pass.
  std::optional<txn_decision> check_producer(const std::string& tid, producer_id pid,
                                             producer_epoch epoch, metadata*& found);
  txn_decision fence_and_abort(metadata& m, int64_t now_ms);
  void bump_at_end(txn_card& next);
  txn_decision prepare(metadata& m, txn_card next, txn_state pending_state);

  txn_coordinator_settings settings_;
  // Hashed: a load installs the cards in log order, which is not key
  // order. Whatever walks it and decides sorts what it decides by
  // transactional id, so that the order never depends on the hash.
  std::unordered_map<std::string, metadata> txns_;
  int64_t next_pid_counter_ = 0;
  bool pid_blocks_ = false;
  std::vector<std::pair<int64_t, int64_t>> blocks_; // the first is in use
};

} // namespace caftx
