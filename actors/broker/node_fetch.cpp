#include "actors/broker/node_fetch.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <memory>

#include "actors/common/lost_connection.hpp"
#include "runtime/broker_messages.hpp"

namespace caftx {

int64_t apply_fetch_max_bytes(node_fetch_response& resp, int32_t max_bytes) {
  int64_t kept = 0;
  for (auto& p : resp.partitions) {
    if (p.records.empty())
      continue;
    auto size = static_cast<int64_t>(p.records.size());
    if (kept > 0 && kept + size > max_bytes) {
      p.records.clear();
      p.aborted_transactions.clear();
      continue;
    }
    kept += size;
  }
  return kept;
}

namespace {

// One request being gathered.
struct gather {
  node_fetch_request req;
  node_fetch_response resp;
  caf::typed_response_promise<node_fetch_response> rp;
  size_t outstanding = 0;
  int64_t bytes = 0;
  bool failed = false; // a partition answered an error
  bool answered = false;
  metrics::request_timer timer; // Fetch's TotalTimeMs

  bool satisfied() const { return failed || bytes >= req.min_bytes; }

  void answer() {
    if (answered)
      return;
    answered = true;
    apply_fetch_max_bytes(resp, req.max_bytes);
    timer.observe();
    rp.deliver(std::move(resp));
  }

  void take(size_t i, fetch_response r) {
    if (r.error != error_code::none)
      failed = true;
    bytes += static_cast<int64_t>(r.records.size())
             - static_cast<int64_t>(resp.partitions[i].records.size());
    resp.partitions[i] = std::move(r);
  }
};

fetch_response no_reply(caf::actor_system& sys, const caf::error& e) {
  fetch_response r;
  if (e == caf::sec::request_receiver_down) {
    r.error = error_code::not_leader_or_follower;
    r.message = "the partition's leader is gone";
  } else {
    r.error = error_code::request_timed_out;
    r.message = "the partition's leader did not answer: " + sys.render(e);
  }
  return r;
}

using leader_list = std::shared_ptr<const std::vector<partition_actor>>;

// Asks every partition of `g` (those without an answer of their own, in
// the held round) with `max_wait_ms`; `then` runs once all answered. The
// callbacks share `then` and the leaders: a fetch of N partitions costs
// O(N), not N copies of them.
template <class Self>
void ask_all(Self* self, const std::shared_ptr<gather>& g, const leader_list& leader_ptr,
             int32_t max_wait_ms, int32_t request_timeout_ms, std::function<void()> then_fn) {
  const auto& leaders = *leader_ptr;
  auto then = std::make_shared<const std::function<void()>>(std::move(then_fn));
  g->outstanding = 0;
  for (size_t i = 0; i < leaders.size(); ++i)
    if (leaders[i])
      ++g->outstanding;
  if (g->outstanding == 0) {
    (*then)();
    return;
  }
  auto timeout = std::chrono::milliseconds(int64_t{max_wait_ms} + request_timeout_ms);
  for (size_t i = 0; i < leaders.size(); ++i) {
    if (!leaders[i])
      continue;
    auto req = g->req.partitions[i];
    req.max_wait_ms = max_wait_ms;
    auto done = [g, then](size_t i, fetch_response r) {
      if (!g->answered)
        g->take(i, std::move(r));
      if (--g->outstanding == 0 || (g->satisfied() && !g->answered))
        (*then)();
    };
    auto h = self->request(leaders[i], timeout, std::move(req));
    h.then([done, i, w = watch_connection(self, h.id(), leaders[i])](
             fetch_response& r) { done(i, std::move(r)); },
            [self, done, i](caf::error& e) { done(i, no_reply(self->system(), e)); });
  }
}

template <class Self>
void fetch_from_node(Self* self, node_fetch_request req,
                     const std::function<partition_actor(const topic_partition&)>& leader_of,
                     int32_t request_timeout_ms,
                     caf::typed_response_promise<node_fetch_response> rp,
                     metrics::request_timer timer) {
  auto g = std::make_shared<gather>();
  g->timer = std::move(timer);
  g->req = std::move(req);
  g->rp = std::move(rp);
  g->resp.partitions.resize(g->req.partitions.size());
  auto leader_ptr = std::make_shared<std::vector<partition_actor>>();
  auto& leaders = *leader_ptr;
  leaders.reserve(g->req.partitions.size());
  for (size_t i = 0; i < g->req.partitions.size(); ++i) {
    auto& tp = g->req.partitions[i].tp;
    auto leader = leader_of(tp);
    if (!leader) {
      g->resp.partitions[i].error = error_code::unknown_topic_or_partition;
      g->resp.partitions[i].message = "this node does not host " + to_string(tp);
      g->failed = true;
    }
    leaders.push_back(std::move(leader));
  }
  auto wait = g->req.max_wait_ms;
  leader_list shared_leaders = leader_ptr;
  auto held_round = [self, g, shared_leaders, wait, request_timeout_ms] {
    if (g->answered)
      return;
    if (g->satisfied() || wait <= 0) {
      g->answer();
      return;
    }
    // Nothing yet: every partition again, each held by its leader until it
    // has something or fetch.max.wait.ms passed.
    ask_all(self, g, shared_leaders, wait, request_timeout_ms, [g] { g->answer(); });
  };
  ask_all(self, g, shared_leaders, 0, request_timeout_ms, [g, held_round] {
    if (g->outstanding == 0)
      held_round();
  });
}

} // namespace

void node_fetch(caf::event_based_actor* self, node_fetch_request req,
                const std::function<partition_actor(const topic_partition&)>& leader_of,
                int32_t request_timeout_ms, caf::typed_response_promise<node_fetch_response> rp,
                metrics::request_timer timer) {
  fetch_from_node(self, std::move(req), leader_of, request_timeout_ms, std::move(rp),
                  std::move(timer));
}

void node_fetch(broker_impl_actor::pointer self, node_fetch_request req,
                const std::function<partition_actor(const topic_partition&)>& leader_of,
                int32_t request_timeout_ms, caf::typed_response_promise<node_fetch_response> rp,
                metrics::request_timer timer) {
  fetch_from_node(self, std::move(req), leader_of, request_timeout_ms, std::move(rp),
                  std::move(timer));
}

} // namespace caftx
