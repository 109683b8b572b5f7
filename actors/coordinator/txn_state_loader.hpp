// Replays a coordinator shard's partition of `__transaction_state` into a
// txn_coordinator_core, a chunk at a time (docs/transactions.md §Load): the
// records in offset order, each a card (key TransactionLogKey, value
// TransactionLogValue, runtime/coordinator_records.hpp) replacing the
// previous card of its transactional id, a tombstone (null value) removing
// the id — Kafka's "read to the log end, the last record per key wins".
// The partition is compacted (docs/compaction.md), so a load reads about
// one record per live id. No CAF: the coordinator actor feeds it the bytes
// of each fetch and calls next_chunk() once per message to itself, so it
// keeps answering COORDINATOR_LOAD_IN_PROGRESS in between; the load
// benchmark calls the same functions. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/common/partition_replay.hpp"
#include "actors/coordinator/txn_coordinator_core.hpp"
#include "runtime/status.hpp"
#include "runtime/txn_card.hpp"

namespace caftx {

class node_store;

/// A shard's producer id counter as stored (0 when the shard never
/// allocated one).
struct txn_shard_meta {
  int64_t next_pid_counter = 0;
};

/// Reads `txnmeta/<shard>/next_pid`. Errors: KAFKA_STORAGE_ERROR naming
/// the key for a value that cannot be decoded.
status_or<txn_shard_meta> read_txn_shard_meta(const node_store& store, int32_t shard);

class txn_state_loader : public partition_replay {
public:
  using partition_replay::partition_replay;

  /// Installs the cards of the fed batches into `core`, whole batches
  /// until at least `max_cards` (>= 1) records were read or the fed bytes
  /// end. Returns true once they ended. Errors: KAFKA_STORAGE_ERROR naming
  /// the offset of a batch or record that does not decode (the core then
  /// holds the records before it).
  status_or<bool> next_chunk(txn_coordinator_core& core, size_t max_cards);

  /// The ids whose current card is PrepareCommit/PrepareAbort, in the order
  /// their last card was read (call once done()).
  std::vector<std::string> in_prepare(const txn_coordinator_core& core) const;

private:
  std::vector<txn_card> chunk_;
  bool reserved_ = false;
  std::vector<std::string> in_prepare_;
};

} // namespace caftx
