#include "actors/partition/leader_epoch_cache.hpp"

#include <algorithm>
#include <string>

namespace caftx {

bool leader_epoch_cache::assign(int32_t epoch, int64_t start_offset) {
  if (!entries_.empty()) {
    const auto& last = entries_.back();
    // Kafka's isUpdateNeeded: the same epoch at the same or a later start
    // changes nothing (the epoch's first record stays where it was).
    if (last.epoch == epoch && last.start_offset <= start_offset)
      return false;
  }
  // Kafka's maybeTruncateNonMonotonicEntries.
  while (!entries_.empty()
         && (entries_.back().epoch >= epoch || entries_.back().start_offset >= start_offset))
    entries_.pop_back();
  entries_.push_back({epoch, start_offset});
  return true;
}

epoch_end leader_epoch_cache::end_offset_for(int32_t requested_epoch,
                                             int64_t log_end_offset) const {
  if (requested_epoch == undefined_epoch || entries_.empty())
    return {};
  if (entries_.back().epoch == requested_epoch)
    return {requested_epoch, log_end_offset};
  // The first entry with an epoch above the requested one.
  auto higher = std::upper_bound(entries_.begin(), entries_.end(), requested_epoch,
                                 [](int32_t e, const epoch_entry& x) { return e < x.epoch; });
  if (higher == entries_.end())
    return {}; // above every epoch known
  if (higher == entries_.begin())
    return {requested_epoch, higher->start_offset}; // below every epoch known
  return {std::prev(higher)->epoch, higher->start_offset};
}

void leader_epoch_cache::truncate_from_end(int64_t end_offset) {
  if (end_offset < 0)
    return;
  while (!entries_.empty() && entries_.back().start_offset >= end_offset)
    entries_.pop_back();
}

void leader_epoch_cache::truncate_from_start(int64_t start_offset) {
  auto first_after = std::find_if(entries_.begin(), entries_.end(), [&](const epoch_entry& x) {
    return x.start_offset > start_offset;
  });
  if (first_after == entries_.begin())
    return;
  auto kept = std::prev(first_after);
  kept->start_offset = start_offset;
  entries_.erase(entries_.begin(), kept);
}

std::optional<epoch_entry> leader_epoch_cache::latest() const {
  if (entries_.empty())
    return std::nullopt;
  return entries_.back();
}

status_or<leader_epoch_cache> leader_epoch_cache::from_entries(std::vector<epoch_entry> entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& x = entries[i];
    bool bad = x.epoch < 0 || x.start_offset < 0
               || (i > 0
                   && (x.epoch <= entries[i - 1].epoch
                       || x.start_offset < entries[i - 1].start_offset));
    if (bad)
      return status{error_code::kafka_storage_error,
                    "leader epoch cache: entry " + std::to_string(i) + " (epoch "
                      + std::to_string(x.epoch) + " at " + std::to_string(x.start_offset)
                      + ") is negative or not after the one before"};
  }
  leader_epoch_cache c;
  c.entries_ = std::move(entries);
  return c;
}

} // namespace caftx
