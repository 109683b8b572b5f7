#include "actors/group/group_coordinator_core.hpp"

#include <algorithm>

namespace caftx {

status group_coordinator_core::check_txn_offset_commit(producer_id pid,
                                                       producer_epoch epoch) const {
  if (auto m = marker_epochs_.find(pid); m != marker_epochs_.end() && epoch < m->second.epoch)
    return {error_code::invalid_producer_epoch,
            "producer epoch " + std::to_string(epoch.value) + " is older than the last marker's "
              + std::to_string(m->second.epoch.value)};
  if (auto p = pending_.find(pid); p != pending_.end() && epoch < p->second.epoch)
    return {error_code::invalid_producer_epoch, "producer epoch " + std::to_string(epoch.value)
                                                  + " is older than "
                                                  + std::to_string(p->second.epoch.value)};
  return {};
}

bool group_coordinator_core::needs_verification(producer_id pid, producer_epoch epoch) const {
  auto i = pending_.find(pid);
  return i == pending_.end() || i->second.epoch != epoch || i->second.offsets.empty();
}

status group_coordinator_core::check_marker(producer_id pid, producer_epoch epoch,
                                            int8_t transaction_version) const {
  auto i = pending_.find(pid);
  if (i == pending_.end())
    return {};
  auto pending_epoch = i->second.epoch;
  if (epoch < pending_epoch
      || (transaction_version >= 2 && epoch == pending_epoch && !i->second.offsets.empty()))
    return {error_code::invalid_producer_epoch,
            "marker epoch " + std::to_string(epoch.value) + " is not above "
              + std::to_string(pending_epoch.value) + " of the pending offsets"};
  return {};
}

void group_coordinator_core::apply_commit(const group_offset_key& key, offset_and_metadata value,
                                          int64_t commit_timestamp_ms, int64_t log_offset) {
  committed_[key] = offset_record{std::move(value), commit_timestamp_ms, log_offset};
}

void group_coordinator_core::apply_tombstone(const group_offset_key& key) {
  committed_.erase(key);
}

void group_coordinator_core::apply_txn_offset_commit(producer_id pid, producer_epoch epoch,
                                                     const group_offset_key& key,
                                                     offset_and_metadata value,
                                                     int64_t commit_timestamp_ms,
                                                     int64_t log_offset) {
  auto& p = pending_[pid];
  if (epoch > p.epoch)
    p.offsets.clear(); // left over from a fenced epoch
  p.epoch = std::max(p.epoch, epoch);
  p.offsets[key] = offset_record{std::move(value), commit_timestamp_ms, log_offset};
}

std::vector<group_offset_key> group_coordinator_core::apply_marker(producer_id pid,
                                                                   producer_epoch epoch,
                                                                   control_type result,
                                                                   int64_t now_ms) {
  std::vector<group_offset_key> changed;
  if (auto i = pending_.find(pid); i != pending_.end()) {
    if (result == control_type::commit)
      for (auto& [k, v] : i->second.offsets) {
        auto c = committed_.find(k);
        // The later record in the log wins (Kafka's GroupMetadata.
        // completePendingTxnOffsetCommit): a plain commit written after
        // the transactional one stays.
        if (c != committed_.end() && c->second.log_offset > v.log_offset)
          continue;
        committed_[k] = v;
        changed.push_back(k);
      }
    pending_.erase(i);
  }
  auto& seen = marker_epochs_[pid];
  seen.epoch = std::max(seen.epoch, epoch);
  seen.last_ms = std::max(seen.last_ms, now_ms);
  return changed;
}

std::vector<group_offset_key> group_coordinator_core::expired_offsets(int64_t now_ms,
                                                                      int64_t retention_ms) const {
  std::vector<group_offset_key> out;
  for (auto& [k, v] : committed_)
    if (now_ms - v.commit_timestamp_ms >= retention_ms && !committing_.count(k))
      out.push_back(k);
  return out;
}

std::vector<group_offset_key>
group_coordinator_core::offsets_of_topics(const std::set<std::string>& topics) const {
  std::vector<group_offset_key> out;
  for (auto& [k, v] : committed_)
    if (topics.count(k.tp.topic) && !committing_.count(k))
      out.push_back(k);
  return out;
}

void group_coordinator_core::begin_commit(const std::vector<group_offset_key>& keys) {
  for (auto& k : keys)
    ++committing_[k];
}

void group_coordinator_core::end_commit(const std::vector<group_offset_key>& keys) {
  for (auto& k : keys)
    if (auto i = committing_.find(k); i != committing_.end() && --i->second <= 0)
      committing_.erase(i);
}

size_t group_coordinator_core::expire_producers(int64_t now_ms, int64_t expiration_ms) {
  size_t dropped = 0;
  for (auto i = marker_epochs_.begin(); i != marker_epochs_.end();)
    if (now_ms - i->second.last_ms >= expiration_ms && !pending_.count(i->first)) {
      i = marker_epochs_.erase(i);
      ++dropped;
    } else {
      ++i;
    }
  return dropped;
}

offset_and_metadata group_coordinator_core::fetch(const group_offset_key& key) const {
  auto i = committed_.find(key);
  return i == committed_.end() ? offset_and_metadata{} : i->second.value;
}

bool group_coordinator_core::has_pending(const group_offset_key& key) const {
  for (auto& [pid, p] : pending_)
    if (p.offsets.count(key))
      return true;
  return false;
}

} // namespace caftx
