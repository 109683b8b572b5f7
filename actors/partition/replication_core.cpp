#include "actors/partition/replication_core.hpp"

#include <algorithm>
#include <string>

namespace caftx::replication {

namespace {

bool contains(const std::vector<node_id>& xs, node_id x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

} // namespace

leader_replication::leader_replication(node_id self, int32_t leader_epoch,
                                       int32_t partition_epoch, std::vector<node_id> replicas,
                                       std::vector<node_id> isr,
                                       int64_t leader_epoch_start_offset, int64_t now_ms,
                                       int64_t replica_lag_time_max_ms)
  : self_(self),
    leader_epoch_(leader_epoch),
    partition_epoch_(partition_epoch),
    replicas_(std::move(replicas)),
    isr_(std::move(isr)),
    leader_epoch_start_offset_(leader_epoch_start_offset),
    replica_lag_time_max_ms_(replica_lag_time_max_ms) {
  // Kafka's makeLeader resets every follower: unknown log end offset, and
  // caught up "now" if it is in the ISR (so it is not shrunk away before it
  // had a chance to fetch from the new leader), else never.
  for (auto id : replicas_) {
    if (id == self_)
      continue;
    follower_state st;
    st.last_caught_up_time_ms = in_isr(id) ? now_ms : 0;
    st.last_fetch_time_ms = now_ms;
    followers_.emplace(id, st);
  }
}

status_or<std::optional<epoch_end>>
leader_replication::check_fetch(const follower_fetch& f, const leader_epoch_cache& epochs,
                                int64_t log_end_offset) const {
  if (followers_.count(f.follower) == 0)
    return status{error_code::not_leader_or_follower,
                  "node " + std::to_string(f.follower) + " is not a follower of this partition"};
  if (f.current_leader_epoch != undefined_epoch) {
    if (f.current_leader_epoch < leader_epoch_)
      return status{error_code::fenced_leader_epoch,
                    "fetch at leader epoch " + std::to_string(f.current_leader_epoch)
                      + ", current is " + std::to_string(leader_epoch_)};
    if (f.current_leader_epoch > leader_epoch_)
      return status{error_code::unknown_leader_epoch,
                    "fetch at leader epoch " + std::to_string(f.current_leader_epoch)
                      + ", this leader is at " + std::to_string(leader_epoch_)};
  }
  // IBP 2.7's divergence check (Kafka's Partition.readRecords with
  // lastFetchedEpoch): where does the follower's last epoch end here?
  if (f.last_fetched_epoch != undefined_epoch) {
    auto end = epochs.end_offset_for(f.last_fetched_epoch, log_end_offset);
    if (end.epoch < f.last_fetched_epoch || end.end_offset < f.fetch_offset)
      return std::optional<epoch_end>{end};
  }
  if (f.fetch_offset > log_end_offset)
    return status{error_code::offset_out_of_range,
                  "follower fetch at " + std::to_string(f.fetch_offset) + ", log end is "
                    + std::to_string(log_end_offset)};
  return std::optional<epoch_end>{};
}

void leader_replication::record_fetch(node_id follower, int64_t fetch_offset,
                                      int64_t leader_log_end_offset, int64_t now_ms) {
  auto i = followers_.find(follower);
  if (i == followers_.end())
    return;
  auto& st = i->second;
  if (st.ineligible_until_ms >= 0 && now_ms >= st.ineligible_until_ms)
    st.ineligible_until_ms = -1; // fetching again: propose it again
  if (fetch_offset >= leader_log_end_offset)
    st.last_caught_up_time_ms = std::max(st.last_caught_up_time_ms, now_ms);
  else if (fetch_offset >= st.last_fetch_leader_log_end_offset)
    st.last_caught_up_time_ms = std::max(st.last_caught_up_time_ms, st.last_fetch_time_ms);
  st.log_end_offset = fetch_offset;
  st.last_fetch_leader_log_end_offset = leader_log_end_offset;
  st.last_fetch_time_ms = now_ms;
}

std::optional<int64_t> leader_replication::advanced_high_watermark(int64_t current_hw,
                                                                   int64_t leader_log_end_offset,
                                                                   int64_t now_ms) const {
  int64_t hw = leader_log_end_offset;
  for (const auto& [id, st] : followers_) {
    bool counts = in_maximal_isr(id)
                  || (st.log_end_offset >= 0 && st.ineligible_until_ms < 0
                      && now_ms - st.last_caught_up_time_ms <= replica_lag_time_max_ms_);
    if (!counts)
      continue;
    // A counted follower that has not fetched yet holds the HW where it is.
    hw = std::min(hw, st.log_end_offset < 0 ? current_hw : st.log_end_offset);
  }
  if (hw <= current_hw)
    return std::nullopt;
  return hw;
}

std::optional<isr_proposal> leader_replication::maybe_expand(node_id follower,
                                                             int64_t high_watermark) {
  if (pending_ || in_isr(follower))
    return std::nullopt;
  auto i = followers_.find(follower);
  if (i == followers_.end() || i->second.log_end_offset < 0 || i->second.ineligible_until_ms >= 0)
    return std::nullopt;
  const auto leo = i->second.log_end_offset;
  if (leo < high_watermark || leo < leader_epoch_start_offset_)
    return std::nullopt;
  isr_proposal p{isr_, leader_epoch_, partition_epoch_};
  p.isr.push_back(follower);
  pending_ = p;
  return p;
}

isr_proposal leader_replication::start_unconfirmed() {
  unconfirmed_ = true;
  pending_ = isr_proposal{isr_, leader_epoch_, partition_epoch_};
  return *pending_;
}

std::optional<isr_proposal> leader_replication::maybe_shrink(int64_t leader_log_end_offset,
                                                             int64_t now_ms) {
  if (pending_)
    return std::nullopt;
  isr_proposal p{{}, leader_epoch_, partition_epoch_};
  bool removed = false;
  for (auto id : isr_) {
    auto i = followers_.find(id);
    bool out_of_sync = i != followers_.end() && i->second.log_end_offset != leader_log_end_offset
                       && now_ms - i->second.last_caught_up_time_ms > replica_lag_time_max_ms_;
    if (out_of_sync)
      removed = true;
    else
      p.isr.push_back(id);
  }
  if (!removed)
    return std::nullopt;
  pending_ = p;
  return p;
}

void leader_replication::isr_committed(const std::vector<node_id>& written,
                                       int32_t partition_epoch) {
  if (!pending_ || partition_epoch < partition_epoch_)
    return;
  // At the same partition epoch only the answer to a confirmation (a
  // proposal of the ISR known here, which the controller had no need to
  // write); a late answer of that kind settles no other proposal.
  if (partition_epoch == partition_epoch_ && (written != isr_ || pending_->isr != isr_))
    return;
  isr_ = written;
  partition_epoch_ = partition_epoch;
  pending_.reset();
  unconfirmed_ = false;
}

void leader_replication::isr_rejected() {
  // An unconfirmed ISR stays in flight: the confirmation is sent again
  // (the controller may not be known yet, or be moving).
  if (!unconfirmed_)
    pending_.reset();
}

std::vector<node_id> leader_replication::isr_refused_ineligible(int64_t now_ms,
                                                                int64_t retry_after_ms) {
  std::vector<node_id> marked;
  if (pending_)
    for (auto id : pending_->isr)
      if (!in_isr(id))
        if (auto i = followers_.find(id); i != followers_.end()) {
          i->second.ineligible_until_ms = now_ms + retry_after_ms;
          marked.push_back(id);
        }
  pending_.reset();
  return marked;
}

void leader_replication::isr_replaced(std::vector<node_id> isr, int32_t partition_epoch) {
  if (partition_epoch < partition_epoch_)
    return;
  isr_ = std::move(isr);
  partition_epoch_ = partition_epoch;
  pending_.reset();
  unconfirmed_ = false;
}

status leader_replication::check_append(acks required_acks, int32_t min_insync_replicas) const {
  if (required_acks != acks::all || static_cast<int32_t>(isr_.size()) >= min_insync_replicas)
    return {};
  // Kafka's NotEnoughReplicasException message (without the partition,
  // which the caller appends).
  std::string ids;
  for (auto id : isr_)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return {error_code::not_enough_replicas,
          "The size of the current ISR [" + ids
            + "] is insufficient to satisfy the min.isr requirement of "
            + std::to_string(min_insync_replicas)};
}

acks_state leader_replication::check_acks(int64_t required_offset, int64_t high_watermark,
                                          int32_t min_insync_replicas) const {
  if (high_watermark < required_offset)
    return acks_state::waiting;
  if (static_cast<int32_t>(maximal_isr().size()) < min_insync_replicas)
    return acks_state::not_enough_replicas_after_append;
  return acks_state::done;
}

std::vector<node_id> leader_replication::maximal_isr() const {
  if (unconfirmed_) { // every assigned replica
    std::vector<node_id> out = isr_;
    for (auto id : replicas_)
      if (!contains(out, id))
        out.push_back(id);
    return out;
  }
  if (!pending_)
    return isr_;
  std::vector<node_id> out = isr_;
  for (auto id : pending_->isr)
    if (!contains(out, id))
      out.push_back(id);
  return out;
}

const follower_state* leader_replication::follower(node_id id) const {
  auto i = followers_.find(id);
  return i == followers_.end() ? nullptr : &i->second;
}

std::vector<node_id> leader_replication::out_of_isr() const {
  std::vector<node_id> out;
  for (auto id : replicas_)
    if (!in_isr(id))
      out.push_back(id);
  return out;
}

bool leader_replication::in_isr(node_id id) const {
  return contains(isr_, id);
}

bool leader_replication::in_maximal_isr(node_id id) const {
  return in_isr(id) || (pending_ && contains(pending_->isr, id))
         || (unconfirmed_ && contains(replicas_, id));
}

truncation follower_truncation(const epoch_end& diverging, const leader_epoch_cache& local,
                               int64_t log_end_offset) {
  if (diverging.end_offset == undefined_epoch_offset)
    return {log_end_offset, true};
  if (diverging.epoch == undefined_epoch)
    return {std::min(diverging.end_offset, log_end_offset), true};
  if (local.empty())
    return {std::min(diverging.end_offset, log_end_offset), true};
  auto mine = local.end_offset_for(diverging.epoch, log_end_offset);
  if (mine.epoch == undefined_epoch) // every local epoch is above the leader's
    return {std::min(diverging.end_offset, log_end_offset), true};
  if (mine.epoch != diverging.epoch)
    return {std::min(mine.end_offset, log_end_offset), false};
  return {std::min({diverging.end_offset, mine.end_offset, log_end_offset}), true};
}

} // namespace caftx::replication
