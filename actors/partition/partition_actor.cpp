#include "actors/partition/partition_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>

#include "actors/broker/node_context.hpp"
#include "actors/common/durable_queue.hpp"
#include "actors/common/node_metrics.hpp"
#include "actors/common/storage_fault.hpp"
#include "actors/common/supervisor.hpp"
#include "actors/common/verification.hpp"
#include "actors/partition/log_cleaner.hpp"
#include "actors/partition/partition_core.hpp"
#include "actors/partition/replication_core.hpp"
#include "actors/partition/snapshot_codec.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/controller_messages.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"

namespace caftx {

namespace {

// The newest batches' bytes, for fetches near the log end (bounded by
// caftx.log.tail.cache.bytes); everything else is read from storage.
struct tail_cache {
  struct entry {
    int64_t base_offset;
    std::string bytes;
  };
  std::deque<entry> entries;
  size_t bytes = 0;
  size_t capacity = 0;

  void add(int64_t base_offset, const std::string& b) {
    if (b.size() > capacity) {
      clear();
      return;
    }
    entries.push_back({base_offset, b});
    bytes += b.size();
    while (bytes > capacity) {
      bytes -= entries.front().bytes.size();
      entries.pop_front();
    }
  }
  void clear() {
    entries.clear();
    bytes = 0;
  }
  // Serves `offset` if the cache holds the batch with it or the log end.
  bool covers(int64_t offset) const {
    return !entries.empty() && offset >= entries.front().base_offset;
  }
  // The cleaner rewrote (or, with nullopt, deleted) the batch at
  // `base_offset` (docs/compaction.md): the cache holds what storage does.
  void replace(int64_t base_offset, const std::optional<std::string>& b) {
    auto i = std::lower_bound(entries.begin(), entries.end(), base_offset,
                              [](const entry& e, int64_t off) { return e.base_offset < off; });
    if (i == entries.end() || i->base_offset != base_offset)
      return;
    bytes -= i->bytes.size();
    if (b) {
      i->bytes = *b;
      bytes += b->size();
    } else {
      entries.erase(i);
    }
  }
};

// A compacted partition's cleaner (docs/compaction.md): the topic's
// policy, the persisted checkpoint and the round in progress.
struct compaction_state {
  bool compact = false;   // cleanup.policy has compact
  bool remove_old = true; // cleanup.policy has delete: retention, DeleteRecords
  compaction_policy policy;
  cleaner_checkpoint checkpoint;
  std::unique_ptr<cleaning_round> round;
  bool writing = false; // a step's write (or the snapshot before a round) is in flight
};

// A produce whose batch bytes passed v2::validate, with what the core
// needs of them.
struct checked_produce {
  std::string transactional_id;
  std::string records;
  batch_info info;
  int16_t acks = -1; // produce_request::acks
  metrics::request_timer timer; // Produce's TotalTimeMs, observed at the reply
};

// The series a leader reports (docs/metrics.md §Partitions): created when
// it leads, removed when it follows or stops, with its shares of the
// node-wide sums.
struct partition_gauges {
  std::shared_ptr<metrics::registry> reg;
  metrics::label_set labels;
  metrics::gauge lso_lag, under_replicated, isr, replicas, size, log_end, log_start, hw, lso,
    producer_ids, producer_state_bytes;
  metrics::gauge_share producer_id_share, under_replicated_share, leader_share;
  std::map<int32_t, metrics::gauge> follower_lag;
  bool on = false;

  partition_gauges() = default;
  partition_gauges(const partition_gauges&) = delete;
  partition_gauges& operator=(const partition_gauges&) = delete;
  ~partition_gauges() { close(); }

  void open(std::shared_ptr<metrics::registry> r, const topic_partition& tp) {
    using namespace node_metrics;
    reg = std::move(r);
    labels = partition_labels(tp);
    lso_lag = owned_gauge(reg, partition_lso_lag, labels);
    under_replicated = owned_gauge(reg, partition_under_replicated, labels);
    isr = owned_gauge(reg, partition_isr_count, labels);
    replicas = owned_gauge(reg, partition_replicas_count, labels);
    size = owned_gauge(reg, log_size, labels);
    log_end = owned_gauge(reg, log_end_offset, labels);
    log_start = owned_gauge(reg, log_start_offset, labels);
    hw = owned_gauge(reg, partition_high_watermark, labels);
    lso = owned_gauge(reg, partition_last_stable_offset, labels);
    producer_ids = owned_gauge(reg, partition_producer_ids, labels);
    producer_state_bytes = owned_gauge(reg, partition_producer_state_bytes, labels);
    producer_id_share = metrics::gauge_share{gauge(reg, producer_id_count)};
    under_replicated_share = metrics::gauge_share{gauge(reg, under_replicated_partitions)};
    leader_share = metrics::gauge_share{gauge(reg, leader_count)};
    leader_share.set(1);
    on = true;
  }

  void close() {
    if (!on)
      return;
    for (auto* g : {&lso_lag, &under_replicated, &isr, &replicas, &size, &log_end, &log_start, &hw,
                    &lso, &producer_ids, &producer_state_bytes})
      reg->remove(g->cell());
    for (auto& [_, g] : follower_lag)
      reg->remove(g.cell());
    follower_lag.clear();
    producer_id_share = {};
    under_replicated_share = {};
    leader_share = {};
    on = false;
  }
};

struct partition_state {
  std::unique_ptr<partition_core> core;
  tail_cache cache;
  // Log bytes appended since the last producer-state snapshot, and that
  // snapshot's key (replaced by the next).
  int64_t bytes_since_snapshot = 0;
  std::optional<std::string> snapshot_key;
  int64_t snapshot_offset = 0; // the log below it is replayed from the snapshot
  int64_t snapshot_position = 0; // the position counter at snapshot_offset
  compaction_state compaction;
  retention_policy retention;
  int32_t max_message_bytes = 1048588; // the topic's max.message.bytes
  // The leader-epoch checkpoint (oldest first) and the current epoch
  // stamped into every batch (-1 until first elected).
  leader_epoch_cache epochs;
  int32_t leader_epoch = -1;
  // The last coordinator election's generation (become_leader_request);
  // its coordinator's appends must carry it.
  uint64_t load_generation = 0;
  durable_queue dq;
  std::shared_ptr<const node_context> ctx;
  // Replies held until the high watermark passes `offset`, in offset order.
  struct waiter {
    int64_t offset;
    caf::response_promise rp;
    caf::message reply;
    metrics::request_timer timer = {};
  };
  // -- replication (docs/replication.md) --
  // The log end offset of what is synced (core->log_end_offset() counts
  // the appends still on their way to disk): what a follower may fetch,
  // and the leader's own place in the high watermark.
  int64_t durable_end = 0;
  // Leading: what the leader knows of its followers and the ISR (cluster
  // mode; without it the partition is its only replica and the HW is the
  // synced log end). Following: the leader and leader epoch it follows.
  std::optional<replication::leader_replication> replication;
  bool following = false;
  int32_t follow_leader = -1;
  int32_t follow_epoch = -1;
  int32_t min_insync_replicas = 1;
  struct held_replica_fetch {
    uint64_t id;
    replica_fetch_request req;
    caf::response_promise rp;
  };
  std::vector<held_replica_fetch> replica_fetches;
  bool isr_timer_armed = false;
  // Its assignment has more than one replica (read once at load: caftx
  // does not reassign replicas): its log end may hold batches not yet
  // committed.
  bool has_followers = false;
  std::deque<waiter> waiters;
  // Transactional produces held per producer while one of them is being
  // verified with the transaction coordinator (KIP-890 part 1).
  struct held_produce {
    checked_produce req;
    caf::response_promise rp;
  };
  std::map<producer_id, std::deque<held_produce>> held;
  // Fetches with nothing to return, held up to their max_wait_ms
  // (fetch.max.wait.ms) until the log shows them something.
  struct held_fetch {
    uint64_t id;
    fetch_request req;
    caf::response_promise rp;
  };
  std::vector<held_fetch> fetches;
  uint64_t next_fetch_id = 1;
  partition_gauges gauges;
  static inline const char* name = "caftx.partition";
  // A leader that dies (crash, kill) answers what it still held at once,
  // so producers retry now instead of after request.timeout.ms; a retry of
  // a batch that did reach the disk is then answered as a duplicate.
  ~partition_state() {
    for (auto& w : waiters)
      w.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    for (auto& [pid, queue] : held)
      for (auto& h : queue)
        h.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    for (auto& f : fetches)
      f.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    for (auto& f : replica_fetches)
      f.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
  }
};

using partition_ptr = partition_impl_actor::stateful_pointer<partition_state>;

// The answer to `req` from the log as it is now.
// Reads stored batches for the core: from the tail cache when it holds the
// offset, else from LevelDB (a seek to the batch holding it).
batch_reader reader_of(partition_ptr self) {
  return [self](int64_t offset,
                const std::function<bool(const v2::batch_header&, std::string_view)>& fn) -> status {
    auto& st = self->state;
    if (st.cache.covers(offset)) {
      for (auto& e : st.cache.entries) {
        auto h = v2::read_header(e.bytes);
        if (!h.ok())
          return h.error();
        if (h->last_offset() >= offset && !fn(*h, e.bytes))
          break;
      }
      return {};
    }
    auto& tp = st.core->tp();
    status err;
    try {
      st.ctx->store->scan_from_floor(
        keys::log_prefix(tp), keys::log_entry(tp, offset),
        [&](std::string_view key, std::string_view value) {
          auto h = v2::read_header(value);
          if (!h.ok() || !v2::crc_matches(value, *h)) {
            err = status{error_code::kafka_storage_error,
                         "partition " + to_string(tp) + ": stored batch "
                           + std::string(key.substr(key.size() - 20)) + ": "
                           + (h.ok() ? "CRC-32C mismatch" : h.error().message())};
            return false;
          }
          return fn(*h, value);
        });
    } catch (const std::exception& e) {
      return {error_code::kafka_storage_error, e.what()};
    }
    return err;
  };
}

fetch_response fetch_now(partition_ptr self, const fetch_request& req) {
  auto& st = self->state;
  auto r = st.core->fetch(reader_of(self), req.fetch_offset, req.max_bytes, req.isolation);
  fetch_response resp;
  resp.high_watermark = st.core->high_watermark();
  resp.last_stable_offset = st.core->last_stable_offset();
  resp.log_start_offset = st.core->log_start_offset();
  if (!r.ok()) {
    resp.error = r.error().code();
    resp.message = r.error().message();
    return resp;
  }
  resp.aborted_transactions = std::move(r->aborted);
  resp.records = std::move(r->records);
  return resp;
}

// Fetches held for data: those the log now has something for are
// answered (the high watermark, and with it the last stable offset, moved).
void release_fetches(partition_ptr self) {
  auto& fetches = self->state.fetches;
  for (auto i = fetches.begin(); i != fetches.end();) {
    auto resp = fetch_now(self, i->req);
    if (resp.error == error_code::none && resp.records.empty()) {
      ++i;
      continue;
    }
    i->rp.deliver(std::move(resp));
    i = fetches.erase(i);
  }
}

// Replies whose batch the high watermark passed: done, or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
// min.insync.replicas while they waited (the data stays: a retry is
// answered as a duplicate with its offsets).
void release_waiters(partition_ptr self) {
  auto& st = self->state;
  while (!st.waiters.empty() && st.waiters.front().offset < st.core->high_watermark()) {
    auto& w = st.waiters.front();
    w.timer.observe();
    if (st.replication
        && st.replication->check_acks(w.offset + 1, st.core->high_watermark(),
                                      st.min_insync_replicas)
             == replication::acks_state::not_enough_replicas_after_append)
      w.rp.deliver(error_reply_as(
        w.reply, status{error_code::not_enough_replicas_after_append,
                        "the ISR of " + to_string(st.core->tp()) + " shrank below "
                          + "min.insync.replicas (" + std::to_string(st.min_insync_replicas)
                          + ") after the append"}));
    else
      w.rp.deliver(std::move(w.reply));
    st.waiters.pop_front();
  }
}

// A response of type Response carrying only `why`.
template <class Response>
Response error_response(const status& why) {
  Response r;
  r.error = why.code();
  r.message = why.message();
  return r;
}

// Answers every reply still waiting for the HW with `why` (the partition
// stopped leading): the producer finds the new leader and retries, and a
// retry of a batch the new leader has is answered with its offsets.
void fail_waiters(partition_ptr self, const status& why) {
  auto& st = self->state;
  for (auto& w : st.waiters) {
    w.timer.observe();
    w.rp.deliver(error_reply_as(w.reply, why));
  }
  st.waiters.clear();
  for (auto& [pid, queue] : st.held)
    for (auto& h : queue) {
      h.req.timer.observe();
      h.rp.deliver(produce_response{why.code(), why.message(), -1, -1});
    }
  st.held.clear();
  for (auto& f : st.fetches)
    f.rp.deliver(error_response<fetch_response>(why));
  st.fetches.clear();
  for (auto& f : st.replica_fetches)
    f.rp.deliver(error_response<replica_fetch_response>(why));
  st.replica_fetches.clear();
}

replica_fetch_response replica_fetch_now(partition_ptr self, const replica_fetch_request& req);

// The partition's series as they are now (docs/metrics.md §Partitions):
// while it leads; a follower reports none (Kafka's Partition gauges of a
// follower read 0 for under-replication and lag, which is what a missing
// series sums to).
void report_metrics(partition_ptr self) {
  auto& st = self->state;
  auto& g = st.gauges;
  if (!st.ctx->metrics)
    return;
  if (st.following) {
    g.close();
    return;
  }
  if (!g.on)
    g.open(st.ctx->metrics, st.core->tp());
  auto& core = *st.core;
  auto hw = core.high_watermark();
  auto lso = core.last_stable_offset();
  g.hw.set(static_cast<double>(hw));
  g.lso.set(static_cast<double>(lso));
  g.lso_lag.set(static_cast<double>(hw - lso));
  g.log_end.set(static_cast<double>(core.log_end_offset()));
  g.log_start.set(static_cast<double>(core.log_start_offset()));
  g.size.set(static_cast<double>(core.log_size_bytes()));
  auto pids = static_cast<double>(core.producers().size());
  g.producer_ids.set(pids);
  g.producer_id_share.set(pids);
  g.producer_state_bytes.set(static_cast<double>(core.producer_state_bytes()));
  size_t isr = 1, replicas = 1;
  if (st.replication) {
    isr = st.replication->isr().size();
    replicas = st.replication->replicas().size();
    for (auto id : st.replication->replicas()) {
      if (id == st.ctx->node_id)
        continue;
      auto i = g.follower_lag.find(id);
      if (i == g.follower_lag.end()) {
        auto labels = g.labels;
        labels.emplace_back("follower", std::to_string(id));
        i = g.follower_lag
              .emplace(id, node_metrics::owned_gauge(g.reg, node_metrics::follower_lag,
                                                     std::move(labels)))
              .first;
      }
      auto* f = st.replication->follower(id);
      auto follower_end = f && f->log_end_offset >= 0 ? f->log_end_offset : 0;
      i->second.set(static_cast<double>(std::max<int64_t>(0, st.durable_end - follower_end)));
    }
  }
  g.isr.set(static_cast<double>(isr));
  g.replicas.set(static_cast<double>(replicas));
  double under = isr < replicas ? 1 : 0;
  g.under_replicated.set(under);
  g.under_replicated_share.set(under);
}

// The leader's HW after its own log end or a follower moved (Kafka's
// maybeIncrementLeaderHW); alone, the synced log end. Then everything that
// waited for it goes on.
void advance_high_watermark(partition_ptr self) {
  auto& st = self->state;
  auto before = st.core->high_watermark();
  if (!st.replication) {
    if (!st.following)
      st.core->set_high_watermark(st.durable_end);
  } else if (auto hw = st.replication->advanced_high_watermark(before, st.durable_end,
                                                                st.ctx->clock_ms())) {
    st.core->set_high_watermark(*hw);
  }
  // Replies and consumer fetches wait for the HW only: a follower fetch
  // that moved nothing re-reads none of them.
  if (st.core->high_watermark() != before) {
    if (st.replication)
      CAFTX_FAULT_POINT(self, "partition.high_watermark_moved");
    release_waiters(self);
    release_fetches(self);
  }
  // Held follower fetches: new records, or a HW above the one they know.
  // (A follower may know a higher one than a leader that restarted at its
  // checkpoint: that one is committed too, and the leader's catches up.)
  auto& held = st.replica_fetches;
  for (auto i = held.begin(); i != held.end();) {
    if (i->req.fetch_offset < st.durable_end
        || i->req.high_watermark < st.core->high_watermark()) {
      i->rp.deliver(replica_fetch_now(self, i->req));
      i = held.erase(i);
    } else {
      ++i;
    }
  }
  report_metrics(self);
}

// The snapshot a write of `bytes` more bytes of log should carry, taken
// before they are applied, if one is due and the partition has followers:
// its snapshot must not cover offsets above the high watermark, since the
// producer state keeps no record of the transactions whose markers are not
// committed yet (they hold the LSO) and a restart at the high-watermark
// checkpoint must find them in the log it replays. So one is taken only
// when everything before the write is committed (HW = log end). nullopt:
// none, or a partition without followers, which snapshots after the apply.
std::optional<producer_snapshot> snapshot_before(partition_ptr self, size_t bytes) {
  auto& st = self->state;
  if (st.bytes_since_snapshot + static_cast<int64_t>(bytes) < st.ctx->config.log_snapshot_interval_bytes
      || st.core->high_watermark() != st.core->log_end_offset() || !st.has_followers)
    return std::nullopt;
  return st.core->snapshot();
}

// Adds the producer-state snapshot of the core as it is now to `wb`,
// replacing the previous one. Only valid where the state matches the log
// that `wb` makes durable: in the write of the batch that ends at the log
// end, or with nothing in flight.
void add_snapshot(partition_ptr self, leveldb::WriteBatch& wb, producer_snapshot snap) {
  auto& st = self->state;
  auto key = keys::producer_snapshot(st.core->tp(), snap.offset);
  wb.Put(key, snapshot_codec::encode(snap));
  if (st.snapshot_key && *st.snapshot_key != key)
    wb.Delete(*st.snapshot_key);
  st.snapshot_key = key;
  st.snapshot_offset = snap.offset;
  st.snapshot_position = snap.log_end_position;
  st.bytes_since_snapshot = 0;
}

// Appends the batch `bytes` (its info `info`) at the log end durably;
// `rp` gets `reply` once it is durable. The bytes get their base offset and
// the leader epoch stamped; every `log_snapshot_interval_bytes` the same
// write carries a producer-state snapshot, so a snapshot is durable exactly
// when the log it covers is.
template <class Reply>
void append_and_reply(partition_ptr self, std::string bytes, const batch_info& info, Reply reply,
                      bool set_base_offset, caf::response_promise rp, int16_t acks = -1,
                      metrics::request_timer timer = {}) {
  auto& st = self->state;
  auto& tp = st.core->tp();
  auto sized = info;
  sized.size_bytes = static_cast<int32_t>(bytes.size());
  auto before = snapshot_before(self, bytes.size());
  auto appended_at = st.core->append(sized);
  int64_t base = appended_at.base_offset;
  int64_t last = base + info.record_count - 1;
  v2::stamp(bytes, base, std::max(st.leader_epoch, 0));
  if constexpr (std::is_same_v<Reply, produce_response>)
    if (set_base_offset)
      reply.base_offset = base;
  fault::append_detail appended{tp,        base, last, info.pid, info.epoch, info.is_transactional(),
                                info.is_control()};
  leveldb::WriteBatch wb;
  wb.Put(keys::log_entry(tp, base), bytes);
  wb.Put(keys::high_watermark(tp), codec::encode_int64(st.core->high_watermark()));
  if (appended_at.aborted)
    wb.Put(keys::aborted_txn(tp, appended_at.aborted->last_offset),
           snapshot_codec::encode(*appended_at.aborted));
  if (before)
    add_snapshot(self, wb, std::move(*before));
  st.bytes_since_snapshot += static_cast<int64_t>(bytes.size());
  if (st.bytes_since_snapshot >= st.ctx->config.log_snapshot_interval_bytes && !st.has_followers)
    add_snapshot(self, wb, st.core->snapshot());
  st.cache.add(base, bytes);
  // acks=-1 waits for the HW; acks=1 for this write; acks=0 for nothing.
  std::optional<std::pair<caf::response_promise, caf::message>> on_durable;
  if (acks == -1) {
    st.waiters.push_back({last, rp, caf::make_message(std::move(reply)), timer});
  } else if (acks == 1) {
    on_durable.emplace(rp, caf::make_message(std::move(reply)));
  } else {
    if constexpr (std::is_same_v<Reply, produce_response>)
      reply.base_offset = -1; // Kafka's RecordMetadata offset under acks=0
    timer.observe();
    rp.deliver(std::move(reply));
  }
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
               [self, last, appended, on_durable, timer](const status& s) mutable {
    if (on_durable)
      timer.observe();
    if (!s.ok()) {
      // The in-memory log is ahead of the disk now: every reply still
      // waiting gets the error, and the supervisor rebuilds the leader from
      // what is durable once the store writes again.
      for (auto& w : self->state.waiters) {
        w.timer.observe();
        w.rp.deliver(error_reply_as(w.reply, s));
      }
      self->state.waiters.clear();
      if (on_durable)
        on_durable->first.deliver(error_reply_as(on_durable->second, s));
      self->quit(storage_exit(storage_fault::write_failed,
                              "partition " + to_string(self->state.core->tp()) + ": " + s.message()));
      return;
    }
    CAFTX_FAULT_POINT_DETAIL(self, "partition.append_durable", &appended);
    auto& st = self->state;
    st.durable_end = std::max(st.durable_end, last + 1);
    if (on_durable)
      on_durable->first.deliver(std::move(on_durable->second));
    advance_high_watermark(self);
  });
}

// The producer-state checks and the append of one produce (docs/producer-state.md §Append).
void produce(partition_ptr self, checked_produce& req, caf::response_promise rp) {
  auto& st = self->state;
  auto d = st.core->validate_produce(req.info);
  if (!d.ok()) {
    req.timer.observe();
    rp.deliver(
      produce_response{d.error().code(), d.error().message(), -1, st.core->log_start_offset()});
    return;
  }
  produce_response reply{error_code::none, {}, d->base_offset, st.core->log_start_offset()};
  if (!d->duplicate) {
    append_and_reply(self, std::move(req.records), req.info, reply, true, rp, req.acks, req.timer);
    return;
  }
  // A duplicate is answered with its original's offsets once it is as
  // durable as this request asks.
  if (d->last_offset < (req.acks == -1 ? st.core->high_watermark() : st.durable_end)
      || req.acks == 0) {
    req.timer.observe();
    rp.deliver(reply);
    return;
  }
  // Still on its way to disk: answer with the original's durability.
  auto pos = std::find_if(st.waiters.begin(), st.waiters.end(),
                          [&](auto& w) { return w.offset > d->last_offset; });
  st.waiters.insert(pos, {d->last_offset, rp, caf::make_message(reply), req.timer});
}

void verify_next(partition_ptr self, producer_id pid);

// Handles the held produces of `pid` in arrival order: those that need no
// verification (any more) go straight to produce(), the first that does
// is sent to the coordinator and the rest waits behind it, so a producer's
// batches are appended in the order they came.
void drain_held(partition_ptr self, producer_id pid) {
  auto& st = self->state;
  auto i = st.held.find(pid);
  while (i != st.held.end() && !i->second.empty()) {
    auto& front = i->second.front();
    if (st.core->needs_verification(front.req.info)) {
      verify_next(self, pid);
      return;
    }
    auto h = std::move(front);
    i->second.pop_front();
    produce(self, h.req, h.rp);
  }
  if (i != st.held.end())
    st.held.erase(i);
}

void verify_next(partition_ptr self, producer_id pid) {
  auto& st = self->state;
  auto& front = st.held[pid].front();
  auto& b = front.req.info;
  verify_in_transaction(self, *st.ctx, api_kind::produce, front.req.transactional_id, b.pid,
                        b.epoch, st.core->tp(), [self, pid](error_code e, std::string msg) {
                          auto& st = self->state;
                          auto i = st.held.find(pid);
                          if (i == st.held.end() || i->second.empty())
                            return;
                          auto h = std::move(i->second.front());
                          i->second.pop_front();
                          if (e == error_code::none) {
                            produce(self, h.req, h.rp);
                          } else {
                            h.req.timer.observe();
                            h.rp.deliver(produce_response{e, std::move(msg), -1,
                                                          st.core->log_start_offset()});
                          }
                          drain_held(self, pid);
                        });
}

// Stored bytes that do not read back: the leader stays down (its
// supervisor answers KAFKA_STORAGE_ERROR naming it, stop_on_storage_faults).
[[noreturn]] void storage_failure(const topic_partition&, const std::string& what) {
  throw storage_read_error(what);
}

// Rebuilds the core from storage: the newest producer-state snapshot, the
// aborted-index entries below it, then the log after it (headers only;
// a control batch's one record for its marker). Throws storage_read_error
// on anything unreadable.
void load(partition_ptr self, const topic_partition& tp) {
  auto& st = self->state;
  auto& store = *st.ctx->store;
  st.cache.capacity = static_cast<size_t>(st.ctx->config.log_tail_cache_bytes);
  int64_t from = 0;
  if (auto snap = store.last(keys::producer_snapshot_prefix(tp))) {
    auto s = snapshot_codec::decode(snap->second);
    if (!s.ok())
      storage_failure(tp, "snapshot " + std::to_string(keys::offset_of(snap->first)) + ": "
                            + s.error().message());
    std::vector<aborted_txn_entry> aborted;
    store.scan(keys::aborted_txn_prefix(tp), [&](const std::string& key, const std::string& value) {
      if (keys::offset_of(key) >= s->offset)
        return false; // the replay below adds these again
      auto e = snapshot_codec::decode_aborted(value);
      if (!e.ok())
        storage_failure(tp, "aborted-index key " + std::to_string(keys::offset_of(key)) + ": "
                              + e.error().message());
      aborted.push_back(*e);
      return true;
    });
    from = s->offset;
    st.core->restore(*s, std::move(aborted));
    st.snapshot_key = snap->first;
    st.snapshot_offset = s->offset;
    st.snapshot_position = s->log_end_position;
  }
  store.scan_from_floor(keys::log_prefix(tp), keys::log_entry(tp, from),
                        [&](std::string_view key, std::string_view value) {
    auto offset = keys::offset_of(key);
    if (offset < from)
      return true; // the batch before the snapshot's offset
    auto h = v2::read_header(value);
    if (!h.ok())
      storage_failure(tp, "stored batch " + std::to_string(offset) + ": " + h.error().message());
    if (!v2::crc_matches(value, *h))
      storage_failure(tp, "stored batch " + std::to_string(offset) + ": CRC-32C mismatch");
    if (h->base_offset != offset)
      storage_failure(tp, "stored batch under key " + std::to_string(offset) + " has base offset "
                            + std::to_string(h->base_offset));
    if (auto r = st.core->replay(v2::info_of(*h, value)); !r.ok())
      storage_failure(tp, r.message());
    st.bytes_since_snapshot += static_cast<int64_t>(value.size());
    st.cache.add(h->base_offset, std::string(value));
    return true;
  });
  if (auto e = store.get(keys::leader_epochs(tp))) {
    auto entries = snapshot_codec::decode_epochs(*e);
    if (!entries.ok())
      storage_failure(tp, entries.error().message());
    auto epochs = leader_epoch_cache::from_entries(std::move(entries).value());
    if (!epochs.ok())
      storage_failure(tp, epochs.error().message());
    st.epochs = std::move(epochs).value();
    if (!st.epochs.empty())
      st.leader_epoch = st.epochs.latest_epoch();
  }
  if (auto c = store.get(keys::cleaner_checkpoint(tp))) {
    auto cp = decode_cleaner_checkpoint(*c);
    if (!cp.ok())
      storage_failure(tp, cp.error().message());
    st.compaction.checkpoint = *cp;
  }
  std::optional<std::pair<int64_t, int64_t>> log_start;
  if (auto start = store.get(keys::log_start(tp))) {
    auto ls = snapshot_codec::decode_log_start(*start);
    if (!ls.ok())
      storage_failure(tp, ls.error().message());
    log_start = *ls;
  }
  // One replica: everything durable is committed. Replicated: the log end
  // may hold batches no follower has (appended before a crash, or as a
  // follower of a leader that lost them), so the partition restarts at its
  // high-watermark checkpoint (or its log start, which only ever moved
  // below the HW) and the HW moves on only as followers fetch (Kafka's
  // replication-offset-checkpoint): a retried produce of such a batch
  // waits for the followers before it is acknowledged.
  int64_t hw = st.core->log_end_offset();
  auto assigned = st.ctx->directory->assigned_replica(tp);
  st.has_followers = assigned && assigned->replicas.size() > 1;
  if (st.has_followers) {
    hw = log_start ? log_start->first : st.core->log_start_offset();
    if (auto v = store.get(keys::high_watermark(tp))) {
      auto cp = codec::decode_int64(*v);
      if (!cp.ok())
        storage_failure(tp, "high-watermark checkpoint: " + cp.error().message());
      hw = std::max(hw, *cp);
    }
  }
  st.core->load_high_watermark(hw);
  if (log_start)
    st.core->apply_log_start({log_start->first, log_start->second, {}});
}

// Persists and applies a move of the log start (retention, DeleteRecords):
// the new start and, in the same write, the deletion of every batch that
// lies wholly below both it and the newest snapshot (the batches after the
// snapshot are what a restart replays) and of the aborted-index entries
// that end below it. With nothing in flight and the snapshot below the new
// start, a new snapshot at the log end goes into the same write, so the
// batches below the start can all go. `done` runs once it is durable.
void move_log_start(partition_ptr self, const log_start_move& m, std::function<void(status)> done) {
  auto& st = self->state;
  auto& tp = st.core->tp();
  leveldb::WriteBatch wb;
  wb.Put(keys::log_start(tp), snapshot_codec::encode_log_start(m.log_start_offset,
                                                                m.log_start_position));
  for (auto off : m.dropped_aborted)
    wb.Delete(keys::aborted_txn(tp, off));
  if (st.snapshot_offset < m.log_start_offset
      && st.core->high_watermark() == st.core->log_end_offset()) {
    auto snap = st.core->snapshot();
    snap.log_start_offset = m.log_start_offset;
    snap.log_start_position = m.log_start_position;
    add_snapshot(self, wb, std::move(snap));
  }
  int64_t keep_from = std::min(m.log_start_offset, st.snapshot_offset);
  st.ctx->store->scan(keys::log_prefix(tp), [&](const std::string& key, const std::string& value) {
    auto h = v2::read_header(value);
    if (!h.ok() || h->last_offset() >= keep_from)
      return false;
    wb.Delete(key);
    return true;
  });
  st.core->apply_log_start(m);
  report_metrics(self);
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
               [done = std::move(done)](const status& s) { done(s); });
}

// Becomes leader at the next leader epoch: the checkpoint gets an entry
// (epoch, log end offset) and batches appended from now on carry the
// epoch. The entry is written before any of them, so it is durable when
// they are; `done` runs once it is.
//
// In cluster mode the epoch is the controller's (LeaderAndIsr): greater
// than the last one here, it starts as above; equal (the partition or its
// coordinator restarted under the same leadership), the partition leads on
// at it, once the writes queued before are durable; smaller, it does not
// lead (FENCED_LEADER_EPOCH).
// The ISR check of a leader with followers, every replica.lag.time.max.ms
// / 2 (Kafka's isr-expiration task); a partition of one replica has none.
void arm_isr_timer(partition_ptr self) {
  auto& st = self->state;
  if (st.isr_timer_armed)
    return;
  st.isr_timer_armed = true;
  self->delayed_send(self,
                     std::chrono::milliseconds(
                       std::max<int64_t>(1, st.ctx->config.replica_lag_time_max_ms / 2)),
                     isr_expiration_tick{});
}

void propose_isr(partition_ptr self, const replication::isr_proposal& p);

// Leading from now on at st.leader_epoch (Kafka's Partition.makeLeader):
// in cluster mode with the controller's replicas and ISR, every follower's
// position unknown until it fetches. `restarted`: at the leader epoch it
// led at before (the actor restarted under the same leadership), when the
// ISR known here may be older than the controller's until it confirms it.
void start_leading(partition_ptr self, bool restarted = false) {
  auto& st = self->state;
  st.following = false;
  st.follow_leader = -1;
  st.follow_epoch = -1;
  st.replication.reset();
  if (!st.ctx->cluster_mode)
    return;
  auto a = st.ctx->directory->assigned_replica(st.core->tp());
  if (!a)
    return;
  auto start = st.epochs.latest();
  auto start_offset = start ? start->start_offset : st.core->log_end_offset();
  // Restarted: its HW starts at the checkpoint, below records that may be
  // committed; a follower joins only once it holds everything this replica
  // has (as a new leader epoch's start offset demands of it).
  if (restarted)
    start_offset = std::max(start_offset, st.core->log_end_offset());
  st.replication.emplace(st.ctx->node_id, st.leader_epoch, a->partition_epoch, a->replicas, a->isr,
                         start_offset, st.ctx->clock_ms(), st.ctx->config.replica_lag_time_max_ms);
  std::optional<replication::isr_proposal> confirm;
  if (a->replicas.size() > 1) {
    arm_isr_timer(self);
    if (restarted)
      confirm = st.replication->start_unconfirmed();
  }
  // Kafka's makeLeader ends with maybeIncrementLeaderHW: the ISR may be
  // down to this replica alone (the controller removed dead followers),
  // and no follower fetch may ever come to move the HW and release the
  // writes waiting for it.
  advance_high_watermark(self);
  if (confirm)
    propose_isr(self, *confirm);
}

void elect(partition_ptr self, std::function<void(const status&)> done) {
  auto& st = self->state;
  auto last = st.epochs.latest_epoch();
  std::optional<int32_t> assigned;
  if (st.ctx->cluster_mode) {
    auto a = st.ctx->directory->assigned_replica(st.core->tp());
    if (a && a->leader != st.ctx->node_id) {
      done(status{error_code::not_leader_or_follower,
                  "partition " + to_string(st.core->tp()) + " is led by node "
                    + std::to_string(a->leader) + " at leader epoch "
                    + std::to_string(a->leader_epoch)});
      return;
    }
    assigned = st.ctx->directory->assigned_leader_epoch(st.core->tp());
    if (!assigned || *assigned < last) {
      done(status{error_code::fenced_leader_epoch,
                  "partition " + to_string(st.core->tp()) + ": the controller's leader epoch "
                    + (assigned ? std::to_string(*assigned) : std::string("(none)"))
                    + " is below " + std::to_string(last) + ", the last one of its log"});
      return;
    }
    if (*assigned == last) {
      st.leader_epoch = last;
      start_leading(self, true);
      st.dq.submit(caf::actor_cast<caf::actor>(self), leveldb::WriteBatch{},
                   [done = std::move(done)](const status& s) { done(s); });
      return;
    }
  }
  st.leader_epoch = assigned ? *assigned : last + 1;
  // An epoch in which nothing was written is superseded (Kafka's
  // LeaderEpochFileCache.assign), so the checkpoint holds only epochs with
  // data, plus the current one.
  auto leo = st.core->log_end_offset();
  st.epochs.assign(st.leader_epoch, leo);
  start_leading(self);
  leveldb::WriteBatch wb;
  wb.Put(keys::leader_epochs(st.core->tp()), snapshot_codec::encode_epochs(st.epochs.entries()));
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
               [self, leo, done = std::move(done)](const status& s) {
                 auto& st = self->state;
                 if (!s.ok())
                   self->quit(storage_exit(storage_fault::write_failed,
                                           "partition " + to_string(st.core->tp())
                                             + ": " + s.message()));
                 else // Kafka's Partition.makeLeader line
                   st.ctx->emit(is_internal_topic(st.core->tp().topic) ? node_event_level::debug
                                                                       : node_event_level::info,
                                "leader_elected",
                                "[Partition " + to_string(st.core->tp()) + " broker="
                                  + std::to_string(st.ctx->node_id) + "] Leader "
                                  + to_string(st.core->tp()) + " starts at leader epoch "
                                  + std::to_string(st.leader_epoch) + " from offset "
                                  + std::to_string(leo));
                 done(s);
               });
}

// -- replication (docs/replication.md) ------------------------------------------

status not_leader(partition_ptr self) {
  auto& st = self->state;
  return {error_code::not_leader_or_follower,
          "this node does not lead " + to_string(st.core->tp())
            + (st.following ? " (it follows node " + std::to_string(st.follow_leader)
                                + " at leader epoch " + std::to_string(st.follow_epoch) + ")"
                            : std::string())};
}

// FENCED_LEADER_EPOCH unless the replica follows at `leader_epoch` (its
// fetcher's request is of an earlier following).
std::optional<replica_position> not_following(partition_ptr self, int32_t leader_epoch) {
  auto& st = self->state;
  if (st.following && leader_epoch == st.follow_epoch)
    return std::nullopt;
  return replica_position{error_code::fenced_leader_epoch,
                          "partition " + to_string(st.core->tp()) + " does not follow leader epoch "
                            + std::to_string(leader_epoch)};
}

replica_position position_of(partition_ptr self) {
  auto& st = self->state;
  return {error_code::none, {}, st.durable_end, st.epochs.latest_epoch(),
          st.core->high_watermark(), true};
}

// A follower fetch as the leader answers it now: the checks of
// leader_replication::check_fetch, then the batches from the fetch offset
// up to the synced log end (at least one, then up to max_bytes).
replica_fetch_response replica_fetch_now(partition_ptr self, const replica_fetch_request& req) {
  auto& st = self->state;
  replica_fetch_response r;
  r.high_watermark = st.core->high_watermark();
  r.log_start_offset = st.core->log_start_offset();
  r.log_end_offset = st.durable_end;
  if (!st.replication || st.following)
    return error_response<replica_fetch_response>(not_leader(self));
  auto check = st.replication->check_fetch({req.follower, req.fetch_offset, req.last_fetched_epoch,
                                            req.current_leader_epoch},
                                           st.epochs, st.durable_end);
  if (!check.ok()) {
    r.error = check.error().code();
    r.message = check.error().message();
    return r;
  }
  if (*check) {
    r.diverging = true;
    r.diverging_epoch = (*check)->epoch;
    r.diverging_end_offset = (*check)->end_offset;
    return r;
  }
  if (req.fetch_offset >= st.durable_end)
    return r;
  auto read = reader_of(self)(req.fetch_offset, [&](const v2::batch_header& h, std::string_view b) {
    if (h.base_offset >= st.durable_end)
      return false;
    if (h.last_offset() < req.fetch_offset)
      return true;
    if (!r.records.empty() && r.records.size() + b.size() > static_cast<size_t>(req.max_bytes))
      return false;
    r.records.append(b.data(), b.size());
    return true;
  });
  if (!read.ok()) {
    r.records.clear();
    r.error = read.code();
    r.message = read.message();
  }
  return r;
}

std::string node_list(const std::vector<int32_t>& ids) {
  std::string out;
  for (auto id : ids)
    out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// The ISR the controller wrote for this partition, as this leader learned
// it from the AlterIsr answer, goes into the node's directory at once: a
// restart of the partition by its supervisor starts from the directory,
// whose copy otherwise waits for the controller's UpdateMetadata. Taking
// the older, smaller ISR there would let the restarted leader move its HW
// without a member the controller may elect next (an acknowledged write
// lost, multi-node seed 476).
void remember_isr(partition_ptr self, const std::vector<int32_t>& isr, int32_t partition_epoch) {
  auto& st = self->state;
  auto a = st.ctx->directory->assigned_replica(st.core->tp());
  if (!a || a->leader_epoch != st.leader_epoch || a->partition_epoch >= partition_epoch)
    return;
  a->isr = isr;
  a->partition_epoch = partition_epoch;
  st.ctx->directory->assign_replica(st.core->tp(), *a);
  report_metrics(self);
}

// Sends an ISR change to the controller through the node's broker (Kafka's
// AlterIsr, KIP-497): committed, the ISR is the written one and the HW may
// move; refused, the committed ISR stays (a newer one at the same leader
// epoch replaces it) and a later check may propose again.
void propose_isr(partition_ptr self, const replication::isr_proposal& p) {
  auto& st = self->state;
  auto broker = st.ctx->directory->broker();
  if (!broker) {
    st.replication->isr_rejected();
    return;
  }
  alter_isr_request req{st.ctx->node_id, -1,          st.core->tp(), p.leader_epoch,
                        p.isr,           p.partition_epoch, false};
  auto epoch = p.leader_epoch;
  self->request(caf::actor_cast<broker_actor>(broker),
                std::chrono::milliseconds(st.ctx->config.request_timeout_ms), std::move(req))
    .then(
      [self, epoch](alter_isr_response& r) {
        auto& st = self->state;
        if (!st.replication || st.replication->leader_epoch() != epoch)
          return; // led at another epoch by now
        if (r.error == error_code::none) {
          st.replication->isr_committed(r.isr, r.partition_epoch);
          remember_isr(self, r.isr, r.partition_epoch);
          // Kafka's Partition line after an AlterIsr.
          st.ctx->emit(node_event_level::info, "isr_updated",
                       "[Partition " + to_string(st.core->tp()) + " broker="
                         + std::to_string(st.ctx->node_id) + "] ISR updated to "
                         + node_list(r.isr) + " and version updated to "
                         + std::to_string(r.partition_epoch));
          advance_high_watermark(self);
          return;
        }
        // INVALID_UPDATE_VERSION carries the controller's state at this
        // leader epoch; so does any refusal of an unconfirmed ISR, which
        // that state then confirms (a stale ISR here may name a node the
        // controller removed, refused as ineligible).
        if (r.leader_epoch == epoch
            && (r.error == error_code::invalid_update_version
                || (st.replication->unconfirmed() && r.partition_epoch >= 0))) {
          st.replication->isr_replaced(r.isr, r.partition_epoch);
          remember_isr(self, r.isr, r.partition_epoch);
          advance_high_watermark(self);
          return;
        }
        if (r.error == error_code::ineligible_replica) {
          // Its node left (a controlled shutdown, an expired session): it
          // no longer holds the HW back while its last fetch is recent.
          st.replication->isr_refused_ineligible(st.ctx->clock_ms(),
                                                 st.ctx->config.replica_fetch_backoff_ms);
          advance_high_watermark(self);
        } else {
          st.replication->isr_rejected();
          if (st.replication->pending()) // an unconfirmed ISR: asked again
            self->delayed_send(self,
                               std::chrono::milliseconds(st.ctx->config.replica_fetch_backoff_ms),
                               alter_isr_retry{epoch});
        }
        st.ctx->emit(node_event_level::debug, "isr_refused",
                     "[Partition " + to_string(st.core->tp()) + " broker="
                       + std::to_string(st.ctx->node_id) + "] AlterIsr refused: "
                       + to_string(r.error) + ": " + r.message);
      },
      [self, epoch](caf::error&) {
        // No answer: the controller may have written it or not. The
        // change stays in flight (the HW keeps counting the maximal ISR)
        // and is sent again; the controller answers the same ISR ok, or
        // INVALID_UPDATE_VERSION with the state it holds (Kafka's
        // AlterPartitionManager retries the same way).
        auto& st = self->state;
        if (!st.replication || st.replication->leader_epoch() != epoch
            || !st.replication->pending())
          return;
        self->delayed_send(self,
                           std::chrono::milliseconds(st.ctx->config.replica_fetch_backoff_ms),
                           alter_isr_retry{epoch});
      });
}

// Rebuilds the core from storage as at the start (after a truncation).
void reload(partition_ptr self) {
  auto& st = self->state;
  auto tp = st.core->tp();
  st.cache.clear();
  st.snapshot_key.reset();
  st.snapshot_offset = 0;
  st.snapshot_position = 0;
  st.bytes_since_snapshot = 0;
  st.compaction.round.reset();
  st.core = std::make_unique<partition_core>(tp);
  load(self, tp);
  st.durable_end = st.core->log_end_offset();
}

// Truncates the log to end at `offset` (Kafka's UnifiedLog.truncateTo): a
// batch that holds `offset` goes whole, and with the batches the
// producer-state snapshots above the new end, the aborted-index entries of
// markers at or above it and the epochs starting at or above it, in one
// write; the core is then rebuilt from what stays (Kafka reloads the
// producer state from the newest snapshot below the point). `done` runs
// once it is durable.
void truncate_log(partition_ptr self, int64_t offset, std::function<void(const status&)> done) {
  auto& st = self->state;
  auto tp = st.core->tp();
  auto& store = *st.ctx->store;
  leveldb::WriteBatch wb;
  int64_t new_end = std::min(offset, st.core->log_end_offset());
  bool cut = false;
  store.scan_from_floor(keys::log_prefix(tp), keys::log_entry(tp, offset),
                        [&](std::string_view key, std::string_view value) {
    auto h = v2::read_header(value);
    if (!h.ok())
      throw storage_read_error("partition " + to_string(tp) + ": stored batch "
                               + std::to_string(keys::offset_of(key)) + ": "
                               + h.error().message());
    if (h->last_offset() >= offset) {
      wb.Delete(std::string(key));
      new_end = std::min(new_end, h->base_offset);
      cut = true;
    }
    return true;
  });
  if (!cut && st.epochs.latest() && st.epochs.latest()->start_offset < new_end) {
    // Nothing to remove and no epoch to drop.
    st.dq.submit(caf::actor_cast<caf::actor>(self), leveldb::WriteBatch{},
                 [done = std::move(done)](const status& s) { done(s); });
    return;
  }
  store.scan(keys::producer_snapshot_prefix(tp), [&](const std::string& key, const std::string&) {
    if (keys::offset_of(key) > new_end)
      wb.Delete(key);
    return true;
  });
  store.scan(keys::aborted_txn_prefix(tp), [&](const std::string& key, const std::string&) {
    if (keys::offset_of(key) >= new_end)
      wb.Delete(key);
    return true;
  });
  auto before = st.core->log_end_offset();
  st.epochs.truncate_from_end(new_end);
  wb.Put(keys::leader_epochs(tp), snapshot_codec::encode_epochs(st.epochs.entries()));
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
               [self, before, new_end, cut, done = std::move(done)](const status& s) {
                 if (!s.ok()) {
                   done(s);
                   self->quit(storage_exit(storage_fault::write_failed,
                                           "partition " + to_string(self->state.core->tp())
                                             + ": " + s.message()));
                   return;
                 }
                 if (cut) {
                   CAFTX_FAULT_POINT(self, "partition.truncated");
                   reload(self);
                   // Kafka's UnifiedLog.truncateTo line.
                   self->state.ctx->emit(node_event_level::info, "log_truncated",
                                         "[Log partition=" + to_string(self->state.core->tp())
                                           + "] Truncating to offset " + std::to_string(new_end)
                                           + " (log end was " + std::to_string(before) + ")");
                 }
                 done(s);
               });
}

// Appends batches fetched from the leader (Kafka's appendRecordsToFollower):
// every header is checked before anything is applied, then the batches go
// through partition_core::append_replica, the epoch cache takes every newer
// partition leader epoch, and all of it is synced in one write before the
// follower reports the new position.
void append_as_follower(partition_ptr self, const replica_append_request& req,
                        caf::typed_response_promise<replica_position> rp) {
  auto& st = self->state;
  auto& tp = st.core->tp();
  std::vector<std::pair<v2::batch_header, std::string_view>> batches;
  std::string_view rest = req.records;
  int64_t end = st.core->log_end_offset();
  while (!rest.empty()) {
    auto h = v2::read_header(rest);
    if (!h.ok() || static_cast<size_t>(h->size()) > rest.size()
        || !v2::crc_matches(rest.substr(0, h->size()), *h) || h->base_offset < end
        || h->record_count <= 0) {
      rp.deliver(replica_position{error_code::corrupt_message,
                                  "a batch fetched for " + to_string(tp) + " at offset "
                                    + std::to_string(h.ok() ? h->base_offset : -1)
                                    + " does not decode or does not follow the log end "
                                    + std::to_string(end) + "; nothing of it is appended"});
      return;
    }
    auto bytes = rest.substr(0, h->size());
    end = h->last_offset() + 1;
    batches.emplace_back(*h, bytes);
    rest.remove_prefix(bytes.size());
  }
  leveldb::WriteBatch wb;
  if (!batches.empty())
    if (auto before = snapshot_before(self, req.records.size()))
      add_snapshot(self, wb, std::move(*before));
  bool epochs_changed = false;
  for (auto& [h, bytes] : batches) {
    auto info = v2::info_of(h, bytes);
    info.size_bytes = static_cast<int32_t>(bytes.size());
    auto r = st.core->append_replica(info);
    if (!r.ok())
      throw storage_read_error(r.error().message()); // checked above: a bug, not data
    if (h.partition_leader_epoch > st.epochs.latest_epoch() && h.partition_leader_epoch >= 0)
      epochs_changed |= st.epochs.assign(h.partition_leader_epoch, h.base_offset);
    wb.Put(keys::log_entry(tp, h.base_offset), leveldb::Slice(bytes.data(), bytes.size()));
    if (r->aborted)
      wb.Put(keys::aborted_txn(tp, r->aborted->last_offset), snapshot_codec::encode(*r->aborted));
    st.bytes_since_snapshot += static_cast<int64_t>(bytes.size());
    st.cache.add(h.base_offset, std::string(bytes));
  }
  if (epochs_changed)
    wb.Put(keys::leader_epochs(tp), snapshot_codec::encode_epochs(st.epochs.entries()));
  auto leader_hw = req.leader_high_watermark;
  if (!batches.empty())
    wb.Put(keys::high_watermark(tp),
           codec::encode_int64(replication::follower_high_watermark(leader_hw,
                                                                     st.core->log_end_offset())));
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
               [self, rp, leader_hw](const status& s) mutable {
                 auto& st = self->state;
                 if (!s.ok()) {
                   rp.deliver(replica_position{s.code(), s.message()});
                   self->quit(storage_exit(storage_fault::write_failed,
                                           "partition " + to_string(st.core->tp()) + ": "
                                             + s.message()));
                   return;
                 }
                 st.durable_end = st.core->log_end_offset();
                 st.core->set_high_watermark(
                   replication::follower_high_watermark(leader_hw, st.durable_end));
                 CAFTX_FAULT_POINT(self, "partition.follower_append_durable");
                 rp.deliver(position_of(self));
               });
}

// -- log compaction (docs/compaction.md) ------------------------------------------
//
// Every log.cleaner.backoff.ms a compacted partition checks its dirty
// ratio; a round then goes caftx.log.cleaner.step.batches batches per
// cleaner_step message: first the key map over the dirty part, then the
// rewrite from the log start, each step's rewrites and deletions in one
// durable write. The round ends at the newest producer-state snapshot
// (what stands for Kafka's active segment): batches above it are what a
// restart replays, so they stay as appended.

void cleaner_step_now(partition_ptr self);

void clean_write_failed(partition_ptr self, const status& s) {
  self->quit(storage_exit(storage_fault::write_failed,
                          "partition " + to_string(self->state.core->tp()) + ": " + s.message()));
}

void start_cleaning_round(partition_ptr self) {
  auto& st = self->state;
  auto& c = st.compaction;
  auto& core = *st.core;
  int64_t bound = std::min({core.last_stable_offset(), core.high_watermark(), st.snapshot_offset});
  int64_t dirty_position = c.checkpoint.clean_offset >= core.log_start_offset()
                             ? c.checkpoint.clean_position
                             : core.log_start_position();
  c.round = std::make_unique<cleaning_round>(c.policy, c.checkpoint, core.log_start_offset(),
                                             dirty_position, bound, st.ctx->clock_ms(),
                                             core.aborted_index());
  self->send(self, cleaner_step{});
}

// The cleaner's periodic check (Kafka's LogCleanerManager.grabFilthiestCompactedLog
// for one log). A log that only the part above the newest snapshot makes
// dirty gets a snapshot at its end first (Kafka rolls its active segment),
// when nothing is in flight.
void cleaner_tick_now(partition_ptr self) {
  auto& st = self->state;
  auto& c = st.compaction;
  if (c.round || c.writing)
    return;
  auto& core = *st.core;
  auto now = st.ctx->clock_ms();
  auto ratio_below = [&](int64_t end, int64_t end_position) {
    return dirty_ratio(c.checkpoint, core.log_start_offset(), core.log_start_position(), end,
                       end_position);
  };
  if (should_clean(c.policy, ratio_below(st.snapshot_offset, st.snapshot_position), c.checkpoint,
                   now)) {
    start_cleaning_round(self);
    return;
  }
  bool idle = core.high_watermark() == core.log_end_offset();
  if (!idle || st.snapshot_offset == core.log_end_offset()
      || !should_clean(c.policy, ratio_below(core.log_end_offset(), core.log_end_position()),
                       cleaner_checkpoint{c.checkpoint.clean_offset, c.checkpoint.clean_position, -1},
                       now))
    return;
  leveldb::WriteBatch wb;
  add_snapshot(self, wb, core.snapshot());
  c.writing = true;
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb), [self](const status& s) {
    if (!s.ok())
      return clean_write_failed(self, s);
    self->state.compaction.writing = false;
    start_cleaning_round(self);
  });
}

// One step of the round: a part of the map, or the next chunk of
// rewrites written durably. The log start position moves with the write
// (as move_log_start's does), so every write of `logstart/` carries the
// counters in the order the durable queue applies them; the tail cache
// follows once the write is durable. A crash leaves each step's write
// whole and the checkpoint of the last finished round: the next start
// cleans again from there.
void cleaner_step_now(partition_ptr self) {
  auto& st = self->state;
  auto& c = st.compaction;
  if (!c.round || c.writing)
    return;
  auto& core = *st.core;
  auto& tp = core.tp();
  auto step = static_cast<size_t>(st.ctx->config.log_cleaner_step_batches);
  auto read = reader_of(self);
  auto mapped = c.round->build_map(read, step);
  if (!mapped.ok())
    throw storage_read_error("partition " + to_string(tp) + ": " + mapped.error().message());
  if (!*mapped || c.round->end() < 0) {
    self->send(self, cleaner_step{});
    return;
  }
  auto chunk = c.round->clean(read, core.log_start_offset(), core.producers(), step);
  if (!chunk.ok())
    throw storage_read_error("partition " + to_string(tp) + ": " + chunk.error().message());
  leveldb::WriteBatch wb;
  for (auto& r : chunk->rewrites) {
    if (r.bytes)
      wb.Put(keys::log_entry(tp, r.base_offset), *r.bytes);
    else
      wb.Delete(keys::log_entry(tp, r.base_offset));
  }
  for (auto off : chunk->dropped_aborted)
    wb.Delete(keys::aborted_txn(tp, off));
  if (chunk->bytes_removed != 0)
    wb.Put(keys::log_start(tp),
           snapshot_codec::encode_log_start(core.log_start_offset(),
                                            core.log_start_position() + chunk->bytes_removed));
  if (chunk->done)
    wb.Put(keys::cleaner_checkpoint(tp), encode(c.round->checkpoint()));
  if (chunk->rewrites.empty() && chunk->dropped_aborted.empty() && !chunk->done) {
    self->send(self, cleaner_step{}); // nothing to change in these batches
    return;
  }
  core.apply_cleaned(chunk->bytes_removed, chunk->dropped_aborted);
  c.writing = true;
  st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
               [self, ch = std::move(chunk).value()](const status& s) {
                 if (!s.ok())
                   return clean_write_failed(self, s);
                 auto& st = self->state;
                 auto& c = st.compaction;
                 c.writing = false;
                 for (auto& r : ch.rewrites)
                   st.cache.replace(r.base_offset, r.bytes);
                 if (!ch.done) {
                   self->send(self, cleaner_step{});
                   return;
                 }
                 c.checkpoint = c.round->checkpoint();
                 c.round.reset();
               });
}

partition_impl_actor::behavior_type partition_fn(partition_ptr self, std::shared_ptr<const node_context> ctx,
                           topic_partition tp, topic_config topic) {
  auto& st = self->state;
  st.ctx = ctx;
  st.retention = {topic.retention_ms, topic.retention_bytes};
  st.max_message_bytes = topic.max_message_bytes;
  st.min_insync_replicas = topic.min_insync_replicas;
  st.compaction.compact = topic.cleanup_compact;
  st.compaction.remove_old = topic.cleanup_delete;
  st.compaction.policy = {topic.delete_retention_ms, topic.min_cleanable_dirty_ratio,
                          topic.min_compaction_lag_ms,
                          max_map_keys(ctx->config.log_cleaner_dedupe_buffer_size)};
  stop_on_storage_faults(self, "partition " + to_string(tp));
  st.dq = durable_queue{ctx->store};
  st.core = std::make_unique<partition_core>(tp);
  load(self, tp);
  st.durable_end = st.core->log_end_offset();
  // A user partition leads from its start, at the next leader epoch (one
  // node: every start is an election); an internal one when its
  // coordinator starts (become_leader_request).
  if (!is_internal_topic(tp.topic))
    elect(self, [self](const status& s) {
      if (!s.ok() && s.code() == error_code::fenced_leader_epoch)
        self->state.ctx->emit(node_event_level::error, "leader_refused", s.message());
    });
  // A replica another node leads waits for its broker's become_follower.
  if (auto a = ctx->directory->assigned_replica(tp); a && a->leader != ctx->node_id) {
    st.following = true;
    st.follow_leader = a->leader;
    st.follow_epoch = a->leader_epoch;
  }
  // As Kafka at load: producers that expired while the node was down go.
  auto expiration_ms = ctx->config.producer_id_expiration_ms;
  st.core->remove_expired_producers(ctx->clock_ms(), expiration_ms);
  auto check_interval = std::chrono::milliseconds(ctx->config.producer_id_expiration_check_interval_ms);
  self->delayed_send(self, check_interval, producer_expiration_tick{});
  auto retention_interval = std::chrono::milliseconds(ctx->config.log_retention_check_interval_ms);
  self->delayed_send(self, retention_interval, retention_tick{});
  auto cleaner_backoff = std::chrono::milliseconds(ctx->config.log_cleaner_backoff_ms);
  bool cleaner_on = topic.cleanup_compact && ctx->config.log_cleaner_enable;
  if (cleaner_on)
    self->delayed_send(self, cleaner_backoff, cleaner_tick{});
  return {
    [=](const cleaner_tick&) {
      self->delayed_send(self, cleaner_backoff, cleaner_tick{});
      cleaner_tick_now(self);
    },
    [=](const cleaner_step&) { cleaner_step_now(self); },
    [=](const retention_tick&) {
      auto& st = self->state;
      self->delayed_send(self, retention_interval, retention_tick{});
      if (!st.compaction.remove_old)
        return; // compact only: nothing is removed for its age or size
      auto m = st.core->plan_retention(reader_of(self), st.retention, st.ctx->clock_ms());
      if (!m.ok())
        throw storage_read_error(m.error().message());
      if (*m)
        move_log_start(self, **m, [self](const status& s) {
          if (!s.ok())
            self->quit(storage_exit(storage_fault::write_failed,
                                    "partition " + to_string(self->state.core->tp()) + ": "
                                      + s.message()));
        });
    },
    [=](const become_leader_request&) -> caf::result<become_leader_response> {
      auto rp = self->make_response_promise<become_leader_response>();
      elect(self, [self, rp](const status& s) mutable {
        auto& st = self->state;
        if (!s.ok()) {
          rp.deliver(become_leader_response{s.code(), s.message()});
          return;
        }
        // Every append queued before the checkpoint is durable now.
        // The coordinator loads the log to its end as the records become
        // committed: a new leader's records above its HW are the
        // partition's now (the followers truncate to it) and become
        // committed with it (docs/transactions.md §Load).
        // A fresh generation, so the appends of an earlier election (a
        // coordinator incarnation that died) can no longer land.
        static std::atomic<uint64_t> generations{0};
        st.load_generation = ++generations;
        rp.deliver(become_leader_response{error_code::none, {}, st.leader_epoch,
                                          st.core->log_start_offset(), st.durable_end,
                                          st.load_generation});
      });
      return rp;
    },
    [=](const write_snapshot_request&) -> caf::result<txn_response> {
      auto& st = self->state;
      if (st.core->high_watermark() != st.core->log_end_offset()
          || st.snapshot_offset == st.core->log_end_offset())
        return txn_response{}; // writes in flight, or nothing new since the last
      leveldb::WriteBatch wb;
      add_snapshot(self, wb, st.core->snapshot());
      auto rp = self->make_response_promise<txn_response>();
      st.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
                   [rp](const status& s) mutable { rp.deliver(txn_response{s.code(), s.message()}); });
      return rp;
    },
    [=](const delete_records_request& req) -> caf::result<delete_records_response> {
      auto& st = self->state;
      if (req.tp != st.core->tp())
        return delete_records_response{error_code::unknown_topic_or_partition,
                                       "this leader does not host " + to_string(req.tp), -1};
      if (st.following)
        return delete_records_response{error_code::not_leader_or_follower,
                                       not_leader(self).message(), -1};
      if (!st.compaction.remove_old) // Kafka's Partition.deleteRecordsOnLeader
        return delete_records_response{error_code::policy_violation,
                                       "Records of partition " + to_string(req.tp)
                                         + " can not be deleted due to the configured policy "
                                           "(cleanup.policy without delete)",
                                       st.core->log_start_offset()};
      auto m = st.core->plan_delete_records(reader_of(self), req.offset);
      if (!m.ok())
        return delete_records_response{m.error().code(), m.error().message(),
                                       st.core->log_start_offset()};
      if (!*m)
        return delete_records_response{error_code::none, {}, st.core->log_start_offset()};
      auto rp = self->make_response_promise<delete_records_response>();
      auto low = (*m)->log_start_offset;
      move_log_start(self, **m, [self, rp, low](const status& s) mutable {
        if (!s.ok()) {
          rp.deliver(delete_records_response{error_code::kafka_storage_error, s.message(), -1});
          self->quit(storage_exit(storage_fault::write_failed,
                                  "partition " + to_string(self->state.core->tp()) + ": "
                                    + s.message()));
          return;
        }
        rp.deliver(delete_records_response{error_code::none, {}, low});
      });
      return rp;
    },
    [=](const alter_isr_retry& r) {
      auto& st = self->state;
      if (st.replication && st.replication->leader_epoch() == r.leader_epoch
          && st.replication->pending())
        propose_isr(self, *st.replication->pending());
    },
    [=](const isr_expiration_tick&) {
      auto& st = self->state;
      st.isr_timer_armed = false;
      if (!st.replication || st.replication->replicas().size() < 2)
        return; // nothing to shrink; leading with followers arms it again
      arm_isr_timer(self);
      if (auto p = st.replication->maybe_shrink(st.durable_end, st.ctx->clock_ms()))
        propose_isr(self, *p);
    },
    [=](const producer_expiration_tick&) {
      self->state.core->remove_expired_producers(self->state.ctx->clock_ms(), expiration_ms);
      report_metrics(self);
      self->delayed_send(self, check_interval, producer_expiration_tick{});
    },
    [=](storage_done& done) { self->state.dq.complete(done); },
    [=](produce_request& req) -> caf::result<produce_response> {
      auto& st = self->state;
      // A client's Produce, from here to its reply (docs/metrics.md
      // §Requests: one refused before the append is not timed); a
      // coordinator's append is no request.
      auto timer = req.from_coordinator
                     ? metrics::request_timer{}
                     : node_metrics::time_request(st.ctx->metrics, "Produce");
      auto rp = self->make_response_promise();
      if (st.following) {
        auto why = not_leader(self);
        rp.deliver(produce_response{why.code(), why.message(), -1, st.core->log_start_offset()});
        return rp;
      }
      // acks=all with fewer in-sync replicas than min.insync.replicas:
      // nothing is appended (Kafka's Partition.appendRecordsToLeader).
      if (req.acks != -1 && req.acks != 0 && req.acks != 1) {
        rp.deliver(produce_response{error_code::invalid_required_acks,
                                    "acks " + std::to_string(req.acks) + " is not -1, 0 or 1", -1,
                                    st.core->log_start_offset()});
        return rp;
      }
      if (st.replication) {
        auto required = req.acks == -1 ? replication::acks::all
                                       : static_cast<replication::acks>(req.acks);
        if (auto c = st.replication->check_append(required, st.min_insync_replicas);
            !c.ok()) {
          rp.deliver(produce_response{c.code(),
                                      c.message() + " for partition " + to_string(st.core->tp()),
                                      -1, st.core->log_start_offset()});
          return rp;
        }
      }
      // Internal topics take their coordinator's appends only, and only at
      // the leader epoch it was elected with (Kafka's
      // ReplicaManager.appendToLocalLog with internalTopicsAllowed).
      if (is_internal_topic(st.core->tp().topic) && !req.from_coordinator) {
        rp.deliver(produce_response{error_code::invalid_topic_exception,
                                    "cannot append to internal topic " + st.core->tp().topic, -1,
                                    st.core->log_start_offset()});
        return rp;
      }
      if (req.from_coordinator && (req.leader_epoch < 0 || req.leader_epoch != st.leader_epoch)) {
        rp.deliver(produce_response{error_code::fenced_leader_epoch,
                                    "leader epoch " + std::to_string(req.leader_epoch)
                                      + " is not the current " + std::to_string(st.leader_epoch)
                                      + " of " + to_string(st.core->tp()),
                                    -1, st.core->log_start_offset()});
        return rp;
      }
      if (req.from_coordinator && req.load_generation != st.load_generation) {
        rp.deliver(produce_response{error_code::not_coordinator,
                                    "an append of an earlier coordinator election of "
                                      + to_string(st.core->tp()) + " (generation "
                                      + std::to_string(req.load_generation) + ", now "
                                      + std::to_string(st.load_generation) + ")",
                                    -1, st.core->log_start_offset()});
        return rp;
      }
      // A batch above the topic's max.message.bytes (the node's
      // message.max.bytes): MESSAGE_TOO_LARGE, nothing appended (Kafka's
      // UnifiedLog.analyzeAndValidateRecords, RecordTooLargeException).
      if (!req.from_coordinator
          && req.records.size() > static_cast<size_t>(st.max_message_bytes)) {
        rp.deliver(produce_response{error_code::message_too_large,
                                    "The record batch size in the append to "
                                      + to_string(st.core->tp()) + " is "
                                      + std::to_string(req.records.size())
                                      + " bytes which exceeds the maximum configured value of "
                                      + std::to_string(st.max_message_bytes)
                                      + " (max.message.bytes).",
                                    -1, st.core->log_start_offset()});
        return rp;
      }
      // The CRC and the records' framing first (Kafka's LogValidator):
      // CORRUPT_MESSAGE or UNSUPPORTED_COMPRESSION_TYPE, nothing appended.
      auto h = v2::validate(req.records);
      if (!h.ok()) {
        rp.deliver(produce_response{h.error().code(), h.error().message(), -1,
                                    st.core->log_start_offset()});
        return rp;
      }
      if (st.compaction.compact) { // keyless records on a compacted topic (docs/compaction.md)
        if (auto k = check_keys_for_compaction(req.records, *h, st.core->tp()); !k.ok()) {
          rp.deliver(produce_response{k.code(), k.message(), -1, st.core->log_start_offset()});
          return rp;
        }
      }
      checked_produce c{std::move(req.transactional_id), std::move(req.records), {}, req.acks,
                        timer};
      c.info = v2::info_of(*h, c.records);
      auto& b = c.info;
      if (req.from_coordinator) {
        // Kafka's AppendOrigin.COORDINATOR: the coordinator checked the
        // request; no sequence checks, no verification.
        if (auto v = st.core->validate_coordinator_append(b); !v.ok()) {
          rp.deliver(
            produce_response{v.code(), v.message(), -1, st.core->log_start_offset()});
          return rp;
        }
        append_and_reply(self, std::move(c.records), c.info,
                         produce_response{error_code::none, {}, -1, st.core->log_start_offset()},
                         true, rp);
        return rp;
      }
      if (b.is_transactional() && c.transactional_id.empty()) {
        rp.deliver(produce_response{error_code::invalid_request,
                                    "transactional batch without transactional id", -1,
                                    st.core->log_start_offset()});
        return rp;
      }
      auto pid = b.pid;
      bool held = st.held.count(pid) > 0;
      if (!held && !st.core->needs_verification(b)) {
        produce(self, c, rp);
        return rp;
      }
      st.held[pid].push_back({std::move(c), rp});
      if (!held)
        verify_next(self, pid);
      return rp;
    },
    [=](const fetch_request& req) -> caf::result<fetch_response> {
      auto& st = self->state;
      if (st.following)
        return error_response<fetch_response>(not_leader(self));
      // A reader that saw a newer leader epoch than this leader's: a stale
      // leader (KIP-320).
      if (req.last_seen_leader_epoch > st.leader_epoch)
        return error_response<fetch_response>(
          status{error_code::unknown_leader_epoch,
                 "the reader has seen leader epoch " + std::to_string(req.last_seen_leader_epoch)
                   + " of " + to_string(req.tp) + ", this leader is at "
                   + std::to_string(st.leader_epoch)});
      // A coordinator loading under an election this partition no longer
      // knows (its supervisor restarted it since): the coordinator would
      // wait for a high watermark that only a new election moves.
      if (req.load_generation != 0 && req.load_generation != st.load_generation)
        return error_response<fetch_response>(
          status{error_code::not_coordinator,
                 "a load read of an earlier coordinator election of " + to_string(req.tp)
                   + " (generation " + std::to_string(req.load_generation) + ", now "
                   + std::to_string(st.load_generation) + ")"});
      auto resp = fetch_now(self, req);
      if (req.max_wait_ms <= 0 || resp.error != error_code::none || !resp.records.empty())
        return resp;
      // Nothing to return: held until there is (fetch.max.wait.ms).
      auto rp = self->make_response_promise<fetch_response>();
      auto id = st.next_fetch_id++;
      st.fetches.push_back({id, req, rp});
      self->delayed_send(self, std::chrono::milliseconds(req.max_wait_ms), fetch_wait_expired{id});
      return rp;
    },
    [=](const fetch_wait_expired& e) {
      auto& fetches = self->state.fetches;
      for (auto i = fetches.begin(); i != fetches.end(); ++i)
        if (i->id == e.id) {
          i->rp.deliver(fetch_now(self, i->req));
          fetches.erase(i);
          return;
        }
      auto& replica_fetches = self->state.replica_fetches;
      for (auto i = replica_fetches.begin(); i != replica_fetches.end(); ++i)
        if (i->id == e.id) {
          i->rp.deliver(replica_fetch_now(self, i->req));
          replica_fetches.erase(i);
          return;
        }
    },
    [=](const replica_fetch_request& req) -> caf::result<replica_fetch_response> {
      auto& st = self->state;
      auto r = replica_fetch_now(self, req);
      if (r.error != error_code::none || r.diverging)
        return r;
      // The follower holds everything below its fetch offset (it reports
      // only what it synced): its place in the HW and the ISR.
      auto before = st.replication->follower(req.follower);
      bool advanced = before != nullptr && before->log_end_offset < req.fetch_offset;
      st.replication->record_fetch(req.follower, req.fetch_offset, st.durable_end,
                                   st.ctx->clock_ms());
      // Kafka's Partition.updateFollowerFetchState line.
      if (advanced && st.ctx->wants(node_event_level::trace))
        st.ctx->emit(node_event_level::trace, "follower_fetched",
                     "[Partition " + to_string(st.core->tp()) + " broker="
                       + std::to_string(st.ctx->node_id) + "] Recorded replica "
                       + std::to_string(req.follower) + " log end offset (LEO) position "
                       + std::to_string(req.fetch_offset));
      advance_high_watermark(self);
      if (auto p = st.replication->maybe_expand(req.follower, st.core->high_watermark()))
        propose_isr(self, *p);
      r.high_watermark = st.core->high_watermark();
      if (!r.records.empty() || req.max_wait_ms <= 0 || req.high_watermark < r.high_watermark)
        return r;
      auto rp = self->make_response_promise<replica_fetch_response>();
      auto id = st.next_fetch_id++;
      st.replica_fetches.push_back({id, req, rp});
      self->delayed_send(self, std::chrono::milliseconds(req.max_wait_ms), fetch_wait_expired{id});
      return rp;
    },
    [=](const become_follower_request& req) -> caf::result<replica_position> {
      auto& st = self->state;
      // Fenced by leader epoch (Kafka's makeFollower takes only a newer
      // epoch): the request of an earlier LeaderAndIsr can arrive through
      // the fetcher after the partition was made leader at a later one.
      auto current = st.following ? st.follow_epoch : st.leader_epoch;
      if (req.leader_epoch < current || (!st.following && st.replication
                                         && req.leader_epoch == st.leader_epoch))
        return replica_position{error_code::fenced_leader_epoch,
                                "partition " + to_string(st.core->tp()) + " is at leader epoch "
                                  + std::to_string(current) + "; a follow at "
                                  + std::to_string(req.leader_epoch) + " is stale"};
      bool was_leader = !st.following;
      st.following = true;
      st.follow_leader = req.leader;
      st.follow_epoch = req.leader_epoch;
      st.replication.reset();
      report_metrics(self);
      if (was_leader)
        fail_waiters(self, not_leader(self));
      // The position once the writes queued as leader are synced.
      auto rp = self->make_response_promise<replica_position>();
      st.dq.submit(caf::actor_cast<caf::actor>(self), leveldb::WriteBatch{},
                   [self, rp](const status& s) mutable {
                     if (!s.ok()) {
                       rp.deliver(replica_position{s.code(), s.message()});
                       return;
                     }
                     self->state.durable_end = self->state.core->log_end_offset();
                     rp.deliver(position_of(self));
                   });
      return rp;
    },
    [=](const replica_append_request& req) -> caf::result<replica_position> {
      if (auto refused = not_following(self, req.leader_epoch))
        return *refused;
      auto rp = self->make_response_promise<replica_position>();
      append_as_follower(self, req, rp);
      return rp;
    },
    [=](const replica_truncate_request& req) -> caf::result<replica_position> {
      auto& st = self->state;
      if (auto refused = not_following(self, req.leader_epoch))
        return *refused;
      auto t = replication::follower_truncation({req.diverging_epoch, req.diverging_end_offset},
                                                st.epochs, st.durable_end);
      auto rp = self->make_response_promise<replica_position>();
      truncate_log(self, t.offset, [self, rp, t](const status& s) mutable {
        if (!s.ok()) {
          rp.deliver(replica_position{s.code(), s.message()});
          return;
        }
        auto p = position_of(self);
        p.truncation_completed = t.completed;
        rp.deliver(p);
      });
      return rp;
    },
    [=](const list_offsets_request& req) {
      if (self->state.following)
        return list_offsets_response{error_code::not_leader_or_follower, -1};
      int64_t found_timestamp = -1;
      auto r = self->state.core->list_offset(reader_of(self), req.timestamp, req.isolation,
                                             &found_timestamp);
      if (!r.ok())
        return list_offsets_response{r.error().code(), -1};
      return list_offsets_response{error_code::none, *r, found_timestamp};
    },
    [=](const describe_producers_request& req) {
      auto& st = self->state;
      describe_producers_response r;
      if (req.tp != st.core->tp()) {
        r.error = error_code::unknown_topic_or_partition;
        r.message = "this leader does not host " + to_string(req.tp);
        return r;
      }
      if (st.following) {
        r.error = error_code::not_leader_or_follower;
        r.message = not_leader(self).message();
        return r;
      }
      r.active_producers = st.core->active_producers();
      return r;
    },
    [=](const write_txn_marker_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      if (req.tp != st.core->tp()) // docs/transactions.md §WriteTxnMarkers step 2, before the producer checks
        return txn_response{error_code::unknown_topic_or_partition,
                          "this leader does not host " + to_string(req.tp)};
      if (st.following) {
        auto why = not_leader(self);
        return txn_response{why.code(), why.message()};
      }
      if (st.replication) {
        if (auto c = st.replication->check_append(replication::acks::all, st.min_insync_replicas);
            !c.ok())
          return txn_response{c.code(), c.message() + " for partition " + to_string(st.core->tp())};
      }
      // A coordinator's own partition takes the markers its coordinator
      // forwards, at the leader epoch it was elected with (as its appends).
      if (is_internal_topic(req.tp.topic) && req.leader_epoch != st.leader_epoch)
        return txn_response{error_code::fenced_leader_epoch,
                       "leader epoch " + std::to_string(req.leader_epoch) + " is not the current "
                         + std::to_string(st.leader_epoch) + " of " + to_string(req.tp)};
      // ... and of its election: a partition restarted by its supervisor
      // is not elected (it has no followers' positions, so its HW would be
      // its own log end) until its coordinator elects it again.
      if (is_internal_topic(req.tp.topic) && req.load_generation != st.load_generation)
        return txn_response{error_code::not_coordinator,
                            "a marker of an earlier coordinator election of " + to_string(req.tp)
                              + " (generation " + std::to_string(req.load_generation) + ", now "
                              + std::to_string(st.load_generation) + ")"};
      end_txn_marker marker{req.committed ? control_type::commit : control_type::abort,
                            coordinator_epoch{req.coordinator_epoch}};
      auto v = st.core->validate_marker(req.pid, req.epoch, marker, req.transaction_version);
      if (!v.ok())
        return txn_response{v.code(), v.message()};
      auto batch = make_control_batch(req.pid, req.epoch, marker, st.ctx->clock_ms());
      auto info = info_of(batch);
      auto rp = self->make_response_promise();
      append_and_reply(self, v2::encode(batch), info, txn_response{}, false, rp);
      return rp;
    },
  };
}

} // namespace

partition_actor spawn_partition(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                                topic_partition tp, topic_config topic) {
  return sys.spawn(partition_fn, std::move(ctx), std::move(tp), topic);
}

partition_actor spawn_supervised_partition(caf::actor_system& sys,
                                           std::shared_ptr<const node_context> ctx,
                                           topic_partition tp, topic_config topic) {
  // The supervisor forwards every request to its child, so its handle
  // serves the child's interface.
  return caf::actor_cast<partition_actor>(spawn_supervisor(
    sys, node_supervision(ctx, "partition " + to_string(tp), [ctx, tp, topic](caf::actor_system& sys) {
      return caf::actor_cast<caf::actor>(spawn_partition(sys, ctx, tp, topic));
    })));
}

void spawn_topic_leaders(caf::actor_system& sys, const std::shared_ptr<const node_context>& ctx,
                         const std::string& topic, int32_t partitions, const topic_config& config) {
  std::vector<partition_actor> leaders;
  for (int32_t p = 0; p < partitions; ++p) {
    auto a = spawn_supervised_partition(sys, ctx, {topic, p}, config);
    ctx->directory->add(caf::actor_cast<caf::actor>(a));
    leaders.push_back(a);
  }
  ctx->directory->set_topic(topic, std::move(leaders));
}

} // namespace caftx
