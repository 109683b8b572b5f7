// The benchmark suite of `caftx-bench` (bench/suite.cpp): shared pieces of
// its translation units. No CAF includes here; the units that need an
// actor system include it themselves.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <nlohmann/json.hpp>

#include "bench/stats.hpp"

namespace caftx::bench {

using clock_type = std::chrono::steady_clock;

inline double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// `v` printed with the printf format `f` ("%.2f").
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

/// Appends 4 KiB to a file and fsyncs it, `n` times; the latency of each in
/// milliseconds. The file lives in `dir` (the disk the benchmarks use).
std::vector<double> fsync_appends(const std::string& dir, int n);

/// What every benchmark gets from the driver.
struct context {
  std::string dir;          // scratch directory on the benchmarked disk
  int reps = 5;             // repetitions of each variant, interleaved
  bool quick = false;       // smoke run: tiny sizes and durations
  double scale = 1.0;       // multiplies durations and sizes (quick: small)
  std::string variant_filter; // run only variants whose name contains it (profiling)
  bool json = false;        // --json: print nothing but the JSON object
  /// The storage benchmark: the two log sizes (GB, the smaller first) and
  /// the restarts per size.
  std::vector<double> storage_gb{1, 4};
  int storage_reps = 2;
  /// Floor figures of the opening calibration (ms, puts/s, ...).
  double fsync_p50_ms = 0;
  double caf_round_trip_us = 0;
};

/// One repetition of one variant: its figure and the fsync p50 measured by
/// a probe just before it (slow-disk when above 1 ms).
struct rep_result {
  double value = 0;
  double fsync_p50_ms = 0;
  nlohmann::json extra; // per-repetition details (latency percentiles, ...)
};

/// A measured variant: what the printed line shows.
struct line {
  std::string benchmark;   // "produce", "commit-latency", ...
  std::string variant;     // "txn-100ms 8p 100B"
  std::string unit;        // "records/s", "ms", ...
  bool higher_is_better = true;
  std::vector<rep_result> reps;
  // Ratio of this line's median to something else (another variant or a
  // floor), what that is, the target and whether it is met.
  double ratio = 0;
  std::string ratio_of;    // "/ idempotent 8p 100B", "/ (1 x fsync p50)"
  std::string target;      // "≥ 0.97", "" for lines without one
  bool has_target = false;
  bool met = false;
  std::string note;
  nlohmann::json extra;    // figures of the line beyond the median

  summary stats() const;
  int slow_reps() const;
  double fsync_p50_ms() const; // median over the probes of its repetitions
};

/// Runs `variants` interleaved, each repetition starting one variant later
/// (A B C, B C A, C A B, ...), `reps` times, each run after a
/// fsync probe; `run(i, rep)` returns variant i's figure of repetition rep.
void interleave(const context& ctx, std::vector<line>& variants,
                const std::function<rep_result(size_t variant, int rep)>& run);

/// Sets `l`'s ratio (to what `of` names) and its target: met when the
/// ratio is >= `bound` (`at_least`) or <= it. Nothing for a ratio that is
/// not finite and positive (the compared variant was left out).
void set_target(line& l, double ratio, const std::string& of, double bound, bool at_least);

/// Prints a line in the table's format (or nothing under --json) and keeps
/// it for the JSON output.
void report(const line& l);

// The benchmarks (bench/cluster.cpp, bench/storage.cpp, bench/micro.cpp); each reports its lines.
void bench_produce_modes(const context& ctx);
/// Time per send with 100 and 10 000 partitions (one record each), side by side.
void bench_produce_partitions(const context& ctx);
void bench_commit_latency(const context& ctx);
void bench_coordinator_throughput(const context& ctx);
void bench_fetch_isolation(const context& ctx);
void bench_consume_transform_produce(const context& ctx);
/// bench/multinode.cpp: transactions over caftx-node processes on a real
/// ZooKeeper, three nodes against one, with the floor of the same run.
void bench_multinode(const context& ctx);
/// Failover times on three replicated nodes (bench/multinode.cpp).
void bench_failover(const context& ctx);
/// bench/kafka_wire.cpp: librdkafka against a caftx-node over Kafka's wire
/// protocol, against librdkafka's mock cluster, and caftx's own client.
void bench_kafka_wire(const context& ctx);
/// bench/storage.cpp: each node in a child process (storage_child_main).
void bench_storage(const context& ctx);
/// The hidden subcommand `caftx-bench --storage-child ARGS...` (the
/// arguments after it): one node of the storage benchmark; prints one JSON
/// object, returns the exit status.
int storage_child_main(int argc, char** argv);
/// Google Benchmark micro-benchmarks of the hot paths; `filter` as
/// --benchmark_filter.
void bench_micro(const context& ctx, const std::string& filter);

/// The process's actor system (message types registered, the default
/// scheduler on this machine's cores), created on first use.
caf::actor_system& shared_system();
/// Shuts the actor system down (before main returns).
void stop_shared_system();

// The floor (bench/floor.cpp).
struct floor_figures {
  std::vector<double> fsync_ms;   // each 4 KiB append + fsync
  double leveldb_sync_1 = 0;      // synchronous puts/s, one writer
  double leveldb_sync_64 = 0;     // synchronous puts/s, 64 writers
  double caf_round_trip_us = 0;   // event-based request/response, sequential
  double caf_blocking_us = 0;     // scoped_actor request/receive, sequential
};
floor_figures measure_floor(const context& ctx);

} // namespace caftx::bench
