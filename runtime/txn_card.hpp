// The state card of a transactional id: the persisted value of its record
// in `__transaction_state` (Kafka's TransactionLogValue, docs/transactions.md
// §Card), and the transaction states with Kafka's ids (§States). Value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ids.hpp"

namespace caftx {

/// Transaction states with Kafka's ids (TransactionState, docs/transactions.md §States).
enum class txn_state : int8_t {
  empty = 0,
  ongoing = 1,
  prepare_commit = 2,
  prepare_abort = 3,
  complete_commit = 4,
  complete_abort = 5,
  dead = 6,
  prepare_epoch_fence = 7,
};

/// Kafka's display name ("PrepareCommit", ...).
const char* to_string(txn_state s);

/// The state named `name` (Kafka's TransactionState.fromName, exact and
/// case-sensitive); nullopt if no state has that name.
std::optional<txn_state> txn_state_from_name(const std::string& name);

/// True if `from` is a legal previous state of `to` (docs/transactions.md §States).
bool is_valid_transition(txn_state from, txn_state to);

/// The persisted state card of one transactional id: the value of its
/// record in `__transaction_state` (Kafka's TransactionLogValue).
struct txn_card {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_id previous_pid = no_producer_id; // before the last rotation
  /// The producer id to switch to when this Prepare* card completes: set
  /// when the end-of-transaction epoch bump exhausted the epoch (KIP-890
  /// part 2, Kafka's NextProducerId), else -1.
  producer_id next_pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  int32_t txn_timeout_ms = 0;
  txn_state state = txn_state::empty;
  std::vector<topic_partition> partitions; // sorted, unique
  int64_t txn_start_ms = -1;
  int64_t last_update_ms = -1;
  /// Producer id and epoch of the EndTxn request that decided the last
  /// transaction (so a retry of it is recognised, also after a coordinator
  /// restart); -1 when the coordinator decided it (timeout, fencing) or
  /// no transaction has ended since the last InitProducerId.
  producer_id ended_by_pid = no_producer_id;
  producer_epoch ended_by_epoch = no_producer_epoch;
  /// The epoch before the last InitProducerId bump (Kafka's
  /// lastProducerEpoch, KIP-360): a retry of that bump whose reply was lost
  /// is recognised by it. Kafka keeps it in memory only, so such a retry
  /// across a coordinator restart is fenced there; caftx persists it.
  producer_epoch last_epoch = no_producer_epoch;
  /// How the last EndTxn ended the transaction (Kafka's
  /// ClientTransactionVersion, KIP-890 part 2): 2, caftx's own clients,
  /// bumps the epoch at every end and writes markers above the data's
  /// epoch; 1, a Kafka client over EndTxn v0-4, keeps the epoch and writes
  /// markers at the data's own epoch.
  int16_t client_transaction_version = 2;
  friend bool operator==(const txn_card& a, const txn_card& b);
};

} // namespace caftx
