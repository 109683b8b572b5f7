// The local coordination store (docs/coordination-store.md): the znode tree
// of coordination_core in memory, its persistent znodes and zxid counter
// in the node's LevelDB (keys `znode<path>` and `meta/last_zxid`,
// storage/FORMAT.md), written through the node's durable write path, so a
// reply to a write means it is on disk. The embedded single-node default
// runs on it without ZooKeeper.
//
// It has one session for the life of the actor: its id is announced to the
// owner at start (coord_session_event{connected}); ephemerals belong to it
// and are never stored, so they are gone after a restart (or a
// coord_close_request). It never loses its connection and never expires.
// Requests are served one at a time in arrival order (a read after a write
// sees it), as one ZooKeeper session's are.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/status.hpp"

namespace caftx {

class node_store;

struct local_store_options {
  /// The node's store (required); opened by the caller.
  std::shared_ptr<node_store> store;
  /// Receives coord_watch_event and coord_session_event.
  caf::actor owner;
  /// Milliseconds since the epoch for ctime / mtime; nullptr = system clock.
  std::function<int64_t()> clock_ms;
};

/// Spawns the local store; it loads the stored znodes first. Handles the
/// requests of runtime/coordination_messages.hpp with ZooKeeper's rc
/// semantics. A failed durable write answers ZCONNECTIONLOSS (outcome
/// unknown: LevelDB may hold it after a restart) and leaves memory
/// unchanged. Loads on the calling thread before spawning; throws
/// storage_read_error if a stored znode does not decode or LevelDB fails.
caf::actor spawn_local_store(caf::actor_system& sys, local_store_options opts);

/// Reads every stored znode as spawn_local_store does: NONE, or
/// KAFKA_STORAGE_ERROR "data directory <dir>: <what>" naming the key that
/// does not decode or the LevelDB error. The embedded node checks this
/// before it starts, so that a damaged store refuses the start.
status check_local_store(node_store& store);

} // namespace caftx
