// Internal to caftx-drill: the workloads (drill.hpp), each running real
// clients on threads of its own and recording what they were told into a
// history (tools/sim/history.hpp) for the checker.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/drill/drill.hpp"
#include "tools/sim/history.hpp"

namespace caftx {
class admin_client;
}

namespace caftx::drill {

/// The history of a drill, shared by the client threads: each observation
/// is stamped with the milliseconds since the drill's start.
class recorder {
public:
  recorder() : start_(std::chrono::steady_clock::now()) {}
  int64_t now_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now()
                                                                 - start_)
      .count();
  }
  void record(sim::event_body body) {
    std::lock_guard<std::mutex> guard{mu_};
    history_.record(now_ms(), std::move(body));
  }
  /// The next value id (unique over the drill).
  sim::value_id next_value() { return ++last_value_; }
  sim::history take() {
    std::lock_guard<std::mutex> guard{mu_};
    return std::move(history_);
  }

private:
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  sim::history history_;
  std::atomic<sim::value_id> last_value_{0};
};

/// Counters every workload keeps (read by the progress display).
struct workload_counters {
  std::atomic<int64_t> committed{0};
  std::atomic<int64_t> aborted{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> fenced{0};
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> acknowledged{0};
  std::atomic<int64_t> read{0};
  /// recorder time of the last commit and the last acknowledgement.
  std::atomic<int64_t> last_commit_ms{-1};
  std::atomic<int64_t> last_ack_ms{-1};
};

class workload {
public:
  virtual ~workload() = default;
  /// Creates the workload's topics (names made unique per run).
  virtual status setup(admin_client& admin) = 0;
  /// Starts the client threads.
  virtual void start() = 0;
  /// Stops the writers (each finishes or aborts its transaction), then
  /// the readers; joins every thread.
  virtual void stop() = 0;
  /// True once the workload's own work is done (northwind: the job
  /// finished); bank and idempotent run until stopped.
  virtual bool finished() const { return false; }
  /// The partitions whose final logs the checker judges.
  virtual std::vector<topic_partition> partitions() const = 0;
  /// The transactional ids and groups the workload uses.
  virtual std::vector<std::string> transactional_ids() const { return {}; }
  virtual std::vector<std::string> groups() const { return {}; }
  /// The topic kill-leader targets.
  virtual std::string topic() const = 0;
  /// Asks one producer to stop inside its next transaction for `ms`.
  virtual void pause_producer(int64_t ms) { (void)ms; }
  /// Whether the checker's value ids are the records' values (false:
  /// northwind, whose records are the pipeline's own; the final logs are
  /// then judged for density, stuck transactions and replicas only).
  virtual bool values_are_ids() const { return true; }
  /// Whether progress means commits (else acknowledgements).
  virtual bool transactional() const { return true; }
  /// The workload's own invariants at the end (after the settle): the
  /// checks' names go to `checks`.
  virtual std::vector<anomaly> final_checks(admin_client& admin,
                                            std::vector<std::string>& checks) = 0;

  workload_counters counters;
};

/// The context every workload gets.
struct workload_context {
  std::string bootstrap_servers;
  std::string run_id; // unique per drill: topic and id suffix
  const drill_options* opts = nullptr;
  int32_t replication_factor = 1;
  recorder* rec = nullptr;
};

/// The bank's invariants over what a read_committed consumer read, every
/// record value ("<value id>|<transfer id>|<account>|<delta>") in read
/// order: bank_total_changed (the deltas do not add up to 0),
/// partial_transfer (a transfer shows other than its two legs),
/// duplicate_leg (a value id read twice), malformed_record (a value not
/// of that shape). Pure.
std::vector<anomaly> bank_anomalies(const std::vector<std::string>& values);

std::unique_ptr<workload> make_bank(const workload_context& ctx);
std::unique_ptr<workload> make_idempotent(const workload_context& ctx);
std::unique_ptr<workload> make_northwind(const workload_context& ctx);

} // namespace caftx::drill
