#include "actors/coordinator/txn_coordinator_core.hpp"

#include "runtime/partitioner.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <tuple>

namespace caftx {

namespace {

txn_decision reject(error_code code, std::string message) {
  txn_decision d;
  d.error = code;
  d.message = std::move(message);
  return d;
}

} // namespace

txn_coordinator_core::txn_coordinator_core(txn_coordinator_settings settings)
  : settings_(settings) {
}

std::vector<std::string> txn_coordinator_core::load(std::vector<txn_card> cards,
                                                    int64_t next_pid_counter) {
  std::vector<std::string> in_prepare;
  next_pid_counter_ = next_pid_counter;
  install(cards, in_prepare);
  return in_prepare;
}

void txn_coordinator_core::install(std::vector<txn_card>& cards,
                                   std::vector<std::string>& in_prepare) {
  for (auto& c : cards) {
    if (c.state == txn_state::prepare_commit || c.state == txn_state::prepare_abort)
      in_prepare.push_back(c.transactional_id);
    auto i = txns_.try_emplace(c.transactional_id).first;
    i->second = metadata{std::move(c), std::nullopt};
  }
  cards.clear();
}

int64_t txn_coordinator_core::pids_left() const {
  if (!pid_blocks_)
    return -1;
  int64_t left = 0;
  for (auto& [first, last] : blocks_)
    left += last - first + 1;
  return left;
}

producer_id txn_coordinator_core::allocate_pid() {
  if (pid_blocks_) {
    // The shell keeps a block here whenever it calls a decision that may
    // allocate (pids_left() > 0).
    assert(!blocks_.empty());
    auto id = blocks_.front().first++;
    if (blocks_.front().first > blocks_.front().second)
      blocks_.erase(blocks_.begin());
    return producer_id{id};
  }
  // Producer ids of shard s are s, s + n, s + 2n, ... for n shards, so
  // shards never collide without talking to each other.
  return producer_id{settings_.shard + settings_.shard_count * next_pid_counter_++};
}

txn_decision txn_coordinator_core::prepare(metadata& m, txn_card next,
                                           txn_state pending_state) {
  assert(!m.pending);
  m.pending = pending_state;
  txn_decision d;
  d.card = std::move(next);
  return d;
}

txn_decision txn_coordinator_core::fence_and_abort(metadata& m, int64_t now_ms) {
  // PrepareEpochFence is only ever pending: bump the epoch and abort with
  // it, so the old producer's next request is fenced (T4, T10). Memory
  // changes only once the card is durable, so a failed write leaves nothing
  // bumped behind (Kafka's hasFailedEpochFence has nothing to remember).
  txn_card next = m.card;
  // At 32767 there is no higher epoch; the abort goes through unbumped, as
  // in Kafka 4.x (only a card written before every commit bumped can be
  // Ongoing there).
  if (m.card.epoch.value < std::numeric_limits<int16_t>::max())
    next.epoch = producer_epoch{static_cast<int16_t>(m.card.epoch.value + 1)};
  next.state = txn_state::prepare_abort;
  next.ended_by_pid = no_producer_id; // decided here: no client request may retry it
  next.ended_by_epoch = no_producer_epoch;
  next.last_update_ms = now_ms;
  auto d = prepare(m, std::move(next), txn_state::prepare_abort);
  d.send_markers = true;
  return d;
}

status txn_coordinator_core::admit(const std::string& tid, bool loading) const {
  if (tid.empty())
    return {error_code::invalid_request, "transactional.id must not be empty"};
  if (loading)
    return {error_code::coordinator_load_in_progress, "coordinator is loading"};
  if (partition_for(tid, settings_.shard_count) != settings_.shard)
    return {error_code::not_coordinator, "transactional.id '" + tid + "' belongs to shard "
                                           + std::to_string(partition_for(tid, settings_.shard_count))
                                           + ", not " + std::to_string(settings_.shard)};
  return {};
}

status txn_coordinator_core::validate_init_args(const init_producer_id_args& args) const {
  // docs/transactions.md §InitProducerId order: step 2 (producer id /
  // epoch pair), step 4 (""), step 5 (timeout).
  if ((args.expected_pid == no_producer_id) != (args.expected_epoch == no_producer_epoch))
    return {error_code::invalid_request,
            "producer id and producer epoch must both be set or both be -1"};
  if (args.transactional_id.empty())
    return {error_code::invalid_request, "transactional.id must not be empty"};
  if (args.transaction_timeout_ms <= 0
      || args.transaction_timeout_ms > settings_.transaction_max_timeout_ms)
    return {error_code::invalid_transaction_timeout,
            "transaction.timeout.ms " + std::to_string(args.transaction_timeout_ms)
              + " is not in [1, transaction.max.timeout.ms = "
              + std::to_string(settings_.transaction_max_timeout_ms) + "]"};
  return {};
}

txn_decision txn_coordinator_core::init_producer_id(const init_producer_id_args& args,
                                                    int64_t now_ms) {
  if (auto st = validate_init_args(args); !st.ok())
    return reject(st.code(), st.message());
  auto i = txns_.find(args.transactional_id);
  if (i == txns_.end()) {
    txn_card fresh;
    fresh.transactional_id = args.transactional_id;
    fresh.pid = allocate_pid();
    fresh.txn_timeout_ms = args.transaction_timeout_ms;
    fresh.last_update_ms = now_ms;
    i = txns_.emplace(args.transactional_id, metadata{fresh, {}}).first;
  }
  auto& m = i->second;
  if (m.pending)
    return reject(error_code::concurrent_transactions, "a state transition is pending");
  bool has_expected = args.expected_pid != no_producer_id;
  if (has_expected) {
    // A producer that already got the rotated id of a Prepare* card
    // (end-of-transaction bump, KIP-890) retries below (KAFKA-18660).
    bool valid = m.card.epoch == no_producer_epoch || args.expected_pid == m.card.pid
                 || (args.expected_pid == m.card.previous_pid
                     && is_epoch_exhausted(args.expected_epoch))
                 || (m.card.next_pid != no_producer_id && args.expected_pid == m.card.next_pid);
    if (!valid)
      return reject(error_code::producer_fenced, "producer id " + std::to_string(args.expected_pid.value)
                                                   + " is not the current one");
  }
  switch (m.card.state) {
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
      return reject(error_code::concurrent_transactions,
                    std::string("transaction is in ") + to_string(m.card.state));
    case txn_state::ongoing: {
      auto d = fence_and_abort(m, now_ms);
      d.error_after_write = error_code::concurrent_transactions;
      return d;
    }
    default:
      break;
  }
  txn_card next = m.card;
  next.state = txn_state::empty;
  next.partitions.clear();
  next.txn_start_ms = -1;
  next.txn_timeout_ms = args.transaction_timeout_ms;
  next.last_update_ms = now_ms;
  next.ended_by_pid = no_producer_id;
  next.ended_by_epoch = no_producer_epoch;
  producer_epoch last_epoch = no_producer_epoch;
  auto e = m.card.epoch;
  if (is_epoch_exhausted(e) && (!has_expected || args.expected_epoch == e)) {
    next.previous_pid = m.card.pid;
    next.pid = allocate_pid();
    next.epoch = producer_epoch{0};
    // As Kafka's prepareProducerIdRotation(recordLastEpoch): remember the
    // exhausted epoch so that a retry with (previous pid, that epoch) is
    // answered with the rotated id instead of PRODUCER_FENCED.
    if (has_expected)
      last_epoch = e;
  } else if (!has_expected || e == no_producer_epoch) {
    next.epoch = producer_epoch{static_cast<int16_t>(e.value + 1)};
  } else if (args.expected_epoch == e) {
    next.epoch = producer_epoch{static_cast<int16_t>(e.value + 1)};
    last_epoch = e;
  } else if (args.expected_epoch == m.card.last_epoch) {
    last_epoch = m.card.last_epoch; // retry of a bump whose reply was lost
  } else {
    return reject(error_code::producer_fenced, "producer epoch "
                                                 + std::to_string(args.expected_epoch.value)
                                                 + " is not the current one");
  }
  // Persisted with the card (Kafka keeps it in memory only): a retry of
  // this bump is recognised after a coordinator restart too.
  next.last_epoch = last_epoch;
  return prepare(m, std::move(next), txn_state::empty);
}

std::optional<txn_decision> txn_coordinator_core::check_identity(const std::string& tid,
                                                                 producer_id pid,
                                                                 producer_epoch epoch) const {
  if (tid.empty())
    return reject(error_code::invalid_request, "transactional.id must not be empty");
  auto i = txns_.find(tid);
  if (i == txns_.end() || i->second.card.pid != pid)
    return reject(error_code::invalid_producer_id_mapping,
                  "producer id " + std::to_string(pid.value) + " is not mapped to " + tid);
  if (i->second.card.epoch != epoch)
    return reject(error_code::producer_fenced, "producer epoch " + std::to_string(epoch.value)
                                                 + " is not the current "
                                                 + std::to_string(i->second.card.epoch.value));
  return std::nullopt;
}

std::optional<txn_decision> txn_coordinator_core::check_producer(const std::string& tid,
                                                                 producer_id pid,
                                                                 producer_epoch epoch,
                                                                 metadata*& found) {
  auto i = txns_.find(tid);
  if (!tid.empty() && i != txns_.end() && i->second.card.next_pid != no_producer_id
      && i->second.card.next_pid == pid && epoch == producer_epoch{0})
    return reject(error_code::concurrent_transactions,
                  "the previous transaction is still completing");
  if (auto rejected = check_identity(tid, pid, epoch))
    return rejected;
  auto& m = i->second;
  if (m.pending)
    return reject(error_code::concurrent_transactions, "a state transition is pending");
  found = &m;
  return std::nullopt;
}

txn_decision txn_coordinator_core::add_partitions(const std::string& tid, producer_id pid,
                                                  producer_epoch epoch,
                                                  const std::vector<topic_partition>& partitions,
                                                  int64_t now_ms) {
  metadata* found = nullptr;
  if (auto rejected = check_producer(tid, pid, epoch, found))
    return *rejected;
  auto& m = *found;
  if (m.card.state == txn_state::prepare_commit || m.card.state == txn_state::prepare_abort)
    return reject(error_code::concurrent_transactions,
                  std::string("the previous transaction is in ") + to_string(m.card.state));
  std::vector<topic_partition> merged = m.card.partitions;
  merged.insert(merged.end(), partitions.begin(), partitions.end());
  std::sort(merged.begin(), merged.end());
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  if (m.card.state == txn_state::ongoing && merged == m.card.partitions)
    return {}; // NONE without a write
  txn_card next = m.card;
  if (m.card.state != txn_state::ongoing) {
    next.txn_start_ms = now_ms;
    next.ended_by_pid = no_producer_id;
    next.ended_by_epoch = no_producer_epoch;
  }
  next.state = txn_state::ongoing;
  next.partitions = std::move(merged);
  next.last_update_ms = now_ms;
  return prepare(m, std::move(next), txn_state::ongoing);
}

void txn_coordinator_core::bump_at_end(txn_card& next) {
  auto bumped = producer_epoch{static_cast<int16_t>(next.epoch.value + 1)};
  if (!is_epoch_exhausted(bumped)) {
    next.epoch = bumped;
    return;
  }
  // The producer moves to a new producer id with epoch 0 when the card
  // completes; the markers go out with the highest epoch, 32767, so no
  // write of the old id can follow them (KIP-890 part 2).
  next.epoch = producer_epoch{std::numeric_limits<int16_t>::max()};
  next.next_pid = allocate_pid();
}

txn_decision txn_coordinator_core::end_txn(const std::string& tid, producer_id pid,
                                           producer_epoch epoch, bool commit, int64_t now_ms,
                                           int16_t client_transaction_version) {
  const bool bump = client_transaction_version >= 2;
  if (tid.empty())
    return reject(error_code::invalid_request, "transactional.id must not be empty");
  auto i = txns_.find(tid);
  if (i == txns_.end())
    return reject(error_code::invalid_producer_id_mapping,
                  "producer id " + std::to_string(pid.value) + " is not mapped to " + tid);
  auto& m = i->second;
  auto s = m.card.state;
  bool preparing = s == txn_state::prepare_commit || s == txn_state::prepare_abort;
  bool completed = s == txn_state::complete_commit || s == txn_state::complete_abort;
  // A retry of the EndTxn that ended the last transaction: recognised by
  // the producer id and epoch it carried, never acting again.
  bool retry = (preparing || completed) && m.card.ended_by_pid != no_producer_id
               && pid == m.card.ended_by_pid && epoch == m.card.ended_by_epoch;
  if (!retry) {
    metadata* found = nullptr;
    if (auto rejected = check_producer(tid, pid, epoch, found))
      return *rejected;
  } else if (m.pending) {
    return reject(error_code::concurrent_transactions, "a state transition is pending");
  }
  bool same_result = commit ? (s == txn_state::prepare_commit || s == txn_state::complete_commit)
                            : (s == txn_state::prepare_abort || s == txn_state::complete_abort);
  auto invalid = [&] {
    return reject(error_code::invalid_txn_state,
                  std::string(commit ? "commit" : "abort") + " in state " + to_string(s));
  };
  if (retry) {
    if (!same_result)
      return invalid();
    if (preparing)
      return reject(error_code::concurrent_transactions,
                    std::string(commit ? "commit" : "abort") + " in progress");
    return {}; // completed: NONE, nothing written
  }
  auto end = [&](txn_state target) {
    txn_card next = m.card;
    next.state = target;
    next.last_update_ms = now_ms;
    next.ended_by_pid = pid;
    next.ended_by_epoch = epoch;
    next.client_transaction_version = bump ? int16_t{2} : int16_t{1};
    if (bump)
      bump_at_end(next);
    auto d = prepare(m, std::move(next), target);
    d.send_markers = true;
    return d;
  };
  switch (s) {
    case txn_state::ongoing:
      return end(commit ? txn_state::prepare_commit : txn_state::prepare_abort);
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
      // The producer already holds the bumped epoch: its transaction has
      // not started yet; it may retry once the markers are written.
      return reject(error_code::concurrent_transactions,
                    std::string("the previous transaction is in ") + to_string(s));
    case txn_state::empty:
    case txn_state::complete_commit:
    case txn_state::complete_abort:
      // An abort when the producer does not know whether its transaction
      // started: accepted with an epoch bump and no markers (T12, Kafka 4.0).
      if (!commit && bump) {
        auto d = end(txn_state::prepare_abort);
        return d;
      }
      return invalid();
    default:
      return invalid();
  }
}

txn_decision txn_coordinator_core::verify_partitions(const std::string& tid, producer_id pid,
                                                     producer_epoch epoch,
                                                     const std::vector<topic_partition>& tps) const {
  if (auto rejected = check_identity(tid, pid, epoch))
    return *rejected;
  auto& m = txns_.at(tid);
  auto s = m.card.state;
  // Stricter than Kafka, which ignores pending transitions here: once an
  // EndTxn is being written no write may join the transaction.
  if (s == txn_state::prepare_commit || s == txn_state::prepare_abort
      || (m.pending && *m.pending != txn_state::ongoing))
    return reject(error_code::concurrent_transactions,
                  std::string("the transaction is in ") + to_string(s));
  for (auto& tp : tps)
    if (s != txn_state::ongoing
        || !std::binary_search(m.card.partitions.begin(), m.card.partitions.end(), tp))
      return reject(error_code::transaction_abortable,
                    "partition " + to_string(tp) + " was not added to the transaction");
  return {};
}

std::vector<txn_decision> txn_coordinator_core::abort_timed_out(int64_t now_ms) {
  std::vector<metadata*> timed_out;
  for (auto& [id, m] : txns_)
    if (!m.pending && m.card.state == txn_state::ongoing
        && m.card.txn_start_ms + m.card.txn_timeout_ms < now_ms)
      timed_out.push_back(&m);
  std::sort(timed_out.begin(), timed_out.end(), [](const metadata* a, const metadata* b) {
    return a->card.transactional_id < b->card.transactional_id;
  });
  std::vector<txn_decision> result;
  for (auto* m : timed_out)
    result.push_back(fence_and_abort(*m, now_ms));
  return result;
}

std::vector<std::string> txn_coordinator_core::expire_transactional_ids(int64_t now_ms,
                                                                       int64_t expiration_ms) {
  std::vector<std::string> expired;
  for (auto& [id, m] : txns_) {
    auto s = m.card.state;
    if (m.pending
        || !(s == txn_state::empty || s == txn_state::complete_commit
             || s == txn_state::complete_abort))
      continue;
    if (m.card.last_update_ms <= now_ms - expiration_ms) {
      m.pending = txn_state::dead;
      expired.push_back(id);
    }
  }
  std::sort(expired.begin(), expired.end());
  return expired;
}

size_t txn_coordinator_core::tombstones_written(const std::vector<std::string>& ids) {
  size_t removed = 0;
  for (auto& id : ids) {
    auto i = txns_.find(id);
    if (i == txns_.end() || i->second.pending != txn_state::dead)
      continue;
    if (is_valid_transition(i->second.card.state, txn_state::dead)) {
      txns_.erase(i);
      ++removed;
    } else {
      i->second.pending.reset();
    }
  }
  return removed;
}

void txn_coordinator_core::tombstones_failed(const std::vector<std::string>& ids) {
  for (auto& id : ids) {
    auto i = txns_.find(id);
    if (i != txns_.end() && i->second.pending == txn_state::dead)
      i->second.pending.reset();
  }
}

std::optional<txn_decision> txn_coordinator_core::markers_written(const std::string& tid,
                                                                  int64_t now_ms) {
  auto i = txns_.find(tid);
  if (i == txns_.end())
    return std::nullopt;
  auto& m = i->second;
  if (m.pending)
    return std::nullopt;
  txn_state target;
  if (m.card.state == txn_state::prepare_commit)
    target = txn_state::complete_commit;
  else if (m.card.state == txn_state::prepare_abort)
    target = txn_state::complete_abort;
  else
    return std::nullopt;
  txn_card next = m.card;
  next.state = target;
  next.partitions.clear();
  next.last_update_ms = now_ms;
  if (next.next_pid != no_producer_id) {
    next.previous_pid = next.pid;
    next.pid = next.next_pid;
    next.epoch = producer_epoch{0};
    next.next_pid = no_producer_id;
  }
  return prepare(m, std::move(next), target);
}

bool txn_coordinator_core::complete(const txn_decision& d) {
  if (!d.card)
    return false;
  auto i = txns_.find(d.card->transactional_id);
  if (i == txns_.end())
    return false;
  auto& m = i->second;
  if (!m.pending || *m.pending != d.card->state
      || !(is_valid_transition(m.card.state, d.card->state)
           || (m.card.state == d.card->state && d.card->state == txn_state::empty)))
    return false;
  m.card = *d.card;
  m.pending.reset();
  return true;
}

void txn_coordinator_core::abort_pending(const std::string& tid) {
  auto i = txns_.find(tid);
  if (i == txns_.end())
    return;
  auto& m = i->second;
  m.pending.reset();
}

std::vector<size_t> txn_coordinator_core::count_by_state() const {
  std::vector<size_t> n(static_cast<size_t>(txn_state::prepare_epoch_fence) + 1, 0);
  for (auto& [_, m] : txns_)
    ++n[static_cast<size_t>(m.card.state)];
  return n;
}

const txn_card* txn_coordinator_core::find(const std::string& tid) const {
  auto i = txns_.find(tid);
  return i == txns_.end() ? nullptr : &i->second.card;
}

bool txn_coordinator_core::has_pending(const std::string& tid) const {
  auto i = txns_.find(tid);
  return i != txns_.end() && i->second.pending.has_value();
}

list_transactions_result
txn_coordinator_core::list_transactions(const list_transactions_filter& filter,
                                        int64_t now_ms) const {
  list_transactions_result result;
  std::vector<txn_state> states;
  for (auto& name : filter.states) {
    if (auto s = txn_state_from_name(name))
      states.push_back(*s);
    else
      result.unknown_state_filters.push_back(name);
  }
  auto contains = [](const auto& xs, const auto& x) {
    return std::find(xs.begin(), xs.end(), x) != xs.end();
  };
  for (auto& [tid, m] : txns_) {
    auto& c = m.card;
    if (c.state == txn_state::dead)
      continue;
    if (!filter.producer_ids.empty() && !contains(filter.producer_ids, c.pid))
      continue;
    if (!states.empty() && !contains(states, c.state))
      continue;
    if (filter.duration_ms >= 0 && now_ms - c.txn_start_ms <= filter.duration_ms)
      continue;
    result.transactions.push_back({tid, c.pid, to_string(c.state)});
  }
  std::sort(result.transactions.begin(), result.transactions.end(),
            [](const transaction_listing& a, const transaction_listing& b) {
              return a.transactional_id < b.transactional_id;
            });
  return result;
}

status_or<txn_card> txn_coordinator_core::describe(const std::string& tid) const {
  if (tid.empty())
    return status{error_code::invalid_request, "transactional.id must not be empty"};
  auto i = txns_.find(tid);
  if (i == txns_.end() || i->second.card.state == txn_state::dead)
    return status{error_code::transactional_id_not_found,
                  "transactional id " + tid + " not found"};
  return i->second.card;
}

} // namespace caftx
