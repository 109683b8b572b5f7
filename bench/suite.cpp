// caftx-bench: every benchmark of issue 6 in one process run.
//
// Opens and closes with a floor calibration of this machine (fsync of 4 KiB
// appends, LevelDB synchronous puts from 1 and 64 writers, a CAF local
// round trip), and in between runs, on an embedded node with 4-partition
// topics:
//   produce            plain vs idempotent vs transactional producers
//   commit-latency     EndTxn latency, 1 record in each of 1, 4, 16 partitions
//   coordinator        committed transactions/s of one shard, 1/8/64 producers
//   fetch              read_committed vs read_uncommitted, 0 % / 10 % aborted
//   ctp                consume-transform-produce: exactly-once vs at-least-once
//   storage            a node holding 1 GB and 4 GB (--storage-gb): memory,
//                      start time, reads of the oldest data (bench/storage.cpp;
//                      each node in a child process, fewer repetitions)
//   micro              Google Benchmark micro-benchmarks of the hot paths
// The variants a benchmark compares run interleaved (A B C A B C ...), each
// repetition after a short fsync probe; a repetition taken while the probe's
// p50 is above 1 ms is counted as slow-disk. Each line prints the median,
// min-max and the ratio to the compared variant or to the floor. This
// machine is shared and noisy: only ratios measured side by side are meant
// to be compared between runs.
//
// Usage: caftx-bench [--json] [--reps N] [--quick] [--only LIST] [--dir DIR]
//                    [--micro-filter REGEX] [--variant TEXT]
//                    [--storage-gb SMALL,LARGE] [--storage-reps N]
#include "bench/suite.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

namespace caftx::bench {

namespace {

constexpr double slow_disk_ms = 1.0;
bool json_output = false;
nlohmann::json json_lines = nlohmann::json::array();

} // namespace

std::vector<double> fsync_appends(const std::string& dir, int n) {
  auto path = dir + "/fsync-probe";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open " + path);
  std::string block(4096, 'x');
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto t0 = clock_type::now();
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())
        || ::fsync(fd) != 0) {
      ::close(fd);
      throw std::runtime_error("write/fsync failed on " + path);
    }
    out.push_back(ms_since(t0));
  }
  ::close(fd);
  ::unlink(path.c_str());
  return out;
}

summary line::stats() const {
  std::vector<double> xs;
  for (auto& r : reps)
    xs.push_back(r.value);
  return summarize(xs);
}

int line::slow_reps() const {
  return static_cast<int>(std::count_if(reps.begin(), reps.end(), [](const rep_result& r) {
    return r.fsync_p50_ms > slow_disk_ms;
  }));
}

double line::fsync_p50_ms() const {
  std::vector<double> xs;
  for (auto& r : reps)
    xs.push_back(r.fsync_p50_ms);
  return summarize(xs).median;
}

void interleave(const context& ctx, std::vector<line>& variants,
                const std::function<rep_result(size_t, int)>& run) {
  // Each repetition starts one variant later (A B C, B C A, C A B, ...), so
  // that no variant always runs first, or always after the same one.
  for (int rep = 0; rep < ctx.reps; ++rep)
    for (size_t k = 0; k < variants.size(); ++k) {
      auto i = (k + static_cast<size_t>(rep)) % variants.size();
      if (!ctx.variant_filter.empty()
          && variants[i].variant.find(ctx.variant_filter) == std::string::npos)
        continue;
      auto probe = percentile(fsync_appends(ctx.dir, ctx.quick ? 3 : 9), 50);
      auto r = run(i, rep);
      r.fsync_p50_ms = probe;
      variants[i].reps.push_back(std::move(r));
    }
}

namespace {

std::string fmt_value(double v) {
  char buf[32];
  if (v == 0)
    std::snprintf(buf, sizeof(buf), "0");
  else if (std::fabs(v) >= 100000)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else if (std::fabs(v) >= 100)
    std::snprintf(buf, sizeof(buf), "%.1f", v);
  else if (std::fabs(v) >= 1)
    std::snprintf(buf, sizeof(buf), "%.2f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

} // namespace

void set_target(line& l, double ratio, const std::string& of, double bound, bool at_least) {
  if (!std::isfinite(ratio) || ratio <= 0)
    return; // the compared variant was left out (--variant)
  l.ratio = ratio;
  l.ratio_of = of;
  l.has_target = true;
  l.target = (at_least ? ">= " : "<= ") + fmt("%.2f", bound);
  l.met = at_least ? ratio >= bound : ratio <= bound;
}

void report(const line& l) {
  if (l.reps.empty()) // left out by --variant
    return;
  auto s = l.stats();
  int slow = l.slow_reps();
  nlohmann::json reps = nlohmann::json::array();
  for (auto& r : l.reps) {
    nlohmann::json j{{"value", r.value}, {"fsync_p50_ms", r.fsync_p50_ms},
                     {"slow_disk", r.fsync_p50_ms > slow_disk_ms}};
    if (!r.extra.is_null())
      j["extra"] = r.extra;
    reps.push_back(std::move(j));
  }
  nlohmann::json j{{"benchmark", l.benchmark}, {"variant", l.variant}, {"unit", l.unit},
                   {"median", s.median}, {"min", s.min}, {"max", s.max},
                   {"repetitions", reps}, {"slow_disk_repetitions", slow},
                   {"fsync_p50_ms", l.fsync_p50_ms()}};
  if (!l.ratio_of.empty()) {
    j["ratio"] = l.ratio;
    j["ratio_of"] = l.ratio_of;
  }
  if (l.has_target) {
    j["target"] = l.target;
    j["met"] = l.met;
  }
  if (!l.note.empty())
    j["note"] = l.note;
  if (!l.extra.is_null())
    j["extra"] = l.extra;
  json_lines.push_back(j);
  if (json_output)
    return;
  std::string range = fmt_value(s.min) + "-" + fmt_value(s.max);
  std::string ratio = l.ratio_of.empty() ? "" : fmt_value(l.ratio) + " " + l.ratio_of;
  std::string target = l.has_target ? l.target + (l.met ? " met" : " NOT met") : "";
  std::printf("%-14s %-28s %11s %23s %-11s %-44s %-16s", l.benchmark.c_str(), l.variant.c_str(),
              fmt_value(s.median).c_str(), range.c_str(), l.unit.c_str(), ratio.c_str(),
              target.c_str());
  if (slow > 0)
    std::printf(" slow-disk %d/%zu", slow, l.reps.size());
  if (!l.note.empty())
    std::printf("  %s", l.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

namespace {

nlohmann::json floor_json(const floor_figures& f) {
  return {{"fsync_4k_p50_ms", percentile(f.fsync_ms, 50)},
          {"fsync_4k_p90_ms", percentile(f.fsync_ms, 90)},
          {"fsync_4k_max_ms", percentile(f.fsync_ms, 100)},
          {"leveldb_sync_puts_per_s_1_writer", f.leveldb_sync_1},
          {"leveldb_sync_puts_per_s_64_writers", f.leveldb_sync_64},
          {"caf_local_round_trip_us", f.caf_round_trip_us},
          {"caf_blocking_round_trip_us", f.caf_blocking_us}};
}

void print_floor(const char* when, const floor_figures& f) {
  if (json_output)
    return;
  std::printf("floor (%s): fsync 4 KiB append p50 %.3f ms (p90 %.3f, max %.2f)%s; "
              "LevelDB sync puts %.0f/s (1 writer), %.0f/s (64 writers); "
              "CAF round trip %.2f us (event-based), %.1f us (blocking caller)\n",
              when, percentile(f.fsync_ms, 50), percentile(f.fsync_ms, 90),
              percentile(f.fsync_ms, 100), percentile(f.fsync_ms, 50) > slow_disk_ms ? " slow-disk" : "",
              f.leveldb_sync_1, f.leveldb_sync_64, f.caf_round_trip_us, f.caf_blocking_us);
  std::fflush(stdout);
}

} // namespace

} // namespace caftx::bench

int main(int argc, char** argv) {
  using namespace caftx::bench;
  // One node of the storage benchmark, in a process of its own (hidden).
  if (argc >= 2 && std::string(argv[1]) == "--storage-child")
    return storage_child_main(argc - 2, argv + 2);
  CLI::App app{"caftx benchmarks: ratios measured side by side in one run"};
  int reps = 5;
  bool quick = false;
  std::string only;
  std::string dir;
  std::string micro_filter = ".";
  app.add_flag("--json", json_output, "print one JSON object instead of the table");
  app.add_option("--reps", reps, "repetitions of each variant, interleaved (default 5)")
    ->check(CLI::Range(1, 100));
  app.add_flag("--quick", quick, "smoke run: one repetition, tiny sizes (not for figures)");
  app.add_option("--only", only,
                 "comma-separated subset of floor,produce,commit,coordinator,fetch,ctp,multinode,failover,"
                 "kafka-wire,storage,micro");
  app.add_option("--dir", dir, "scratch directory on the disk to measure (default: temp dir)");
  app.add_option("--micro-filter", micro_filter, "regex selecting micro-benchmarks");
  std::string variant_filter;
  app.add_option("--variant", variant_filter,
                 "run only the variants whose name contains this text (for profiling; "
                 "ratios to variants left out are meaningless)");
  std::vector<double> storage_gb;
  app.add_option("--storage-gb", storage_gb,
                 "storage: the two log sizes in GB, the smaller first (default 1,4; "
                 "--quick: 2 MB and 8 MB); disk needed: about 1.5 x their sum")
    ->delimiter(',')
    ->expected(2);
  int storage_reps = 2;
  app.add_option("--storage-reps", storage_reps,
                 "storage: restarts of each size, interleaved (default 2; --quick: 1)")
    ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  std::set<std::string> selected;
  {
    std::stringstream ss{only};
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty())
        selected.insert(item);
    for (auto& s : selected)
      if (!std::set<std::string>{"floor", "produce", "commit", "coordinator", "fetch", "ctp",
                                 "multinode", "failover", "kafka-wire", "storage", "micro"}
             .count(s)) {
        std::fprintf(stderr, "caftx-bench: unknown benchmark '%s'\n", s.c_str());
        return 2;
      }
  }
  auto wanted = [&](const char* name) { return selected.empty() || selected.count(name) > 0; };

  context ctx;
  ctx.reps = quick ? 1 : reps;
  ctx.quick = quick;
  ctx.variant_filter = variant_filter;
  ctx.scale = quick ? 0.02 : 1.0;
  ctx.json = json_output;
  if (!storage_gb.empty())
    ctx.storage_gb = storage_gb;
  else if (quick)
    ctx.storage_gb = {2.0 / 1024, 8.0 / 1024};
  ctx.storage_reps = quick ? 1 : storage_reps;
  auto root = dir.empty() ? std::filesystem::temp_directory_path()
                              / ("caftx-bench-" + std::to_string(::getpid()))
                          : std::filesystem::path(dir) / ("caftx-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  ctx.dir = root.string();
  auto started = clock_type::now();
  nlohmann::json out{{"benchmark", "caftx-bench"}, {"repetitions", ctx.reps}, {"quick", quick}};
  int status = 0;
  try {
    auto first = measure_floor(ctx);
    print_floor("start", first);
    out["floor_start"] = floor_json(first);
    ctx.fsync_p50_ms = percentile(first.fsync_ms, 50);
    ctx.caf_round_trip_us = first.caf_round_trip_us;
    if (!json_output)
      std::printf("%-14s %-28s %11s %23s %-11s %-44s %-16s\n", "benchmark", "variant", "median",
                  "min-max", "unit", "ratio", "target");
    if (wanted("produce")) {
      bench_produce_modes(ctx);
      bench_produce_partitions(ctx);
    }
    if (wanted("commit"))
      bench_commit_latency(ctx);
    if (wanted("coordinator"))
      bench_coordinator_throughput(ctx);
    if (wanted("fetch"))
      bench_fetch_isolation(ctx);
    if (wanted("ctp"))
      bench_consume_transform_produce(ctx);
    if (wanted("multinode"))
      bench_multinode(ctx);
    if (wanted("failover"))
      bench_failover(ctx);
    if (wanted("kafka-wire"))
      bench_kafka_wire(ctx);
    if (wanted("storage"))
      bench_storage(ctx);
    if (wanted("micro"))
      bench_micro(ctx, micro_filter);
    auto last = measure_floor(ctx);
    print_floor("end", last);
    out["floor_end"] = floor_json(last);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "caftx-bench: %s\n", e.what());
    status = 1;
  }
  stop_shared_system();
  out["lines"] = json_lines;
  out["seconds"] = ms_since(started) / 1000;
  if (json_output)
    std::printf("%s\n", out.dump(2).c_str());
  else
    std::printf("total %.0f s\n", ms_since(started) / 1000);
  std::filesystem::remove_all(root);
  return status;
}
