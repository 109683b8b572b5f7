#include "actors/group/group_coordinator_core.hpp"

#include <algorithm>

namespace caftx {

void group_coordinator_core::load(std::map<group_offset_key, offset_and_metadata> committed,
                                  std::map<producer_id, pending_txn_offsets> pending) {
  committed_ = std::move(committed);
  pending_ = std::move(pending);
}

void group_coordinator_core::commit(const group_offset_key& key, offset_and_metadata value) {
  committed_[key] = std::move(value);
}

status_or<pending_txn_offsets> group_coordinator_core::txn_offset_commit(
  producer_id pid, producer_epoch epoch,
  const std::vector<std::pair<group_offset_key, offset_and_metadata>>& offsets) {
  if (auto m = marker_epochs_.find(pid); m != marker_epochs_.end() && epoch < m->second)
    return status{error_code::invalid_producer_epoch,
                  "producer epoch " + std::to_string(epoch.value)
                    + " is older than the last marker's " + std::to_string(m->second.value)};
  auto& p = pending_[pid];
  if (p.epoch != no_producer_epoch && epoch < p.epoch)
    return status{error_code::invalid_producer_epoch,
                  "producer epoch " + std::to_string(epoch.value) + " is older than "
                    + std::to_string(p.epoch.value)};
  if (epoch > p.epoch && !p.offsets.empty())
    p.offsets.clear(); // left over from a fenced epoch; its abort marker comes first
  p.epoch = epoch;
  for (auto& [k, v] : offsets)
    p.offsets[k] = v;
  return p;
}

bool group_coordinator_core::needs_verification(producer_id pid, producer_epoch epoch) const {
  auto i = pending_.find(pid);
  return i == pending_.end() || i->second.epoch != epoch || i->second.offsets.empty();
}

status_or<std::vector<std::pair<group_offset_key, offset_and_metadata>>>
group_coordinator_core::complete_txn(producer_id pid, producer_epoch epoch, control_type result,
                                     int8_t transaction_version) {
  std::vector<std::pair<group_offset_key, offset_and_metadata>> done;
  auto i = pending_.find(pid);
  if (i != pending_.end()) {
    auto pending_epoch = i->second.epoch;
    if (epoch < pending_epoch
        || (transaction_version >= 2 && epoch == pending_epoch && !i->second.offsets.empty()))
      return status{error_code::invalid_producer_epoch,
                    "marker epoch " + std::to_string(epoch.value) + " is not above "
                      + std::to_string(pending_epoch.value) + " of the pending offsets"};
    if (result == control_type::commit)
      for (auto& [k, v] : i->second.offsets) {
        committed_[k] = v;
        done.emplace_back(k, v);
      }
    pending_.erase(i);
  }
  auto& last = marker_epochs_[pid];
  last = std::max(last, epoch);
  return done;
}

offset_and_metadata group_coordinator_core::fetch(const group_offset_key& key) const {
  auto i = committed_.find(key);
  return i == committed_.end() ? offset_and_metadata{} : i->second;
}

bool group_coordinator_core::has_pending(const group_offset_key& key) const {
  for (auto& [pid, p] : pending_)
    if (p.offsets.count(key))
      return true;
  return false;
}

} // namespace caftx
