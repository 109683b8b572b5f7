#include "actors/client/client_context.hpp"

#include <thread>

#include "actors/common/middleman.hpp"

namespace caftx::detail {

status from_caf_error(caf::actor_system& sys, const caf::error& e, error_code receiver_down) {
  // An error made with a text of ours (the relay's "no connection to the
  // cluster (...)") says it in words; others get plain words where there
  // are some, so that no CAF type reaches an operator.
  std::string text;
  if (e.context().match_elements<std::string>())
    text = e.context().get_as<std::string>(0);
  else
    text = connection_failure_text(sys, e);
  if (e == caf::sec::request_receiver_down)
    return {receiver_down, text};
  return {error_code::request_timed_out, text};
}

namespace {

template <class Clock>
int64_t now_ms_of() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
    .count();
}

} // namespace

int64_t client_channel::deadline_clock_ms() const {
  return driver_.clock_ms ? driver_.clock_ms() : now_ms_of<std::chrono::steady_clock>();
}

int64_t client_channel::timestamp_ms() const {
  return driver_.clock_ms ? driver_.clock_ms() : now_ms_of<std::chrono::system_clock>();
}

void client_channel::sleep_ms(int64_t ms) {
  if (driver_.sleep_ms)
    driver_.sleep_ms(ms);
  else
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

client_channel::client_channel(caf::actor_system& sys, caf::actor broker)
  : sys_(&sys), broker_(caf::actor_cast<broker_actor>(std::move(broker))), self_(sys) {
}

void client_channel::set_metadata_source(std::function<uint64_t()> generation,
                                         int64_t max_age_ms) {
  generation_ = std::move(generation);
  max_age_ms_ = max_age_ms;
  cached_generation_ = generation_();
  cached_at_ms_ = deadline_clock_ms();
}

bool stale_metadata_error(error_code e) {
  switch (e) {
    case error_code::not_leader_or_follower:
    case error_code::unknown_topic_or_partition:
    case error_code::leader_not_available:
    case error_code::fenced_leader_epoch:
    case error_code::request_timed_out:
      return true;
    default:
      return false;
  }
}

void client_channel::note_error(error_code e) {
  if (!generation_)
    return;
  if (stale_metadata_error(e) || e == error_code::not_coordinator) {
    topics_.clear();
    coordinators_.clear();
  }
}

void client_channel::expire_caches() {
  if (!generation_)
    return;
  auto now = deadline_clock_ms();
  auto g = generation_();
  if (g != cached_generation_ || now - cached_at_ms_ >= max_age_ms_) {
    topics_.clear();
    coordinators_.clear();
    cached_generation_ = g;
    cached_at_ms_ = now;
  }
}

status_or<std::vector<partition_actor>>
client_channel::partitions(const std::string& topic, bool refresh,
                           std::chrono::milliseconds timeout) {
  auto v = partitions_view(topic, refresh, timeout);
  if (!v.ok())
    return v.error();
  return **v;
}

status_or<const std::vector<partition_actor>*>
client_channel::partitions_view(const std::string& topic, bool refresh,
                                std::chrono::milliseconds timeout, bool offline_ok) {
  expire_caches();
  if (!refresh)
    if (auto i = topics_.find(topic); i != topics_.end())
      return &i->second;
  auto r = call<metadata_response>(broker_, metadata_request{{topic}}, timeout);
  if (!r.ok())
    return r.error();
  if (r->topics.size() != 1)
    return status{error_code::unknown_server_error, "malformed metadata response"};
  auto& tm = r->topics.front();
  bool some_offline = tm.error == error_code::leader_not_available && !tm.partitions.empty();
  if (tm.error == error_code::unknown_topic_or_partition)
    return status{tm.error, "topic '" + topic + "' does not exist"};
  if (some_offline && !offline_ok)
    return status{tm.error, "topic '" + topic + "' has partitions without a leader"};
  if (tm.error != error_code::none && !some_offline)
    return status{tm.error, "metadata of topic '" + topic + "'"};
  auto& cached = topics_[topic];
  cached = std::move(tm.partitions);
  return &cached;
}

status_or<caf::actor> client_channel::coordinator(int8_t key_type, const std::string& key,
                                                  bool refresh, std::chrono::milliseconds timeout) {
  expire_caches();
  auto k = std::make_pair(key_type, key);
  if (!refresh)
    if (auto i = coordinators_.find(k); i != coordinators_.end())
      return i->second;
  auto r = call<find_coordinator_response>(broker_, find_coordinator_request{key_type, key}, timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  coordinators_[k] = r->coordinator;
  return r->coordinator;
}

} // namespace caftx::detail
