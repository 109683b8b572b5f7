#include "actors/broker/component_drill.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <optional>
#include <thread>

#include "actors/broker/network_drill.hpp"
#include "actors/broker/node.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/messages.hpp"

namespace caftx {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// One request to `to`, waited for up to 2 s; nullopt without an answer.
template <class Reply, class Request>
std::optional<Reply> ask(caf::actor_system& sys, const caf::actor& to, Request req) {
  caf::scoped_actor self{sys};
  std::optional<Reply> out;
  self->request(to, 2s, std::move(req))
    .receive([&](Reply& r) { out = std::move(r); }, [](caf::error&) {});
  return out;
}

// Waits until shard `shard`'s coordinator answers with anything but
// COORDINATOR_LOAD_IN_PROGRESS; false at `deadline`.
bool await_answer(node& n, int32_t shard, clock_type::time_point deadline) {
  auto sup = n.coordinator_supervisor(shard);
  while (clock_type::now() < deadline) {
    auto r = ask<describe_transaction_response>(n.system(), sup,
                                                describe_transaction_request{"caftx-drill-probe"});
    if (r && r->error != error_code::coordinator_load_in_progress)
      return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

} // namespace

std::map<int32_t, int32_t> coordinator_restarts(node& n) {
  std::map<int32_t, int32_t> out;
  for (int32_t shard = 0; shard < n.config().transaction_state_log_num_partitions; ++shard) {
    auto sup = n.coordinator_supervisor(shard);
    if (!sup)
      continue;
    if (auto s = ask<supervisor_stats>(n.system(), sup, supervisor_stats_request{}))
      out[shard] = s->restarts;
  }
  return out;
}

status_or<component_restart> kill_coordinator_shard(node& n, int32_t shard,
                                                    std::chrono::milliseconds timeout) {
  if (shard < 0 || shard >= n.config().transaction_state_log_num_partitions
      || !n.coordinator_supervisor(shard))
    return status{error_code::invalid_request,
                  "no transaction coordinator shard " + std::to_string(shard) + " on this node"};
  auto deadline = clock_type::now() + timeout;
  component_restart r;
  r.shard = shard;
  auto sup = n.coordinator_supervisor(shard);
  auto before = ask<supervisor_stats>(n.system(), sup, supervisor_stats_request{});
  if (!before)
    return status{error_code::request_timed_out, "the shard's supervisor did not answer"};
  r.restarts_before = before->restarts;
  auto start = clock_type::now();
  auto after = ask<supervisor_stats>(n.system(), sup, kill_child_request{});
  if (!after)
    return status{error_code::request_timed_out, "the shard's supervisor did not answer"};
  if (after->gave_up)
    return status{error_code::coordinator_not_available,
                  "the supervisor of shard " + std::to_string(shard) + " gave up"};
  if (!await_answer(n, shard, deadline))
    return status{error_code::request_timed_out,
                  "coordinator shard " + std::to_string(shard) + " did not answer again"};
  r.reload_time = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start);
  auto now = ask<supervisor_stats>(n.system(), sup, supervisor_stats_request{});
  r.restarts_after = now ? now->restarts : after->restarts;
  return r;
}

status_or<component_restart> kill_coordinator_at(node& n, fault_drills& drills,
                                                 const std::string& point,
                                                 std::chrono::milliseconds timeout) {
  if (!fault::enabled())
    return status{error_code::invalid_request, "this build has no fault points"};
  const auto& all = fault::all_points();
  if (point.rfind("txn_coordinator.", 0) != 0
      || std::find(all.begin(), all.end(), point) == all.end())
    return status{error_code::invalid_request,
                  "'" + point + "' is not a transaction coordinator's fault point"};
  auto deadline = clock_type::now() + timeout;
  auto before = coordinator_restarts(n);
  drill_fault_request req;
  req.point = point;
  req.kill_node = false;
  drills.arm(req);
  while (clock_type::now() < deadline) {
    for (auto& [shard, restarts] : coordinator_restarts(n)) {
      if (restarts <= before[shard])
        continue;
      auto seen = clock_type::now();
      component_restart r;
      r.shard = shard;
      r.restarts_before = before[shard];
      r.restarts_after = restarts;
      if (!await_answer(n, shard, deadline))
        return status{error_code::request_timed_out,
                      "coordinator shard " + std::to_string(shard) + " did not answer again"};
      r.reload_time = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now()
                                                                            - seen);
      return r;
    }
    std::this_thread::sleep_for(5ms);
  }
  drills.disarm(point);
  return status{error_code::request_timed_out,
                "no coordinator hit " + point + " within the timeout"};
}

} // namespace caftx
