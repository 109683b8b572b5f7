// Component drills for an application that embeds a node (docs/drills.md
// §Embedding): kill a transaction coordinator shard — at once, or at a named
// fault point the next time one gets there — watch its supervisor restart
// it, and read the restart count and how long the new coordinator took to
// reload its cards and answer again. The same kills caftx-drill asks of a
// remote node with kill-coordinator. Blocking; call from a plain thread,
// never from an actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "runtime/status.hpp"

namespace caftx {

class node;
class fault_drills;

/// What one component drill observed.
struct component_restart {
  /// The transaction coordinator shard (its __transaction_state partition).
  int32_t shard = -1;
  /// The shard supervisor's restart count before and after the drill.
  int32_t restarts_before = 0;
  int32_t restarts_after = 0;
  /// From the kill (for a fault point: from the moment the restart was
  /// seen) to the first answer of the restarted coordinator that is not
  /// COORDINATOR_LOAD_IN_PROGRESS: its reload of the shard's cards.
  std::chrono::microseconds reload_time{0};
};

/// The restart count of every transaction coordinator shard's supervisor
/// on `n`, by shard (shards this node does not host are left out).
std::map<int32_t, int32_t> coordinator_restarts(node& n);

/// Kills coordinator shard `shard` of `n` now (its supervisor's
/// kill_child_request: exit_reason::kill, as a crash) and waits up to
/// `timeout` until the restarted coordinator answers. Errors:
/// INVALID_REQUEST (no such shard on this node), COORDINATOR_NOT_AVAILABLE
/// (the supervisor gave up), REQUEST_TIMED_OUT.
status_or<component_restart>
kill_coordinator_shard(node& n, int32_t shard,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// Arms fault point `point` (one of fault::all_points() starting with
/// "txn_coordinator.") once in this process, through `drills` — the
/// fault_drills the node was started with (node_options::faults, installed
/// by install_fault_drills) — and waits up to `timeout` until a coordinator
/// shard of `n` died there, was restarted, and answers again. The point is
/// hit by the next coordinator that gets there (a transaction's next
/// state change: run a workload meanwhile). Errors: INVALID_REQUEST (a
/// build without fault points, a point that is not a coordinator's),
/// REQUEST_TIMED_OUT (nothing hit the point, or no answer after it).
status_or<component_restart>
kill_coordinator_at(node& n, fault_drills& drills, const std::string& point,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

} // namespace caftx
