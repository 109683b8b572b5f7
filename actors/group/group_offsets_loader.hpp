// Replays a group coordinator's partition of `__consumer_offsets` into a
// group_coordinator_core, a chunk at a time (docs/transactions.md
// §TxnOffsetCommit, Kafka's GroupMetadataManager.loadGroupsAndOffsets), in
// offset order:
//
// - a plain batch's offset records (key OffsetCommitKey, value
//   OffsetCommitValue, runtime/coordinator_records.hpp) are committed
//   offsets, each with its log offset; a null value deletes the offset;
// - a transactional data batch's records are offsets pending for its
//   producer id (with their log offsets);
// - a control batch (the commit or abort marker the transaction coordinator
//   had written into this partition) completes or drops that producer's
//   pending offsets;
// - a plain batch's group records (key GroupMetadataKey, value
//   GroupMetadataValue) restore the group's membership, the last one
//   winning; a null value forgets the group.
//
// Only records below the election's log end offset are replayed. No CAF:
// the actor feeds it the bytes of each fetch and calls next_chunk() once
// per message to itself, answering COORDINATOR_LOAD_IN_PROGRESS in between.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/common/partition_replay.hpp"
#include "actors/group/group_coordinator_core.hpp"
#include "actors/group/group_membership_core.hpp"
#include "runtime/status.hpp"

namespace caftx {

class group_offsets_loader : public partition_replay {
public:
  using partition_replay::partition_replay;

  /// Applies the fed batches to `core` (offsets) and `members` (group
  /// records), whole batches until at least `max_records` (>= 1) records
  /// were read or the fed bytes end. Returns true once they ended. Errors:
  /// KAFKA_STORAGE_ERROR naming the offset of a batch or record that does
  /// not decode (the cores then hold the records before its batch).
  status_or<bool> next_chunk(group_coordinator_core& core, group_membership_core& members,
                             size_t max_records);
};

} // namespace caftx
