#include "actors/client/record_accumulator.hpp"

#include <algorithm>

namespace caftx {

size_t record_size_upper_bound(size_t key_bytes, size_t value_bytes,
                                const std::vector<record_header>& headers) {
  size_t n = 61 + 21 + key_bytes + value_bytes;
  for (auto& h : headers)
    n += 10 + h.key.size() + h.value.size();
  return n;
}

void record_accumulator::set_identity(producer_id pid, producer_epoch epoch) {
  // The same identity again (a repeated answer, an identity message that
  // crossed a bump the session made itself): sequences go on. Starting
  // them over at 0 under the same producer id and epoch would make the
  // partition take the next batch for a retry of the first one and answer
  // it with that batch's offset, its records never written.
  if (pid == pid_ && epoch == epoch_)
    return;
  bool new_pid = pid != pid_;
  pid_ = pid;
  epoch_ = epoch;
  for (auto& [tp, p] : partitions_) {
    p.next_sequence = 0;
    if (new_pid)
      p.pid_acknowledged = false;
  }
}

bool record_accumulator::append(const topic_partition& tp, uint64_t id, record rec,
                                int64_t now_ms) {
  auto& p = partitions_[tp];
  auto size = rec.key.size() + rec.value.size() + 20; // in a batch: without its header
  if (!p.open.records.empty() && p.open_bytes + size > static_cast<size_t>(settings_.batch_size))
    seal(tp, p, now_ms);
  p.open_bytes += size;
  p.open.records.push_back(std::move(rec));
  p.open_ids.push_back(id);
  ++unresolved_;
  bool first = p.open.records.size() == 1;
  if (p.open_bytes >= static_cast<size_t>(settings_.batch_size))
    seal(tp, p, now_ms);
  return first;
}

uint64_t record_accumulator::linger_generation(const topic_partition& tp) const {
  auto i = partitions_.find(tp);
  return i == partitions_.end() ? 0 : i->second.linger_generation;
}

void record_accumulator::linger_expired(const topic_partition& tp, uint64_t generation,
                                        int64_t now_ms) {
  auto i = partitions_.find(tp);
  if (i != partitions_.end() && i->second.linger_generation == generation)
    seal(tp, i->second, now_ms);
}

void record_accumulator::seal_all(int64_t now_ms) {
  for (auto& [tp, p] : partitions_)
    seal(tp, p, now_ms);
}

void record_accumulator::seal(const topic_partition& tp, partition& p, int64_t now_ms) {
  ++p.linger_generation;
  if (p.open.records.empty())
    return;
  dirty_.insert(tp);
  sealed b;
  b.batch = std::move(p.open);
  b.batch.pid = pid_;
  b.batch.epoch = epoch_;
  b.batch.attributes = settings_.transactional ? attr_transactional : 0;
  b.batch.base_sequence = p.next_sequence;
  p.next_sequence = add_sequence(p.next_sequence, b.batch.record_count());
  b.ids = std::move(p.open_ids);
  b.deadline_ms = now_ms + settings_.delivery_timeout_ms;
  p.queue.push_back(std::move(b));
  p.open = record_batch{};
  p.open_ids.clear();
  p.open_bytes = 0;
}

void record_accumulator::drop_open(partition& p, error_code error, const std::string& message,
                                   bool add_failed) {
  for (auto id : p.open_ids)
    outcomes_.push_back({id, error, message, -1, add_failed});
  unresolved_ -= p.open_ids.size();
  p.open = record_batch{};
  p.open_ids.clear();
  p.open_bytes = 0;
  ++p.linger_generation;
  p.held = false;
}

void record_accumulator::discard_unsent() {
  for (auto& [tp, p] : partitions_) {
    drop_open(p, error_code::invalid_txn_state, "transaction aborted", false);
    size_t first_unsent = 0;
    while (first_unsent < p.queue.size() && p.queue[first_unsent].ever_sent)
      ++first_unsent;
    fail_from(p, first_unsent, error_code::invalid_txn_state, "transaction aborted");
  }
}

void record_accumulator::hold(const topic_partition& tp) { partitions_[tp].held = true; }

void record_accumulator::release(const topic_partition& tp) {
  if (auto i = partitions_.find(tp); i != partitions_.end()) {
    i->second.held = false;
    dirty_.insert(tp);
  }
}

bool record_accumulator::held(const topic_partition& tp) const {
  auto i = partitions_.find(tp);
  return i != partitions_.end() && i->second.held;
}

void record_accumulator::fail_held(const topic_partition& tp, error_code error,
                                   const std::string& message) {
  auto i = partitions_.find(tp);
  if (i == partitions_.end() || !i->second.held)
    return;
  auto& p = i->second;
  if (!p.queue.empty())
    p.next_sequence = p.queue.front().batch.base_sequence;
  for (auto& b : p.queue)
    complete(b, error, message, -1, true);
  p.queue.clear();
  drop_open(p, error, message, true);
}

std::vector<batch_to_send> record_accumulator::ready() {
  std::vector<batch_to_send> out;
  if (bump_pending_)
    return out; // new sends wait for the epoch bump
  // Only partitions whose state changed can have something new to send;
  // in partition order, as a walk over all of them would send.
  std::set<topic_partition> dirty;
  dirty.swap(dirty_);
  partitions_visited_ += dirty.size();
  for (auto& tp : dirty) {
    auto pi = partitions_.find(tp);
    if (pi == partitions_.end())
      continue;
    auto& p = pi->second;
    if (p.held)
      continue; // release() marks it again
    // Batches are sent in queue order, so those ever sent (in flight or
    // waiting for a retry) are a prefix: counting stops at the first
    // never sent, and a call costs the window, not the backlog.
    int32_t flying = 0;
    for (auto& b : p.queue) {
      if (!b.ever_sent)
        break;
      flying += b.in_flight;
    }
    // docs/producer-state.md §First-batches: until the partition has
    // acknowledged a batch of this producer id it may have no state for
    // it, and a later batch written there before an earlier one that was
    // lost on the way (a leader restart) would be out of order for good;
    // so one at a time until then.
    int32_t window = pid_ == no_producer_id || p.pid_acknowledged ? settings_.max_in_flight : 1;
    for (auto& b : p.queue) {
      if (flying >= window)
        break;
      if (b.in_flight)
        continue;
      if (b.ever_sent && retry_waiting_)
        break; // its backoff runs: keep the order, send nothing after it
      b.in_flight = true;
      b.ever_sent = true;
      ++b.attempts;
      b.generation = next_generation_++;
      out.push_back({tp, b.generation, b.batch, b.deadline_ms});
      ++flying;
    }
  }
  return out;
}

void record_accumulator::complete(const sealed& b, error_code error, const std::string& message,
                                  int64_t base_offset, bool add_failed) {
  for (size_t i = 0; i < b.ids.size(); ++i)
    outcomes_.push_back({b.ids[i], error, message,
                         error == error_code::none && base_offset >= 0
                           ? base_offset + static_cast<int64_t>(i)
                           : -1,
                         add_failed});
  unresolved_ -= b.ids.size();
}

void record_accumulator::fail_from(partition& p, size_t from, error_code error,
                                   const std::string& message) {
  while (p.queue.size() > from) {
    complete(p.queue.back(), error, message, -1);
    p.queue.pop_back();
  }
}

void record_accumulator::on_reply(const topic_partition& tp, uint64_t generation, error_code error,
                                  const std::string& message, int64_t base_offset, int64_t now_ms) {
  if (orphaned_.erase(generation) > 0) {
    maybe_bump();
    return;
  }
  auto pi = partitions_.find(tp);
  if (pi == partitions_.end() || generation == 0)
    return;
  auto& p = pi->second;
  dirty_.insert(tp); // a reply frees its window, or fails batches
  size_t pos = 0;
  while (pos < p.queue.size() && p.queue[pos].generation != generation)
    ++pos;
  if (pos == p.queue.size())
    return; // superseded or already resolved
  auto& b = p.queue[pos];
  b.in_flight = false;
  // OUT_OF_ORDER for the oldest unresolved batch is never taken as "written
  // before": with at most five batches in flight a written batch is still
  // in the partition's window and comes back as a duplicate, while a later
  // batch may have been accepted without this one (a partition that dropped
  // producer state by expiry takes a producer it has no state for at any
  // sequence, docs/producer-state.md §First-batches). As in Kafka, the
  // batch fails and the idempotent producer bumps its epoch.
  if (error == error_code::none) {
    if (b.batch.pid == pid_)
      p.pid_acknowledged = true;
    complete(b, error_code::none, {}, base_offset);
    p.queue.erase(p.queue.begin() + static_cast<std::ptrdiff_t>(pos));
  } else {
    // OUT_OF_ORDER behind an unresolved batch is that batch's doing.
    bool retriable = is_retriable(error)
                     || (error == error_code::out_of_order_sequence_number && pos > 0);
    bool timed_out = now_ms >= b.deadline_ms;
    if (retriable && !timed_out && b.attempts <= settings_.retries) {
      retry_waiting_ = true;
      retrying_.insert(tp);
    } else {
      // Past delivery.timeout.ms the batch ends REQUEST_TIMED_OUT (the
      // last answer in the message); with `retries` used up it ends with
      // the leader's error itself, as Kafka's Sender fails it.
      if (retriable && timed_out)
        error = error_code::request_timed_out;
      // Later batches still in flight fail too; their replies only count
      // for "nothing in flight" before an epoch bump.
      for (size_t k = pos; k < p.queue.size(); ++k)
        if (p.queue[k].in_flight)
          orphaned_.insert(p.queue[k].generation);
      fail_from(p, pos, error, message);
      if (!settings_.transactional && pid_ != no_producer_id
          && error != error_code::producer_fenced)
        bump_pending_ = true;
    }
  }
  maybe_bump();
}

void record_accumulator::maybe_bump() {
  if (!bump_pending_ || !orphaned_.empty())
    return;
  for (auto& [tp, p] : partitions_)
    for (auto& b : p.queue)
      if (b.in_flight)
        return;
  // KIP-360: next epoch, sequences from 0. What is left was never sent
  // (the rest failed above), so re-sequencing it duplicates nothing.
  bump_pending_ = false;
  epoch_ = producer_epoch{static_cast<int16_t>(epoch_.value + 1)};
  for (auto& [tp, p] : partitions_) {
    p.next_sequence = 0;
    if (!p.queue.empty())
      dirty_.insert(tp);
    // Batches sent before (waiting for a retry) may have been written: they
    // cannot move to the new epoch without risking a duplicate.
    while (!p.queue.empty() && p.queue.front().ever_sent) {
      complete(p.queue.front(), error_code::request_timed_out,
               "outcome unknown; the producer epoch was bumped", -1);
      p.queue.pop_front();
    }
    for (auto& b : p.queue) {
      b.batch.epoch = epoch_;
      b.batch.base_sequence = p.next_sequence;
      p.next_sequence = add_sequence(p.next_sequence, b.batch.record_count());
    }
  }
}

bool record_accumulator::wants_retry_timer() {
  if (!retry_waiting_ || timer_requested_)
    return false;
  timer_requested_ = true;
  return true;
}

void record_accumulator::retry_backoff_elapsed() {
  retry_waiting_ = false;
  timer_requested_ = false;
  dirty_.insert(retrying_.begin(), retrying_.end());
  retrying_.clear();
}

std::vector<record_outcome> record_accumulator::take_outcomes() {
  std::vector<record_outcome> out;
  out.swap(outcomes_);
  return out;
}

} // namespace caftx
