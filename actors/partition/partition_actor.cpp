#include "actors/partition/partition_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/response_promise.hpp>
#include <leveldb/write_batch.h>

#include <deque>
#include <map>
#include <stdexcept>

#include "actors/broker/node_context.hpp"
#include "actors/common/durable_queue.hpp"
#include "actors/common/storage_fault.hpp"
#include "actors/common/supervisor.hpp"
#include "actors/common/verification.hpp"
#include "actors/partition/partition_core.hpp"
#include "runtime/fault_point.hpp"
#include "storage/codec.hpp"

namespace caftx {

namespace {

struct partition_state {
  std::unique_ptr<partition_core> core;
  durable_queue dq;
  std::shared_ptr<const node_context> ctx;
  // Replies held until the high watermark passes `offset`, in offset order.
  struct waiter {
    int64_t offset;
    caf::response_promise rp;
    caf::message reply;
  };
  std::deque<waiter> waiters;
  // Transactional produces held per producer while one of them is being
  // verified with the transaction coordinator (KIP-890 part 1).
  struct held_produce {
    produce_request req;
    caf::response_promise rp;
  };
  std::map<producer_id, std::deque<held_produce>> held;
  // Fetches with nothing to return, held up to their max_wait_ms
  // (fetch.max.wait.ms) until the log shows them something.
  struct held_fetch {
    uint64_t id;
    fetch_request req;
    caf::response_promise rp;
  };
  std::vector<held_fetch> fetches;
  uint64_t next_fetch_id = 1;
  static inline const char* name = "caftx.partition";
  // A leader that dies (crash, kill) answers what it still held at once,
  // so producers retry now instead of after request.timeout.ms; a retry of
  // a batch that did reach the disk is then answered as a duplicate.
  ~partition_state() {
    for (auto& w : waiters)
      w.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    for (auto& [pid, queue] : held)
      for (auto& h : queue)
        h.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    for (auto& f : fetches)
      f.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
  }
};

using partition_ptr = caf::stateful_actor<partition_state>*;

// The answer to `req` from the log as it is now.
fetch_response fetch_now(partition_ptr self, const fetch_request& req) {
  auto& st = self->state;
  auto r = st.core->fetch(req.fetch_offset, req.max_bytes, req.isolation);
  fetch_response resp;
  resp.high_watermark = st.core->high_watermark();
  resp.last_stable_offset = st.core->last_stable_offset();
  resp.log_start_offset = st.core->log_start_offset();
  if (!r.ok()) {
    resp.error = r.error().code();
    resp.message = r.error().message();
    return resp;
  }
  resp.aborted_transactions = std::move(r->aborted);
  resp.batches = std::move(r->batches);
  return resp;
}

// Fetches held for data: those the log now has something for are
// answered (the high watermark, and with it the last stable offset, moved).
void release_fetches(partition_ptr self) {
  auto& fetches = self->state.fetches;
  for (auto i = fetches.begin(); i != fetches.end();) {
    auto resp = fetch_now(self, i->req);
    if (resp.error == error_code::none && resp.batches.empty()) {
      ++i;
      continue;
    }
    i->rp.deliver(std::move(resp));
    i = fetches.erase(i);
  }
}

void release_waiters(partition_ptr self) {
  auto& st = self->state;
  while (!st.waiters.empty() && st.waiters.front().offset < st.core->high_watermark()) {
    st.waiters.front().rp.deliver(std::move(st.waiters.front().reply));
    st.waiters.pop_front();
  }
}

// Appends `batch` durably; `rp` gets `reply` once the batch is durable.
template <class Reply>
void append_and_reply(partition_ptr self, record_batch batch, Reply reply, bool set_base_offset,
                      caf::response_promise rp) {
  auto& st = self->state;
  auto& stored = st.core->append(std::move(batch), st.ctx->clock_ms());
  if constexpr (std::is_same_v<Reply, produce_response>)
    if (set_base_offset)
      reply.base_offset = stored.base_offset;
  int64_t last = stored.last_offset();
  fault::append_detail appended{st.core->tp(),  stored.base_offset, last,   stored.pid,
                                stored.epoch,   stored.is_transactional(), stored.is_control()};
  leveldb::WriteBatch wb;
  wb.Put(keys::log_entry(st.core->tp(), stored.base_offset), codec::encode(stored));
  st.waiters.push_back({last, rp, caf::make_message(std::move(reply))});
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb), [self, last, appended](const status& s) {
    if (!s.ok()) {
      // The in-memory log is ahead of the disk now: every reply still
      // waiting gets the error, and the supervisor rebuilds the leader from
      // what is durable once the store writes again.
      for (auto& w : self->state.waiters)
        w.rp.deliver(error_reply_as(w.reply, s));
      self->state.waiters.clear();
      self->quit(storage_exit(storage_fault::write_failed,
                              "partition " + to_string(self->state.core->tp()) + ": " + s.message()));
      return;
    }
    CAFTX_FAULT_POINT_DETAIL(self, "partition.append_durable", &appended);
    self->state.core->set_high_watermark(last + 1);
    release_waiters(self);
    release_fetches(self);
  });
}

// The producer-state checks and the append of one produce (§3.2).
void produce(partition_ptr self, produce_request& req, caf::response_promise rp) {
  auto& st = self->state;
  auto d = st.core->validate_produce(req.batch);
  if (!d.ok()) {
    rp.deliver(
      produce_response{d.error().code(), d.error().message(), -1, st.core->log_start_offset()});
    return;
  }
  produce_response reply{error_code::none, {}, d->base_offset, st.core->log_start_offset()};
  if (!d->duplicate) {
    append_and_reply(self, std::move(req.batch), reply, true, rp);
    return;
  }
  if (d->last_offset < st.core->high_watermark()) {
    rp.deliver(reply);
    return;
  }
  // Still on its way to disk: answer with the original's durability.
  auto pos = std::find_if(st.waiters.begin(), st.waiters.end(),
                          [&](auto& w) { return w.offset > d->last_offset; });
  st.waiters.insert(pos, {d->last_offset, rp, caf::make_message(reply)});
}

void verify_next(partition_ptr self, producer_id pid);

// Handles the held produces of `pid` in arrival order: those that need no
// verification (any more) go straight to produce(), the first that does
// is sent to the coordinator and the rest waits behind it, so a producer's
// batches are appended in the order they came.
void drain_held(partition_ptr self, producer_id pid) {
  auto& st = self->state;
  auto i = st.held.find(pid);
  while (i != st.held.end() && !i->second.empty()) {
    auto& front = i->second.front();
    if (st.core->needs_verification(front.req.batch)) {
      verify_next(self, pid);
      return;
    }
    auto h = std::move(front);
    i->second.pop_front();
    produce(self, h.req, h.rp);
  }
  if (i != st.held.end())
    st.held.erase(i);
}

void verify_next(partition_ptr self, producer_id pid) {
  auto& st = self->state;
  auto& front = st.held[pid].front();
  auto& b = front.req.batch;
  verify_in_transaction(self, *st.ctx, api_kind::produce, front.req.transactional_id, b.pid,
                        b.epoch, st.core->tp(), [self, pid](error_code e, std::string msg) {
                          auto& st = self->state;
                          auto i = st.held.find(pid);
                          if (i == st.held.end() || i->second.empty())
                            return;
                          auto h = std::move(i->second.front());
                          i->second.pop_front();
                          if (e == error_code::none)
                            produce(self, h.req, h.rp);
                          else
                            h.rp.deliver(produce_response{e, std::move(msg), -1,
                                                          st.core->log_start_offset()});
                          drain_held(self, pid);
                        });
}

caf::behavior partition_fn(partition_ptr self, std::shared_ptr<const node_context> ctx,
                           topic_partition tp) {
  auto& st = self->state;
  st.ctx = ctx;
  stop_on_storage_faults(self, "partition " + to_string(tp));
  st.dq = durable_queue{ctx->store};
  st.core = std::make_unique<partition_core>(tp);
  ctx->store->scan(keys::log_prefix(tp), [&](const std::string& key, const std::string& value) {
    auto b = codec::decode_batch(value);
    if (!b.ok())
      throw storage_read_error(b.error().message() + " (key " + key + ")");
    st.core->replay(std::move(b).value());
    return true;
  });
  // As Kafka at load: producers that expired while the node was down go.
  auto expiration_ms = ctx->config.producer_id_expiration_ms;
  st.core->remove_expired_producers(ctx->clock_ms(), expiration_ms);
  auto check_interval = std::chrono::milliseconds(ctx->config.producer_id_expiration_check_interval_ms);
  self->delayed_send(self, check_interval, producer_expiration_tick{});
  return {
    [=](const producer_expiration_tick&) {
      self->state.core->remove_expired_producers(self->state.ctx->clock_ms(), expiration_ms);
      self->delayed_send(self, check_interval, producer_expiration_tick{});
    },
    [=](storage_done& done) { self->state.dq.complete(done); },
    [=](produce_request& req) -> caf::result<caf::message> {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      auto& b = req.batch;
      if (b.is_transactional() && req.transactional_id.empty()) {
        rp.deliver(produce_response{error_code::invalid_request,
                                    "transactional batch without transactional id", -1,
                                    st.core->log_start_offset()});
        return rp;
      }
      bool held = st.held.count(b.pid) > 0;
      if (!held && !st.core->needs_verification(b)) {
        produce(self, req, rp);
        return rp;
      }
      st.held[b.pid].push_back({std::move(req), rp});
      if (!held)
        verify_next(self, b.pid);
      return rp;
    },
    [=](const fetch_request& req) -> caf::result<fetch_response> {
      auto resp = fetch_now(self, req);
      if (req.max_wait_ms <= 0 || resp.error != error_code::none || !resp.batches.empty())
        return resp;
      // Nothing to return: held until there is (fetch.max.wait.ms).
      auto& st = self->state;
      auto rp = self->make_response_promise<fetch_response>();
      auto id = st.next_fetch_id++;
      st.fetches.push_back({id, req, rp});
      self->delayed_send(self, std::chrono::milliseconds(req.max_wait_ms), fetch_wait_expired{id});
      return rp;
    },
    [=](const fetch_wait_expired& e) {
      auto& fetches = self->state.fetches;
      for (auto i = fetches.begin(); i != fetches.end(); ++i)
        if (i->id == e.id) {
          i->rp.deliver(fetch_now(self, i->req));
          fetches.erase(i);
          return;
        }
    },
    [=](const list_offsets_request& req) {
      return list_offsets_response{error_code::none,
                                   self->state.core->list_offset(req.timestamp, req.isolation)};
    },
    [=](const describe_producers_request& req) {
      auto& st = self->state;
      describe_producers_response r;
      if (req.tp != st.core->tp()) {
        r.error = error_code::unknown_topic_or_partition;
        r.message = "this leader does not host " + to_string(req.tp);
        return r;
      }
      r.active_producers = st.core->active_producers();
      return r;
    },
    [=](const write_txn_marker_request& req) -> caf::result<caf::message> {
      auto& st = self->state;
      if (req.tp != st.core->tp()) // §2.7 step 2, before the producer checks
        return caf::make_message(txn_response{error_code::unknown_topic_or_partition,
                                              "this leader does not host " + to_string(req.tp)});
      end_txn_marker marker{req.committed ? control_type::commit : control_type::abort,
                            coordinator_epoch{req.coordinator_epoch}};
      auto v = st.core->validate_marker(req.pid, req.epoch, marker, req.transaction_version);
      if (!v.ok())
        return caf::make_message(txn_response{v.code(), v.message()});
      auto batch = make_control_batch(req.pid, req.epoch, marker, st.ctx->clock_ms());
      auto rp = self->make_response_promise();
      append_and_reply(self, std::move(batch), txn_response{}, false, rp);
      return rp;
    },
  };
}

} // namespace

caf::actor spawn_partition(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                           topic_partition tp) {
  return sys.spawn(partition_fn, std::move(ctx), std::move(tp));
}

caf::actor spawn_supervised_partition(caf::actor_system& sys,
                                      std::shared_ptr<const node_context> ctx,
                                      topic_partition tp) {
  return spawn_supervisor(sys, node_supervision(ctx, "partition " + to_string(tp),
                                                [ctx, tp](caf::actor_system& sys) {
                                                  return spawn_partition(sys, ctx, tp);
                                                }));
}

} // namespace caftx
