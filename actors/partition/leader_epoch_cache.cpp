#include "actors/partition/leader_epoch_cache.hpp"

#include <algorithm>

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

int32_t leader_epoch_cache::epoch_for_offset(int64_t offset) const {
  int32_t epoch = undefined_epoch;
  for (const auto& x : entries_) {
    if (x.start_offset > offset)
      break;
    epoch = x.epoch;
  }
  return epoch;
}

std::optional<epoch_entry> leader_epoch_cache::latest() const {
  if (entries_.empty())
    return std::nullopt;
  return entries_.back();
}

int32_t leader_epoch_cache::previous_epoch(int32_t epoch) const {
  int32_t prev = undefined_epoch;
  for (const auto& x : entries_) {
    if (x.epoch >= epoch)
      break;
    prev = x.epoch;
  }
  return prev;
}

namespace {

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_be(std::string_view in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<uint8_t>(in[pos + i]);
  return v;
}

status bad(std::string why) {
  return {error_code::kafka_storage_error, "leader epoch cache: " + std::move(why)};
}

} // namespace

std::string leader_epoch_cache::encode() const {
  std::string out;
  out.reserve(5 + entries_.size() * 12);
  out.push_back(0); // version
  put_be(out, entries_.size(), 4);
  for (const auto& x : entries_) {
    put_be(out, static_cast<uint32_t>(x.epoch), 4);
    put_be(out, static_cast<uint64_t>(x.start_offset), 8);
  }
  return out;
}

status_or<leader_epoch_cache> leader_epoch_cache::decode(std::string_view bytes) {
  if (bytes.size() < 5)
    return bad("truncated header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes[0] != 0)
    return bad("unknown version " + std::to_string(static_cast<uint8_t>(bytes[0])));
  auto count = get_be(bytes, 1, 4);
  if (bytes.size() != 5 + count * 12)
    return bad(std::to_string(count) + " entries need " + std::to_string(5 + count * 12)
               + " bytes, found " + std::to_string(bytes.size()));
  leader_epoch_cache cache;
  for (uint64_t i = 0; i < count; ++i) {
    epoch_entry x{static_cast<int32_t>(get_be(bytes, 5 + i * 12, 4)),
                  static_cast<int64_t>(get_be(bytes, 9 + i * 12, 8))};
    if (x.epoch < 0 || x.start_offset < 0)
      return bad("entry " + std::to_string(i) + " is negative");
    if (!cache.entries_.empty()
        && (x.epoch <= cache.entries_.back().epoch
            || x.start_offset <= cache.entries_.back().start_offset))
      return bad("entry " + std::to_string(i) + " (epoch " + std::to_string(x.epoch)
                 + " at " + std::to_string(x.start_offset) + ") is not above the one before");
    cache.entries_.push_back(x);
  }
  return cache;
}

} // namespace caftx
