// A one-for-one supervisor for one child actor (Erlang/OTP style): it gives
// clients a stable handle, forwards every request to the current child,
// and when the child dies abnormally spawns a new one, which recovers from
// the node's LevelDB. More than `max_restarts` restarts within `window`
// and it gives up: requests then get the `unavailable` reply.
//
// Storage faults (actors/common/storage_fault.hpp) are not crashes to
// retry: a child that died of a corrupt read is never restarted (requests
// get KAFKA_STORAGE_ERROR naming it; `storage_failed` is told); one that
// died of a failed write is restarted, without counting against the
// restart intensity, once a settle write succeeds again (tried again
// after a backoff, doubling from `storage_retry` up to 32 times that),
// and requests get KAFKA_STORAGE_ERROR meanwhile.
//
// Handles itself: supervisor_stats_request -> supervisor_stats;
// kill_child_request -> supervisor_stats (a drill: kills the child with
// exit_reason::kill). Everything else is delegated to the child.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>

#include "actors/common/node_metrics.hpp"
#include "config/config.hpp"
#include "runtime/status.hpp"

namespace caftx {

class node_store;

struct supervisor_options {
  /// The supervised component, for escalation ("partition t-0").
  std::string name;
  /// Called once when the supervisor gives up: escalation to its parent.
  std::function<void(const std::string& name, int32_t restarts)> escalate;
  /// Restart intensity: at most this many restarts within `window`.
  int32_t max_restarts = 5;
  std::chrono::milliseconds window{10000};
  /// Spawns a fresh child.
  std::function<caf::actor(caf::actor_system&)> spawn_child;
  /// Called when a child died, before the next one is spawned: must call
  /// `ready` (from any thread) once every write the dead child had queued
  /// is on disk or failed, so the new child loads all of it and no late
  /// write of the dead one lands under it, with the outcome of a write of
  /// its own (not ok: the store does not write; the restart waits and
  /// settles again). Empty: restart at once.
  std::function<void(std::function<void(const status&)> ready)> settle;
  /// The reply to a request while there is no child, or nullopt for CAF's
  /// request_receiver_down error. `why` is ok while restarting or after
  /// giving up, KAFKA_STORAGE_ERROR after a storage fault.
  std::function<std::optional<caf::message>(const caf::message& request, const status& why)>
    unavailable;
  /// Called once when the child died of a corrupt read and stays down.
  std::function<void(const std::string& name, const std::string& error)> storage_failed;
  /// First wait before settling again while the store does not write.
  std::chrono::milliseconds storage_retry{100};
  /// Counts every restart (caftx_supervisor_restarts_total{component=name});
  /// the series is removed from `metrics` when the supervisor stops. Empty:
  /// not counted.
  metrics::counter restarts;
  std::shared_ptr<metrics::registry> metrics;
};

/// The `unavailable` of a node component: after a storage fault the
/// request's own reply with KAFKA_STORAGE_ERROR (error_reply_for), else
/// `otherwise` (nullopt for request_receiver_down).
std::function<std::optional<caf::message>(const caf::message&, const status&)>
storage_aware_unavailable(std::optional<status> otherwise = std::nullopt);

/// Options with the node's restart intensity (`caftx.supervisor.max.restarts`
/// within `caftx.supervisor.restart.window.ms`); a restart waits until the
/// writes queued on `store` before it are settled.
supervisor_options node_supervision(const node_config& cfg, std::shared_ptr<node_store> store,
                                    std::function<caf::actor(caf::actor_system&)> spawn_child);

/// node_supervision() for a component of the node behind `ctx`, escalating
/// to the node's health record when it gives up.
template <class Context>
supervisor_options node_supervision(std::shared_ptr<const Context> ctx, std::string name,
                                    std::function<caf::actor(caf::actor_system&)> spawn_child) {
  auto opts = node_supervision(ctx->config, ctx->store, std::move(spawn_child));
  opts.name = std::move(name);
  opts.escalate = [ctx](const std::string& n, int32_t restarts) {
    ctx->health->gave_up(n, restarts);
  };
  opts.storage_failed = [ctx](const std::string& n, const std::string& error) {
    ctx->health->storage_failed(n, error);
  };
  opts.unavailable = storage_aware_unavailable();
  opts.metrics = ctx->metrics;
  opts.restarts =
    node_metrics::owned_counter(ctx->metrics, node_metrics::supervisor_restarts,
                                {{"component", opts.name}});
  return opts;
}

caf::actor spawn_supervisor(caf::actor_system& sys, supervisor_options opts);

} // namespace caftx
