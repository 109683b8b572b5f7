// The simulator's ZooKeeper: one znode tree (coordination_core) that every
// simulated node's controller reaches through a session actor of its own,
// with ZooKeeper's session rules as Kafka's controller sees them
// (docs/coordination-store.md):
// - a session lives while its node's session actor is heard from at least
//   once per session timeout; a node that crashed, is paused or is cut off
//   from ZooKeeper stops being heard, and the ensemble then ends the
//   session: its ephemerals (/nodes/<id>, /controller) are deleted and the
//   other sessions' watches fire;
// - while cut off, a node's requests fail with ZCONNECTIONLOSS and its
//   controller hears `connecting`; back in reach before the timeout it
//   hears `connected` with the same session, after it `expired` and then
//   `connected` with a new session;
// - watches are one-shot and per session; those that fire while a session
//   is cut off are delivered when it reconnects;
// - a node's clean stop closes its session (ephemerals deleted at once); a
//   crash does not (they go when the session times out).
// The tree itself never fails: an ensemble whose quorum survives.
//
// Everything runs on the simulator's deterministic scheduler; the ensemble
// is plain C++ called from the session actors and the simulator.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/coordination/coordination_core.hpp"

namespace caftx::sim {

class sim_zookeeper {
public:
  /// `clock_ms`: simulated milliseconds; `session_timeout_ms`: how long a
  /// session lives without being heard from.
  sim_zookeeper(std::function<int64_t()> clock_ms, int64_t session_timeout_ms);

  /// Whether node `node` reaches the ensemble now (not cut off).
  bool reachable(int32_t node) const { return cut_.count(node) == 0; }
  /// Cuts node `node` off from the ensemble, or heals the cut.
  void set_reachable(int32_t node, bool yes);
  /// Whether node `node` crashes now: its session actor then dies without
  /// closing its session.
  bool crashing(int32_t node) const { return crashing_.count(node) > 0; }
  void set_crashing(int32_t node, bool yes);

  /// Opens a session for `node`'s session actor `actor`; its id.
  int64_t open_session(int32_t node, caf::actor actor);
  /// Whether `session` is still alive on the ensemble.
  bool alive(int64_t session) const { return sessions_.count(session) > 0; }
  /// `session` was heard from now.
  void heartbeat(int64_t session);
  /// Ends `session` at once (a clean close): its ephemerals go, watches fire.
  void close_session(int64_t session);
  /// Ends every session not heard from within the session timeout; the
  /// number of sessions it ended.
  int expire_idle();

  int64_t session_timeout_ms() const { return timeout_ms_; }
  coordination_core& tree() { return core_; }
  int64_t now_ms() const { return clock_ms_(); }

  /// Applies a prepared write and sends the watch events it fires to the
  /// session actors (coord_watch_event, tagged with the session).
  void commit(const coord_prepared& p);

private:
  struct session {
    int32_t node;
    caf::actor actor;
    int64_t last_heard_ms;
  };
  void end_session(int64_t id);

  std::function<int64_t()> clock_ms_;
  int64_t timeout_ms_;
  coordination_core core_;
  std::map<int64_t, session> sessions_;
  int64_t next_session_ = 0x1000;
  std::set<int32_t> cut_;
  std::set<int32_t> crashing_;
};

/// The store of node `node` (node_options::spawn_store): the requests and
/// events of runtime/coordination_messages.hpp over the ensemble `zk`,
/// which must outlive it. `owner` receives the watch and session events.
caf::actor spawn_sim_zookeeper_session(caf::actor_system& sys, sim_zookeeper& zk, int32_t node,
                                       caf::actor owner);

} // namespace caftx::sim
