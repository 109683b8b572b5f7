#include "actors/partition/log_cleaner.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

namespace caftx {

namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(in[pos + static_cast<size_t>(i)]);
  return v;
}

constexpr uint8_t checkpoint_version = 1;
constexpr size_t checkpoint_size = 25;

// The type of a control batch's marker record, if it has one.
std::optional<control_type> marker_type(std::string_view bytes, const v2::batch_header& h,
                                        status& err) {
  std::optional<control_type> type;
  std::string scratch; // a compressed batch's records, decompressed
  err = v2::for_each_record(bytes, h, [&](const v2::record_view& r) {
    if (!type && r.has_key && r.key.size() >= 4)
      type = static_cast<control_type>((static_cast<unsigned char>(r.key[2]) << 8)
                                       | static_cast<unsigned char>(r.key[3]));
  }, &scratch);
  return type;
}

bool is_control(const v2::batch_header& h) { return (h.attributes & attr_control) != 0; }
bool is_transactional(const v2::batch_header& h) {
  return (h.attributes & attr_transactional) != 0;
}

} // namespace

size_t max_map_keys(int64_t buffer_bytes) {
  auto keys = static_cast<double>(buffer_bytes) * 0.9 / 24.0;
  return keys < 1 ? 1 : static_cast<size_t>(keys);
}

std::string encode(const cleaner_checkpoint& c) {
  std::string out;
  out.reserve(checkpoint_size);
  out.push_back(static_cast<char>(checkpoint_version));
  put_le(out, static_cast<uint64_t>(c.clean_offset), 8);
  put_le(out, static_cast<uint64_t>(c.clean_position), 8);
  put_le(out, static_cast<uint64_t>(c.next_delete_horizon_ms), 8);
  return out;
}

status_or<cleaner_checkpoint> decode_cleaner_checkpoint(std::string_view bytes) {
  if (bytes.size() != checkpoint_size || static_cast<uint8_t>(bytes[0]) != checkpoint_version)
    return status{error_code::kafka_storage_error,
                  "cleaner checkpoint: expected version 1 and 25 bytes, got "
                    + (bytes.empty() ? std::string("none")
                                     : "version " + std::to_string(static_cast<uint8_t>(bytes[0]))
                                         + " and " + std::to_string(bytes.size()) + " bytes")};
  cleaner_checkpoint c;
  c.clean_offset = static_cast<int64_t>(get_le(bytes, 1, 8));
  c.clean_position = static_cast<int64_t>(get_le(bytes, 9, 8));
  c.next_delete_horizon_ms = static_cast<int64_t>(get_le(bytes, 17, 8));
  return c;
}

key_digest key_digest::of(std::string_view key) {
  unsigned char full[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), full);
  key_digest d;
  std::memcpy(d.bytes.data(), full, d.bytes.size());
  return d;
}

size_t offset_map::hash::operator()(const key_digest& d) const {
  size_t h;
  std::memcpy(&h, d.bytes.data(), sizeof h); // already uniform
  return h;
}

void offset_map::put(std::string_view key, int64_t offset) {
  map_[key_digest::of(key)] = offset;
}

int64_t offset_map::get(std::string_view key) const {
  auto i = map_.find(key_digest::of(key));
  return i == map_.end() ? -1 : i->second;
}

status check_keys_for_compaction(std::string_view bytes, const v2::batch_header& h,
                                 const topic_partition& tp) {
  if (is_control(h))
    return {};
  bool keyless = false;
  std::string scratch; // a compressed batch's records, decompressed
  auto st = v2::for_each_record(bytes, h, [&](const v2::record_view& r) {
    if (!r.has_key)
      keyless = true;
  }, &scratch);
  if (!st.ok())
    return st;
  if (keyless)
    return {error_code::invalid_record,
            "Compacted topic cannot accept message without key in topic partition "
              + to_string(tp) + "."};
  return {};
}

double dirty_ratio(const cleaner_checkpoint& c, int64_t log_start_offset,
                   int64_t log_start_position, int64_t end, int64_t end_position) {
  int64_t first_dirty = std::max(c.clean_offset, log_start_offset);
  if (first_dirty >= end)
    return 0;
  int64_t dirty_from = c.clean_offset >= log_start_offset ? c.clean_position : log_start_position;
  int64_t dirty = end_position - dirty_from;
  int64_t total = end_position - log_start_position;
  if (dirty <= 0 || total <= 0)
    return 0;
  return std::min(1.0, static_cast<double>(dirty) / static_cast<double>(total));
}

bool should_clean(const compaction_policy& p, double ratio, const cleaner_checkpoint& c,
                  int64_t now_ms) {
  if (ratio > 0 && ratio > p.min_cleanable_dirty_ratio)
    return true;
  return c.next_delete_horizon_ms >= 0 && now_ms >= c.next_delete_horizon_ms;
}

// -- CleanedTransactionMetadata --------------------------------------------------

cleaning_round::txn_tracker::txn_tracker(const std::vector<aborted_txn_entry>& aborted,
                                         int64_t from) {
  for (auto& a : aborted)
    if (a.last_offset >= from)
      pending_.push_back(a);
  std::sort(pending_.begin(), pending_.end(),
            [](auto& a, auto& b) { return a.first_offset < b.first_offset; });
}

void cleaning_round::txn_tracker::consume_up_to(int64_t offset) {
  while (!pending_.empty() && pending_.front().first_offset <= offset) {
    ongoing_aborted_.emplace(pending_.front().pid.value, aborted_state{});
    pending_.pop_front();
  }
}

bool cleaning_round::txn_tracker::on_batch(const v2::batch_header& h) {
  consume_up_to(h.last_offset());
  if (!is_transactional(h))
    return false;
  auto i = ongoing_aborted_.find(h.producer_id);
  if (i != ongoing_aborted_.end()) {
    i->second.observed_batch = true;
    return true;
  }
  ongoing_committed_.insert(h.producer_id);
  return false;
}

bool cleaning_round::txn_tracker::on_marker(const v2::batch_header& h,
                                            std::optional<control_type> type) {
  consume_up_to(h.last_offset());
  if (h.record_count == 0 || !type)
    return true; // an empty control batch was cleaned before
  if (*type == control_type::abort) {
    auto i = ongoing_aborted_.find(h.producer_id);
    if (i == ongoing_aborted_.end())
      return true;
    bool observed = i->second.observed_batch;
    ongoing_aborted_.erase(i);
    return !observed; // kept until every batch of the transaction is gone
  }
  // COMMIT: removable if no batch of the transaction was seen.
  return ongoing_committed_.erase(h.producer_id) == 0;
}

// -- the round ---------------------------------------------------------------------

cleaning_round::cleaning_round(compaction_policy policy, cleaner_checkpoint checkpoint,
                               int64_t log_start_offset, int64_t dirty_position, int64_t bound,
                               int64_t now_ms, std::vector<aborted_txn_entry> aborted)
  : policy_(policy),
    from_(checkpoint),
    now_ms_(now_ms),
    bound_(bound),
    map_txns_(aborted, std::max(checkpoint.clean_offset, log_start_offset)),
    clean_txns_(aborted, log_start_offset),
    map_next_(std::max(checkpoint.clean_offset, log_start_offset)),
    end_position_(dirty_position),
    walk_next_(log_start_offset) {
}

status_or<bool> cleaning_round::build_map(const batch_reader& read, size_t max_batches) {
  if (map_done_)
    return true;
  size_t batches = 0;
  bool stop = false;
  status err;
  int64_t lag_limit = now_ms_ - policy_.min_compaction_lag_ms;
  auto st = read(map_next_, [&](const v2::batch_header& h, std::string_view bytes) {
    if (h.last_offset() < map_next_)
      return true;
    if (batches == max_batches)
      return false;
    if (h.last_offset() >= bound_
        || (policy_.min_compaction_lag_ms > 0 && h.max_timestamp > lag_limit)
        || (map_.size() > 0 && map_.size() + static_cast<size_t>(h.record_count)
                                 > policy_.max_map_keys)) {
      stop = true; // the round ends before this batch
      return false;
    }
    ++batches;
    if (is_control(h)) {
      (void) map_txns_.on_marker(h, marker_type(bytes, h, err));
    } else if (!map_txns_.on_batch(h)) { // aborted data never enters the map
      std::string scratch; // a compressed batch's records, decompressed
      err = v2::for_each_record(bytes, h, [&](const v2::record_view& r) {
        if (r.has_key)
          map_.put(r.key, h.base_offset + r.offset_delta);
      }, &scratch);
    }
    if (!err.ok())
      return false;
    map_next_ = h.last_offset() + 1;
    end_position_ += h.size();
    return true;
  });
  if (!st.ok())
    return st;
  if (!err.ok())
    return err;
  if (stop || batches < max_batches) { // stopped, or the log ended
    map_done_ = true;
    end_ = map_next_;
  }
  return map_done_;
}

status_or<clean_chunk> cleaning_round::clean(
  const batch_reader& read, int64_t log_start_offset,
  const std::map<producer_id, producer_state_entry>& producers, size_t max_batches) {
  clean_chunk chunk;
  walk_next_ = std::max(walk_next_, log_start_offset);
  size_t batches = 0;
  bool reached_end = false;
  status err;
  auto st = read(walk_next_, [&](const v2::batch_header& h, std::string_view bytes) {
    if (h.last_offset() < walk_next_)
      return true;
    if (h.last_offset() >= end_) {
      reached_end = true;
      return false;
    }
    if (batches == max_batches)
      return false;
    ++batches;
    bool control = is_control(h);
    auto horizon = v2::delete_horizon(h);
    std::optional<control_type> type;
    if (control) {
      type = marker_type(bytes, h, err);
      if (!err.ok())
        return false;
    }
    bool can_discard = control ? clean_txns_.on_marker(h, type) : clean_txns_.on_batch(h);
    bool discard_records = control ? can_discard && horizon && *horizon <= now_ms_ : can_discard;
    bool last_of_producer = false;
    if (h.producer_id >= 0) {
      auto p = producers.find(producer_id{h.producer_id});
      if (p != producers.end()) {
        if (!p->second.batches.empty())
          last_of_producer = p->second.batches.back().last_offset == h.last_offset();
        else
          last_of_producer = control && p->second.epoch.value == h.producer_epoch;
      }
    }
    std::vector<v2::record_view> kept;
    bool tombstones = false;
    int32_t total = 0;
    std::string scratch; // a compressed batch's records, decompressed
    err = v2::for_each_record(bytes, h, [&](const v2::record_view& r) {
      ++total;
      bool keep;
      if (discard_records)
        keep = false;
      else if (control)
        keep = true;
      else if (!r.has_key)
        keep = false; // Kafka counts it invalid and drops it
      else
        keep = h.base_offset + r.offset_delta >= map_.get(r.key)
               && (!r.null_value || !horizon || now_ms_ < *horizon);
      if (keep) {
        tombstones = tombstones || r.null_value;
        kept.push_back(r);
      }
    }, &scratch);
    if (!err.ok())
      return false;
    walk_next_ = h.last_offset() + 1;
    std::optional<std::string> out; // nullopt: unchanged
    bool remove = false;
    std::optional<int64_t> new_horizon = horizon;
    if (!kept.empty()) {
      bool set_horizon = (tombstones || (control && can_discard)) && !horizon;
      if (set_horizon)
        new_horizon = now_ms_ + policy_.delete_retention_ms;
      if (set_horizon || static_cast<int32_t>(kept.size()) != total)
        out = v2::rebuild(h, kept, new_horizon);
      if (new_horizon && (tombstones || control))
        next_horizon_ = next_horizon_ < 0 ? *new_horizon : std::min(next_horizon_, *new_horizon);
    } else if (last_of_producer) {
      if (total > 0)
        out = v2::rebuild(h, {}, std::nullopt); // Kafka's RETAIN_EMPTY
    } else {
      remove = true;
    }
    if (remove) {
      chunk.rewrites.push_back({h.base_offset, std::nullopt, h.size()});
      chunk.bytes_removed += h.size();
      if (control && type == control_type::abort)
        chunk.dropped_aborted.push_back(h.base_offset);
    } else if (out) {
      chunk.bytes_removed += h.size() - static_cast<int64_t>(out->size());
      chunk.rewrites.push_back({h.base_offset, std::move(out), h.size()});
    }
    return true;
  });
  if (!st.ok())
    return st;
  if (!err.ok())
    return err;
  chunk.done = reached_end || batches < max_batches;
  return chunk;
}

cleaner_checkpoint cleaning_round::checkpoint() const {
  return {end_, end_position_, next_horizon_};
}

} // namespace caftx
