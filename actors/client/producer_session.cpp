#include "actors/client/producer_session.hpp"

#include "runtime/record_batch_v2.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "actors/client/client_context.hpp"
#include "actors/client/record_accumulator.hpp"
#include "actors/client/transaction_manager.hpp"
#include "runtime/messages.hpp"

namespace caftx {

namespace {

using std::chrono::milliseconds;

struct session_state {
  producer_config cfg;
  std::unique_ptr<record_accumulator> acc;
  std::map<topic_partition, partition_actor> leaders;
  // The leader handle whose last request failed with an error that means
  // the leader moved or went away (Kafka's Sender requests a metadata
  // update on these): while it is the known leader, the leader is looked
  // up again before the next send (needs_leader). Kept until another is
  // learned, so a record that still carries it (from the producer's
  // cache) does not bring it back.
  std::map<topic_partition, partition_actor> refused;
  // Sends waiting for their topic's metadata, by topic.
  struct waiting_send {
    topic_partition tp;
    uint64_t generation;
    produce_request req;
    int64_t deadline_ms;
  };
  std::map<std::string, std::vector<waiting_send>> refreshing;
  std::vector<session_completion> done;
  completion_sink sink;
  std::vector<caf::response_promise> flushes;
  // AddPartitionsToTxn (transactional producers): partitions held and not
  // requested yet, the request out (or waiting for its backoff) and its
  // generation (0: none), its deadline, the cached coordinator.
  broker_actor broker; // typed: the session's requests to it are checked
  // What a request to `broker` depends on when it is a relay (unset: the
  // broker itself).
  std::function<caf::strong_actor_ptr()> broker_target;
  caf::actor coordinator;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::set<topic_partition> to_add;
  std::vector<topic_partition> adding;
  uint64_t add_generation = 0;
  uint64_t next_add_generation = 1;
  int64_t add_deadline_ms = 0;
  int concurrent_waits = 0;
  bool add_kick_pending = false; // a session_add_retry{0} is on its way
  static inline const char* name = "caftx.producer_session";
  // A session that dies (killed, crashed) answers the flushes it held at
  // once: the producer waits for them without a timeout.
  ~session_state() {
    for (auto& rp : flushes)
      rp.deliver(caf::make_error(caf::sec::request_receiver_down));
  }
};

using session_ptr = caf::stateful_actor<session_state>*;

int64_t now_ms(session_ptr self) {
  return std::chrono::duration_cast<milliseconds>(self->clock().now().time_since_epoch()).count();
}

void on_reply(session_ptr self, const topic_partition& tp, uint64_t generation, error_code err,
              const std::string& msg, int64_t base_offset);

// Ends the request `id` to the broker when the connection it went over is
// lost (lost_connection.hpp).
std::shared_ptr<lost_connection_watch> watch_broker(session_ptr self, caf::message_id id) {
  auto& st = self->state;
  if (!st.broker_target)
    return watch_connection(self, id, st.broker);
  return std::make_shared<lost_connection_watch>(caf::actor_cast<caf::strong_actor_ptr>(self), id,
                                                 st.broker_target());
}

milliseconds timeout_until(session_ptr self, int64_t deadline_ms) {
  auto left = std::max<int64_t>(1, deadline_ms - now_ms(self));
  return milliseconds(std::min<int64_t>(self->state.cfg.request_timeout_ms, left));
}

// No leader of `tp` is known, or the known one is the one that failed.
bool needs_leader(const session_state& st, const topic_partition& tp) {
  auto l = st.leaders.find(tp);
  if (l == st.leaders.end() || !l->second)
    return true;
  auto f = st.refused.find(tp);
  return f != st.refused.end() && f->second == l->second;
}

void send_produce(session_ptr self, const topic_partition& tp, uint64_t generation,
                  produce_request req, int64_t deadline_ms) {
  // No reply is awaited past the batch's delivery.timeout.ms (KIP-91).
  auto leader = self->state.leaders[tp];
  auto h = self->request(leader, timeout_until(self, deadline_ms), std::move(req));
  h.then(
      [self, tp, generation, leader, w = watch_connection(self, h.id(), leader)](
        const produce_response& r) {
        if (detail::stale_metadata_error(r.error))
          self->state.refused[tp] = leader;
        on_reply(self, tp, generation, r.error, r.message, r.base_offset);
      },
      [self, tp, generation, leader](const caf::error& e) {
        self->state.refused[tp] = leader; // no reply: a lost connection or a stopped leader
        on_reply(self, tp, generation, error_code::request_timed_out, self->system().render(e), -1);
      });
}

// The reply to a Metadata request for `topic`: the leaders it names
// replace the stale ones, and the sends that waited go out; a send whose
// leader is still unknown fails retriably (the accumulator backs off and
// sends it again, which asks again).
void on_leaders(session_ptr self, const std::string& topic, error_code err, const std::string& msg,
                const std::vector<partition_actor>& partitions) {
  auto& st = self->state;
  auto waiting = std::move(st.refreshing[topic]);
  st.refreshing.erase(topic);
  for (size_t i = 0; i < partitions.size(); ++i) {
    topic_partition tp{topic, static_cast<int32_t>(i)};
    if (!partitions[i] || !needs_leader(st, tp))
      continue;
    // The same handle again is taken too (the leader is slow, not gone),
    // and records carrying it are then welcome again.
    st.leaders[tp] = partitions[i];
    if (auto f = st.refused.find(tp); f != st.refused.end() && f->second == partitions[i])
      st.refused.erase(f);
  }
  for (auto& w : waiting) {
    if (!needs_leader(st, w.tp)) {
      send_produce(self, w.tp, w.generation, std::move(w.req), w.deadline_ms);
      continue;
    }
    auto e = err != error_code::none ? err : error_code::leader_not_available;
    on_reply(self, w.tp, w.generation, e,
             msg.empty() ? "no new leader of " + to_string(w.tp) + " is known yet" : msg, -1);
  }
}

// Looks the leaders of `topic` up again (one request per topic at a time).
void refresh_leaders(session_ptr self, const std::string& topic, int64_t deadline_ms) {
  auto h = self->request(self->state.broker, timeout_until(self, deadline_ms),
                         metadata_request{{topic}});
  h.then(
      [self, topic, w = watch_broker(self, h.id())](const metadata_response& r) {
        for (auto& tm : r.topics)
          if (tm.name == topic)
            return on_leaders(self, topic, tm.error, "", tm.partitions);
        on_leaders(self, topic, error_code::unknown_server_error, "malformed metadata response", {});
      },
      [self, topic](const caf::error& e) {
        on_leaders(self, topic, error_code::request_timed_out, self->system().render(e), {});
      });
}

// Sends what the accumulator has ready, arms the retry timer, and answers
// waiting flushes once everything is resolved.
void drive(session_ptr self) {
  auto& st = self->state;
  for (auto& b : st.acc->ready()) {
    produce_request req{b.tp, st.cfg.transactional_id.value_or(""), v2::encode(b.batch)};
    req.acks = static_cast<int16_t>(st.cfg.acks);
    if (needs_leader(st, b.tp)) {
      auto& waiting = st.refreshing[b.tp.topic];
      waiting.push_back({b.tp, b.generation, std::move(req), b.deadline_ms});
      if (waiting.size() == 1)
        refresh_leaders(self, b.tp.topic, b.deadline_ms);
      continue;
    }
    send_produce(self, b.tp, b.generation, std::move(req), b.deadline_ms);
  }
  if (st.acc->wants_retry_timer())
    self->delayed_send(self, milliseconds(st.cfg.retry_backoff_ms), session_retry{});
  auto outcomes = st.acc->take_outcomes();
  if (!outcomes.empty()) {
    std::vector<session_completion> resolved;
    resolved.reserve(outcomes.size());
    for (auto& o : outcomes)
      resolved.push_back({o.id, o.error, std::move(o.message), o.offset, o.add_failed});
    if (st.sink) {
      st.sink(resolved);
      // The flush's answer then needs the failures only (the producer
      // applies the first to its transaction state).
      for (auto& c : resolved)
        if (c.error != error_code::none)
          st.done.push_back(std::move(c));
    } else {
      st.done.insert(st.done.end(), std::make_move_iterator(resolved.begin()),
                     std::make_move_iterator(resolved.end()));
    }
  }
  if (st.acc->unresolved() == 0 && !st.flushes.empty()) {
    session_flush_result r{std::move(st.done), st.acc->epoch()};
    st.done.clear();
    for (auto& rp : st.flushes)
      rp.deliver(r);
    st.flushes.clear();
  }
}

void on_reply(session_ptr self, const topic_partition& tp, uint64_t generation, error_code err,
              const std::string& msg, int64_t base_offset) {
  self->state.acc->on_reply(tp, generation, err, msg, base_offset, now_ms(self));
  drive(self);
}

// -- AddPartitionsToTxn ---------------------------------------------------------

void on_add_reply(session_ptr self, uint64_t generation, error_code err, const std::string& msg);

// Sends (again) the request of the current generation, looking the
// coordinator up first when none is cached.
void send_add(session_ptr self) {
  auto& st = self->state;
  auto generation = st.add_generation;
  auto left = std::max<int64_t>(1, st.add_deadline_ms - now_ms(self));
  auto timeout = milliseconds(std::min<int64_t>(st.cfg.request_timeout_ms, left));
  auto no_reply = [self, generation](const caf::error& e) {
    auto s = detail::from_caf_error(self->system(), e);
    on_add_reply(self, generation, s.code(), s.message());
  };
  if (!st.coordinator) {
    auto h = self->request(st.broker, timeout, find_coordinator_request{1, *st.cfg.transactional_id});
    h.then(
        [self, generation, w = watch_broker(self, h.id())](const find_coordinator_response& r) {
          auto& st = self->state;
          if (generation != st.add_generation)
            return;
          if (r.error != error_code::none || !r.coordinator)
            return on_add_reply(self, generation,
                                r.error != error_code::none ? r.error
                                                            : error_code::coordinator_not_available,
                                r.message);
          st.coordinator = r.coordinator;
          send_add(self);
        },
        no_reply);
    return;
  }
  add_partitions_to_txn_request req{*st.cfg.transactional_id, st.pid, st.epoch, st.adding};
  auto h = self->request(st.coordinator, timeout, std::move(req));
  h.then([self, generation, w = watch_connection(self, h.id(), st.coordinator)](
           const txn_response& r) { on_add_reply(self, generation, r.error, r.message); },
         no_reply);
}

// Starts a request for the partitions held and not requested yet, unless
// one is out.
void maybe_add(session_ptr self) {
  auto& st = self->state;
  if (st.add_generation != 0 || st.to_add.empty())
    return;
  st.adding.assign(st.to_add.begin(), st.to_add.end());
  st.to_add.clear();
  st.add_generation = st.next_add_generation++;
  st.add_deadline_ms = now_ms(self) + st.cfg.delivery_timeout_ms;
  st.concurrent_waits = 0;
  send_add(self);
}

void on_add_reply(session_ptr self, uint64_t generation, error_code err, const std::string& msg) {
  auto& st = self->state;
  if (generation != st.add_generation)
    return; // discarded by an abort
  if (err != error_code::none && is_retriable(err) && now_ms(self) < st.add_deadline_ms) {
    if (needs_coordinator_rediscovery(err))
      st.coordinator = caf::actor{};
    auto backoff = coordinator_backoff_ms(err, st.cfg.retry_backoff_ms, st.concurrent_waits);
    self->delayed_send(self, milliseconds(backoff), session_add_retry{generation});
    return;
  }
  for (auto& tp : st.adding)
    if (err == error_code::none)
      st.acc->release(tp);
    else
      st.acc->fail_held(tp, err,
                        "AddPartitionsToTxn: " + msg
                          + (is_retriable(err) ? " (delivery.timeout.ms expired)" : ""));
  st.adding.clear();
  st.add_generation = 0;
  maybe_add(self);
  drive(self);
}

caf::behavior session_fn(session_ptr self, producer_config cfg, caf::actor broker,
                         completion_sink sink, std::function<caf::strong_actor_ptr()> broker_target) {
  auto& st = self->state;
  st.broker_target = std::move(broker_target);
  st.cfg = cfg;
  st.sink = std::move(sink);
  st.broker = caf::actor_cast<broker_actor>(std::move(broker));
  st.acc = std::make_unique<record_accumulator>(accumulator_settings{
    cfg.batch_size, cfg.max_in_flight_requests_per_connection, cfg.retries, cfg.delivery_timeout_ms,
    cfg.transactional_id.has_value()});
  return {
    [=](const session_identity& id) {
      auto& st = self->state;
      st.pid = id.pid;
      st.epoch = id.epoch;
      st.acc->set_identity(id.pid, id.epoch);
    },
    [=](session_record& r) {
      auto& st = self->state;
      // A record still carrying a leader that failed (the producer's
      // cached metadata) does not replace the one looked up since.
      if (!r.leader) {
        // No leader in the producer's metadata: the session looks it up.
      } else if (auto f = st.refused.find(r.tp); f == st.refused.end() || f->second != r.leader) {
        if (f != st.refused.end()) // a newer view than the one that failed
          st.refused.erase(f);
        st.leaders[r.tp] = r.leader;
      }
      if (r.add_to_txn && !st.acc->held(r.tp)) {
        st.acc->hold(r.tp);
        st.to_add.insert(r.tp);
        // The request goes out once the records already in the mailbox are
        // taken, so that a burst of sends to new partitions makes one.
        if (st.add_generation == 0 && !st.add_kick_pending) {
          st.add_kick_pending = true;
          self->send(self, session_add_retry{0});
        }
      }
      if (st.acc->append(r.tp, r.id, std::move(r.rec), now_ms(self)))
        self->delayed_send(self, milliseconds(st.cfg.linger_ms),
                           session_linger{r.tp, st.acc->linger_generation(r.tp)});
      drive(self);
    },
    [=](const session_add_retry& r) {
      auto& st = self->state;
      if (r.generation == 0) { // the kick
        st.add_kick_pending = false;
        maybe_add(self);
        return;
      }
      if (r.generation != st.add_generation)
        return;
      // Partitions that became new meanwhile go in the same request.
      st.adding.insert(st.adding.end(), st.to_add.begin(), st.to_add.end());
      st.to_add.clear();
      send_add(self);
    },
    [=](const session_linger& l) {
      self->state.acc->linger_expired(l.tp, l.generation, now_ms(self));
      drive(self);
    },
    [=](const session_retry&) {
      self->state.acc->retry_backoff_elapsed();
      drive(self);
    },
    [=](const session_flush& f) -> caf::result<caf::message> {
      auto& st = self->state;
      if (f.discard) {
        st.acc->discard_unsent(); // releases the held partitions
        st.to_add.clear();
        st.adding.clear();
        st.add_generation = 0; // a late reply is ignored
      } else
        st.acc->seal_all(now_ms(self));
      auto rp = self->make_response_promise();
      st.flushes.push_back(rp);
      drive(self);
      return rp;
    },
  };
}

} // namespace

caf::actor spawn_producer_session(caf::actor_system& sys, const producer_config& cfg,
                                  caf::actor broker, completion_sink sink,
                                  std::function<caf::strong_actor_ptr()> broker_target) {
  return sys.spawn(session_fn, cfg, std::move(broker), std::move(sink), std::move(broker_target));
}

} // namespace caftx
