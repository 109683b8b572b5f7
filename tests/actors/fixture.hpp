// A caftx node on CAF's deterministic test scheduler: one thread, simulated
// time, durable writes done inline. Requests are sent from a hidden scoped
// actor; sched.run() runs every ready actor until nothing is left.
#pragma once

#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <leveldb/env.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "actors/broker/node.hpp"
#include "actors/client/client.hpp"
#include "runtime/messages.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx::testing {

struct deterministic_config : caf::actor_system_config {
  deterministic_config() {
    register_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

// Fails every append and sync of LevelDB's log once `fail` is set, as a
// dying disk would; reads go on working.
class failing_env : public leveldb::EnvWrapper {
public:
  failing_env() : leveldb::EnvWrapper(leveldb::Env::Default()) {}
  std::atomic<bool> fail{false};
  std::atomic<int64_t> syncs{0}; // successful syncs: one per durable write

  leveldb::Status NewWritableFile(const std::string& name, leveldb::WritableFile** out) override {
    auto s = target()->NewWritableFile(name, out);
    if (s.ok())
      *out = new file(*out, fail, syncs);
    return s;
  }

private:
  class file : public leveldb::WritableFile {
  public:
    file(leveldb::WritableFile* f, std::atomic<bool>& fail, std::atomic<int64_t>& syncs)
      : f_(f), fail_(fail), syncs_(syncs) {}
    ~file() override { delete f_; }
    leveldb::Status Append(const leveldb::Slice& data) override {
      return fail_ ? leveldb::Status::IOError("injected") : f_->Append(data);
    }
    leveldb::Status Close() override { return f_->Close(); }
    leveldb::Status Flush() override { return f_->Flush(); }
    leveldb::Status Sync() override {
      if (fail_)
        return leveldb::Status::IOError("injected");
      auto s = f_->Sync();
      if (s.ok())
        ++syncs_;
      return s;
    }

  private:
    leveldb::WritableFile* f_;
    std::atomic<bool>& fail_;
    std::atomic<int64_t>& syncs_;
  };
};

class node_fixture : public ::testing::Test {
protected:
  deterministic_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched
    = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  caf::scoped_actor self{sys, true};
  std::string dir;
  int64_t now_ms = 1700000000000;
  node_config ncfg;
  failing_env fenv;             // outlives the node's store
  leveldb::Env* env = nullptr; // the store's environment; nullptr = the real disk, &fenv
  /// node_options::network for the next start_node() (empty: none).
  std::function<caf::actor(const std::string&, const caf::actor&)> network;
  /// node_options::metrics for the next start_node() (null: none).
  std::shared_ptr<metrics::registry> metrics;
  std::unique_ptr<node> n;

  node_fixture() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = (std::filesystem::path(::testing::TempDir())
           / ("caftx-actor-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "."
              + info->name()))
            .string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    ncfg.data_dir = dir;
  }

  ~node_fixture() override {
    stop_node();
    std::filesystem::remove_all(dir);
  }

  void start_node() {
    node_options o;
    o.background_writer = false;
    o.wait_on_stop = false;
    o.clock_ms = [this] { return now_ms; };
    o.env = env;
    o.network = network;
    o.metrics = metrics;
    o.storage_reopen_backoff_ms = 0; // real time does not pass here
    auto started = node::start(sys, ncfg, o);
    if (!started.ok())
      throw std::runtime_error("node did not start: " + started.error().to_string());
    n = std::move(started).value();
    sched.run();
  }

  /// Kills every actor of the node (as a crash would: nothing is flushed
  /// beyond what was acknowledged) and lets them terminate.
  void stop_node() {
    if (!n)
      return;
    n->stop();
    sched.run();
    n.reset();
    sched.run();
  }

  template <class Response, class Handle, class Request>
  Response call(const Handle& dest, Request req) {
    auto handle = self->request(dest, caf::infinite, std::move(req));
    sched.run();
    Response result;
    bool got = false;
    handle.receive([&](Response& r) { result = std::move(r); got = true; },
                   [&](caf::error& e) { ADD_FAILURE() << "no reply: " << sys.render(e); });
    EXPECT_TRUE(got);
    return result;
  }

  /// Sends `req` and runs the scheduler only until its reply arrived: what
  /// the receiver started meanwhile (markers, say) is still on its way.
  template <class Response, class Handle, class Request>
  Response call_until_reply(const Handle& dest, Request req) {
    auto handle = self->request(dest, caf::infinite, std::move(req));
    while (self->mailbox().empty() && sched.has_job())
      sched.run_once();
    Response result;
    handle.receive([&](Response& r) { result = std::move(r); },
                   [&](caf::error& e) { ADD_FAILURE() << "no reply: " << sys.render(e); });
    return result;
  }

  caf::actor broker() { return n->broker(); }

  /// The dynamic handle of a supervised actor, for the supervisor's own
  /// requests (supervisor_stats_request, kill_child_request), which are not
  /// part of the child's typed interface.
  template <class Handle>
  static caf::actor supervisor(const Handle& h) {
    return caf::actor_cast<caf::actor>(h);
  }

  caf::actor coordinator_for(const std::string& transactional_id) {
    auto r = call<find_coordinator_response>(broker(), find_coordinator_request{1, transactional_id});
    EXPECT_EQ(r.error, error_code::none);
    return r.coordinator;
  }

  partition_actor leader(const std::string& topic, int32_t partition) {
    auto r = call<metadata_response>(broker(), metadata_request{{topic}});
    EXPECT_EQ(r.topics.size(), 1u);
    return r.topics.at(0).partitions.at(partition);
  }

  void create_topic(const std::string& name, int32_t partitions) {
    auto r = call<txn_response>(broker(), create_topic_request{name, partitions, {}});
    ASSERT_EQ(r.error, error_code::none) << r.message;
  }

  /// InitProducerId, repeating it while the coordinator answers
  /// CONCURRENT_TRANSACTIONS (it is finishing an earlier transaction).
  init_producer_id_response init(const std::string& tid, int32_t timeout_ms = 60000) {
    init_producer_id_request req{true, tid, timeout_ms, no_producer_id, no_producer_epoch};
    auto r = call<init_producer_id_response>(coordinator_for(tid), req);
    for (int i = 0; i < 10 && r.error == error_code::concurrent_transactions; ++i)
      r = call<init_producer_id_response>(coordinator_for(tid), req);
    return r;
  }

  txn_response add(const std::string& tid, const init_producer_id_response& id,
                   std::vector<topic_partition> tps) {
    return call<txn_response>(coordinator_for(tid),
                              add_partitions_to_txn_request{tid, id.pid, id.epoch, std::move(tps)});
  }

  end_txn_response end_raw(const std::string& tid, producer_id pid, producer_epoch epoch,
                           bool commit) {
    return call<end_txn_response>(coordinator_for(tid), end_txn_request{tid, pid, epoch, commit});
  }

  /// EndTxn; on success `id` becomes the identity the reply carries (the
  /// epoch bumped at every EndTxn, KIP-890 part 2). The markers and the
  /// Complete* card are written before it returns.
  end_txn_response end(const std::string& tid, init_producer_id_response& id, bool commit) {
    auto r = end_raw(tid, id.pid, id.epoch, commit);
    if (r.error == error_code::none) {
      id.pid = r.pid;
      id.epoch = r.epoch;
    }
    sched.run();
    return r;
  }

  /// Client time and waiting on this scheduler: a blocked client call
  /// runs the scheduler (and the timers due) until its reply is there.
  client_driver deterministic_driver() {
    client_driver d;
    d.clock_ms = [this] { return now_ms; };
    d.sleep_ms = [this](int64_t ms) {
      now_ms += ms;
      sched.advance_time(std::chrono::milliseconds(ms));
      sched.run();
    };
    d.await = [this](caf::scoped_actor& waiter, caf::message_id reply) {
      for (;;) {
        while (auto* e = waiter->mailbox().peek()) {
          if (e->mid == reply)
            return;
          waiter->dequeue();
        }
        if (sched.has_job())
          sched.run_once();
        else if (!sched.trigger_timeout())
          FAIL() << "a client call waits for a reply that cannot come";
      }
    };
    return d;
  }

  /// A batch whose records carry the current simulated time.
  record_batch batch(producer_id pid, producer_epoch epoch, int32_t base_sequence,
                     std::vector<std::string> values, bool transactional) const {
    record_batch b;
    b.pid = pid;
    b.epoch = epoch;
    b.base_sequence = base_sequence;
    b.attributes = transactional ? attr_transactional : 0;
    for (auto& v : values)
      b.records.push_back({"k", v, {}, now_ms});
    return b;
  }

  /// Produces `b`, encoded as the producer session does (RecordBatch v2).
  produce_response produce(const topic_partition& tp, const std::string& tid, const record_batch& b) {
    return call<produce_response>(leader(tp.topic, tp.partition), produce_request{tp, tid, v2::encode(b)});
  }

  fetch_response fetch(const topic_partition& tp, int64_t offset, isolation_level iso) {
    return call<fetch_response>(leader(tp.topic, tp.partition), fetch_request{tp, offset, 1 << 20, iso});
  }

  /// The batches of a fetch response, decoded (CRCs checked).
  static std::vector<record_batch> batches_of(const fetch_response& r) {
    auto b = v2::decode_all(r.records);
    EXPECT_TRUE(b.ok()) << b.error().to_string();
    return b.ok() ? std::move(b).value() : std::vector<record_batch>{};
  }

  /// Values of the data records a consumer with `iso` would see from `from`.
  std::vector<std::string> visible_values(const topic_partition& tp, isolation_level iso,
                                          int64_t from = 0);

  describe_transaction_response describe(const std::string& tid) {
    return call<describe_transaction_response>(coordinator_for(tid), describe_transaction_request{tid});
  }
};

} // namespace caftx::testing
