#include "actors/partition/partition_core.hpp"

#include <algorithm>

namespace caftx {

namespace {

bool in_sequence(int32_t last, int32_t first) {
  return first == add_sequence(last, 1);
}

} // namespace

batch_metadata batch_window::operator[](size_t i) const {
  auto& s = slots_[(head_ + i) % capacity];
  return {s.first_sequence, add_sequence(s.first_sequence, s.offset_delta), s.base_offset,
          s.base_offset + s.offset_delta};
}

void batch_window::push_back(const batch_metadata& m) {
  auto delta = static_cast<int32_t>(m.last_offset - m.base_offset);
  if (size_ == capacity) {
    slots_[head_] = {m.first_sequence, delta, m.base_offset};
    head_ = static_cast<uint8_t>((head_ + 1) % capacity);
    return;
  }
  slots_[(head_ + size_) % capacity] = {m.first_sequence, delta, m.base_offset};
  ++size_;
}

status_or<produce_decision> partition_core::validate_produce(const batch_info& b) const {
  if (b.record_count <= 0)
    return status{error_code::invalid_record, "empty batch"};
  if (b.is_control())
    return status{error_code::invalid_record, "clients may not write control batches"};
  auto next = [&] {
    produce_decision d;
    d.base_offset = log_end_offset_;
    d.last_offset = log_end_offset_ + b.record_count - 1;
    return d;
  };
  if (b.pid == no_producer_id) {
    if (b.is_transactional())
      return status{error_code::invalid_record, "transactional batch without producer id"};
    return next();
  }
  if (b.pid.value < 0 || b.epoch.value < 0 || b.base_sequence < 0)
    return status{error_code::invalid_record,
                  "producer id, producer epoch and base sequence must be >= 0"};
  auto i = producers_.find(b.pid);
  if (i == producers_.end() || i->second.epoch == no_producer_epoch) {
    // Q1 (§First-batches): a producer without state starts at 0, unless
    // it may be one whose state was dropped here.
    if (b.base_sequence != 0 && !producer_state_dropped_)
      return status{error_code::out_of_order_sequence_number,
                    "producer " + std::to_string(b.pid.value)
                      + " has no state on this partition: its first batch must start at "
                        "sequence 0, got "
                      + std::to_string(b.base_sequence)};
    return next();
  }
  auto& e = i->second;
  int32_t first = b.base_sequence;
  int32_t last = b.last_sequence();
  // 1. duplicate of one of the retained batches: exact (epoch, first, last)
  if (e.epoch == b.epoch) {
    for (size_t k = 0; k < e.batches.size(); ++k)
      if (auto m = e.batches[k]; m.first_sequence == first && m.last_sequence == last) {
        produce_decision d;
        d.duplicate = true;
        d.base_offset = m.base_offset;
        d.last_offset = m.last_offset;
        return d;
      }
  }
  // 3. epoch
  if (b.epoch < e.epoch)
    return status{error_code::invalid_producer_epoch,
                  "producer epoch " + std::to_string(b.epoch.value) + " is older than "
                    + std::to_string(e.epoch.value)};
  // 5. sequence
  if (b.epoch > e.epoch) {
    if (first != 0)
      return status{error_code::out_of_order_sequence_number,
                    "a new producer epoch must start at sequence 0, got "
                      + std::to_string(first)};
  } else if (e.batches.empty()) {
    if (first != 0)
      return status{error_code::out_of_order_sequence_number,
                    "expected sequence 0, got " + std::to_string(first)};
  } else if (!in_sequence(e.batches.back().last_sequence, first)) {
    return status{error_code::out_of_order_sequence_number,
                  "expected sequence "
                    + std::to_string(add_sequence(e.batches.back().last_sequence, 1))
                    + ", got " + std::to_string(first)};
  }
  // 6. transaction state
  if (e.current_txn_first_offset && !b.is_transactional())
    return status{error_code::invalid_txn_state,
                  "non-transactional batch while the producer has an open transaction"};
  return next();
}

status partition_core::validate_coordinator_append(const batch_info& b) const {
  if (b.record_count <= 0)
    return {error_code::invalid_record, "empty batch"};
  if (b.is_control())
    return {error_code::invalid_record, "control batches are written as markers"};
  if (b.pid == no_producer_id)
    return {};
  if (auto i = producers_.find(b.pid); i != producers_.end() && b.epoch < i->second.epoch)
    return {error_code::invalid_producer_epoch,
            "producer epoch " + std::to_string(b.epoch.value) + " is older than "
              + std::to_string(i->second.epoch.value)};
  return {};
}

append_result partition_core::append(batch_info batch) {
  batch.base_offset = log_end_offset_;
  return apply_appended(batch);
}

append_result partition_core::apply_appended(const batch_info& batch) {
  auto aborted_before = aborted_index_.size();
  apply(batch);
  append_result r;
  r.base_offset = batch.base_offset;
  if (aborted_index_.size() > aborted_before)
    r.aborted = aborted_index_.back();
  return r;
}

bool partition_core::needs_verification(const batch_info& b) const {
  if (!b.is_transactional() || b.is_control())
    return false;
  auto i = producers_.find(b.pid);
  return i == producers_.end() || !i->second.current_txn_first_offset
         || i->second.epoch != b.epoch;
}

status partition_core::validate_marker(producer_id pid, producer_epoch epoch,
                                       end_txn_marker marker, int8_t transaction_version) const {
  auto i = producers_.find(pid);
  if (i == producers_.end())
    return {};
  auto& e = i->second;
  if (epoch < e.epoch)
    return {error_code::invalid_producer_epoch,
            "marker epoch " + std::to_string(epoch.value) + " is older than "
              + std::to_string(e.epoch.value)};
  if (transaction_version >= 2 && epoch == e.epoch && e.current_txn_first_offset)
    return {error_code::invalid_producer_epoch,
            "marker epoch " + std::to_string(epoch.value)
              + " is the epoch of the open transaction, not above it"};
  if (marker.cepoch < e.cepoch)
    return {error_code::transaction_coordinator_fenced,
            "coordinator epoch " + std::to_string(marker.cepoch.value) + " is older than "
              + std::to_string(e.cepoch.value)};
  return {};
}

std::pair<record_batch, append_result>
partition_core::append_marker(producer_id pid, producer_epoch epoch, end_txn_marker marker,
                              int64_t now_ms) {
  auto batch = make_control_batch(pid, epoch, marker, now_ms);
  auto info = info_of(batch);
  info.size_bytes = static_cast<int32_t>(v2::encode(batch).size());
  auto r = append(info);
  batch.base_offset = r.base_offset;
  return {std::move(batch), r};
}

status partition_core::replay(const batch_info& batch) {
  auto r = append_replica(batch);
  if (!r.ok())
    return r.error();
  return {};
}

void partition_core::load_high_watermark(int64_t hw) {
  high_watermark_ = log_start_offset_;
  set_high_watermark(hw);
}

status_or<append_result> partition_core::append_replica(const batch_info& batch) {
  if (batch.base_offset < log_end_offset_ || batch.record_count <= 0)
    return status{error_code::kafka_storage_error,
                  "partition " + to_string(tp_) + ": batch at offset "
                    + std::to_string(batch.base_offset) + " ("
                    + std::to_string(batch.record_count) + " records) where the log ends at "
                    + std::to_string(log_end_offset_)};
  return apply_appended(batch);
}

producer_snapshot partition_core::snapshot() const {
  return {log_end_offset_,   log_start_offset_,       log_start_position_,
          log_end_position_, producer_state_dropped_, producers_};
}

void partition_core::restore(const producer_snapshot& s, std::vector<aborted_txn_entry> aborted) {
  log_start_offset_ = s.log_start_offset;
  log_start_position_ = s.log_start_position;
  log_end_position_ = s.log_end_position;
  log_end_offset_ = s.offset;
  high_watermark_ = log_start_offset_; // load_high_watermark() sets it
  producer_state_dropped_ = s.producer_state_dropped;
  producers_ = s.producers;
  ongoing_txns_.clear();
  for (auto& [pid, e] : producers_)
    if (e.current_txn_first_offset)
      ongoing_txns_[*e.current_txn_first_offset] = pid;
  aborted_index_ = std::move(aborted);
}

void partition_core::apply_cleaned(int64_t bytes_removed,
                                   const std::vector<int64_t>& dropped_aborted) {
  log_start_position_ += bytes_removed;
  if (dropped_aborted.empty())
    return;
  aborted_index_.erase(std::remove_if(aborted_index_.begin(), aborted_index_.end(),
                                      [&](const aborted_txn_entry& a) {
                                        return std::find(dropped_aborted.begin(),
                                                         dropped_aborted.end(), a.last_offset)
                                               != dropped_aborted.end();
                                      }),
                       aborted_index_.end());
}

void partition_core::apply(const batch_info& b) {
  int64_t base = b.base_offset;
  int64_t last = b.last_offset();
  log_end_offset_ = last + 1;
  log_end_position_ += b.size_bytes;
  if (b.pid == no_producer_id)
    return;
  auto& e = producers_[b.pid];
  if (e.epoch != b.epoch)
    e.batches.clear();
  e.epoch = b.epoch;
  e.last_timestamp_ms = std::max(e.last_timestamp_ms, b.max_timestamp_ms);
  if (b.is_control()) {
    auto& marker = b.marker;
    if (!marker)
      return;
    e.cepoch = std::max(e.cepoch, marker->cepoch);
    if (!e.current_txn_first_offset)
      return; // completes nothing: no index entry, no LSO change
    int64_t first = *e.current_txn_first_offset;
    e.current_txn_first_offset.reset();
    ongoing_txns_.erase(first);
    if (marker->type == control_type::abort) {
      // LSO to record: first offset of the earliest other open transaction,
      // or marker + 1 (docs/producer-state.md §Markers step 3).
      int64_t lso = ongoing_txns_.empty() ? last + 1 : ongoing_txns_.begin()->first;
      aborted_index_.push_back({b.pid, first, last, lso});
    }
    unreplicated_txns_[first] = last;
    return;
  }
  e.batches.push_back({b.base_sequence, b.last_sequence(), base, last});
  if (b.is_transactional() && !e.current_txn_first_offset) {
    e.current_txn_first_offset = base;
    ongoing_txns_[base] = b.pid;
  }
}

status_or<log_start_move> partition_core::plan_move(
  const batch_reader& read, int64_t bound,
  const std::function<bool(const v2::batch_header&, int64_t size_left)>& remove) const {
  log_start_move m{log_start_offset_, log_start_position_, {}};
  int64_t size = log_size_bytes();
  auto st = read(log_start_offset_, [&](const v2::batch_header& h, std::string_view) {
    if (h.last_offset() < m.log_start_offset)
      return true;
    if (h.last_offset() >= bound || !remove(h, size))
      return false;
    size -= h.size();
    m.log_start_offset = h.last_offset() + 1;
    m.log_start_position += h.size();
    return true;
  });
  if (!st.ok())
    return st;
  return m;
}

status_or<std::optional<log_start_move>>
partition_core::plan_retention(const batch_reader& read, const retention_policy& policy,
                               int64_t now_ms) const {
  if (policy.retention_ms < 0 && policy.retention_bytes < 0)
    return std::optional<log_start_move>{};
  int64_t bound = std::min(last_stable_offset(), high_watermark_);
  auto m = plan_move(read, bound, [&](const v2::batch_header& h, int64_t size_left) {
    bool too_old = policy.retention_ms >= 0 && h.max_timestamp < now_ms - policy.retention_ms;
    bool too_big = policy.retention_bytes >= 0 && size_left - h.size() >= policy.retention_bytes;
    return too_old || too_big;
  });
  if (!m.ok())
    return m.error();
  if (m->log_start_offset <= log_start_offset_)
    return std::optional<log_start_move>{};
  for (auto& a : aborted_index_)
    if (a.last_offset < m->log_start_offset)
      m->dropped_aborted.push_back(a.last_offset);
  return std::optional<log_start_move>{std::move(m).value()};
}

status_or<std::optional<log_start_move>>
partition_core::plan_delete_records(const batch_reader& read, int64_t offset) const {
  if (offset == -1)
    offset = high_watermark_;
  if (offset < 0 || offset > high_watermark_)
    return status{error_code::offset_out_of_range,
                  "DeleteRecords offset " + std::to_string(offset) + " of " + to_string(tp_)
                    + " outside [0, " + std::to_string(high_watermark_)
                    + "] (-1: the high watermark)"};
  if (offset <= log_start_offset_)
    return std::optional<log_start_move>{};
  // Whole batches below `offset` leave the log's size; the log may start
  // inside a batch, as Kafka's log start offset may.
  auto m = plan_move(read, offset, [](const v2::batch_header&, int64_t) { return true; });
  if (!m.ok())
    return m.error();
  m->log_start_offset = offset;
  for (auto& a : aborted_index_)
    if (a.last_offset < offset)
      m->dropped_aborted.push_back(a.last_offset);
  return std::optional<log_start_move>{std::move(m).value()};
}

void partition_core::apply_log_start(const log_start_move& move) {
  log_start_offset_ = std::max(log_start_offset_, std::min(move.log_start_offset, high_watermark_));
  log_start_position_ = std::max(log_start_position_, move.log_start_position);
  aborted_index_.erase(std::remove_if(aborted_index_.begin(), aborted_index_.end(),
                                      [&](const aborted_txn_entry& a) {
                                        return a.last_offset < log_start_offset_;
                                      }),
                       aborted_index_.end());
}

size_t partition_core::remove_expired_producers(int64_t now_ms, int64_t expiration_ms) {
  size_t removed = 0;
  for (auto i = producers_.begin(); i != producers_.end();) {
    auto& e = i->second;
    if (!e.current_txn_first_offset && now_ms - e.last_timestamp_ms >= expiration_ms) {
      i = producers_.erase(i);
      ++removed;
      producer_state_dropped_ = true;
    } else {
      ++i;
    }
  }
  return removed;
}

void partition_core::set_high_watermark(int64_t hw) {
  // Never backwards, never past the log end (a caller's bug, not data).
  hw = std::min(std::max(hw, high_watermark_), log_end_offset_);
  high_watermark_ = hw;
  for (auto i = unreplicated_txns_.begin(); i != unreplicated_txns_.end();) {
    if (i->second < hw)
      i = unreplicated_txns_.erase(i);
    else
      ++i;
  }
}

std::optional<int64_t> partition_core::first_unstable_offset() const {
  std::optional<int64_t> result;
  if (!ongoing_txns_.empty())
    result = ongoing_txns_.begin()->first;
  if (!unreplicated_txns_.empty()) {
    int64_t u = unreplicated_txns_.begin()->first;
    result = result ? std::min(*result, u) : u;
  }
  return result;
}

int64_t partition_core::last_stable_offset() const {
  auto fu = first_unstable_offset();
  return fu && *fu < high_watermark_ ? *fu : high_watermark_;
}

status_or<fetch_result> partition_core::fetch(const batch_reader& read, int64_t fetch_offset,
                                              int32_t max_bytes, isolation_level isolation) const {
  if (fetch_offset < log_start_offset_ || fetch_offset > log_end_offset_)
    return status{error_code::offset_out_of_range,
                  "fetch offset " + std::to_string(fetch_offset) + " outside ["
                    + std::to_string(log_start_offset_) + ", "
                    + std::to_string(log_end_offset_) + "]"};
  fetch_result r;
  r.high_watermark = high_watermark_;
  r.last_stable_offset = last_stable_offset();
  r.log_start_offset = log_start_offset_;
  int64_t upper = isolation == isolation_level::read_committed ? r.last_stable_offset
                                                              : r.high_watermark;
  if (fetch_offset >= upper)
    return r;
  auto st = read(fetch_offset, [&](const v2::batch_header& h, std::string_view bytes) {
    if (h.last_offset() < fetch_offset)
      return true; // before the fetch offset (the reader starts at or before it)
    if (h.base_offset >= upper || h.last_offset() >= upper)
      return false; // never hand out a batch that straddles the bound
    if (r.batch_count > 0 && r.records.size() + bytes.size() > static_cast<size_t>(max_bytes))
      return false;
    r.records.append(bytes);
    ++r.batch_count;
    r.next_offset = h.last_offset() + 1;
    return true;
  });
  if (!st.ok())
    return st;
  if (isolation == isolation_level::read_committed && r.batch_count > 0) {
    int64_t end = r.next_offset;
    // The index is in marker order (last_offset ascending): skip the
    // entries that end before the fetch offset, and stop after the first
    // whose recorded LSO reaches `end`, as every later aborted transaction
    // starts at or after that LSO (Kafka's collectAbortedTxns).
    auto i = std::lower_bound(aborted_index_.begin(), aborted_index_.end(), fetch_offset,
                              [](const aborted_txn_entry& a, int64_t off) {
                                return a.last_offset < off;
                              });
    for (; i != aborted_index_.end(); ++i) {
      if (i->first_offset < end)
        r.aborted.push_back({i->pid, i->first_offset});
      if (i->last_stable_offset >= end)
        break;
    }
  }
  return r;
}

std::vector<active_producer> partition_core::active_producers() const {
  std::vector<active_producer> result;
  result.reserve(producers_.size());
  for (auto& [pid, e] : producers_) {
    active_producer p;
    p.pid = pid;
    p.epoch = e.epoch;
    p.last_sequence = e.batches.empty() ? no_sequence : e.batches.back().last_sequence;
    p.last_timestamp_ms = e.last_timestamp_ms;
    p.coordinator_epoch = e.cepoch.value;
    p.current_txn_start_offset = e.current_txn_first_offset.value_or(-1);
    result.push_back(p);
  }
  return result;
}

status_or<int64_t> partition_core::list_offset(const batch_reader& read, int64_t timestamp,
                                               isolation_level isolation,
                                               int64_t* record_timestamp) const {
  int64_t found_timestamp = -1;
  if (record_timestamp == nullptr)
    record_timestamp = &found_timestamp;
  *record_timestamp = -1;
  int64_t bound = isolation == isolation_level::read_committed ? last_stable_offset()
                                                               : high_watermark_;
  if (timestamp == -1)
    return bound;
  if (timestamp == -2)
    return log_start_offset_;
  int64_t found = -1;
  status err;
  auto st = read(log_start_offset_, [&](const v2::batch_header& h, std::string_view bytes) {
    if (h.base_offset >= bound)
      return false;
    if ((h.attributes & attr_control) != 0 || h.max_timestamp < timestamp)
      return true;
    auto b = v2::decode(bytes);
    if (!b.ok()) {
      err = status{error_code::kafka_storage_error,
                   "partition " + to_string(tp_) + ": batch at offset "
                     + std::to_string(h.base_offset) + ": " + b.error().to_string()};
      return false;
    }
    for (size_t k = 0; k < b->records.size(); ++k)
      if (b->records[k].timestamp_ms >= timestamp) {
        found = b->offset_of(k); // a cleaned batch's offsets have gaps
        *record_timestamp = b->records[k].timestamp_ms;
        return false;
      }
    return true;
  });
  if (!st.ok())
    return st;
  if (!err.ok())
    return err;
  if (found < 0 || found >= bound) {
    *record_timestamp = -1;
    return -1;
  }
  return found;
}

size_t partition_core::producer_state_bytes() const {
  // A std::map node: the value plus three pointers and the colour, padded.
  constexpr size_t node_overhead = 4 * sizeof(void*);
  return producers_.size()
           * (sizeof(std::pair<const producer_id, producer_state_entry>) + node_overhead)
         + ongoing_txns_.size() * (sizeof(std::pair<const int64_t, producer_id>) + node_overhead)
         + unreplicated_txns_.size() * (sizeof(std::pair<const int64_t, int64_t>) + node_overhead)
         + aborted_index_.capacity() * sizeof(aborted_txn_entry);
}

} // namespace caftx
