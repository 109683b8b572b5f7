// The group coordinator actor for one `__consumer_offsets` partition: the
// thin shell around group_coordinator_core. Committed offsets and offsets
// committed inside a transaction are records of its own partition
// `__consumer_offsets-N` (Kafka's offset commit records, keyed by group,
// topic and partition), appended at the leader epoch it was elected with;
// memory changes once they are durable. The commit or abort marker of a
// transaction is written into the same partition and completes the
// producer's pending offsets (the later record in the log wins). At start
// it replays the partition (COORDINATOR_LOAD_IN_PROGRESS meanwhile); every
// offsets.retention.check.interval.ms it appends tombstones for offsets
// older than offsets.retention.minutes (docs/transactions.md
// §TxnOffsetCommit).
#pragma once

#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "runtime/actor_interfaces.hpp"

namespace caftx {

struct node_context;

/// Spawns the group coordinator of `__consumer_offsets` partition
/// `partition` (the group_coordinator_actor interface,
/// runtime/actor_interfaces.hpp).
group_coordinator_actor spawn_group_coordinator(caf::actor_system& sys,
                                                std::shared_ptr<const node_context> ctx,
                                                int32_t partition);

/// Spawns the group coordinator of `partition` under a supervisor that
/// restarts it, reloaded from its partition, when it crashes. A request
/// whose write was durable when it crashed is answered
/// request_receiver_down at once.
group_coordinator_actor spawn_supervised_group_coordinator(caf::actor_system& sys,
                                                           std::shared_ptr<const node_context> ctx,
                                                           int32_t partition);

} // namespace caftx
