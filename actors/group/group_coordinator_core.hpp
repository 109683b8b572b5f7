// The pure core of a group coordinator for one `__consumer_offsets`
// partition: committed offsets per (group, topic-partition), and offsets
// committed inside a transaction (TxnOffsetCommit), held pending per
// producer id until the commit or abort marker (docs/transactions.md
// §TxnOffsetCommit, §Consume-transform-produce).
// No CAF, no disk. Owned by one group coordinator actor; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/group_offsets.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx {

class group_coordinator_core {
public:
  /// Restores state read back from storage.
  void load(std::map<group_offset_key, offset_and_metadata> committed,
            std::map<producer_id, pending_txn_offsets> pending);

  /// OffsetCommit outside a transaction: visible at once.
  void commit(const group_offset_key& key, offset_and_metadata value);

  /// TxnOffsetCommit: checks the producer epoch (older than the pending
  /// offsets' or than the last marker seen for `pid` gives
  /// INVALID_PRODUCER_EPOCH: a late commit of a finished transaction), then
  /// keeps the offsets pending for `pid`. Returns the producer's whole
  /// pending set to persist.
  status_or<pending_txn_offsets>
  txn_offset_commit(producer_id pid, producer_epoch epoch,
                    const std::vector<std::pair<group_offset_key, offset_and_metadata>>& offsets);

  /// KIP-890 part 1: true unless `pid` already has offsets pending at
  /// `epoch`, i.e. the transaction coordinator has not yet confirmed that
  /// this offsets partition is in the producer's ongoing transaction.
  bool needs_verification(producer_id pid, producer_epoch epoch) const;

  /// A commit or abort marker for `pid`: a commit makes its pending offsets
  /// the committed ones, an abort discards them. Returns the offsets that
  /// became committed (empty for an abort or when nothing was pending).
  /// INVALID_PRODUCER_EPOCH for a marker epoch below the pending offsets'
  /// or, with transaction_version 2 (KIP-890 part 2: the coordinator bumps
  /// the epoch at every EndTxn), equal to it: such a marker is a delayed
  /// one of an earlier transaction and must not end this one.
  status_or<std::vector<std::pair<group_offset_key, offset_and_metadata>>>
  complete_txn(producer_id pid, producer_epoch epoch, control_type result,
               int8_t transaction_version = 2);

  /// OffsetFetch: the committed offset (offset -1 if none); pending
  /// transactional offsets are invisible.
  offset_and_metadata fetch(const group_offset_key& key) const;
  /// True while some open transaction holds an offset for `key` (what
  /// KIP-447's require_stable answers UNSTABLE_OFFSET_COMMIT for).
  bool has_pending(const group_offset_key& key) const;

  const std::map<group_offset_key, offset_and_metadata>& committed() const { return committed_; }
  const std::map<producer_id, pending_txn_offsets>& pending() const { return pending_; }

private:
  std::map<group_offset_key, offset_and_metadata> committed_;
  std::map<producer_id, pending_txn_offsets> pending_;
  // Epoch of the last marker per producer (memory only; after a restart the
  // coordinator's verification rejects late commits).
  std::map<producer_id, producer_epoch> marker_epochs_;
};

} // namespace caftx
