#include "actors/broker/metadata_cache_core.hpp"

#include <algorithm>
#include <limits>

#include "runtime/partitioner.hpp"

namespace caftx {

using controller::live_node;
using controller::no_leader;
using controller::partition_info;

status metadata_cache_core::check(int32_t controller_epoch, int64_t node_epoch) const {
  // KafkaApis.isBrokerEpochStale: -1 means "unknown", accepted (KIP-380).
  if (node_epoch >= 0 && node_epoch < node_epoch_)
    return {error_code::stale_broker_epoch,
            "Received a request with broker epoch " + std::to_string(node_epoch)
              + " smaller than the current broker epoch " + std::to_string(node_epoch_)};
  if (controller_epoch < controller_epoch_)
    return {error_code::stale_controller_epoch,
            "Received a request from controller epoch " + std::to_string(controller_epoch)
              + " older than the latest controller epoch " + std::to_string(controller_epoch_)};
  return {};
}

bool metadata_cache_core::admit(int32_t controller_epoch, int64_t node_epoch, request_verdict& v) {
  auto st = check(controller_epoch, node_epoch);
  if (!st.ok()) {
    v.error = st.code();
    v.message = st.message();
    return false;
  }
  controller_epoch_ = controller_epoch;
  return true;
}

request_verdict metadata_cache_core::on_leader_and_isr(const controller::leader_and_isr_request& req) {
  request_verdict v;
  if (!admit(req.controller_epoch, req.node_epoch, v))
    return v;
  for (const auto& p : req.partitions) {
    replica_decision d{p.tp, error_code::none, replica_action::none, p.leader_epoch, false};
    auto it = replicas_.find(p.tp);
    const int32_t current = it == replicas_.end() ? -1 : it->second.leader_epoch;
    if (p.leader_epoch > current) {
      if (std::find(p.replicas.begin(), p.replicas.end(), self_) == p.replicas.end()) {
        d.error = error_code::unknown_topic_or_partition; // "not in assigned replica list"
      } else {
        d.action = p.leader == self_ ? replica_action::become_leader : replica_action::become_follower;
        replicas_[p.tp] = p;
      }
    } else {
      // Kafka answers both "smaller than" and "matches the current leader
      // epoch" with STALE_CONTROLLER_EPOCH and changes nothing.
      d.error = error_code::stale_controller_epoch;
    }
    v.partitions.push_back(d);
  }
  return v;
}

request_verdict metadata_cache_core::on_stop_replica(const controller::stop_replica_request& req) {
  request_verdict v;
  if (!admit(req.controller_epoch, req.node_epoch, v))
    return v;
  for (const auto& p : req.partitions) {
    replica_decision d{p.tp, error_code::none, replica_action::stop, p.leader_epoch,
                       p.delete_partition};
    auto it = replicas_.find(p.tp);
    if (it != replicas_.end()) {
      // KIP-570: -2 = deletion, -1 = no epoch, both bypass the check.
      if (p.leader_epoch >= 0 && p.leader_epoch < it->second.leader_epoch) {
        d.error = error_code::fenced_leader_epoch;
        d.action = replica_action::none;
      } else {
        replicas_.erase(it);
      }
    }
    v.partitions.push_back(d);
  }
  return v;
}

status metadata_cache_core::on_update_metadata(const controller::update_metadata_request& req) {
  if (auto st = check(req.controller_epoch, req.node_epoch); !st.ok())
    return st;
  controller_epoch_ = req.controller_epoch;
  for (const auto& p : req.partitions) {
    if (p.leader == controller::leader_during_delete) {
      metadata_.erase(p.tp);
      auto rest = metadata_.lower_bound({p.tp.topic, std::numeric_limits<int32_t>::min()});
      if (rest == metadata_.end() || rest->first.topic != p.tp.topic)
        partition_counts_.erase(p.tp.topic);
      continue;
    }
    metadata_[p.tp] = p;
    auto& count = partition_counts_[p.tp.topic];
    count = std::max(count, p.tp.partition + 1);
  }
  live_.clear();
  for (const auto& n : req.live_nodes)
    live_[n.id] = n;
  return {};
}

std::vector<partition_info> metadata_cache_core::partitions_of(const std::string& topic) const {
  std::vector<partition_info> out;
  auto count = partition_counts_.find(topic);
  if (count == partition_counts_.end())
    return out;
  for (int32_t p = 0; p < count->second; ++p)
    if (auto it = metadata_.find({topic, p}); it != metadata_.end())
      out.push_back(it->second);
  return out;
}

std::vector<std::string> metadata_cache_core::topic_names() const {
  std::vector<std::string> out;
  for (const auto& [name, count] : partition_counts_)
    out.push_back(name);
  return out;
}

status_or<live_node> metadata_cache_core::leader_of(const topic_partition& tp) const {
  auto it = metadata_.find(tp);
  if (it == metadata_.end())
    return status{error_code::unknown_topic_or_partition,
                  "This server does not host this topic-partition: " + to_string(tp)};
  if (it->second.leader == no_leader)
    return status{error_code::leader_not_available, to_string(tp) + " has no leader"};
  auto n = live_.find(it->second.leader);
  if (n == live_.end())
    return status{error_code::leader_not_available,
                  to_string(tp) + "'s leader " + std::to_string(it->second.leader) + " is not live"};
  return n->second;
}

status_or<coordinator_location> metadata_cache_core::coordinator_for(
  std::string_view key, const std::string& internal_topic) const {
  auto count = partition_counts_.find(internal_topic);
  if (count == partition_counts_.end() || count->second <= 0)
    return status{error_code::coordinator_not_available, internal_topic + " is not in the metadata"};
  topic_partition tp{internal_topic, partition_for(key, count->second)};
  auto leader = leader_of(tp);
  if (!leader.ok())
    return status{error_code::coordinator_not_available, leader.error().message()};
  return coordinator_location{tp, *leader};
}

const controller::partition_info* metadata_cache_core::replica(const topic_partition& tp) const {
  auto it = replicas_.find(tp);
  return it == replicas_.end() ? nullptr : &it->second;
}

} // namespace caftx
