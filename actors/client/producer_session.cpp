#include "actors/client/producer_session.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <vector>

#include "runtime/messages.hpp"

namespace caftx {

namespace {

using caf::actor_clock;
using std::chrono::milliseconds;

struct sealed_batch {
  record_batch batch;
  std::vector<uint64_t> ids;
  bool in_flight = false;
  bool ever_sent = false;
  int32_t attempts = 0;
  actor_clock::time_point deadline;
  uint64_t request_generation = 0; // guards replies of superseded sends
  uint64_t ordinal = 0;            // position in the partition's sequence order
};

struct partition_state {
  caf::actor leader;
  record_batch open;
  std::vector<uint64_t> open_ids;
  size_t open_bytes = 0;
  uint64_t linger_generation = 0;
  std::deque<sealed_batch> queue; // sealed, in sequence order
  int32_t next_sequence = 0;
  // Batches are numbered in sequence order; the highest number acknowledged
  // in the current epoch (0: none). A batch below it must have been written:
  // the partition appends a producer's batches in sequence order.
  uint64_t next_ordinal = 1;
  uint64_t max_acked_ordinal = 0;
};

struct session_state {
  producer_config cfg;
  bool transactional = false;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::map<topic_partition, partition_state> partitions;
  std::vector<session_completion> done;
  size_t unresolved = 0;      // records received and not yet completed
  bool bump_pending = false;  // KIP-360 local epoch bump once idle
  bool retry_scheduled = false;
  uint64_t next_generation = 1;
  std::vector<caf::response_promise> flushes;
  static inline const char* name = "caftx.producer_session";
};

using session_ptr = caf::stateful_actor<session_state>*;

void pump(session_ptr self);

void complete(session_ptr self, const sealed_batch& b, error_code err, const std::string& msg,
              int64_t base_offset) {
  auto& st = self->state;
  for (size_t i = 0; i < b.ids.size(); ++i)
    st.done.push_back({b.ids[i], err, msg, err == error_code::none ? base_offset + static_cast<int64_t>(i) : -1});
  st.unresolved -= b.ids.size();
}

size_t in_flight_total(session_ptr self) {
  size_t n = 0;
  for (auto& [tp, p] : self->state.partitions)
    for (auto& b : p.queue)
      n += b.in_flight;
  return n;
}

void maybe_finish(session_ptr self) {
  auto& st = self->state;
  if (st.bump_pending && in_flight_total(self) == 0) {
    // KIP-360: new epoch, sequences from 0. Only batches never sent are
    // kept (re-sequenced); the others were failed already.
    st.bump_pending = false;
    st.epoch = producer_epoch{static_cast<int16_t>(st.epoch.value + 1)};
    for (auto& [tp, p] : st.partitions) {
      p.next_sequence = 0;
      p.max_acked_ordinal = 0;
      for (auto& b : p.queue) {
        b.batch.epoch = st.epoch;
        b.batch.base_sequence = p.next_sequence;
        p.next_sequence = add_sequence(p.next_sequence, b.batch.record_count());
      }
      p.open.epoch = st.epoch;
    }
    pump(self);
  }
  if (st.unresolved == 0 && !st.flushes.empty()) {
    session_flush_result r{std::move(st.done), st.epoch};
    st.done.clear();
    for (auto& rp : st.flushes)
      rp.deliver(r);
    st.flushes.clear();
  }
}

// Fails `p`'s batches from position `from` on (they cannot be appended in
// order any more).
void fail_from(session_ptr self, partition_state& p, size_t from, error_code err,
               const std::string& msg) {
  while (p.queue.size() > from) {
    complete(self, p.queue.back(), err, msg, -1);
    p.queue.pop_back();
  }
}

void seal(session_ptr self, partition_state& p) {
  auto& st = self->state;
  if (p.open.records.empty())
    return;
  sealed_batch b;
  b.batch = std::move(p.open);
  b.batch.pid = st.pid;
  b.batch.epoch = st.epoch;
  b.batch.attributes = st.transactional ? attr_transactional : 0;
  b.batch.base_sequence = p.next_sequence;
  p.next_sequence = add_sequence(p.next_sequence, b.batch.record_count());
  b.ids = std::move(p.open_ids);
  b.ordinal = p.next_ordinal++;
  b.deadline = self->clock().now() + milliseconds(st.cfg.delivery_timeout_ms);
  p.queue.push_back(std::move(b));
  p.open = record_batch{};
  p.open_ids.clear();
  p.open_bytes = 0;
  ++p.linger_generation;
}

void schedule_retry(session_ptr self) {
  auto& st = self->state;
  if (st.retry_scheduled)
    return;
  st.retry_scheduled = true;
  self->delayed_send(self, milliseconds(st.cfg.retry_backoff_ms), session_retry{});
}

void on_reply(session_ptr self, topic_partition tp, uint64_t generation, error_code err,
              const std::string& msg, int64_t base_offset) {
  auto& st = self->state;
  auto pi = st.partitions.find(tp);
  if (pi == st.partitions.end())
    return;
  auto& p = pi->second;
  size_t pos = 0;
  while (pos < p.queue.size() && p.queue[pos].request_generation != generation)
    ++pos;
  if (pos == p.queue.size())
    return; // superseded or already resolved
  auto& b = p.queue[pos];
  b.in_flight = false;
  // A later batch of this epoch was acknowledged, so this one was written
  // before it: its retry fell out of the partition's five-batch window.
  // Success without an offset, as Kafka treats DUPLICATE_SEQUENCE_NUMBER.
  bool written_before = err == error_code::out_of_order_sequence_number && pos == 0
                        && b.batch.epoch == st.epoch && b.ordinal < p.max_acked_ordinal;
  if (err == error_code::none || written_before) {
    p.max_acked_ordinal = std::max(p.max_acked_ordinal, b.ordinal);
    complete(self, b, error_code::none, {}, written_before ? -1 : base_offset);
    p.queue.erase(p.queue.begin() + static_cast<std::ptrdiff_t>(pos));
  } else {
    bool behind_unresolved = pos > 0; // an earlier batch is still open
    bool retriable = is_retriable(err)
                     || (err == error_code::out_of_order_sequence_number && behind_unresolved);
    bool expired = self->clock().now() >= b.deadline || b.attempts > st.cfg.retries;
    if (retriable && !expired) {
      schedule_retry(self);
    } else {
      if (retriable)
        err = error_code::request_timed_out; // delivery.timeout.ms expired
      // Everything from here on fails; wait for in-flight ones first.
      for (size_t k = pos; k < p.queue.size(); ++k)
        if (p.queue[k].in_flight)
          p.queue[k].request_generation = 0; // their replies are ignored
      fail_from(self, p, pos, err, msg);
      if (!st.transactional && err != error_code::producer_fenced)
        st.bump_pending = true;
    }
  }
  pump(self);
  maybe_finish(self);
}

void send_batch(session_ptr self, const topic_partition& tp, partition_state& p, sealed_batch& b) {
  auto& st = self->state;
  b.in_flight = true;
  b.ever_sent = true;
  ++b.attempts;
  b.request_generation = st.next_generation++;
  auto generation = b.request_generation;
  produce_request req{tp, st.transactional ? st.cfg.transactional_id.value_or("") : "", b.batch};
  self->request(p.leader, milliseconds(st.cfg.request_timeout_ms), std::move(req))
    .then(
      [self, tp, generation](const produce_response& r) {
        on_reply(self, tp, generation, r.error, r.message, r.base_offset);
      },
      [self, tp, generation](const caf::error& e) {
        on_reply(self, tp, generation, error_code::request_timed_out, self->system().render(e), -1);
      });
}

// Sends queued batches in sequence order, up to max.in.flight per
// partition. A batch waiting for its retry is resent before any later one.
void pump(session_ptr self) {
  auto& st = self->state;
  if (st.bump_pending)
    return; // new sends wait for the epoch bump
  for (auto& [tp, p] : st.partitions) {
    int32_t flying = 0;
    for (auto& b : p.queue)
      flying += b.in_flight;
    for (auto& b : p.queue) {
      if (flying >= st.cfg.max_in_flight_requests_per_connection)
        break;
      if (b.in_flight)
        continue;
      if (b.ever_sent && st.retry_scheduled)
        break; // its backoff is running: keep order, send nothing after it
      send_batch(self, tp, p, b);
      ++flying;
    }
  }
}

caf::behavior session_fn(session_ptr self, producer_config cfg) {
  self->state.cfg = cfg;
  self->state.transactional = cfg.transactional_id.has_value();
  return {
    [=](const session_identity& id) {
      auto& st = self->state;
      st.pid = id.pid;
      st.epoch = id.epoch;
      for (auto& [tp, p] : st.partitions) {
        p.next_sequence = 0;
        p.max_acked_ordinal = 0;
      }
    },
    [=](session_record& r) {
      auto& st = self->state;
      auto& p = st.partitions[r.tp];
      p.leader = r.leader;
      p.open_bytes += r.rec.key.size() + r.rec.value.size() + 20;
      p.open.records.push_back(std::move(r.rec));
      p.open_ids.push_back(r.id);
      ++st.unresolved;
      if (p.open_bytes >= static_cast<size_t>(st.cfg.batch_size)) {
        seal(self, p);
        pump(self);
      } else if (p.open.records.size() == 1) {
        self->delayed_send(self, milliseconds(st.cfg.linger_ms),
                           session_linger{r.tp, p.linger_generation});
      }
    },
    [=](const session_linger& l) {
      auto i = self->state.partitions.find(l.tp);
      if (i == self->state.partitions.end() || i->second.linger_generation != l.generation)
        return;
      seal(self, i->second);
      pump(self);
    },
    [=](const session_retry&) {
      self->state.retry_scheduled = false;
      pump(self);
    },
    [=](const session_flush& f) -> caf::result<caf::message> {
      auto& st = self->state;
      for (auto& [tp, p] : st.partitions) {
        if (f.discard) {
          std::vector<uint64_t> ids = std::move(p.open_ids);
          st.unresolved -= ids.size();
          for (auto id : ids)
            st.done.push_back({id, error_code::invalid_txn_state, "transaction aborted", -1});
          p.open = record_batch{};
          p.open_ids.clear();
          p.open_bytes = 0;
          ++p.linger_generation;
          size_t first_unsent = 0;
          while (first_unsent < p.queue.size() && p.queue[first_unsent].ever_sent)
            ++first_unsent;
          fail_from(self, p, first_unsent, error_code::invalid_txn_state, "transaction aborted");
        } else {
          seal(self, p);
        }
      }
      pump(self);
      auto rp = self->make_response_promise();
      st.flushes.push_back(rp);
      maybe_finish(self);
      return rp;
    },
  };
}

} // namespace

caf::actor spawn_producer_session(caf::actor_system& sys, const producer_config& cfg) {
  return sys.spawn(session_fn, cfg);
}

} // namespace caftx
