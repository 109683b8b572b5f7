// The transaction coordinator shard actor: the thin shell around
// txn_coordinator_core for one partition of `__transaction_state`. On start
// it loads the shard's cards caftx.coordinator.load.chunk.cards at a time
// (one message to itself per chunk), then bumps and persists its
// coordinator epoch, answering COORDINATOR_LOAD_IN_PROGRESS until both are
// done, then re-sends the markers of every PrepareCommit/PrepareAbort card
// (docs/transactions.md §Load). Each transition is persisted before the reply
// (prepare -> persist -> complete); markers are retried until every
// partition acknowledged. Every
// transaction.remove.expired.transaction.cleanup.interval.ms it deletes the
// cards of ids idle for transactional.id.expiration.ms (T11).
#pragma once

#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "runtime/actor_interfaces.hpp"

namespace caftx {

struct node_context;

/// Spawns the coordinator of shard `shard` (the txn_coordinator_actor
/// interface, runtime/actor_interfaces.hpp).
txn_coordinator_actor spawn_txn_coordinator(caf::actor_system& sys,
                                            std::shared_ptr<const node_context> ctx, int32_t shard);

/// Spawns the supervisor of shard `shard`: it owns the coordinator actor,
/// forwards every request to it, and restarts it (with a higher
/// coordinator epoch) when it dies abnormally; more than
/// caftx.supervisor.max.restarts within caftx.supervisor.restart.window.ms
/// and it gives up, answering COORDINATOR_NOT_AVAILABLE.
/// Its dynamic handle (caf::actor_cast) also takes supervisor_stats_request
/// -> supervisor_stats and kill_child_request (a drill: kills the current
/// coordinator).
txn_coordinator_actor spawn_coordinator_supervisor(caf::actor_system& sys,
                                                   std::shared_ptr<const node_context> ctx,
                                                   int32_t shard);

} // namespace caftx
