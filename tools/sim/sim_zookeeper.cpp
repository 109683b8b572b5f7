#include "tools/sim/sim_zookeeper.hpp"

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <vector>

#include "runtime/coordination_messages.hpp"

namespace caftx::sim {

namespace {

using zk_tick_atom = caf::atom_constant<caf::atom("zktick")>;
using zk_watch_atom = caf::atom_constant<caf::atom("zkwatch")>;

} // namespace

sim_zookeeper::sim_zookeeper(std::function<int64_t()> clock_ms, int64_t session_timeout_ms)
  : clock_ms_(std::move(clock_ms)), timeout_ms_(session_timeout_ms) {
}

void sim_zookeeper::set_reachable(int32_t node, bool yes) {
  if (yes)
    cut_.erase(node);
  else
    cut_.insert(node);
}

void sim_zookeeper::set_crashing(int32_t node, bool yes) {
  if (yes)
    crashing_.insert(node);
  else
    crashing_.erase(node);
}

int64_t sim_zookeeper::open_session(int32_t node, caf::actor actor) {
  auto id = next_session_++;
  sessions_[id] = session{node, std::move(actor), now_ms()};
  return id;
}

void sim_zookeeper::heartbeat(int64_t id) {
  if (auto i = sessions_.find(id); i != sessions_.end())
    i->second.last_heard_ms = now_ms();
}

void sim_zookeeper::commit(const coord_prepared& p) {
  for (auto& f : core_.commit_watched(p)) {
    auto i = sessions_.find(f.watcher);
    if (i != sessions_.end())
      caf::anon_send(i->second.actor, zk_watch_atom::value, f.watcher,
                     coord_watch_event{f.type, f.path});
  }
}

void sim_zookeeper::end_session(int64_t id) {
  core_.clear_watches(id);
  sessions_.erase(id);
  commit(core_.prepare_session_end(id));
}

void sim_zookeeper::close_session(int64_t id) {
  if (alive(id))
    end_session(id);
}

int sim_zookeeper::expire_idle() {
  std::vector<int64_t> idle;
  auto now = now_ms();
  for (auto& [id, s] : sessions_)
    if (now - s.last_heard_ms > timeout_ms_)
      idle.push_back(id);
  for (auto id : idle)
    end_session(id);
  return static_cast<int>(idle.size());
}

namespace {

struct session_state_t {
  sim_zookeeper* zk = nullptr;
  int32_t node = 0;
  caf::actor owner;
  int64_t session = 0;
  session_state state = session_state::connecting;
  // Watch events that fired while cut off, delivered at the reconnect.
  std::vector<coord_watch_event> missed;
  static inline const char* name = "sim_zookeeper_session";
};

using session_ptr = caf::stateful_actor<session_state_t>*;

// Brings the connection's state in line with the ensemble: cut off ->
// connecting; back in reach -> connected again with the same session, or
// expired and a new one. False while cut off.
bool reconcile(session_ptr self) {
  auto& st = self->state;
  auto& zk = *st.zk;
  if (!zk.reachable(st.node)) {
    if (st.state == session_state::connected) {
      st.state = session_state::connecting;
      self->send(st.owner, coord_session_event{session_state::connecting, st.session});
    }
    return false;
  }
  if (st.state == session_state::connected && zk.alive(st.session)) {
    zk.heartbeat(st.session);
    return true;
  }
  if (st.session != 0 && !zk.alive(st.session)) {
    self->send(st.owner, coord_session_event{session_state::expired, st.session});
    st.missed.clear();
    st.session = 0;
  }
  if (st.session == 0)
    st.session = zk.open_session(st.node, caf::actor_cast<caf::actor>(self));
  zk.heartbeat(st.session);
  st.state = session_state::connected;
  self->send(st.owner, coord_session_event{session_state::connected, st.session});
  for (auto& e : std::exchange(st.missed, {}))
    self->send(st.owner, e);
  return true;
}

// Runs `serve()` against the tree, or answers `lost` while cut off.
template <class Resp, class F>
Resp serve(session_ptr self, Resp lost, F serve) {
  auto before = self->state.session;
  if (!reconcile(self))
    return lost;
  if (before != 0 && before != self->state.session) {
    // Sent in the old session: ZooKeeper fails it with the expiry.
    lost.rc = zrc::ZSESSIONEXPIRED;
    return lost;
  }
  return serve();
}

caf::behavior session_fn(session_ptr self, sim_zookeeper* zk, int32_t node, caf::actor owner) {
  auto& st = self->state;
  st.zk = zk;
  st.node = node;
  st.owner = std::move(owner);
  reconcile(self);
  // Heard from three times per session timeout while it runs (ZooKeeper's
  // client pings at a third of it).
  auto period = std::chrono::milliseconds(std::max<int64_t>(1, zk->session_timeout_ms() / 3));
  self->delayed_send(self, period, zk_tick_atom::value);
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    // A clean stop closes the session; a crash leaves it to time out.
    if (!st.zk->crashing(st.node) && st.zk->reachable(st.node))
      st.zk->close_session(st.session);
    self->quit(msg.reason);
  });
  auto tree = [self]() -> coordination_core& { return self->state.zk->tree(); };
  auto now = [self] { return self->state.zk->now_ms(); };
  return {
    [=](zk_tick_atom) {
      reconcile(self);
      self->delayed_send(self, period, zk_tick_atom::value);
    },
    [=](zk_watch_atom, int64_t session, coord_watch_event& e) {
      auto& st = self->state;
      if (session != st.session)
        return;
      // Cut off since the last tick: the client learns of it first, and
      // gets the event once connected again (in this session).
      if (reconcile(self) && st.state == session_state::connected)
        self->send(st.owner, std::move(e));
      else
        st.missed.push_back(std::move(e));
    },
    [=](const coord_create_request& req) {
      return serve(self, coord_create_response{zrc::ZCONNECTIONLOSS, {}, {}}, [&] {
        auto& st = self->state;
        auto p = tree().prepare({coord_op::create_node(req.path, req.data, req.flags)},
                                st.session, now());
        coord_create_response r{p.rc, {}, {}};
        st.zk->commit(p);
        if (p.ok()) {
          r.path = p.results.at(0).path;
          r.stat = coordination_core::stat_of(*tree().find(r.path));
        }
        return r;
      });
    },
    [=](const coord_set_request& req) {
      return serve(self, coord_stat_response{zrc::ZCONNECTIONLOSS, {}}, [&] {
        auto p = tree().prepare({coord_op::set_data(req.path, req.data, req.version)},
                                self->state.session, now());
        self->state.zk->commit(p);
        return coord_stat_response{p.rc, p.ok() ? p.results.at(0).stat : znode_stat{}};
      });
    },
    [=](const coord_delete_request& req) {
      return serve(self, coord_rc_response{zrc::ZCONNECTIONLOSS}, [&] {
        auto p = tree().prepare({coord_op::remove_node(req.path, req.version)},
                                self->state.session, now());
        self->state.zk->commit(p);
        return coord_rc_response{p.rc};
      });
    },
    [=](const coord_multi_request& req) {
      return serve(self, coord_multi_response{zrc::ZCONNECTIONLOSS, {}}, [&] {
        auto p = tree().prepare(req.ops, self->state.session, now());
        self->state.zk->commit(p);
        return coord_multi_response{p.rc, p.results};
      });
    },
    [=](const coord_get_request& req) {
      return serve(self, coord_get_response{zrc::ZCONNECTIONLOSS, {}, {}}, [&] {
        coord_get_response r;
        r.rc = tree().get(req.path, req.watch, r.data, r.stat, self->state.session);
        return r;
      });
    },
    [=](const coord_exists_request& req) {
      return serve(self, coord_stat_response{zrc::ZCONNECTIONLOSS, {}}, [&] {
        coord_stat_response r;
        r.rc = tree().exists(req.path, req.watch, r.stat, self->state.session);
        return r;
      });
    },
    [=](const coord_get_children_request& req) {
      return serve(self, coord_children_response{zrc::ZCONNECTIONLOSS, {}, {}}, [&] {
        coord_children_response r;
        r.rc = tree().get_children(req.path, req.watch, r.children, r.stat, self->state.session);
        return r;
      });
    },
    [=](const coord_sync_request&) {
      return serve(self, coord_rc_response{zrc::ZCONNECTIONLOSS}, [] { return coord_rc_response{}; });
    },
    [=](const coord_session_request&) {
      auto& st = self->state;
      return coord_session_response{st.state, st.session, {}};
    },
    [=](const coord_close_request&) {
      auto& st = self->state;
      if (!st.zk->crashing(st.node) && st.zk->reachable(st.node))
        st.zk->close_session(st.session);
      self->send(st.owner, coord_session_event{session_state::closed, st.session});
      self->quit();
      return coord_rc_response{};
    },
  };
}

} // namespace

caf::actor spawn_sim_zookeeper_session(caf::actor_system& sys, sim_zookeeper& zk, int32_t node,
                                       caf::actor owner) {
  return sys.spawn(session_fn, &zk, node, std::move(owner));
}

} // namespace caftx::sim
