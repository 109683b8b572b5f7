#include "actors/client/producer_session.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <map>
#include <vector>

#include "actors/client/record_accumulator.hpp"
#include "runtime/messages.hpp"

namespace caftx {

namespace {

using std::chrono::milliseconds;

struct session_state {
  producer_config cfg;
  std::unique_ptr<record_accumulator> acc;
  std::map<topic_partition, caf::actor> leaders;
  std::vector<session_completion> done;
  std::vector<caf::response_promise> flushes;
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

// Sends what the accumulator has ready, arms the retry timer, and answers
// waiting flushes once everything is resolved.
void drive(session_ptr self) {
  auto& st = self->state;
  for (auto& b : st.acc->ready()) {
    auto tp = b.tp;
    auto generation = b.generation;
    produce_request req{b.tp, st.cfg.transactional_id.value_or(""), std::move(b.batch)};
    self->request(st.leaders[tp], milliseconds(st.cfg.request_timeout_ms), std::move(req))
      .then(
        [self, tp, generation](const produce_response& r) {
          on_reply(self, tp, generation, r.error, r.message, r.base_offset);
        },
        [self, tp, generation](const caf::error& e) {
          on_reply(self, tp, generation, error_code::request_timed_out, self->system().render(e), -1);
        });
  }
  if (st.acc->wants_retry_timer())
    self->delayed_send(self, milliseconds(st.cfg.retry_backoff_ms), session_retry{});
  for (auto& o : st.acc->take_outcomes())
    st.done.push_back({o.id, o.error, o.message, o.offset});
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

caf::behavior session_fn(session_ptr self, producer_config cfg) {
  auto& st = self->state;
  st.cfg = cfg;
  st.acc = std::make_unique<record_accumulator>(accumulator_settings{
    cfg.batch_size, cfg.max_in_flight_requests_per_connection, cfg.retries, cfg.delivery_timeout_ms,
    cfg.transactional_id.has_value()});
  return {
    [=](const session_identity& id) { self->state.acc->set_identity(id.pid, id.epoch); },
    [=](session_record& r) {
      auto& st = self->state;
      st.leaders[r.tp] = r.leader;
      if (st.acc->append(r.tp, r.id, std::move(r.rec), now_ms(self)))
        self->delayed_send(self, milliseconds(st.cfg.linger_ms),
                           session_linger{r.tp, st.acc->linger_generation(r.tp)});
      drive(self);
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
      if (f.discard)
        st.acc->discard_unsent();
      else
        st.acc->seal_all(now_ms(self));
      auto rp = self->make_response_promise();
      st.flushes.push_back(rp);
      drive(self);
      return rp;
    },
  };
}

} // namespace

caf::actor spawn_producer_session(caf::actor_system& sys, const producer_config& cfg) {
  return sys.spawn(session_fn, cfg);
}

} // namespace caftx
