#include "actors/coordination/local_store.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <leveldb/write_batch.h>

#include <chrono>
#include <deque>

#include "actors/common/durable_queue.hpp"
#include "actors/coordination/coordination_core.hpp"
#include "runtime/coordination_messages.hpp"
#include "storage/node_store.hpp"

namespace caftx {

namespace {

// storage/FORMAT.md, "Coordination store".
const std::string znode_prefix = "znode";
const std::string last_zxid_key = "meta/last_zxid";

struct local_store_state {
  coordination_core core;
  durable_queue writes;
  local_store_options opts;
  int64_t session = 0;
  bool busy = false;                       // a write is being persisted
  // Requests that arrived meanwhile, with their promises.
  std::deque<std::pair<caf::response_promise, std::function<void(caf::response_promise&)>>> queue;
  bool closed = false;
  static inline const char* name = "coordination_local_store";
};

using local_ptr = caf::stateful_actor<local_store_state>*;

int64_t now_ms(local_ptr self) {
  auto& st = self->state;
  if (st.opts.clock_ms)
    return st.opts.clock_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

void run_queued(local_ptr self) {
  auto& st = self->state;
  while (!st.busy && !st.queue.empty()) {
    auto [rp, fn] = std::move(st.queue.front());
    st.queue.pop_front();
    if (st.closed)
      rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    else
      fn(rp);
  }
}

// prepare -> persist -> commit; `done(p)` runs once it is durable (or with
// p.rc = ZCONNECTIONLOSS if the write failed).
void write(local_ptr self, coord_prepared p, std::function<void(coord_prepared&)> done) {
  auto& st = self->state;
  if (!p.ok() || p.zxid == 0) {
    done(p);
    return;
  }
  leveldb::WriteBatch batch;
  for (auto& [path, n] : p.changes) {
    if (!n)
      batch.Delete(znode_prefix + path);
    else if (n->stat.ephemeral_owner == 0)
      batch.Put(znode_prefix + path, encode_znode_value(*n));
  }
  batch.Put(last_zxid_key, encode_zxid_value(p.zxid));
  st.busy = true;
  auto shared = std::make_shared<coord_prepared>(std::move(p));
  st.writes.submit(caf::actor_cast<caf::actor>(self), std::move(batch),
                   [self, shared, done](const status& s) {
                     auto& st = self->state;
                     st.busy = false;
                     if (!s.ok()) {
                       shared->rc = zrc::ZCONNECTIONLOSS;
                       shared->results.clear();
                     } else {
                       for (auto& [type, path] : st.core.commit(*shared))
                         self->send(st.opts.owner, coord_watch_event{type, path});
                     }
                     done(*shared);
                     run_queued(self);
                   });
}

// Runs `fn(rp)` now, or after the write in flight (FIFO, as one session).
caf::result<caf::message> serve(local_ptr self, std::function<void(caf::response_promise&)> fn) {
  auto rp = self->make_response_promise();
  auto& st = self->state;
  if (st.busy || !st.queue.empty()) {
    st.queue.emplace_back(rp, std::move(fn));
  } else {
    fn(rp);
  }
  return rp;
}

caf::behavior local_store_fn(local_ptr self, coordination_core core, local_store_options opts) {
  auto& st = self->state;
  st.core = std::move(core);
  st.writes = durable_queue{opts.store};
  st.opts = std::move(opts);
  // One session per actor: last_zxid + 1 is above every id a session that
  // wrote anything had (ids of sessions that wrote nothing may repeat; no
  // znode names them).
  st.session = st.core.last_zxid() + 1;
  self->send(st.opts.owner, coord_session_event{session_state::connected, st.session});
  return {
    [=](const storage_done& d) { self->state.writes.complete(d); },
    [=](const coord_create_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        auto& st = self->state;
        auto p = st.core.prepare({coord_op::create_node(req.path, req.data, req.flags)},
                                 st.session, now_ms(self));
        write(self, std::move(p), [self, rp](coord_prepared& p) mutable {
          coord_create_response r{p.rc, {}, {}};
          if (p.ok()) {
            r.path = p.results.at(0).path;
            r.stat = coordination_core::stat_of(*self->state.core.find(r.path));
          }
          rp.deliver(r);
        });
      });
    },
    [=](const coord_set_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        auto& st = self->state;
        auto p = st.core.prepare({coord_op::set_data(req.path, req.data, req.version)},
                                 st.session, now_ms(self));
        write(self, std::move(p), [rp](coord_prepared& p) mutable {
          rp.deliver(coord_stat_response{p.rc, p.ok() ? p.results.at(0).stat : znode_stat{}});
        });
      });
    },
    [=](const coord_delete_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        auto& st = self->state;
        auto p = st.core.prepare({coord_op::remove_node(req.path, req.version)}, st.session,
                                 now_ms(self));
        write(self, std::move(p),
              [rp](coord_prepared& p) mutable { rp.deliver(coord_rc_response{p.rc}); });
      });
    },
    [=](const coord_multi_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        auto& st = self->state;
        auto p = st.core.prepare(req.ops, st.session, now_ms(self));
        write(self, std::move(p), [rp](coord_prepared& p) mutable {
          rp.deliver(coord_multi_response{p.rc, p.results});
        });
      });
    },
    [=](const coord_get_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        coord_get_response r;
        r.rc = self->state.core.get(req.path, req.watch, r.data, r.stat);
        rp.deliver(r);
      });
    },
    [=](const coord_exists_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        coord_stat_response r;
        r.rc = self->state.core.exists(req.path, req.watch, r.stat);
        rp.deliver(r);
      });
    },
    [=](const coord_get_children_request& req) {
      return serve(self, [self, req](caf::response_promise& rp) {
        coord_children_response r;
        r.rc = self->state.core.get_children(req.path, req.watch, r.children, r.stat);
        rp.deliver(r);
      });
    },
    [=](const coord_sync_request&) {
      return serve(self, [](caf::response_promise& rp) { rp.deliver(coord_rc_response{}); });
    },
    [=](const coord_session_request&) {
      return serve(self, [self](caf::response_promise& rp) {
        auto& st = self->state;
        rp.deliver(coord_session_response{st.closed ? session_state::closed
                                                    : session_state::connected,
                                          st.session, {}});
      });
    },
    [=](const coord_close_request&) {
      return serve(self, [self](caf::response_promise& rp) {
        auto& st = self->state;
        st.core.clear_watches();
        auto p = st.core.prepare_session_end(st.session);
        write(self, std::move(p), [self, rp](coord_prepared&) mutable {
          auto& st = self->state;
          st.closed = true;
          self->send(st.opts.owner, coord_session_event{session_state::closed, st.session});
          rp.deliver(coord_rc_response{});
          self->quit();
        });
      });
    },
  };
}

} // namespace

namespace {

// The stored znodes and zxid counter; throws storage_read_error.
coordination_core load_core(node_store& store) {
  coordination_core core;
  store.scan(znode_prefix + "/", [&](const std::string& key, const std::string& value) {
    auto n = decode_znode_value(key, value);
    if (!n.ok())
      throw storage_read_error(n.error().message());
    core.load(key.substr(znode_prefix.size()), std::move(*n));
    return true;
  });
  if (auto v = store.get(last_zxid_key)) {
    auto zxid = decode_zxid_value(*v);
    if (!zxid.ok())
      throw storage_read_error(zxid.error().message());
    core.set_last_zxid(*zxid);
  }
  return core;
}

} // namespace

status check_local_store(node_store& store) {
  try {
    load_core(store);
  } catch (const storage_read_error& e) {
    return {error_code::kafka_storage_error, "data directory " + store.dir() + ": " + e.reason()};
  }
  return {};
}

caf::actor spawn_local_store(caf::actor_system& sys, local_store_options opts) {
  return sys.spawn(local_store_fn, load_core(*opts.store), std::move(opts));
}

} // namespace caftx
