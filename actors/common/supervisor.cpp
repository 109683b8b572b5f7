#include "actors/common/supervisor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <deque>

#include <leveldb/write_batch.h>

#include "actors/common/storage_fault.hpp"
#include "runtime/messages.hpp"
#include "storage/node_store.hpp"

namespace caftx {

namespace {

// The settle write failed (its message follows): wait, then settle again.
using storage_retry_atom = caf::atom_constant<caf::atom("st_retry")>;
using storage_probe_atom = caf::atom_constant<caf::atom("st_probe")>;

struct supervisor_state {
  caf::actor child;
  std::deque<caf::actor_clock::time_point> restarts;
  int32_t restart_count = 0;
  bool gave_up = false;
  // Set when the supervisor was told to exit: it waits for its child to
  // terminate first, so that "supervisor down" means "subtree down" (the
  // child may hold the node's database open).
  std::optional<caf::error> stopping;
  // A restart waits for the dead child's queued writes (opts.settle).
  bool settling = false;
  // Why there is no child after a storage fault (requests get it), and the
  // next wait before settling again while the store does not write.
  std::optional<status> storage_error;
  std::chrono::milliseconds storage_wait{0};
  // The restart counter's series, removed with the supervisor.
  metrics::counter restart_counter;
  std::shared_ptr<metrics::registry> metrics;
  static inline const char* name = "caftx.supervisor";
  supervisor_state() = default;
  supervisor_state(const supervisor_state&) = delete;
  supervisor_state& operator=(const supervisor_state&) = delete;
  ~supervisor_state() {
    if (metrics)
      metrics->remove(restart_counter.cell());
  }
};

using supervisor_ptr = caf::stateful_actor<supervisor_state>*;

caf::behavior supervisor_fn(supervisor_ptr self, supervisor_options opts) {
  auto start_child = [self, opts] {
    self->state.storage_error.reset();
    self->state.storage_wait = opts.storage_retry;
    self->state.child = opts.spawn_child(self->system());
    self->monitor(self->state.child);
  };
  auto settle = [self, opts] {
    self->state.settling = true;
    opts.settle([hdl = caf::actor_cast<caf::actor>(self)](const status& s) {
      if (s.ok())
        caf::anon_send(hdl, supervisor_settled{});
      else
        caf::anon_send(hdl, storage_retry_atom::value, s.message());
    });
  };
  self->state.restart_counter = opts.restarts;
  self->state.metrics = opts.metrics;
  start_child();
  self->set_down_handler([self, opts, start_child, settle](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.child || dm.source != st.child.address())
      return;
    st.child = nullptr;
    if (st.stopping) {
      self->quit(*st.stopping);
      return;
    }
    if (!dm.reason || dm.reason == caf::exit_reason::user_shutdown)
      return;
    if (auto fault = storage_exit_of(dm.reason)) {
      st.storage_error = status{error_code::kafka_storage_error, fault->message};
      if (fault->kind == storage_fault::corrupt) {
        // The same bytes would be read again: stay down.
        st.gave_up = true;
        if (opts.storage_failed)
          opts.storage_failed(opts.name, fault->message);
        return;
      }
      // A failed write: restarted once the store writes again, whatever
      // the restart intensity says.
      if (opts.settle)
        settle();
      else
        start_child();
      return;
    }
    auto now = self->clock().now();
    while (!st.restarts.empty() && now - st.restarts.front() > opts.window)
      st.restarts.pop_front();
    if (static_cast<int32_t>(st.restarts.size()) >= opts.max_restarts) {
      st.gave_up = true;
      if (opts.escalate)
        opts.escalate(opts.name, st.restart_count);
      return;
    }
    st.restarts.push_back(now);
    ++st.restart_count;
    opts.restarts.inc();
    if (!opts.settle) {
      start_child();
      return;
    }
    settle();
  });
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& st = self->state;
    if (!st.child) {
      self->quit(em.reason); // a pending restart is dropped with us
      return;
    }
    st.stopping = em.reason;
    self->send_exit(st.child, em.reason);
  });
  self->set_default_handler(
    [self, opts](caf::scheduled_actor*, caf::message_view& xs) -> caf::result<caf::message> {
      auto msg = xs.move_content_to_message();
      auto& st = self->state;
      if (!st.child) {
        if (opts.unavailable)
          if (auto reply = opts.unavailable(msg, st.storage_error ? *st.storage_error : status{}))
            return *reply;
        return caf::make_error(caf::sec::request_receiver_down);
      }
      return self->delegate(st.child, std::move(msg));
    });
  return {
    [=](const supervisor_settled&) {
      if (!self->state.settling)
        return;
      self->state.settling = false;
      start_child();
    },
    [=](storage_retry_atom, const std::string& error) {
      auto& st = self->state;
      if (!st.settling)
        return;
      st.storage_error = status{error_code::kafka_storage_error, opts.name + ": " + error};
      self->delayed_send(self, st.storage_wait, storage_probe_atom::value);
      st.storage_wait = std::min(st.storage_wait * 2, opts.storage_retry * 32);
    },
    [=](storage_probe_atom) {
      if (self->state.settling && !self->state.child)
        settle();
    },
    [=](const supervisor_stats_request&) {
      return supervisor_stats{self->state.restart_count, self->state.gave_up};
    },
    [=](const kill_child_request&) {
      if (self->state.child)
        self->send_exit(self->state.child, caf::exit_reason::kill);
      return supervisor_stats{self->state.restart_count, self->state.gave_up};
    },
  };
}

} // namespace

std::function<std::optional<caf::message>(const caf::message&, const status&)>
storage_aware_unavailable(std::optional<status> otherwise) {
  return [otherwise](const caf::message& request, const status& why) -> std::optional<caf::message> {
    if (!why.ok())
      return error_reply_for(request, why);
    if (otherwise)
      return error_reply_for(request, *otherwise);
    return std::nullopt;
  };
}

supervisor_options node_supervision(const node_config& cfg, std::shared_ptr<node_store> store,
                                    std::function<caf::actor(caf::actor_system&)> spawn_child) {
  supervisor_options opts;
  // Writes complete in the order they were queued: once an empty write
  // queued now completes, the dead child's writes are settled.
  opts.settle = [store](std::function<void(const status&)> ready) {
    store->write(leveldb::WriteBatch{}, std::move(ready));
  };
  opts.max_restarts = cfg.supervisor_max_restarts;
  opts.window = std::chrono::milliseconds(cfg.supervisor_restart_window_ms);
  opts.spawn_child = std::move(spawn_child);
  return opts;
}

caf::actor spawn_supervisor(caf::actor_system& sys, supervisor_options opts) {
  return sys.spawn(supervisor_fn, std::move(opts));
}

} // namespace caftx
