#include "tools/drill/workload.hpp"

#include <functional>
#include <map>
#include <random>
#include <set>

#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "actors/client/read_committed_filter.hpp"
#include "pipeline.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx::drill {

namespace {

using namespace std::chrono_literals;

// Sleeps `ms` in slices, returning early once `stop` is set.
void nap(int64_t ms, const std::atomic<bool>& stop) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(20ms);
}

// The producer's id and epoch as the history holds them.
std::pair<producer_id, producer_epoch> identity(const producer& p) {
  auto [pid, epoch] = p.producer_identity();
  return {producer_id{pid}, producer_epoch{epoch}};
}

// Sends `r` (value id `vid`) and records its outcome as the application
// learns it: the acknowledgement with its offset, or the failure (also of
// a send() that throws, which rethrows).
void send_recorded(producer& p, const producer_record& r, sim::value_id vid, recorder& rec,
                   workload_counters& c) {
  try {
    p.send(r, [&rec, &c, vid](const record_metadata& md, const status& st) {
      if (st.ok()) {
        rec.record(sim::ack_event{vid, md.offset});
        ++c.acknowledged;
        c.last_ack_ms = rec.now_ms();
      } else {
        rec.record(sim::send_failed_event{vid, st.code()});
      }
    });
  } catch (const kafka_exception& e) {
    rec.record(sim::send_failed_event{vid, e.code()});
    throw;
  }
}

properties client_props(const workload_context& ctx, properties extra = {}) {
  extra["bootstrap.servers"] = ctx.bootstrap_servers;
  return extra;
}

// Calls `step` with an admin client every `every_ms` until `stop`; a
// client whose connection setup failed is made anew at the next round.
void admin_loop(const workload_context& ctx, const std::atomic<bool>& stop, const char* timeout_ms,
                int64_t every_ms, const std::function<void(admin_client&)>& step) {
  std::unique_ptr<admin_client> admin;
  while (!stop) {
    try {
      if (!admin)
        admin = std::make_unique<admin_client>(client_props(ctx, {{"request.timeout.ms", timeout_ms}}));
      step(*admin);
    } catch (const std::exception&) {
      admin.reset();
    }
    nap(every_ms, stop);
  }
}

// Reads `partitions` forward with raw fetches at one isolation level, as a
// consumer's fetcher does (the same filter), and records every poll with
// the last stable offset and high watermark its fetch reported.
class history_reader {
public:
  history_reader(const workload_context& ctx, std::string name, isolation_level iso,
                 std::vector<topic_partition> partitions, workload_counters& counters)
    : ctx_(ctx), name_(std::move(name)), iso_(iso), partitions_(std::move(partitions)),
      counters_(counters) {}

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }

private:
  void run() {
    admin_loop(ctx_, stop_, "5000", 50, [this](admin_client& admin) {
      for (auto& tp : partitions_)
        if (!stop_)
          poll(admin, tp);
    });
  }

  void poll(admin_client& admin, const topic_partition& tp) {
    auto& pos = positions_[tp];
    auto r = admin.fetch(tp, pos, iso_);
    if (!r.ok())
      return;
    auto batches = v2::decode_all(r->records);
    if (!batches.ok())
      return;
    auto f = filter_fetched(tp, pos, *batches, r->aborted_transactions, iso_, 100000);
    if (f.records.empty() && f.next_offset == pos)
      return;
    sim::poll_event e{name_, iso_, tp, pos, {}, r->last_stable_offset, r->high_watermark};
    for (auto& rec : f.records)
      e.records.push_back({rec.offset, std::stoull(rec.value)});
    counters_.read += static_cast<int64_t>(e.records.size());
    pos = f.next_offset;
    ctx_.rec->record(std::move(e));
  }

  workload_context ctx_;
  std::string name_;
  isolation_level iso_;
  std::vector<topic_partition> partitions_;
  workload_counters& counters_;
  std::map<topic_partition, int64_t> positions_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

status create(admin_client& admin, const std::string& topic, int32_t partitions, int32_t rf) {
  auto st = admin.create_topic(topic, partitions, {}, rf);
  if (!st.ok() && st.code() != error_code::topic_already_exists)
    return st;
  // Wait until every partition has a leader, so that the first sends do
  // not spend their time on metadata.
  auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    auto d = admin.describe_topics({topic});
    bool ready = d.ok() && d->size() == 1
                 && static_cast<int32_t>((*d)[0].partitions.size()) == partitions;
    if (ready)
      for (auto& p : (*d)[0].partitions)
        ready = ready && p.leader >= 0;
    if (ready)
      return {};
    std::this_thread::sleep_for(200ms);
  }
  return {error_code::request_timed_out, "topic " + topic + " has no leader for every partition"};
}

std::vector<topic_partition> partitions_of(const std::string& topic, int32_t n) {
  std::vector<topic_partition> out;
  for (int32_t p = 0; p < n; ++p)
    out.push_back({topic, p});
  return out;
}

// A workload on one topic of its own: writer threads (run_writer, one per
// producer) and a reader that records its polls.
class topic_workload : public workload {
public:
  topic_workload(const workload_context& ctx, std::string topic, const char* reader,
                 isolation_level iso)
    : ctx_(ctx), topic_(std::move(topic)),
      reader_(ctx, reader, iso, partitions_of(topic_, ctx.opts->partitions), counters) {}

  status setup(admin_client& admin) override {
    return create(admin, topic_, ctx_.opts->partitions, ctx_.replication_factor);
  }
  void start() override {
    for (int32_t k = 0; k < ctx_.opts->producers; ++k)
      writers_.emplace_back([this, k] { run_writer(k); });
    reader_.start();
  }
  void stop() override {
    stop_ = true;
    for (auto& t : writers_)
      t.join();
    writers_.clear();
    reader_.stop();
  }
  std::vector<topic_partition> partitions() const override {
    return partitions_of(topic_, ctx_.opts->partitions);
  }
  std::string topic() const override { return topic_; }

protected:
  virtual void run_writer(int32_t k) = 0;

  workload_context ctx_;
  std::string topic_;
  history_reader reader_;
  std::vector<std::thread> writers_;
  std::atomic<bool> stop_{false};
};

// -- bank ----------------------------------------------------------------------

// Money moves between accounts on different partitions, one or more
// transfers per transaction: each transfer is a debit record on the
// source account's partition and a credit record on the destination's.
// Value: "<value id>|<transfer id>|<account>|<delta>".
class bank_workload : public topic_workload {
public:
  explicit bank_workload(const workload_context& ctx)
    : topic_workload(ctx, "drill-bank-" + ctx.run_id, "bank-reader",
                     isolation_level::read_committed) {}

  std::vector<std::string> transactional_ids() const override {
    std::vector<std::string> out;
    for (int32_t k = 0; k < ctx_.opts->producers; ++k)
      out.push_back(id(k));
    return out;
  }
  std::vector<std::string> groups() const override { return transactional_ids(); }
  void pause_producer(int64_t ms) override {
    pause_outcome_ = pause_pending;
    pause_ms_ = ms;
  }
  pause_outcome paused_outcome() const override { return pause_outcome_; }

  std::vector<anomaly> final_checks(admin_client& admin, std::vector<std::string>& checks) override;

private:
  std::string id(int32_t k) const { return topic_ + "-" + std::to_string(k); }
  topic_partition account_tp(int32_t account) const {
    return {topic_, account % ctx_.opts->partitions};
  }

  std::unique_ptr<producer> make_producer(const std::string& tid) {
    try {
      auto p = std::make_unique<producer>(client_props(
        ctx_, {{"transactional.id", tid},
               {"transaction.timeout.ms", std::to_string(ctx_.opts->transaction_timeout_ms)},
               {"delivery.timeout.ms", "30000"},
               {"request.timeout.ms", "5000"},
               {"max.block.ms", "20000"}}));
      p->init_transactions();
      auto [pid, epoch] = identity(*p);
      ctx_.rec->record(sim::init_transactions_event{tid, pid, epoch});
      return p;
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  void send_leg(producer& p, const std::string& tid, sim::txn_number txn, int64_t transfer,
                int32_t account, int64_t delta) {
    auto vid = ctx_.rec->next_value();
    auto tp = account_tp(account);
    auto [pid, epoch] = identity(p);
    ctx_.rec->record(sim::send_event{tid, tid, pid, epoch, tp, vid, txn});
    ++counters.sent;
    producer_record r;
    r.topic = tp.topic;
    r.partition = tp.partition;
    r.key = "account-" + std::to_string(account);
    r.value = std::to_string(vid) + "|" + std::to_string(transfer) + "|" + std::to_string(account)
              + "|" + std::to_string(delta);
    send_recorded(p, r, vid, *ctx_.rec, counters);
  }

  // One end of a transaction: commit or abort, recorded as the
  // application saw it.
  void end(producer& p, const std::string& tid, sim::txn_number txn, control_type what) {
    try {
      if (what == control_type::commit)
        p.commit_transaction();
      else
        p.abort_transaction();
    } catch (const kafka_exception& e) {
      ctx_.rec->record(sim::end_txn_event{tid, txn, what, e.code(), no_producer_id,
                                          no_producer_epoch});
      throw;
    }
    auto [pid, epoch] = identity(p);
    ctx_.rec->record(sim::end_txn_event{tid, txn, what, error_code::none, pid, epoch});
    if (what == control_type::commit) {
      ++counters.committed;
      counters.last_commit_ms = ctx_.rec->now_ms();
    } else {
      ++counters.aborted;
    }
  }

  void run_writer(int32_t k) override {
    auto tid = id(k);
    std::mt19937_64 rng{ctx_.opts->seed * 7919 + static_cast<uint64_t>(k)};
    std::unique_ptr<producer> p;
    sim::txn_number txn = 0;
    int64_t next_transfer = static_cast<int64_t>(k) << 40;
    const auto accounts = std::max<int32_t>(2, ctx_.opts->accounts);
    bool paused = false; // this transaction is the paused one
    while (!stop_) {
      if (!p && !(p = make_producer(tid))) {
        nap(500, stop_);
        continue;
      }
      auto n = txn++;
      bool in_end = false;
      auto what = rng() % 10 == 0 ? control_type::abort : control_type::commit;
      try {
        p->begin_transaction();
        ctx_.rec->record(sim::txn_begin_event{tid, n});
        int transfers = 1 + static_cast<int>(rng() % 3);
        for (int i = 0; i < transfers; ++i) {
          auto from = static_cast<int32_t>(rng() % accounts);
          auto to = static_cast<int32_t>(rng() % (accounts - 1));
          if (to >= from)
            ++to;
          auto amount = 1 + static_cast<int64_t>(rng() % 100);
          auto transfer = next_transfer++;
          send_leg(*p, tid, n, transfer, from, -amount);
          send_leg(*p, tid, n, transfer, to, amount);
        }
        if (auto ms = pause_ms_.exchange(0); ms > 0) {
          paused = true;
          nap(ms, stop_);
        }
        topic_partition progress{topic_, 0};
        auto offset = static_cast<int64_t>(n) + 1;
        p->send_offsets_to_transaction({{progress, offset}}, tid);
        ctx_.rec->record(sim::txn_offsets_event{tid, n, tid, progress, offset});
        in_end = true;
        end(*p, tid, n, what);
        if (paused)
          pause_outcome_ = pause_no_effect;
        paused = false;
      } catch (const kafka_exception& e) {
        if (paused)
          pause_outcome_ = pause_fenced;
        paused = false;
        if (e.is_fatal()) {
          ++counters.fenced;
          p.reset();
          continue;
        }
        if (in_end)
          ++counters.failed;
        try {
          end(*p, tid, n, control_type::abort);
        } catch (const kafka_exception&) {
          ++counters.failed;
          p.reset(); // a new instance fences this one and ends its transaction
        }
      } catch (const std::exception&) {
        ++counters.failed;
        p.reset();
      }
    }
  }

  std::atomic<int64_t> pause_ms_{0};
  std::atomic<pause_outcome> pause_outcome_{pause_pending};
};

std::vector<anomaly> bank_workload::final_checks(admin_client& admin,
                                                 std::vector<std::string>& checks) {
  (void)admin;
  checks.insert(checks.end(),
                {"bank_total_changed", "partial_transfer", "duplicate_leg", "malformed_record"});
  // What an application sees: a read_committed consumer over every
  // account partition from the beginning to the last stable offset.
  consumer c{client_props(ctx_, {{"isolation.level", "read_committed"},
                                 {"auto.offset.reset", "earliest"}})};
  auto tps = partitions();
  c.assign(tps);
  std::map<topic_partition, int64_t> ends;
  for (auto& tp : tps) {
    c.seek(tp, 0);
    ends[tp] = c.end_offset(tp);
  }
  auto done = [&] {
    for (auto& [tp, end] : ends)
      if (c.position(tp) < end)
        return false;
    return true;
  };
  std::vector<std::string> values;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!done() && std::chrono::steady_clock::now() < deadline)
    for (auto& r : c.poll(500ms))
      values.push_back(std::move(r.value));
  counters.read += static_cast<int64_t>(values.size());
  auto out = bank_anomalies(values);
  if (!done())
    out.push_back({"bank_total_changed", "the read_committed consumer did not reach the last "
                                         "stable offsets within 60 s"});
  return out;
}

// -- idempotent ----------------------------------------------------------------

// Idempotent producers (no transactions) with retries, acks=all: every
// acknowledged record must be in the log exactly once, in order.
class idempotent_workload : public topic_workload {
public:
  explicit idempotent_workload(const workload_context& ctx)
    : topic_workload(ctx, "drill-idempotent-" + ctx.run_id, "idempotent-reader",
                     isolation_level::read_uncommitted) {}

  bool transactional() const override { return false; }
  std::vector<anomaly> final_checks(admin_client&, std::vector<std::string>&) override {
    return {};
  }

private:
  void run_writer(int32_t k) override {
    auto client = topic_ + "-" + std::to_string(k);
    std::unique_ptr<producer> p;
    int since_flush = 0;
    while (!stop_) {
      try {
        if (!p)
          p = std::make_unique<producer>(client_props(ctx_, {{"enable.idempotence", "true"},
                                                             {"acks", "all"},
                                                             {"delivery.timeout.ms", "30000"},
                                                             {"request.timeout.ms", "5000"},
                                                             {"max.block.ms", "20000"}}));
        auto vid = ctx_.rec->next_value();
        topic_partition tp{topic_, static_cast<int32_t>(vid % ctx_.opts->partitions)};
        auto [pid, epoch] = identity(*p);
        ctx_.rec->record(sim::send_event{client, std::nullopt, pid, epoch, tp, vid, std::nullopt});
        ++counters.sent;
        producer_record r;
        r.topic = tp.topic;
        r.partition = tp.partition;
        r.key = "k" + std::to_string(vid);
        r.value = std::to_string(vid);
        send_recorded(*p, r, vid, *ctx_.rec, counters);
        if (++since_flush >= 20) {
          since_flush = 0;
          p->flush();
        }
      } catch (const kafka_exception& e) {
        // A failed flush: the idempotent producer bumped its epoch and
        // goes on (KIP-360); a fatal error needs a new producer.
        ++counters.failed;
        if (e.is_fatal())
          p.reset();
      } catch (const std::exception&) {
        p.reset();
        nap(500, stop_);
      }
    }
    if (p)
      try {
        p->flush();
      } catch (const std::exception&) {
      }
  }

};

// -- northwind -----------------------------------------------------------------

// The Northwind pipeline against the cluster (examples/northwind): the
// transactional load, the consume-transform-produce processor with its
// own crashes, and the read_committed result compared with the sequential
// one. Progress is watched through the output topics' last stable offsets.
class northwind_workload : public workload {
public:
  explicit northwind_workload(const workload_context& ctx) : ctx_(ctx) {}

  status setup(admin_client&) override {
    try {
      northwind::create_topics(northwind::cluster_access::remote(ctx_.bootstrap_servers));
    } catch (const std::exception& e) {
      return {error_code::unknown_server_error, std::string("creating the topics: ") + e.what()};
    }
    return {};
  }

  void start() override {
    job_ = std::thread([this] {
      northwind::job_options o;
      o.input_dir = ctx_.opts->northwind_dir;
      o.seed = ctx_.opts->seed;
      o.crashes = 4;
      o.node_restarts = 0;
      // One order per transaction: the job then lasts long enough for the
      // faults to meet it.
      o.orders_per_transaction = 1;
      try {
        report_ = northwind::run_job_against(ctx_.bootstrap_servers, o);
      } catch (const std::exception& e) {
        error_ = e.what();
      }
      done_ = true;
    });
    watcher_ = std::thread([this] { watch(); });
  }

  void stop() override {
    if (job_.joinable())
      job_.join();
    stop_ = true;
    if (watcher_.joinable())
      watcher_.join();
  }

  bool finished() const override { return done_; }

  std::vector<topic_partition> partitions() const override {
    return {{northwind::orders_topic, 0},    {northwind::confirmed_topic, 0},
            {northwind::confirmed_topic, 1}, {northwind::confirmed_topic, 2},
            {northwind::rejected_topic, 0},  {northwind::stock_topic, 0},
            {northwind::stock_topic, 1},     {northwind::stock_topic, 2},
            {northwind::stock_topic, 3}};
  }
  std::vector<std::string> transactional_ids() const override {
    return {northwind::processor_id, "order-loader"};
  }
  std::vector<std::string> groups() const override { return {northwind::processor_id}; }
  std::string topic() const override { return northwind::confirmed_topic; }
  bool values_are_ids() const override { return false; }

  std::vector<anomaly> final_checks(admin_client&, std::vector<std::string>& checks) override {
    checks.push_back("northwind_result_differs");
    if (!error_.empty())
      return {{"northwind_result_differs", "the job did not finish: " + error_}};
    counters.committed = report_.transactions_committed;
    if (!report_.equal())
      return {{"northwind_result_differs",
               "the read_committed outputs differ from the sequential result"}};
    return {};
  }

private:
  // The sum of the output partitions' last stable offsets: each rise is a
  // commit that became visible.
  void watch() {
    int64_t last = -1;
    admin_loop(ctx_, stop_, "2000", 200, [&](admin_client& admin) {
      int64_t sum = 0;
      for (auto& tp : partitions()) {
        auto r = admin.fetch(tp, 0, isolation_level::read_committed, 1);
        if (r.ok())
          sum += r->last_stable_offset;
      }
      if (last >= 0 && sum > last)
        counters.last_commit_ms = ctx_.rec->now_ms();
      last = std::max(last, sum);
    });
  }

  workload_context ctx_;
  std::thread job_;
  std::thread watcher_;
  std::atomic<bool> done_{false};
  std::atomic<bool> stop_{false};
  northwind::job_report report_;
  std::string error_;
};

} // namespace

std::vector<anomaly> bank_anomalies(const std::vector<std::string>& values) {
  std::vector<anomaly> out;
  std::map<int64_t, int> legs; // transfer -> legs read
  std::set<std::string> seen;
  int64_t total = 0;
  for (auto& v : values) {
    auto first = v.find('|');
    auto second = first == std::string::npos ? first : v.find('|', first + 1);
    auto third = second == std::string::npos ? second : v.find('|', second + 1);
    int64_t transfer = 0;
    int64_t delta = 0;
    try {
      if (third == std::string::npos)
        throw std::invalid_argument("shape");
      transfer = std::stoll(v.substr(first + 1, second - first - 1));
      delta = std::stoll(v.substr(third + 1));
    } catch (const std::exception&) {
      out.push_back({"malformed_record", "'" + v + "' is not a bank record"});
      continue;
    }
    if (!seen.insert(v.substr(0, first)).second) {
      out.push_back({"duplicate_leg", "record '" + v + "' read twice"});
      continue;
    }
    ++legs[transfer];
    total += delta;
  }
  if (total != 0)
    out.push_back({"bank_total_changed", "the committed balances add up to "
                                           + std::to_string(total) + ", not 0, over "
                                           + std::to_string(legs.size()) + " transfers"});
  for (auto& [transfer, n] : legs)
    if (n != 2)
      out.push_back({"partial_transfer", "transfer " + std::to_string(transfer) + " shows "
                                           + std::to_string(n) + " of its 2 legs to read_committed"});
  return out;
}

std::unique_ptr<workload> make_bank(const workload_context& ctx) {
  return std::make_unique<bank_workload>(ctx);
}
std::unique_ptr<workload> make_idempotent(const workload_context& ctx) {
  return std::make_unique<idempotent_workload>(ctx);
}
std::unique_ptr<workload> make_northwind(const workload_context& ctx) {
  return std::make_unique<northwind_workload>(ctx);
}

} // namespace caftx::drill
