#include "actors/client/producer.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include <caf/send.hpp>

#include "actors/client/client_context.hpp"
#include "actors/client/remote_cluster.hpp"
#include "actors/client/producer_session.hpp"
#include "actors/client/transaction_manager.hpp"
#include "runtime/partitioner.hpp"

namespace caftx {

namespace {

using std::chrono::milliseconds;

producer_config parse_or_throw(const properties& props) {
  auto c = producer_config::parse(props);
  if (!c.ok())
    throw kafka_exception(c.error(), error_class::fatal);
  return c.value();
}

} // namespace

struct producer::impl {
  // A record handed to the session and not resolved yet.
  struct pending_record {
    topic_partition tp;
    int64_t timestamp_ms;
    send_callback cb;
  };

  producer_config cfg;
  detail::client_channel ch;
  transaction_manager tm;
  caf::actor session; // batches, sequences, in-flight windows, retries
  uint64_t next_record_id = 1;
  std::map<uint64_t, pending_record> pending;
  std::function<void(const char*)> hook;
  std::mutex mtx;
  int32_t round_robin = 0;
  bool closed = false;

  // Set once the current session has terminated (killed in a drill,
  // crashed); the next call replaces it (see revive_session).
  std::shared_ptr<std::atomic<bool>> session_down;

  impl(caf::actor_system& sys, caf::actor broker, producer_config c)
    : cfg(std::move(c)), ch(sys, std::move(broker)), tm(cfg.transactional_id.has_value()) {
    start_session();
  }

  // Guards `session` for session_actor(), which must not wait for a call
  // in progress (the drill kills the session under a blocked call).
  mutable std::mutex session_mtx;

  void start_session() {
    auto fresh = spawn_producer_session(ch.system(), cfg, ch.broker());
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
    for (auto& [id, p] : pending)
      if (p.cb)
        p.cb({p.tp, -1, p.timestamp_ms}, lost);
    pending.clear();
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

  // Sends a coordinator request until it succeeds, fails for good, or
  // delivery.timeout.ms passes. `make` builds the request, `dest` finds
  // where to send it.
  template <class Resp, class Req>
  Resp coordinator_call(api_kind api, int8_t key_type, const std::string& key, const Req& req,
                        const char* after_send_point = nullptr) {
    auto deadline = ch.deadline_clock_ms() + cfg.delivery_timeout_ms;
    bool refresh = false;
    int concurrent_waits = 0;
    for (int attempt = 0;; ++attempt) {
      status err;
      auto coord = ch.coordinator(key_type, key, refresh, request_timeout());
      if (!coord.ok()) {
        err = coord.error();
      } else {
        auto handle = ch.self()->request(coord.value(), request_timeout(), req);
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
      if (ch.deadline_clock_ms() >= deadline) // KIP-588: the call may be repeated
        throw kafka_exception(status{err.code(), err.message() + " (delivery.timeout.ms expired)"},
                              error_class::retriable);
      refresh = needs_coordinator_rediscovery(err.code());
      ch.sleep_ms(coordinator_backoff_ms(err.code(), cfg.retry_backoff_ms, concurrent_waits));
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
  void end_txn(bool commit, const char* after_send_point) {
    end_txn_request req{tid(), tm.pid(), tm.epoch(), commit};
    auto r = coordinator_call<end_txn_response>(api_kind::end_txn, 1, tid(), req,
                                                after_send_point);
    tm.identity_changed(r.pid, r.epoch);
    ch.self()->send(session, session_identity{r.pid, r.epoch});
  }

  void init_idempotent() {
    check(tm.begin_init());
    set_identity_from(request_idempotent_identity());
  }

  void set_identity_from(const init_producer_id_response& r) { set_identity(r.pid, r.epoch); }

  // InitProducerId without transactional id, retried until
  // delivery.timeout.ms.
  init_producer_id_response request_idempotent_identity() {
    auto deadline = ch.deadline_clock_ms() + cfg.delivery_timeout_ms;
    for (;;) {
      init_producer_id_request req;
      auto r = ch.call<init_producer_id_response>(ch.broker(), req, request_timeout());
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
  // transaction must be aborted), a plain failed send otherwise. caftx fails
  // at once instead of waiting max.block.ms, as topics are never created
  // implicitly unless auto.create.topics.enable is set on the node.
  [[noreturn]] void unplaceable(const status& st) {
    if (tm.transactional())
      tm.fail(error_class::abortable, st);
    throw kafka_exception(st, error_class::abortable);
  }

  topic_partition choose_partition(const producer_record& r) {
    auto parts = ch.partitions(r.topic, false, request_timeout());
    if (!parts.ok())
      unplaceable(parts.error());
    auto n = static_cast<int32_t>(parts->size());
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
  status settle(bool discard) {
    status_or<session_flush_result> r{status{error_code::request_timed_out, "no reply"}};
    auto handle = ch.self()->request(session, caf::infinite, session_flush{discard});
    ch.await(handle.id());
    handle.receive([&](session_flush_result& x) { r = std::move(x); },
               [&](caf::error& e) { r = detail::from_caf_error(ch.system(), e); });
    if (!r.ok())
      return r.error();
    status first_error;
    auto first_error_api = api_kind::produce;
    for (auto& c : r->completions) {
      auto i = pending.find(c.id);
      if (i == pending.end())
        continue;
      status st{c.error, c.message};
      ch.note_error(c.error);
      if (i->second.cb)
        i->second.cb({i->second.tp, c.offset, i->second.timestamp_ms}, st);
      pending.erase(i);
      if (!st.ok() && first_error.ok()) {
        first_error = st;
        first_error_api = c.add_failed ? api_kind::add_partitions_to_txn : api_kind::produce;
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

  status flush_all() { return settle(false); }

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
  impl_ = std::make_unique<impl>(cluster_->system(), cluster_->broker(), std::move(config));
  detail::watch_metadata(impl_->ch, cluster_);
}

producer::~producer() = default;

void producer::init_transactions() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto& d = *impl_;
  if (!d.tm.transactional())
    throw kafka_exception(status{error_code::invalid_txn_state, "transactional.id is not set"},
                          error_class::fatal);
  if (d.tm.state() != client_txn_state::uninitialized)
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

void producer::send(const producer_record& r, send_callback cb) {
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
  auto tp = d.choose_partition(r);
  // The partition's first record in this transaction: the session adds it
  // (AddPartitionsToTxn, batched with other new partitions, in the
  // background) before it sends the partition's first batch. Marked added
  // here already, so that an abort always reaches the coordinator.
  bool add = d.tm.transactional() && !d.tm.is_added(tp);
  if (add)
    d.tm.mark_added(tp);
  auto leaders = d.ch.partitions(tp.topic, false, d.request_timeout());
  record rec{r.key, r.value, r.headers, r.timestamp_ms >= 0 ? r.timestamp_ms : d.ch.timestamp_ms(),
             r.null_value};
  auto id = d.next_record_id++;
  d.pending.emplace(id, impl::pending_record{tp, rec.timestamp_ms, std::move(cb)});
  d.ch.self()->send(d.session,
                    session_record{id, tp, (*leaders)[tp.partition], std::move(rec), add});
}

void producer::flush() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  if (auto st = impl_->flush_all(); !st.ok())
    impl_->throw_batch_error(st);
}

void producer::send_offsets_to_transaction(const std::map<topic_partition, int64_t>& offsets,
                                           const std::string& group_id) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  d.check(d.tm.check_send());
  if (group_id.empty())
    throw kafka_exception(status{error_code::invalid_request, "empty group id"}, error_class::fatal);
  if (!d.tm.offsets_added()) {
    add_offsets_to_txn_request req{d.tid(), d.tm.pid(), d.tm.epoch(), group_id};
    d.coordinator_call<txn_response>(api_kind::add_offsets_to_txn, 1, d.tid(), req);
    d.tm.mark_offsets_added();
  }
  d.fault("after_add_offsets");
  txn_offset_commit_request req{d.tid(), group_id, d.tm.pid(), d.tm.epoch(), {}, {}};
  for (auto& [tp, off] : offsets) {
    req.partitions.push_back(tp);
    req.offsets.push_back(off);
  }
  d.coordinator_call<txn_response>(api_kind::txn_offset_commit, 0, group_id, req);
  d.fault("after_send_offsets");
}

void producer::commit_transaction() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  if (d.tm.state() == client_txn_state::abortable_error)
    d.check(d.tm.begin_commit());
  if (auto st = d.flush_all(); !st.ok())
    d.throw_batch_error(st);
  d.check(d.tm.begin_commit());
  if (d.tm.needs_end_txn()) {
    d.fault("before_end_txn");
    d.end_txn(true, "after_end_txn_sent");
  }
  d.tm.end_succeeded();
}

void producer::abort_transaction() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->revive_session();
  auto& d = *impl_;
  d.check(d.tm.begin_abort());
  (void) d.settle(true); // unsent records are dropped, sent ones resolve
  bool bump = d.tm.epoch_bump_required();
  // After INVALID_PRODUCER_ID_MAPPING the coordinator would refuse EndTxn
  // with the same error: the InitProducerId below gives the producer a
  // new identity instead (Kafka's beginCompletingTransaction).
  if (d.tm.needs_end_txn())
    d.end_txn(false, nullptr);
  d.tm.end_succeeded();
  if (bump)
    d.init_producer_id(d.tm.pid(), d.tm.epoch());
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
