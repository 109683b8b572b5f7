#include "actors/client/producer.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <unordered_map>

#include <caf/send.hpp>

#include "actors/client/client_context.hpp"
#include "actors/client/remote_cluster.hpp"
#include "actors/client/producer_session.hpp"
#include "actors/client/record_accumulator.hpp"
#include "actors/client/transaction_manager.hpp"
#include "runtime/partitioner.hpp"

namespace caftx {

namespace {

using std::chrono::milliseconds;

const char* api_name(api_kind api) {
  switch (api) {
    case api_kind::init_producer_id: return "InitProducerId";
    case api_kind::add_partitions_to_txn: return "AddPartitionsToTxn";
    case api_kind::add_offsets_to_txn: return "AddOffsetsToTxn";
    case api_kind::txn_offset_commit: return "TxnOffsetCommit";
    case api_kind::end_txn: return "EndTxn";
    case api_kind::find_coordinator: return "FindCoordinator";
    case api_kind::produce: break;
  }
  return "Produce";
}

producer_config parse_or_throw(const properties& props) {
  auto c = producer_config::parse(props);
  if (!c.ok())
    throw kafka_exception(c.error(), error_class::fatal);
  return c.value();
}

} // namespace

// The records a producer handed to its session and that are not resolved
// yet, shared by the producer (which adds them in send()) and the session
// (which resolves them as their batches are acknowledged or fail, on its
// own thread, through completion_sink). Also Kafka's BufferPool: the bytes
// these records take, bounded by buffer.memory.
struct producer_deliveries {
  struct pending_record {
    topic_partition tp;
    int64_t timestamp_ms;
    producer::send_callback cb;
    std::promise<record_metadata> result;
    size_t bytes = 0;
  };

  std::mutex mtx;
  std::condition_variable freed; // buffered bytes went down
  std::unordered_map<uint64_t, pending_record> pending;
  int64_t buffered_bytes = 0;
  bool transactional = false;
  // Failed records not yet applied to the transaction state: the next
  // flush applies them, even when the flush whose answer carried them was
  // given up by its caller (a commit that timed out and is called again
  // must not commit without them; Kafka's TransactionManager turns
  // abortable at the failed batch itself).
  std::vector<session_completion> unapplied_failures;

  std::vector<session_completion> take_failures() {
    std::lock_guard<std::mutex> guard{mtx};
    return std::exchange(unapplied_failures, {});
  }

  void add(uint64_t id, pending_record r) {
    std::lock_guard<std::mutex> guard{mtx};
    buffered_bytes += static_cast<int64_t>(r.bytes);
    pending.emplace(id, std::move(r));
  }

  // Runs the callback and completes the future of `r` (outside the lock:
  // a callback may look at the producer's futures).
  void complete(pending_record& r, int64_t offset, const status& st) {
    if (r.cb)
      r.cb({r.tp, offset, r.timestamp_ms}, st);
    if (st.ok()) {
      r.result.set_value({r.tp, offset, r.timestamp_ms});
    } else {
      auto cls = classify(api_kind::produce, st.code());
      if (transactional && cls != error_class::fatal)
        cls = error_class::abortable;
      r.result.set_exception(std::make_exception_ptr(kafka_exception(st, cls)));
    }
  }

  void resolve(const std::vector<session_completion>& done) {
    std::vector<std::pair<pending_record, const session_completion*>> resolved;
    resolved.reserve(done.size());
    {
      std::lock_guard<std::mutex> guard{mtx};
      for (auto& c : done) {
        auto i = pending.find(c.id);
        if (i == pending.end())
          continue;
        buffered_bytes -= static_cast<int64_t>(i->second.bytes);
        resolved.emplace_back(std::move(i->second), &c);
        pending.erase(i);
        if (c.error != error_code::none)
          unapplied_failures.push_back(c);
      }
    }
    if (!resolved.empty())
      freed.notify_all();
    for (auto& [r, c] : resolved)
      complete(r, c->offset, status{c->error, c->message});
  }

  // Fails every pending record with `st` (the session died).
  void fail_all(const status& st) {
    std::vector<std::pair<uint64_t, pending_record>> lost;
    {
      std::lock_guard<std::mutex> guard{mtx};
      lost.reserve(pending.size());
      for (auto& e : pending)
        lost.emplace_back(e.first, std::move(e.second));
      pending.clear();
      buffered_bytes = 0;
    }
    freed.notify_all();
    std::sort(lost.begin(), lost.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& e : lost)
      complete(e.second, -1, st);
  }
};

struct producer::impl {
  using pending_record = producer_deliveries::pending_record;

  producer_config cfg;
  detail::client_channel ch;
  transaction_manager tm;
  caf::actor session; // batches, sequences, in-flight windows, retries
  uint64_t next_record_id = 1;
  std::shared_ptr<producer_deliveries> pending = std::make_shared<producer_deliveries>();
  std::function<void(const char*)> hook;
  std::mutex mtx;
  int32_t round_robin = 0;
  bool closed = false;
  // abort_transaction's epoch bump (InitProducerId) timed out: the next
  // abort_transaction resumes it (KIP-588: the call may be repeated).
  bool bump_pending = false;

  // Set once the current session has terminated (killed in a drill,
  // crashed); the next call replaces it (see revive_session).
  std::shared_ptr<std::atomic<bool>> session_down;

  // `cluster`: the connection of a producer built from properties alone
  // (its channel watches it before the session starts).
  impl(caf::actor_system& sys, caf::actor broker, producer_config c,
       const std::shared_ptr<detail::remote_cluster>& cluster = nullptr)
    : cfg(std::move(c)), ch(sys, std::move(broker)), tm(cfg.transactional_id.has_value()) {
    pending->transactional = tm.transactional();
    if (cluster)
      detail::watch_metadata(ch, cluster);
    start_session();
  }

  // Guards `session` for session_actor(), which must not wait for a call
  // in progress (the drill kills the session under a blocked call).
  mutable std::mutex session_mtx;

  void start_session() {
    std::weak_ptr<producer_deliveries> sink = pending;
    auto fresh = spawn_producer_session(ch.system(), cfg, caf::actor_cast<caf::actor>(ch.broker()),
                                        [sink](const std::vector<session_completion>& done) {
                                          if (auto d = sink.lock())
                                            d->resolve(done);
                                        },
                                        ch.relay_target());
    {
      std::lock_guard<std::mutex> guard{session_mtx};
      session = fresh;
    }
    auto down = std::make_shared<std::atomic<bool>>(false);
    session_down = down;
    session->attach_functor([down] { down->store(true); });
  }

  // The producer supervises its session: a session that died is replaced
  // by a fresh one before the next call goes on. What the dead one held
  // is lost with it, so every record not yet resolved fails, and the
  // sequences it had assigned are gone: the producer continues with a new
  // epoch (KIP-360) — at once when idle, after the abort the failed
  // transaction requires when in one.
  void revive_session() {
    if (!session_down->load())
      return;
    start_session();
    status lost{error_code::unknown_server_error,
                "the producer's session died before the record was acknowledged; "
                "it may or may not have been written"};
    pending->fail_all(lost);
    switch (tm.state()) {
      case client_txn_state::uninitialized:
      case client_txn_state::initializing:
      case client_txn_state::fatal_error:
        return;
      case client_txn_state::ready:
        if (tm.transactional())
          init_producer_id(tm.pid(), tm.epoch());
        else if (cfg.enable_idempotence) // a plain producer has no identity
          set_identity_from(request_idempotent_identity());
        return;
      default: // in a transaction: it must be aborted, then the epoch is bumped
        tm.fail(error_class::abortable, lost);
        tm.require_epoch_bump();
        return;
    }
  }

  // Dropping the producer stops its session at once, as a process crash
  // would: nothing buffered is sent any more.
  ~impl() { caf::anon_send_exit(session, caf::exit_reason::kill); }

  void set_identity(producer_id pid, producer_epoch epoch) {
    tm.init_succeeded(pid, epoch);
    ch.self()->send(session, session_identity{pid, epoch});
  }

  milliseconds request_timeout() const { return milliseconds(cfg.request_timeout_ms); }

  const std::string& tid() const { return *cfg.transactional_id; }

  void fault(const char* point) {
    if (hook)
      hook(point);
  }

  [[noreturn]] void fail(api_kind api, const status& st) {
    // docs/errors.md §Classification †: the core notes the KIP-360 epoch
    // bump an abortable UNKNOWN_PRODUCER_ID / INVALID_PRODUCER_ID_MAPPING
    // requires after the abort.
    auto cls = classify(api, st.code());
    tm.fail(cls, st);
    throw kafka_exception(st, cls);
  }

  void check(const status& st) {
    if (!st.ok())
      throw kafka_exception(st, tm.state() == client_txn_state::fatal_error ? error_class::fatal
                                : tm.state() == client_txn_state::abortable_error
                                  ? error_class::abortable
                                  : error_class::fatal);
  }

  // The wait for one request that must end by `deadline_ms` (deadline
  // clock): request.timeout.ms, or what is left until the deadline.
  milliseconds request_timeout_until(int64_t deadline_ms) const {
    auto left = std::max<int64_t>(1, deadline_ms - ch.deadline_clock_ms());
    return milliseconds(std::min<int64_t>(cfg.request_timeout_ms, left));
  }

  // Kafka's TimeoutException of a call blocked past max.block.ms: retriable
  // (the call may be repeated, KIP-588), the transaction state unchanged.
  [[noreturn]] void timed_out(const char* what, const status& last) {
    throw kafka_exception(status{error_code::request_timed_out,
                                 "Timeout expired after " + std::to_string(cfg.max_block_ms)
                                   + "ms while awaiting " + what + " (max.block.ms; last error: "
                                   + last.to_string() + ")"},
                          error_class::retriable);
  }

  // Sends a coordinator request until it succeeds, fails for good, or
  // `deadline_ms` (deadline clock; default: max.block.ms from now) passes:
  // then REQUEST_TIMED_OUT, retriable (timed_out). The coordinator is
  // found by FindCoordinator on `key_type`/`key`.
  template <class Resp, class Req>
  Resp coordinator_call(api_kind api, int8_t key_type, const std::string& key, const Req& req,
                        const char* after_send_point = nullptr, int64_t deadline_ms = -1) {
    auto deadline = deadline_ms >= 0 ? deadline_ms : ch.deadline_clock_ms() + cfg.max_block_ms;
    bool refresh = false;
    int concurrent_waits = 0;
    for (int attempt = 0;; ++attempt) {
      status err;
      auto coord = ch.coordinator(key_type, key, refresh, request_timeout_until(deadline));
      if (!coord.ok()) {
        err = coord.error();
      } else {
        auto handle = ch.self()->request(coord.value(), request_timeout_until(deadline), req);
        auto watch = ch.watch_reply(handle.id(), coord.value());
        if (after_send_point != nullptr && attempt == 0)
          fault(after_send_point);
        status_or<Resp> r{status{error_code::request_timed_out, "no reply"}};
        ch.await(handle.id());
        handle.receive([&](Resp& x) { r = std::move(x); },
                       [&](caf::error& e) { r = detail::from_caf_error(ch.system(), e); });
        if (r.ok() && r->error == error_code::none)
          return std::move(r).value();
        err = r.ok() ? status{r->error, r->message} : r.error();
      }
      if (!is_retriable(err.code()))
        fail(api, err);
      auto now = ch.deadline_clock_ms();
      if (now >= deadline) // KIP-588: the call may be repeated
        timed_out(api_name(api), err);
      refresh = needs_coordinator_rediscovery(err.code());
      ch.sleep_ms(std::min<int64_t>(
        coordinator_backoff_ms(err.code(), cfg.retry_backoff_ms, concurrent_waits), deadline - now));
    }
  }

  void init_producer_id(producer_id expected_pid, producer_epoch expected_epoch) {
    check(tm.begin_init());
    init_producer_id_request req{true, tid(), cfg.transaction_timeout_ms, expected_pid,
                                 expected_epoch};
    auto r = coordinator_call<init_producer_id_response>(api_kind::init_producer_id, 1, tid(), req);
    set_identity(r.pid, r.epoch);
  }

  // EndTxn. Every ended transaction bumps the producer epoch (KIP-890
  // part 2): the producer continues with the identity in the reply, with
  // sequences from 0, so nothing it sent before can join a later
  // transaction.
  void end_txn(bool commit, const char* after_send_point, int64_t deadline_ms) {
    end_txn_request req{tid(), tm.pid(), tm.epoch(), commit};
    auto r = coordinator_call<end_txn_response>(api_kind::end_txn, 1, tid(), req,
                                                after_send_point, deadline_ms);
    tm.identity_changed(r.pid, r.epoch);
    ch.self()->send(session, session_identity{r.pid, r.epoch});
  }

  void init_idempotent() {
    check(tm.begin_init());
    set_identity_from(request_idempotent_identity());
  }

  void set_identity_from(const init_producer_id_response& r) { set_identity(r.pid, r.epoch); }

  // InitProducerId without transactional id, retried until
  // max.block.ms (the first send() waits for it, as Kafka's waits for its
  // producer id).
  init_producer_id_response request_idempotent_identity() {
    auto deadline = ch.deadline_clock_ms() + cfg.max_block_ms;
    for (;;) {
      init_producer_id_request req;
      auto r = ch.call<init_producer_id_response>(ch.broker(), req, request_timeout_until(deadline));
      status err = r.ok() ? status{r->error, r->message} : r.error();
      if (err.ok())
        return std::move(r).value();
      if (!is_retriable(err.code()) || ch.deadline_clock_ms() >= deadline)
        fail(api_kind::init_producer_id, err);
      ch.sleep_ms(cfg.retry_backoff_ms);
    }
  }

  // A record that cannot be placed fails the send like Kafka's metadata
  // timeout in send(): abortable for a transactional producer (the
  // transaction must be aborted), a plain failed send otherwise. A client
  // of the embedded node fails at once on an unknown topic instead of
  // waiting max.block.ms: that node's metadata is the cluster's, and
  // topics are never created implicitly unless auto.create.topics.enable
  // is set on it. A client of a cluster waits, as Kafka's: its node learns
  // of a topic created through another one a little later.
  [[noreturn]] void unplaceable(const status& st) {
    if (tm.transactional())
      tm.fail(error_class::abortable, st);
    throw kafka_exception(st, error_class::abortable);
  }

  // The record's partition and its leader (null while the partition has
  // none: the session waits for one, up to delivery.timeout.ms). A
  // retriable metadata error (no connection yet, no leader of any
  // partition) is retried until max.block.ms, as Kafka's send() waits for
  // the topic's metadata; then the send fails with Kafka's "not present in
  // metadata" timeout.
  std::pair<topic_partition, partition_actor> choose_partition(const producer_record& r) {
    auto deadline = ch.deadline_clock_ms() + cfg.max_block_ms;
    for (bool refresh = false;; refresh = true) {
      auto parts = ch.partitions_view(r.topic, refresh, request_timeout_until(deadline), true);
      if (parts.ok()) {
        auto& leaders = **parts;
        auto tp = place(r, static_cast<int32_t>(leaders.size()));
        return {tp, leaders[static_cast<size_t>(tp.partition)]};
      }
      auto code = parts.error().code();
      bool unknown = code == error_code::unknown_topic_or_partition;
      if ((unknown && !ch.has_metadata_source()) || (!unknown && !is_retriable(code)))
        unplaceable(parts.error());
      if (ch.deadline_clock_ms() >= deadline)
        unplaceable(status{unknown ? code : error_code::request_timed_out,
                           "Topic " + r.topic + " not present in metadata after "
                             + std::to_string(cfg.max_block_ms)
                             + " ms (last error: " + parts.error().to_string() + ")"});
      ch.sleep_ms(cfg.retry_backoff_ms);
    }
  }

  topic_partition place(const producer_record& r, int32_t n) {
    if (r.partition) {
      if (*r.partition < 0 || *r.partition >= n)
        unplaceable(status{error_code::unknown_topic_or_partition,
                           "topic '" + r.topic + "' has no partition " + std::to_string(*r.partition)});
      return {r.topic, *r.partition};
    }
    if (!r.key.empty())
      return {r.topic, partition_for_key(r.key, n)};
    return {r.topic, round_robin++ % n};
  }

  // Asks the session to seal and send everything and waits until every
  // record handed to it is resolved; runs the callbacks and applies the
  // errors to the transaction manager. `discard` drops what was not sent
  // (abort). Returns the first error.
  // `deadline_ms` (deadline clock, -1: none) bounds the wait: then
  // REQUEST_TIMED_OUT, the records still pending.
  status settle(bool discard, int64_t deadline_ms = -1) {
    status_or<session_flush_result> r{status{error_code::request_timed_out, "no reply"}};
    auto wait = deadline_ms < 0 ? caf::duration{caf::infinite}
                                : caf::duration{milliseconds(
                                  std::max<int64_t>(1, deadline_ms - ch.deadline_clock_ms()))};
    auto handle = ch.self()->request(session, wait, session_flush{discard});
    ch.await(handle.id());
    handle.receive([&](session_flush_result& x) { r = std::move(x); },
               [&](caf::error& e) { r = detail::from_caf_error(ch.system(), e); });
    if (!r.ok())
      return r.error();
    // The callbacks and futures ran as the records were resolved (the
    // session's completion_sink); the flush applies the first failure.
    status first_error;
    auto first_error_api = api_kind::produce;
    auto failures = pending->take_failures();
    failures.insert(failures.end(), r->completions.begin(), r->completions.end());
    for (auto& c : failures) {
      if (c.error != error_code::none) {
        ch.note_error(c.error); // a lost leader or connection: metadata again
        first_error = status{c.error, c.message};
        first_error_api = c.add_failed ? api_kind::add_partitions_to_txn : api_kind::produce;
        break;
      }
    }
    if (!first_error.ok() && !discard) {
      auto cls = classify(first_error_api, first_error.code());
      // delivery.timeout.ms expired (for AddPartitionsToTxn too: as Kafka's
      // send(), a record that could not join the transaction makes it
      // abortable, so that a commit can never leave it out silently)
      if (cls == error_class::retriable)
        cls = error_class::abortable;
      if (tm.transactional()) {
        tm.fail(cls, first_error);
        tm.require_epoch_bump();
      } else if (cls == error_class::fatal) {
        tm.fail(cls, first_error);
      }
    }
    // An idempotent session bumps its epoch itself after a failed batch.
    if (!tm.transactional() && r->epoch != tm.epoch() && r->epoch != no_producer_epoch)
      tm.init_succeeded(tm.pid(), r->epoch);
    return first_error;
  }

  status flush_all(int64_t deadline_ms = -1) { return settle(false, deadline_ms); }

  // Kafka's KafkaProducer.ensureValidRecordSize: a record larger than
  // max.request.size or buffer.memory can never be sent.
  void check_record_size(size_t bytes) {
    auto n = static_cast<int64_t>(bytes);
    if (n > cfg.max_request_size)
      refuse(status{error_code::message_too_large,
                    "The message is " + std::to_string(n)
                      + " bytes when serialized which is larger than "
                      + std::to_string(cfg.max_request_size)
                      + ", which is the value of the max.request.size configuration."});
    if (n > cfg.buffer_memory)
      refuse(status{error_code::message_too_large,
                    "The message is " + std::to_string(n)
                      + " bytes when serialized which is larger than the total memory buffer "
                        "you have configured with the buffer.memory configuration."});
  }

  // Kafka's BufferPool.allocate: waits while the records not yet resolved
  // and this one would take more than buffer.memory, at most max.block.ms;
  // then REQUEST_TIMED_OUT (Kafka's TimeoutException, here thrown by
  // send()). The session frees the bytes as batches are acknowledged.
  void reserve_buffer(size_t bytes) {
    auto n = static_cast<int64_t>(bytes);
    auto fits = [&] { return pending->buffered_bytes + n <= cfg.buffer_memory; };
    auto deadline = ch.deadline_clock_ms() + cfg.max_block_ms;
    std::unique_lock<std::mutex> lock{pending->mtx};
    if (fits())
      return;
    if (ch.has_driver()) {
      // The calling thread runs the actors (deterministic scheduler):
      // wait by letting them run.
      while (!fits()) {
        auto now = ch.deadline_clock_ms();
        if (now >= deadline)
          break;
        lock.unlock();
        ch.sleep_ms(std::min<int64_t>(1, deadline - now));
        lock.lock();
      }
    } else {
      auto until = std::chrono::steady_clock::now() + milliseconds(cfg.max_block_ms);
      pending->freed.wait_until(lock, until, fits);
    }
    if (!fits()) {
      lock.unlock();
      refuse(status{error_code::request_timed_out,
                    "Failed to allocate memory within the configured max blocking time "
                      + std::to_string(cfg.max_block_ms) + " ms. (buffer.memory "
                      + std::to_string(cfg.buffer_memory) + " bytes held by records not yet "
                      "acknowledged)"});
    }
  }

  // A record send() refuses: it fails the transaction as Kafka's send()
  // does for an ApiException (maybeTransitionToErrorState: abortable);
  // a non-transactional producer goes on, the call may be repeated.
  [[noreturn]] void refuse(const status& st) {
    if (tm.transactional() && tm.state() == client_txn_state::in_transaction) {
      tm.fail(error_class::abortable, st);
      throw kafka_exception(st, error_class::abortable);
    }
    throw kafka_exception(st, st.code() == error_code::request_timed_out ? error_class::retriable
                                                                          : error_class::abortable);
  }

  void throw_batch_error(const status& err) {
    auto cls = tm.state() == client_txn_state::fatal_error       ? error_class::fatal
               : tm.state() == client_txn_state::abortable_error ? error_class::abortable
                                                                 : classify(api_kind::produce, err.code());
    throw kafka_exception(err, cls);
  }
};

producer::producer(caf::actor_system& sys, caf::actor broker, const properties& props)
  : producer(sys, std::move(broker), parse_or_throw(props)) {
}

producer::producer(caf::actor_system& sys, caf::actor broker, producer_config config)
  : impl_(std::make_unique<impl>(sys, std::move(broker), std::move(config))) {
}

producer::producer(const properties& props) {
  producer_config config;
  cluster_ = detail::connect_remote(props, [&](const properties& rest) { config = parse_or_throw(rest); });
  impl_ = std::make_unique<impl>(cluster_->system(), cluster_->broker(), std::move(config), cluster_);
}

producer::~producer() = default;

void producer::init_transactions() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto& d = *impl_;
  if (!d.tm.transactional())
    throw kafka_exception(status{error_code::invalid_txn_state, "transactional.id is not set"},
                          error_class::fatal);
  // After a TimeoutException (max.block.ms) the call may be repeated, as
  // Kafka's initTransactions.
  if (d.tm.state() != client_txn_state::uninitialized
      && d.tm.state() != client_txn_state::initializing)
    throw kafka_exception(status{error_code::invalid_txn_state,
                                 std::string("init_transactions in state ") + to_string(d.tm.state())},
                          error_class::fatal);
  d.init_producer_id(no_producer_id, no_producer_epoch);
}

void producer::begin_transaction() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  impl_->check(impl_->tm.begin_transaction());
}

std::future<record_metadata> producer::send(const producer_record& r, send_callback cb) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  if (d.closed)
    throw kafka_exception(status{error_code::invalid_txn_state, "producer is closed"},
                          error_class::fatal);
  if (!d.tm.transactional() && d.tm.state() == client_txn_state::uninitialized) {
    if (d.cfg.enable_idempotence)
      d.init_idempotent();
    else // enable.idempotence=false: batches carry no producer id nor sequences
      d.tm.init_succeeded(no_producer_id, no_producer_epoch);
  }
  d.check(d.tm.check_send());
  // max.request.size and buffer.memory first: a record that is refused
  // leaves no trace (its partition is not added to the transaction).
  auto bytes = record_size_upper_bound(r.key.size(), r.value.size(), r.headers);
  d.check_record_size(bytes);
  auto [tp, leader] = d.choose_partition(r);
  d.reserve_buffer(bytes);
  // The partition's first record in this transaction: the session adds it
  // (AddPartitionsToTxn, batched with other new partitions, in the
  // background) before it sends the partition's first batch. Marked added
  // here already, so that an abort always reaches the coordinator.
  bool add = d.tm.transactional() && !d.tm.is_added(tp);
  if (add)
    d.tm.mark_added(tp);
  record rec{r.key, r.value, r.headers, r.timestamp_ms >= 0 ? r.timestamp_ms : d.ch.timestamp_ms(),
             r.null_value};
  auto id = d.next_record_id++;
  impl::pending_record pr{tp, rec.timestamp_ms, std::move(cb), {}, bytes};
  auto future = pr.result.get_future();
  d.pending->add(id, std::move(pr));
  d.ch.self()->send(d.session,
                    session_record{id, tp, std::move(leader), std::move(rec), add});
  return future;
}

void producer::flush() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  if (auto st = impl_->flush_all(); !st.ok())
    impl_->throw_batch_error(st);
}

void producer::send_offsets_to_transaction(const std::map<topic_partition, int64_t>& offsets,
                                           const std::string& group_id) {
  send_offsets_to_transaction(offsets, consumer_group_metadata{group_id, -1, ""});
}

void producer::send_offsets_to_transaction(const std::map<topic_partition, int64_t>& offsets,
                                           const consumer_group_metadata& group) {
  auto& group_id = group.group_id;
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  d.check(d.tm.check_send());
  if (group_id.empty())
    throw kafka_exception(status{error_code::invalid_request, "empty group id"}, error_class::fatal);
  // Both requests within max.block.ms (Kafka's sendOffsetsToTransaction
  // waits that long for its result).
  auto deadline = d.ch.deadline_clock_ms() + d.cfg.max_block_ms;
  if (!d.tm.offsets_added()) {
    add_offsets_to_txn_request req{d.tid(), d.tm.pid(), d.tm.epoch(), group_id};
    d.coordinator_call<txn_response>(api_kind::add_offsets_to_txn, 1, d.tid(), req, nullptr,
                                     deadline);
    d.tm.mark_offsets_added();
  }
  d.fault("after_add_offsets");
  txn_offset_commit_request req{d.tid(), group_id, d.tm.pid(), d.tm.epoch(), {}, {}};
  req.generation_id = group.generation_id;
  req.member_id = group.member_id;
  req.group_instance_id = group.group_instance_id;
  for (auto& [tp, off] : offsets) {
    req.partitions.push_back(tp);
    req.offsets.push_back(off);
  }
  d.coordinator_call<txn_response>(api_kind::txn_offset_commit, 0, group_id, req, nullptr,
                                   deadline);
  d.fault("after_send_offsets");
}

void producer::commit_transaction() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  if (d.tm.state() == client_txn_state::abortable_error)
    d.check(d.tm.begin_commit());
  // The flush and EndTxn within max.block.ms (Kafka's commitTransaction);
  // after a timeout the call may be repeated.
  auto deadline = d.ch.deadline_clock_ms() + d.cfg.max_block_ms;
  if (auto st = d.flush_all(deadline); !st.ok()) {
    if (d.ch.deadline_clock_ms() >= deadline && st.code() == error_code::request_timed_out)
      d.timed_out("the transaction's records to be acknowledged", st);
    d.throw_batch_error(st);
  }
  d.check(d.tm.begin_commit());
  if (d.tm.needs_end_txn()) {
    d.fault("before_end_txn");
    d.end_txn(true, "after_end_txn_sent", deadline);
  }
  d.tm.end_succeeded();
}

void producer::abort_transaction() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  if (d.bump_pending && d.tm.state() == client_txn_state::initializing) {
    d.init_producer_id(d.tm.pid(), d.tm.epoch());
    d.bump_pending = false;
    return;
  }
  d.check(d.tm.begin_abort());
  // Within max.block.ms, as Kafka's abortTransaction; after a timeout the
  // call may be repeated.
  auto deadline = d.ch.deadline_clock_ms() + d.cfg.max_block_ms;
  // Unsent records are dropped, sent ones resolve.
  if (auto st = d.settle(true, deadline);
      !st.ok() && d.ch.deadline_clock_ms() >= deadline && st.code() == error_code::request_timed_out)
    d.timed_out("the records in flight to be resolved", st);
  bool bump = d.tm.epoch_bump_required();
  // After INVALID_PRODUCER_ID_MAPPING the coordinator would refuse EndTxn
  // with the same error: the InitProducerId below gives the producer a
  // new identity instead (Kafka's beginCompletingTransaction).
  if (d.tm.needs_end_txn())
    d.end_txn(false, nullptr, deadline);
  d.tm.end_succeeded();
  if (bump) {
    d.bump_pending = true;
    d.init_producer_id(d.tm.pid(), d.tm.epoch());
    d.bump_pending = false;
  }
}

void producer::close() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  if (d.closed)
    return;
  if (!d.tm.transactional() && d.tm.state() == client_txn_state::ready)
    (void) d.flush_all();
  d.closed = true;
}

void producer::set_driver(client_driver driver) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->ch.set_driver(std::move(driver));
}

void producer::set_fault_hook(std::function<void(const char*)> hook) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->hook = std::move(hook);
}

caf::actor producer::session_actor() const {
  std::lock_guard<std::mutex> guard{impl_->session_mtx};
  return impl_->session;
}

std::pair<int64_t, int16_t> producer::producer_identity() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return {impl_->tm.pid().value, impl_->tm.epoch().value};
}

} // namespace caftx
