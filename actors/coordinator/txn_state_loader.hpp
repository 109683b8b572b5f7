// Reads one coordinator shard's partition of `__transaction_state` back
// from the node store into a txn_coordinator_core, a chunk at a time
// (docs/transactions.md §Load): the shard's card keys form a compacted keyspace, one
// key per live transactional id holding its newest card (storage/FORMAT.md),
// so a scan of the key range is the "read to the log end, last record per
// key wins, tombstones removed" of Kafka's load. No CAF: the coordinator
// actor calls next_chunk() once per message to itself, so it keeps
// answering COORDINATOR_LOAD_IN_PROGRESS in between; the load benchmark
// calls the same function. Not thread-safe; the store must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/coordinator/txn_coordinator_core.hpp"
#include "runtime/status.hpp"
#include "runtime/txn_card.hpp"

namespace caftx {

class node_store;

/// A shard's coordinator epoch and producer id counter as stored, -1 and 0
/// when the shard never started.
struct txn_shard_meta {
  int64_t coordinator_epoch = -1;
  int64_t next_pid_counter = 0;
};

/// Reads `txnmeta/<shard>/coordinator_epoch` and `.../next_pid`. Errors:
/// KAFKA_STORAGE_ERROR naming the shard for a value that cannot be decoded.
status_or<txn_shard_meta> read_txn_shard_meta(const node_store& store, int32_t shard);

class txn_state_loader {
public:
  txn_state_loader(const node_store& store, int32_t shard);

  /// Reads at most `max_cards` (>= 1) more cards of the shard, in key
  /// order, and installs them into `core`. Returns true once every card
  /// was installed (the chunk that finds the key range exhausted).
  /// Errors: KAFKA_STORAGE_ERROR naming the key of a card that cannot be
  /// decoded or whose transactional id is not its key's; `core` then holds
  /// the cards of the earlier chunks.
  status_or<bool> next_chunk(txn_coordinator_core& core, size_t max_cards);

  /// The ids whose loaded card is PrepareCommit/PrepareAbort, so far.
  const std::vector<std::string>& in_prepare() const { return in_prepare_; }

  /// Cards installed so far.
  size_t loaded() const { return loaded_; }

private:
  const node_store* store_;
  std::string prefix_;
  std::string last_key_;
  std::vector<txn_card> chunk_;
  std::vector<std::string> in_prepare_;
  size_t loaded_ = 0;
};

} // namespace caftx
