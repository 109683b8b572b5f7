#include "actors/coordinator/txn_coordinator_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <leveldb/write_batch.h>

#include <chrono>
#include <tuple>
#include <utility>
#include <set>
#include <stdexcept>

#include "actors/broker/node_context.hpp"
#include "actors/common/coordinator_log.hpp"
#include "actors/common/durable_queue.hpp"
#include "actors/common/lost_connection.hpp"
#include "actors/common/node_metrics.hpp"
#include "actors/common/pending_replies.hpp"
#include "actors/common/storage_fault.hpp"
#include "actors/common/supervisor.hpp"
#include "actors/coordinator/txn_coordinator_core.hpp"
#include "actors/coordinator/txn_state_loader.hpp"
#include "runtime/controller_messages.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/txn_coordinator_messages.hpp"
#include "runtime/record_batch_v2.hpp"
#include "runtime/partitioner.hpp"
#include "storage/codec.hpp"

namespace caftx {

namespace {

// The shard's part of the node's coordinator metrics (docs/metrics.md
// §Transaction coordinator): its shares of the sums, taken back when the
// shard stops, and the node's counters.
struct coordinator_metrics {
  std::shared_ptr<metrics::registry> reg;
  metrics::gauge_share ids, markers_in_flight;
  std::vector<metrics::gauge_share> by_state; // index: txn_state
  std::vector<int64_t> counts;                // the same, as counted here
  metrics::counter commits, aborts, timeout_aborts, fencings, loads, load_ms;
  metrics::gauge load_max, load_avg;

  void open(std::shared_ptr<metrics::registry> r) {
    using namespace node_metrics;
    reg = std::move(r);
    if (!reg)
      return;
    ids = metrics::gauge_share{gauge(reg, txn_ids)};
    markers_in_flight = metrics::gauge_share{gauge(reg, txn_markers_in_flight)};
    auto states = static_cast<size_t>(txn_state::prepare_epoch_fence) + 1;
    by_state.clear();
    for (size_t i = 0; i < states; ++i)
      by_state.emplace_back(
        gauge(reg, txn_by_state, {{"state", to_string(static_cast<txn_state>(i))}}));
    counts.assign(states, 0);
    commits = counter(reg, txn_commits);
    aborts = counter(reg, txn_aborts);
    timeout_aborts = counter(reg, txn_timeout_aborts);
    fencings = counter(reg, txn_fencings);
    loads = counter(reg, txn_loads);
    load_ms = counter(reg, txn_load_time_sum);
    load_max = gauge(reg, txn_load_time_max);
    load_avg = gauge(reg, txn_load_time_avg);
  }

  // One card moved from `before` to `after` (nullopt: no card).
  void moved(std::optional<txn_state> before, std::optional<txn_state> after) {
    if (!reg)
      return;
    if (before)
      --counts[static_cast<size_t>(*before)];
    if (after)
      ++counts[static_cast<size_t>(*after)];
    publish();
  }

  void recount(const txn_coordinator_core& core) {
    if (!reg)
      return;
    auto n = core.count_by_state();
    for (size_t i = 0; i < counts.size() && i < n.size(); ++i)
      counts[i] = static_cast<int64_t>(n[i]);
    publish();
  }

  void publish() {
    int64_t total = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      by_state[i].set(static_cast<double>(counts[i]));
      total += counts[i];
    }
    ids.set(static_cast<double>(total));
  }

  void loaded(double ms) {
    if (!reg)
      return;
    loads.inc();
    load_ms.inc(ms);
    load_max.set_max(ms);
    load_avg.set(load_ms.value() / loads.value());
  }
};

struct coordinator_state {
  std::unique_ptr<txn_coordinator_core> core;
  // While loading: replays the fetched records of the shard's partition.
  std::unique_ptr<txn_state_loader> loader;
  // The shard's own partition of `__transaction_state`: cards are appended
  // there; its leader epoch is the coordinator epoch.
  coordinator_log log;
  // The producer id counter (node-local until producer-id blocks come from
  // the controller) and the value last submitted for writing.
  durable_queue dq;
  int64_t counter_written = -1;
  // Cluster mode: a producer id block claim is on its way.
  bool pid_block_pending = false;
  // Replies owed after a card write: answered request_receiver_down if the
  // shard dies first.
  pending_replies replies;
  std::shared_ptr<const node_context> ctx;
  int32_t shard = 0;
  coordinator_epoch cepoch{0};
  bool loading = true;
  // ctx->clock_ms() when the current load started (for its event).
  int64_t load_started_ms = 0;
  // Why the last election of the partition failed (a storage error of the
  // partition, say): answered instead of COORDINATOR_LOAD_IN_PROGRESS until
  // an election succeeds.
  std::optional<status> load_error;
  // Transactions whose markers are not all acknowledged: the card they are
  // for and the partitions still missing.
  struct marker_round {
    txn_card card;
    std::set<topic_partition> missing;
    // Failed partitions to send again after the backoff: one marker_retry
    // per round however many failed, and only those are sent again.
    std::set<topic_partition> retry;
  };
  std::map<std::string, marker_round> markers;
  // The sum of every round's `missing` (the markers-in-flight gauge),
  // kept as rounds start, are acknowledged and end.
  size_t markers_missing = 0;
  // AddPartitionsToTxn / AddOffsetsToTxn that found their transactional id
  // busy (CONCURRENT_TRANSACTIONS: the previous transaction completing, or
  // another transition being written): decided again when its card
  // changes, answered CONCURRENT_TRANSACTIONS after caftx.coordinator.park.ms.
  struct parked_request {
    uint64_t id = 0;
    std::function<txn_decision()> decide;
    caf::response_promise rp;
    metrics::request_timer timer;
  };
  std::map<std::string, std::vector<parked_request>> parked;
  uint64_t next_parked_id = 1;
  coordinator_metrics gauges;
  static inline const char* name = "caftx.txn_coordinator";
  // A shard that dies answers what it parked at once (clients rediscover
  // and retry instead of waiting for their request timeout).
  ~coordinator_state() {
    for (auto& [tid, requests] : parked)
      for (auto& p : requests) {
        p.timer.observe();
        p.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
      }
  }
};

// How long a request stays parked before it is answered
// CONCURRENT_TRANSACTIONS (the client then backs off and retries, as with
// Kafka's coordinator, which never parks): caftx.coordinator.park.ms, 1 s
// by default, long enough for the markers and the CompleteCommit card, or
// for the card writes of requests parked ahead of it, each replicated to
// the ISR of `__transaction_state` (milliseconds each, but a busy machine
// stretches them), and short against request.timeout.ms. A client that
// sends AddPartitionsToTxn to several brokers' partitions at once (KafkaJS)
// then gets no CONCURRENT_TRANSACTIONS; KafkaJS 2.2.4 may produce a batch
// twice into the transaction when it retries after that error.

using coordinator_ptr = txn_coordinator_impl_actor::stateful_pointer<coordinator_state>;

void start_markers(coordinator_ptr self, const txn_card& card);

// COORDINATOR_LOAD_IN_PROGRESS while loading (or why the partition cannot
// be loaded), NONE once serving.
status load_status(coordinator_ptr self) {
  auto& st = self->state;
  if (st.load_error)
    return *st.load_error;
  if (st.loading)
    return {error_code::coordinator_load_in_progress, "coordinator is loading"};
  return {};
}

// The first checks of a request for `tid` (txn_coordinator_core::admit),
// with the load's error in place of COORDINATOR_LOAD_IN_PROGRESS.
status admit(coordinator_ptr self, const std::string& tid) {
  auto& st = self->state;
  auto s = st.core->admit(tid, st.loading);
  if (s.code() == error_code::coordinator_load_in_progress && st.load_error)
    return *st.load_error;
  return s;
}
void stop_on_failed_write(coordinator_ptr self, const status& s);
void wake_parked(coordinator_ptr self, const std::string& tid);
void load_chunk(coordinator_ptr self);
void start_load(coordinator_ptr self);
void finish_load(coordinator_ptr self);
void expire_transactional_ids(coordinator_ptr self);

// The fault point after a card of state `s` is durable (compiled out with
// the fault points).
[[maybe_unused]] const char* durable_point(txn_state s) {
  switch (s) {
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
      return "txn_coordinator.prepare_durable";
    case txn_state::complete_commit:
    case txn_state::complete_abort:
      return "txn_coordinator.complete_durable";
    default:
      return "txn_coordinator.card_durable";
  }
}

// The record batch of `records` as the coordinator appends it: not
// idempotent (producer id -1, as Kafka's TransactionStateManager writes),
// uncompressed, the records stamped with the node's clock.
std::string coordinator_batch(std::vector<record> records) {
  record_batch b;
  b.records = std::move(records);
  return v2::encode(b);
}

// Writes the producer id counter if a decision moved it. Submitted before
// the card's append, so it is durable no later than the card that uses an
// id of it (both go through the node's one writer, in order); a counter
// written for a card that then fails only skips ids.
void write_counter(coordinator_ptr self) {
  auto& st = self->state;
  auto counter = st.core->next_pid_counter();
  if (counter == st.counter_written)
    return;
  st.counter_written = counter;
  leveldb::WriteBatch wb;
  wb.Put(keys::next_pid(st.shard), codec::encode_int64(counter));
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb), [self](const status& s) {
    if (!s.ok())
      stop_on_failed_write(self, s);
  });
}

// Appends the card of `d` to the shard's partition; `then` runs after
// complete() applied it, or after the failure was undone (then the shard
// stops: whether the record is in the log is unknown, and the restart
// reads it back from there).
void persist(coordinator_ptr self, txn_decision d, std::function<void(const status&)> then) {
  auto& st = self->state;
  write_counter(self);
  auto& card = *d.card;
  auto batch = coordinator_batch({record{coordinator_records::encode_txn_key(card.transactional_id),
                                         coordinator_records::encode_txn_value(card), {},
                                         st.ctx->clock_ms(), false}});
  append(self, st.log, std::move(batch),
         [self, d = std::move(d), then = std::move(then)](const status& s, int64_t) {
           auto& st = self->state;
           auto tid = d.card->transactional_id;
           if (!s.ok()) {
             st.core->abort_pending(tid);
             if (nothing_appended(s)) {
               // Nothing was written: the card stays as it was and the
               // shard goes on; the caller retries. (Kafka's
               // TransactionStateManager.appendTransactionToLog line.)
               st.ctx->emit(node_event_level::debug, "transaction_append_refused",
                            "[TransactionStateManager brokerId=" + std::to_string(st.ctx->node_id)
                              + "] Appending new metadata of transactionalId " + tid
                              + " failed due to NOT_ENOUGH_REPLICAS, returning "
                                "COORDINATOR_NOT_AVAILABLE (" + s.message() + ")");
               then(coordinator_unavailable(s));
               wake_parked(self, tid);
               return;
             }
             then(s);
             stop_on_failed_write(self, s);
             return;
           }
           std::optional<txn_state> before;
           if (auto* card = st.core->find(tid))
             before = card->state;
           if (!st.core->complete(d)) {
             st.core->abort_pending(tid);
             then(status{error_code::not_coordinator, "transition no longer pending"});
             wake_parked(self, tid);
             return;
           }
           std::optional<txn_state> after;
           if (auto* card = st.core->find(tid))
             after = card->state;
           st.gauges.moved(before, after);
           if (after == txn_state::complete_commit && before != after)
             st.gauges.commits.inc();
           else if (after == txn_state::complete_abort && before != after)
             st.gauges.aborts.inc();
           CAFTX_FAULT_POINT(self, durable_point(d.card->state));
           // The reply first: EndTxn's caller waits for the decision
           // only, not for the markers (as Kafka), so its latency does
           // not grow with the number of partitions.
           then({});
           if (d.send_markers)
             start_markers(self, *d.card);
           wake_parked(self, tid);
         });
}

// A write failed: the shard stops (a storage error as
// storage_fault::write_failed, so its supervisor waits for the store; any
// other error, a fenced leader epoch say, as a plain failure); what it
// still parked or owed is answered at its exit.
void stop_on_failed_write(coordinator_ptr self, const status& s) {
  auto what = "txn-coordinator-" + std::to_string(self->state.shard) + ": " + s.message();
  if (s.code() == error_code::kafka_storage_error)
    self->quit(storage_exit(storage_fault::write_failed, what));
  else
    self->quit(caf::make_error(caf::sec::runtime_error, what));
}

// The markers not yet acknowledged, as the node's gauge has them.
void report_markers(coordinator_ptr self) {
  auto& st = self->state;
  if (st.gauges.reg)
    st.gauges.markers_in_flight.set(static_cast<double>(st.markers_missing));
}

// Ends the marker round of `tid` (its unacknowledged markers leave the
// count).
void erase_round(coordinator_ptr self, const std::string& tid) {
  auto& st = self->state;
  if (auto i = st.markers.find(tid); i != st.markers.end()) {
    st.markers_missing -= i->second.missing.size();
    st.markers.erase(i);
  }
  report_markers(self);
}

void finish_markers(coordinator_ptr self, const std::string& tid) {
  auto& st = self->state;
  auto card = st.markers[tid].card;
  erase_round(self, tid);
  auto d = st.core->markers_written(tid, st.ctx->clock_ms());
  if (!d)
    return;
  // A failed write stops the shard; its restart sends the markers again.
  // One refused with nothing written (the ISR below min.insync.replicas)
  // is tried again after the marker backoff, every marker being written,
  // as Kafka's TransactionMarkerChannelManager retries its log append.
  persist(self, std::move(*d), [self, tid, card](const status& s) {
    if (s.code() != error_code::coordinator_not_available)
      return;
    auto& st = self->state;
    st.markers[tid].card = card;
    self->delayed_send(self, std::chrono::milliseconds(st.ctx->config.marker_retry_backoff_ms),
                       marker_retry{tid});
  });
}

void schedule_retry(coordinator_ptr self, const std::string& tid, const topic_partition& tp) {
  auto& retry = self->state.markers[tid].retry;
  if (!retry.insert(tp).second || retry.size() > 1)
    return; // a marker_retry is already on its way
  self->delayed_send(self, std::chrono::milliseconds(self->state.ctx->config.marker_retry_backoff_ms),
                     marker_retry{tid});
}

// The marker of `tid` for `tp` is written (or dropped with its deleted
// topic): the round ends with its last one.
void marker_written(coordinator_ptr self, const std::string& tid, const topic_partition& tp) {
  auto i = self->state.markers.find(tid);
  if (i == self->state.markers.end())
    return;
  auto& round = i->second;
  self->state.markers_missing -= round.missing.erase(tp);
  if (round.missing.empty())
    finish_markers(self, tid);
  else
    report_markers(self);
}

void send_marker(coordinator_ptr self, const txn_card& card, const topic_partition& tp) {
  auto& st = self->state;
  auto dest = st.ctx->directory->marker_destination(tp);
  auto tid = card.transactional_id;
  auto epoch = card.epoch;
  auto state = card.state;
  auto still_wanted = [self, tid, epoch, state] {
    auto i = self->state.markers.find(tid);
    return i != self->state.markers.end() && i->second.card.epoch == epoch
           && i->second.card.state == state;
  };
  if (!dest && st.ctx->directory->topic_deleted(tp.topic)) {
    // Kafka's TransactionMarkerChannelManager: the marker of a deleted
    // partition is dropped, the transaction completes without it.
    st.ctx->emit(node_event_level::info, "marker_dropped",
                 "[Transaction Marker Channel Manager] Dropping the "
                   + std::string(state == txn_state::prepare_commit ? "COMMIT" : "ABORT")
                   + " marker of transactional id " + tid + " for " + to_string(tp)
                   + ": its topic was deleted");
    marker_written(self, tid, tp);
    return;
  }
  if (!dest) {
    // No leader known here for now (or not even its topic: this node's
    // view is stale): retried until there is one (Kafka keeps such
    // markers queued); dropping it would commit the other partitions
    // without this one.
    schedule_retry(self, tid, tp);
    return;
  }
  write_txn_marker_request req{card.pid, card.epoch, st.cepoch.value,
                               card.state == txn_state::prepare_commit, tp,
                               static_cast<int8_t>(card.client_transaction_version)};
  auto h = self->request(dest, std::chrono::milliseconds(st.ctx->config.request_timeout_ms),
                         std::move(req));
  h.then(
      [self, tid, tp, still_wanted, w = watch_connection(self, h.id(), dest)](const txn_response& r) {
        if (!still_wanted())
          return;
        switch (r.error) {
          case error_code::none:
            marker_written(self, tid, tp);
            return;
          case error_code::invalid_producer_epoch:
          case error_code::transaction_coordinator_fenced:
            // Someone newer owns this transaction: never complete it here.
            erase_round(self, tid);
            return;
          default:
            schedule_retry(self, tid, tp);
        }
      },
      [self, tid, tp, still_wanted](const caf::error&) {
        if (still_wanted())
          schedule_retry(self, tid, tp);
      });
}

void start_markers(coordinator_ptr self, const txn_card& card) {
  auto& st = self->state;
  auto& round = st.markers[card.transactional_id];
  round.card = card;
  st.markers_missing -= round.missing.size();
  round.missing = std::set<topic_partition>(card.partitions.begin(), card.partitions.end());
  st.markers_missing += round.missing.size();
  round.retry.clear();
  if (round.missing.empty()) {
    finish_markers(self, card.transactional_id);
    return;
  }
  auto missing = round.missing;
  report_markers(self);
  bool first = true;
  for (auto& tp : missing) {
    if (!first)
      CAFTX_FAULT_POINT(self, "txn_coordinator.between_markers");
    first = false;
    send_marker(self, card, tp);
  }
}

// Unknown topics or partitions give UNKNOWN_TOPIC_OR_PARTITION
// (docs/transactions.md §AddPartitionsToTxn step 2).
status check_partitions(coordinator_ptr self, const std::vector<topic_partition>& tps) {
  for (auto& tp : tps) {
    auto t = self->state.ctx->directory->topic(tp.topic);
    if (!t || tp.partition < 0 || tp.partition >= static_cast<int32_t>(t->size()))
      return {error_code::unknown_topic_or_partition, "unknown partition " + to_string(tp)};
  }
  return {};
}

// Answers `rp` with decision `d`: at once if it writes nothing, else once
// its card is durable.
void deliver_txn(coordinator_ptr self, txn_decision d, caf::response_promise rp,
                 metrics::request_timer timer) {
  if (!d.card) {
    timer.observe();
    rp.deliver(txn_response{d.error, d.message});
    return;
  }
  auto t = self->state.replies.add(std::move(rp), std::move(timer));
  persist(self, std::move(d), [self, t](const status& s) {
    self->state.replies.deliver(t, txn_response{s.code(), s.message()});
  });
}

bool busy(const txn_decision& d) {
  return !d.card && d.error == error_code::concurrent_transactions;
}

void park(coordinator_ptr self, const std::string& tid, std::function<txn_decision()> decide,
          caf::response_promise rp, metrics::request_timer timer) {
  auto& st = self->state;
  auto id = st.next_parked_id++;
  st.parked[tid].push_back({id, std::move(decide), std::move(rp), std::move(timer)});
  self->delayed_send(self, std::chrono::milliseconds(st.ctx->config.coordinator_park_ms),
                     parked_request_expired{tid, id});
}

// The card of `tid` changed (or a write for it failed): parked requests
// are decided again, in arrival order; those still busy stay parked (the
// first one decided may itself start a write).
void wake_parked(coordinator_ptr self, const std::string& tid) {
  auto& st = self->state;
  auto i = st.parked.find(tid);
  if (i == st.parked.end())
    return;
  auto waiting = std::move(i->second);
  st.parked.erase(i);
  for (auto& p : waiting) {
    auto d = p.decide();
    if (busy(d))
      st.parked[tid].push_back(std::move(p));
    else
      deliver_txn(self, std::move(d), std::move(p.rp), std::move(p.timer));
  }
}

// AddPartitionsToTxn and AddOffsetsToTxn: a transactional id busy with a
// transition parks the request instead of answering
// CONCURRENT_TRANSACTIONS, so the producer's next transaction starts as
// soon as the previous one completed rather than after a client backoff.
// The decision is the core's, made again on wake-up.
caf::result<txn_response> txn_reply_or_park(coordinator_ptr self, const std::string& tid,
                                            std::function<txn_decision()> decide,
                                            metrics::request_timer timer) {
  auto d = decide();
  auto rp = self->make_response_promise();
  if (busy(d))
    park(self, tid, std::move(decide), rp, std::move(timer));
  else
    deliver_txn(self, std::move(d), rp, std::move(timer));
  return rp;
}

// Cluster mode: claims the next producer id block from the node's
// controller actor once fewer than a tenth of a block are left (Kafka's
// ProducerIdManager prefetches the same way), one claim at a time; a
// failed claim is tried again after a second.
void want_pid_block(coordinator_ptr self) {
  auto& st = self->state;
  if (!st.ctx->cluster_mode || st.pid_block_pending || st.core->pids_left() >= 100)
    return;
  st.pid_block_pending = true;
  auto h = self->request(st.ctx->controller, std::chrono::seconds(60), producer_id_block_request{});
  h.then(
      [self, w = watch_connection(self, h.id(), st.ctx->controller)](
        const producer_id_block_response& r) {
        auto& st = self->state;
        st.pid_block_pending = false;
        if (r.error != error_code::none) {
          st.ctx->emit(node_event_level::warn, "producer_id_block",
                       "[Transaction Coordinator " + std::to_string(st.shard)
                         + "] no producer id block: " + to_string(r.error) + ": " + r.message);
          self->delayed_send(self, std::chrono::seconds(1), pid_block_retry_atom::value);
          return;
        }
        st.core->add_pid_block(r.first, r.last);
        st.ctx->emit(node_event_level::debug, "producer_id_block",
                     "[Transaction Coordinator " + std::to_string(st.shard)
                       + "] claimed producer ids " + std::to_string(r.first) + " to "
                       + std::to_string(r.last));
        want_pid_block(self);
      },
      [self](const caf::error&) {
        self->state.pid_block_pending = false;
        self->delayed_send(self, std::chrono::seconds(1), pid_block_retry_atom::value);
      });
}

// COORDINATOR_LOAD_IN_PROGRESS while no producer id is at hand in cluster
// mode (KIP-730: a coordinator without a block answers so, and clients
// retry); an empty status otherwise.
status pid_at_hand(coordinator_ptr self) {
  auto& st = self->state;
  if (st.core->pids_left() != 0)
    return {};
  want_pid_block(self);
  return {error_code::coordinator_load_in_progress,
          "transaction coordinator " + std::to_string(st.shard)
            + " is claiming a block of producer ids"};
}

txn_coordinator_impl_actor::behavior_type coordinator_fn(coordinator_ptr self, std::shared_ptr<const node_context> ctx,
                             int32_t shard) {
  auto& st = self->state;
  st.ctx = ctx;
  st.shard = shard;
  st.gauges.open(ctx->metrics);
  stop_on_storage_faults(self, "txn-coordinator-" + std::to_string(shard));
  st.dq = durable_queue{ctx->store};
  st.core = std::make_unique<txn_coordinator_core>(txn_coordinator_settings{
    shard, ctx->config.transaction_state_log_num_partitions, ctx->config.transaction_max_timeout_ms});
  // Load: the pid counter now; then the shard's partition becomes leader
  // at its next leader epoch (the coordinator epoch) and is replayed a
  // chunk per message (coordinator_load_chunk), so that requests arriving
  // meanwhile are answered COORDINATOR_LOAD_IN_PROGRESS.
  auto meta = read_txn_shard_meta(*ctx->store, shard);
  if (!meta.ok())
    throw storage_read_error(meta.error().message());
  st.core->set_next_pid_counter(meta->next_pid_counter);
  st.counter_written = meta->next_pid_counter;
  auto partitions = ctx->directory->topic(transaction_state_topic);
  if (!partitions || shard >= static_cast<int32_t>(partitions->size()))
    throw std::logic_error("no partition " + std::to_string(shard) + " of "
                           + transaction_state_topic);
  st.log.partition = partitions->at(static_cast<size_t>(shard));
  st.log.tp = {transaction_state_topic, shard};
  st.log.timeout = std::chrono::milliseconds(ctx->config.request_timeout_ms);
  if (ctx->cluster_mode) {
    st.core->use_pid_blocks();
    want_pid_block(self);
  }
  start_load(self);
  auto interval = std::chrono::milliseconds(
    ctx->config.transaction_abort_timed_out_transaction_cleanup_interval_ms);
  self->delayed_send(self, interval, coordinator_tick{});
  auto expiration_interval = std::chrono::milliseconds(
    ctx->config.transaction_remove_expired_transaction_cleanup_interval_ms);
  self->delayed_send(self, expiration_interval, txn_expiration_tick{});
  return {
    [=](storage_done& done) { self->state.dq.complete(done); },
    [=](const coordinator_load_chunk&) {
      if (self->state.loader)
        load_chunk(self);
      else if (self->state.loading)
        start_load(self); // the election failed before
    },
    [=](const txn_expiration_tick&) {
      if (!self->state.loading)
        expire_transactional_ids(self);
      self->delayed_send(self, expiration_interval, txn_expiration_tick{});
    },
    [=](const coordinator_tick&) {
      auto& st = self->state;
      if (!st.loading)
        for (auto& d : st.core->abort_timed_out(st.ctx->clock_ms())) {
          std::string what = d.card ? "transactionalId " + d.card->transactional_id
                                        + " (producer id " + std::to_string(d.card->pid.value)
                                        + ", epoch " + std::to_string(d.card->epoch.value) + ")"
                                    : std::string("a transaction");
          persist(self, std::move(d), [self, what](const status& s) {
            // Kafka's TransactionCoordinator.abortTimedOutTransactions.
            if (s.ok())
              self->state.gauges.timeout_aborts.inc();
            if (s.ok())
              self->state.ctx->emit(node_event_level::info, "transaction_timed_out",
                                    "Aborting ongoing transaction of " + what
                                      + " due to its timeout (transaction.timeout.ms)");
          });
        }
      self->delayed_send(self, interval, coordinator_tick{});
    },
    [=](const parked_request_expired& e) {
      auto& parked = self->state.parked;
      auto i = parked.find(e.transactional_id);
      if (i == parked.end())
        return;
      auto& v = i->second;
      for (auto p = v.begin(); p != v.end(); ++p)
        if (p->id == e.id) {
          p->timer.observe();
          p->rp.deliver(txn_response{error_code::concurrent_transactions,
                                     "the transaction stayed busy; retry"});
          v.erase(p);
          break;
        }
      if (v.empty())
        parked.erase(i);
    },
    [=](const marker_retry& m) {
      auto& st = self->state;
      auto i = st.markers.find(m.transactional_id);
      if (i == st.markers.end())
        return;
      if (i->second.missing.empty()) {
        finish_markers(self, m.transactional_id); // its completion was refused
        return;
      }
      auto card = i->second.card;
      std::vector<topic_partition> again;
      for (auto& tp : std::exchange(i->second.retry, {}))
        if (i->second.missing.count(tp))
          again.push_back(tp);
      for (auto& tp : again) // may finish the round
        send_marker(self, card, tp);
    },
    [=](pid_block_retry_atom) { want_pid_block(self); },
    [=](const init_producer_id_request& req) -> caf::result<init_producer_id_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics,
                                                                     "InitProducerId")};
      if (auto s = pid_at_hand(self); !s.ok())
        return init_producer_id_response{s.code(), s.message()};
      if (!req.has_transactional_id) {
        if (auto s = load_status(self); !s.ok())
          return init_producer_id_response{s.code(), s.message()};
        auto rp = self->make_response_promise();
        auto pid = st.core->allocate_idempotent_pid();
        want_pid_block(self);
        leveldb::WriteBatch wb;
        st.counter_written = st.core->next_pid_counter();
        wb.Put(keys::next_pid(st.shard), codec::encode_int64(st.counter_written));
        st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
                     [rp, pid, t = timer.take()](const status& s) mutable {
                       t.observe();
                       // The counter only moves forward: a failed write
                       // needs no restart.
                       if (!s.ok())
                         rp.deliver(init_producer_id_response{s.code(), s.message()});
                       else
                         rp.deliver(init_producer_id_response{error_code::none, {}, pid,
                                                              producer_epoch{0}});
                     });
        return rp;
      }
      init_producer_id_args args{req.transactional_id, req.transaction_timeout_ms, req.pid, req.epoch};
      auto valid = st.core->validate_init_args(args);
      if (valid.ok())
        valid = admit(self, req.transactional_id);
      if (!valid.ok())
        return init_producer_id_response{valid.code(), valid.message()};
      // An id that already has a producer: its older instance is fenced.
      const auto* before = st.core->find(req.transactional_id);
      std::optional<std::pair<producer_id, producer_epoch>> fenced;
      if (before && before->pid.value >= 0)
        fenced.emplace(before->pid, before->epoch);
      auto d = st.core->init_producer_id(args, st.ctx->clock_ms());
      want_pid_block(self);
      if (!d.card)
        return init_producer_id_response{d.error, d.message};
      auto after = d.error_after_write;
      auto tid = req.transactional_id;
      // Only now: a response promise takes over the reply of this request.
      auto rp = self->make_response_promise();
      auto t = self->state.replies.add(rp, timer.take());
      persist(self, std::move(d), [self, t, after, tid, fenced](const status& s) {
        auto& replies = self->state.replies;
        if (!s.ok()) {
          replies.deliver(t, init_producer_id_response{s.code(), s.message()});
        } else if (after != error_code::none) {
          replies.deliver(t,
                          init_producer_id_response{after, "fenced the ongoing transaction; retry"});
        } else {
          auto* card = self->state.core->find(tid);
          if (fenced)
            self->state.gauges.fencings.inc();
          if (fenced)
            self->state.ctx->emit(node_event_level::info, "producer_fenced",
                                  "InitProducerId for transactionalId " + tid
                                    + " fenced producer id " + std::to_string(fenced->first.value)
                                    + " epoch " + std::to_string(fenced->second.value)
                                    + ": now producer id " + std::to_string(card->pid.value)
                                    + " epoch " + std::to_string(card->epoch.value));
          replies.deliver(t, init_producer_id_response{error_code::none, {}, card->pid,
                                                       card->epoch});
        }
      });
      return rp;
    },
    [=](const add_partitions_to_txn_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      // verify_only is a partition's KIP-890 check, not a client's request.
      metrics::scoped_request_timer timer{
        req.verify_only ? metrics::request_timer{}
                        : node_metrics::time_request(st.ctx->metrics, "AddPartitionsToTxn")};
      // A client's request: unknown partitions first (docs/transactions.md
      // §AddPartitionsToTxn step 2 before 3-4).
      if (!req.verify_only)
        if (auto s = check_partitions(self, req.partitions); !s.ok())
          return txn_response{s.code(), s.message()};
      if (auto s = admit(self, req.transactional_id); !s.ok())
        return txn_response{s.code(), s.message()};
      if (req.verify_only) {
        auto d = st.core->verify_partitions(req.transactional_id, req.pid, req.epoch,
                                            req.partitions);
        return txn_response{d.error, d.message};
      }
      return txn_reply_or_park(
        self, req.transactional_id,
        [self, req] {
          auto& st = self->state;
          return st.core->add_partitions(req.transactional_id, req.pid, req.epoch, req.partitions,
                                         st.ctx->clock_ms());
        },
        timer.take());
    },
    [=](const add_offsets_to_txn_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{
        node_metrics::time_request(st.ctx->metrics, "AddOffsetsToTxn")};
      if (auto s = admit(self, req.transactional_id); !s.ok())
        return txn_response{s.code(), s.message()};
      if (req.group_id.empty())
        return txn_response{error_code::invalid_request, "empty group id"};
      topic_partition tp{consumer_offsets_topic,
                         partition_for(req.group_id, st.ctx->config.offsets_topic_num_partitions)};
      return txn_reply_or_park(
        self, req.transactional_id,
        [self, req, tp] {
          auto& st = self->state;
          return st.core->add_partitions(req.transactional_id, req.pid, req.epoch, {tp},
                                         st.ctx->clock_ms());
        },
        timer.take());
    },
    [=](const end_txn_request& req) -> caf::result<end_txn_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "EndTxn")};
      if (auto s = admit(self, req.transactional_id); !s.ok())
        return end_txn_response{s.code(), s.message()};
      // An exhausted epoch rotates to a new producer id here (KIP-890).
      if (auto s = pid_at_hand(self); !s.ok())
        return end_txn_response{s.code(), s.message()};
      auto d = st.core->end_txn(req.transactional_id, req.pid, req.epoch, req.committed,
                                st.ctx->clock_ms(), req.client_transaction_version);
      auto tid = req.transactional_id;
      auto identity = [self, tid](error_code e, std::string msg) {
        end_txn_response r{e, std::move(msg)};
        if (e == error_code::none)
          if (auto* card = self->state.core->find(tid))
            std::tie(r.pid, r.epoch) = next_identity(*card);
        return r;
      };
      if (!d.card)
        return identity(d.error, d.message);
      auto rp = self->make_response_promise();
      auto t = self->state.replies.add(rp, timer.take());
      persist(self, std::move(d), [self, t, identity](const status& s) {
        self->state.replies.deliver(t, identity(s.code(), s.message()));
      });
      return rp;
    },
    [=](const describe_transaction_request& req) {
      auto& st = self->state;
      describe_transaction_response r;
      r.coordinator_epoch = st.cepoch.value;
      if (auto s = admit(self, req.transactional_id); !s.ok()) {
        r.error = s.code();
        return r;
      }
      auto card = st.core->describe(req.transactional_id);
      if (!card.ok()) {
        r.error = card.error().code();
        return r;
      }
      r.state = to_string(card->state);
      r.pid = card->pid;
      r.epoch = card->epoch;
      r.partitions = card->partitions;
      r.transaction_timeout_ms = card->txn_timeout_ms;
      r.transaction_start_ms = card->txn_start_ms;
      return r;
    },
    [=](const list_transactions_request& req) {
      auto& st = self->state;
      list_transactions_response r;
      if (auto s = load_status(self); !s.ok()) {
        r.error = s.code();
        r.message = s.message();
        return r;
      }
      auto listed = st.core->list_transactions(req.filter, st.ctx->clock_ms());
      r.unknown_state_filters = std::move(listed.unknown_state_filters);
      r.transactions = std::move(listed.transactions);
      return r;
    },
  };
}

// The start of a load: the partition becomes leader at its next leader
// epoch, which is the shard's coordinator epoch from now on; the replay
// reads it from its log start to the log end offset it had then.
void start_load(coordinator_ptr self) {
  auto& st = self->state;
  elect_for_load(self, st.log, st.load_error, [self](const become_leader_response& r) {
    auto& st = self->state;
    st.cepoch = coordinator_epoch{r.leader_epoch};
    st.load_started_ms = st.ctx->clock_ms();
    st.loader = std::make_unique<txn_state_loader>(r.log_end_offset);
    st.loader->set_next_offset(r.log_start_offset);
    load_chunk(self);
  });
}

// One chunk of the load: caftx.coordinator.load.chunk.cards records of
// what was fetched, the next fetch when it is used up; after the last, the
// shard serves and re-sends the markers of every PrepareCommit/PrepareAbort
// card (docs/transactions.md §Load).
void load_chunk(coordinator_ptr self) {
  auto& st = self->state;
  load_step(
    self, st.log, *st.loader,
    [self] {
      auto& st = self->state;
      return st.loader->next_chunk(
        *st.core, static_cast<size_t>(st.ctx->config.coordinator_load_chunk_cards));
    },
    [self] { self->send(self, coordinator_load_chunk{}); },
    [self](const status& s, bool corrupt) {
      if (!corrupt) {
        stop_on_failed_write(self, s);
        return;
      }
      self->quit(storage_exit(storage_fault::corrupt,
                              "txn-coordinator-" + std::to_string(self->state.shard) + ": "
                                + s.message()));
    },
    [self] { finish_load(self); });
}

// The load is done: the shard serves and completes what it had decided.
void finish_load(coordinator_ptr self) {
  auto& st = self->state;
  auto resume = st.loader->in_prepare(*st.core);
  st.loader.reset();
  st.loading = false;
  st.gauges.recount(*st.core);
  st.gauges.loaded(static_cast<double>(st.ctx->clock_ms() - st.load_started_ms));
  // Kafka's TransactionStateManager line after loadTransactionMetadata.
  st.ctx->emit(node_event_level::info, "coordinator_loaded",
               "[Transaction State Manager " + std::to_string(st.ctx->node_id)
                 + "]: Finished loading " + std::to_string(st.core->size())
                 + " transaction metadata from " + transaction_state_topic + "-"
                 + std::to_string(st.shard) + " in "
                 + std::to_string(st.ctx->clock_ms() - st.load_started_ms)
                 + " milliseconds (coordinator epoch " + std::to_string(st.cepoch.value) + ", "
                 + std::to_string(resume.size()) + " transactions completing)");
  if (!resume.empty())
    CAFTX_FAULT_POINT(self, "txn_coordinator.loaded");
  for (auto& tid : resume)
    if (auto* card = st.core->find(tid))
      start_markers(self, *card);
}

// Transactional-id expiration (T11): the expired ids' tombstones are
// appended in one batch; only once it is durable does the core forget them.
void expire_transactional_ids(coordinator_ptr self) {
  auto& st = self->state;
  auto ids = st.core->expire_transactional_ids(st.ctx->clock_ms(),
                                               st.ctx->config.transactional_id_expiration_ms);
  if (ids.empty())
    return;
  std::vector<record> tombstones;
  for (auto& id : ids)
    tombstones.push_back(
      record{coordinator_records::encode_txn_key(id), {}, {}, st.ctx->clock_ms(), true});
  append(self, st.log, coordinator_batch(std::move(tombstones)),
         [self, ids = std::move(ids)](const status& s, int64_t) {
           if (s.ok()) {
             self->state.core->tombstones_written(ids);
             self->state.gauges.recount(*self->state.core);
             return;
           }
           self->state.core->tombstones_failed(ids);
           stop_on_failed_write(self, s);
         });
}

} // namespace

txn_coordinator_actor spawn_txn_coordinator(caf::actor_system& sys,
                                            std::shared_ptr<const node_context> ctx, int32_t shard) {
  return sys.spawn(coordinator_fn, std::move(ctx), shard);
}

txn_coordinator_actor spawn_coordinator_supervisor(caf::actor_system& sys,
                                                   std::shared_ptr<const node_context> ctx,
                                                   int32_t shard) {
  auto opts = node_supervision(ctx, "txn-coordinator-" + std::to_string(shard),
                               [ctx, shard](caf::actor_system& sys) {
                                 return caf::actor_cast<caf::actor>(
                                   spawn_txn_coordinator(sys, ctx, shard));
                               });
  // A shard that is not running answers as Kafka does for an unavailable
  // coordinator; clients rediscover and retry. After a storage fault:
  // KAFKA_STORAGE_ERROR naming the shard.
  opts.unavailable = storage_aware_unavailable(
    status{error_code::coordinator_not_available, "coordinator not available"});
  // The supervisor forwards every request to its child.
  return caf::actor_cast<txn_coordinator_actor>(spawn_supervisor(sys, std::move(opts)));
}

} // namespace caftx
