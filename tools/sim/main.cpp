// caftx-sim: runs deterministic simulations of a caftx node under faults
// and checks each run's history (tools/sim/simulator.hpp).
//
//   caftx-sim --seed 42            one run, replayable: same seed, same trace
//   caftx-sim --seeds 200          seeds 1..200 (or --first-seed F: F..F+199)
//   caftx-sim --regression FILE    every run listed in FILE ("SEED [FAULT-SCALE] [WORKLOAD]")
//   caftx-sim --fresh 20           20 seeds never run before (random), printed
//   caftx-sim --workload northwind --seeds 20   the Northwind pipeline instead
//   caftx-sim --nodes 3 --seeds 20               a 3-node cluster over a simulated ZooKeeper
//
// Exit status: 0 when every run kept every rule, 1 when one did not (its
// seed and first violated rule are printed), 2 for bad arguments.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "runtime/fault_point.hpp"
#include "tools/sim/simulator.hpp"

namespace {

using namespace caftx::sim;

// A seed: decimal digits only, 0 to 2^64-1 (no sign, no hex, no wrap).
std::optional<uint64_t> parse_seed(const std::string& word) {
  if (word.empty() || word.size() > 20
      || !std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  auto v = std::strtoull(word.c_str(), &end, 10);
  if (errno == ERANGE || end != word.c_str() + word.size())
    return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::string clip(const std::string& word) {
  return word.size() <= 40 ? word : word.substr(0, 40) + "...";
}

struct planned_run {
  uint64_t seed = 0;
  double fault_scale = 1.0;
  std::string workload = "mixed";
  int32_t nodes = 1;
  int32_t fault_model = 4;
};

// One run per line: "SEED [FAULT-SCALE] [WORKLOAD] [nodes=N [model=M]]"
// (the fault scale, workload, cluster size and fault model it failed with;
// 1, mixed, one node and model 4 by default), then an optional '#' comment.
std::vector<planned_run> read_seed_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw CLI::ValidationError("--regression", path + " is not a file");
  std::ifstream in{path};
  if (!in)
    throw CLI::ValidationError("--regression", "cannot open " + path);
  std::vector<planned_run> runs;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto hash = line.find('#');
    if (hash != std::string::npos)
      line.resize(hash);
    std::istringstream ls{line};
    std::string word;
    if (!(ls >> word))
      continue;
    auto where = path + ":" + std::to_string(n) + ": ";
    planned_run r;
    auto parsed = parse_seed(word);
    if (!parsed)
      throw CLI::ValidationError("--regression",
                                 where + "'" + clip(word) + "' is not a seed (0 to 2^64-1)");
    r.seed = *parsed;
    bool scale_seen = false;
    bool workload_seen = false;
    bool nodes_seen = false;
    bool model_seen = false;
    while (ls >> word) {
      if (word.compare(0, 6, "model=") == 0 && nodes_seen && !model_seen) {
        auto m = word.substr(6);
        if (m != "1" && m != "2" && m != "3" && m != "4")
          throw CLI::ValidationError("--regression", where + "'" + clip(word)
                                                       + "': model is 1, 2, 3 or 4");
        r.fault_model = std::stoi(m);
        model_seen = true;
        continue;
      }
      if (word.compare(0, 6, "nodes=") == 0 && !nodes_seen) {
        auto n = word.substr(6);
        if (n != "1" && n != "3" && n != "4" && n != "5")
          throw CLI::ValidationError("--regression", where + "'" + clip(word)
                                                       + "': nodes is 1, 3, 4 or 5");
        r.nodes = std::stoi(n);
        nodes_seen = true;
        continue;
      }
      if (nodes_seen)
        throw CLI::ValidationError("--regression", where + "unexpected '" + clip(word) + "'");
      if ((word == "mixed" || word == "northwind") && !workload_seen) {
        r.workload = word;
        workload_seen = true;
        continue;
      }
      if (scale_seen || workload_seen)
        throw CLI::ValidationError("--regression", where + "unexpected '" + clip(word) + "'");
      try {
        size_t used = 0;
        r.fault_scale = std::stod(word, &used);
        if (used != word.size() || !std::isfinite(r.fault_scale) || r.fault_scale < 0
            || r.fault_scale > 100)
          throw std::invalid_argument(word);
      } catch (const std::exception&) {
        throw CLI::ValidationError("--regression", where + "'" + clip(word)
                                                     + "' is not a fault scale (0 to 100) "
                                                       "nor a workload (mixed, northwind)");
      }
      scale_seen = true;
    }
    runs.push_back(r);
  }
  return runs;
}

std::string fmt_scale(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-sim: deterministic simulation of a caftx node under faults, "
               "with a history checker"};
  std::string seed_text;
  uint64_t seeds = 0;
  std::string first_seed_text = "1";
  uint64_t fresh = 0;
  std::string regression;
  int64_t active_ms = 20000;
  bool no_faults = false;
  std::string workload_name = "mixed";
  std::string northwind_dir = CAFTX_NORTHWIND_DIR;
  double fault_scale = 1.0;
  bool verbose = false;
  bool json = false;
  bool dump = false;
  int32_t nodes = 1;
  int32_t fault_model = 4;
  auto seed_check = CLI::Validator(
    [](std::string& x) {
      return parse_seed(x) ? std::string{} : "'" + clip(x) + "' is not a seed (0 to 2^64-1)";
    },
    "SEED");
  auto* seed_opt = app.add_option("--seed", seed_text, "Run this one seed (replays it exactly)")
                     ->check(seed_check);
  auto* seeds_opt = app.add_option("--seeds", seeds, "Run this many seeds, from --first-seed on")
                      ->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
  auto* first_opt = app.add_option("--first-seed", first_seed_text, "First seed of --seeds (default 1)")
                      ->check(seed_check)
                      ->needs(seeds_opt);
  seed_opt->excludes(seeds_opt)->excludes(first_opt);
  app.add_option("--regression", regression,
                 "Run every run listed in this file: one 'SEED [FAULT-SCALE] [WORKLOAD]' per "
                 "line, '#' comments; a line without a scale or workload runs at 1 and mixed, "
                 "whatever the command line says");
  app.add_option("--fresh", fresh, "Run this many random seeds (printed, so any can be replayed)")
    ->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
  app.add_option("--active-ms", active_ms, "Simulated milliseconds of work under faults per run")
    ->check(CLI::Range(int64_t{1000}, int64_t{3600000}));
  app.add_option("--workload", workload_name,
                 "mixed (producers, consume-transform-produce, readers; the history checker) or "
                 "northwind (the Northwind pipeline; its result against the sequential one)")
    ->check(CLI::IsMember({"mixed", "northwind"}));
  app.add_option("--northwind-dir", northwind_dir, "The Northwind CSVs, for --workload northwind")
    ->check(CLI::ExistingDirectory);
  app.add_option("--nodes", nodes,
                 "1: the embedded node (default); 3 to 5: a cluster over a simulated ZooKeeper, "
                 "every partition on three nodes")
    ->check(CLI::IsMember({1, 3, 4, 5}));
  app.add_option("--fault-model", fault_model,
                 "With --nodes 3 to 5: 1, faults up to node crashes and ZooKeeper cuts; 2, also "
                 "node pauses, network partitions between nodes and kills at the fault points of "
                 "replication; 3, also leaderships moving back to their preferred replicas every "
                 "10 s; 4 (default), also power losses of the whole cluster, the nodes back one "
                 "by one. Older models replay the seeds found with them")
    ->check(CLI::IsMember({1, 2, 3, 4}));
  app.add_flag("--no-faults", no_faults, "The same workload without faults");
  app.add_option("--fault-scale", fault_scale, "Multiply every fault rate (a storm: 5)")
    ->check(CLI::Validator(
      [](std::string& x) {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(x, &used);
          if (used != x.size())
            return std::string("'" + clip(x) + "' is not a number");
        } catch (const std::exception&) {
          return std::string("'" + clip(x) + "' is not a number");
        }
        return std::isfinite(v) && v >= 0 && v <= 100 ? std::string{}
                                                       : "'" + clip(x) + "' is outside [0, 100]";
      },
      "SCALE"));
  app.add_flag("--verbose", verbose,
               "Print every fault as it is injected and the node's operator events (stderr)");
  app.add_flag("--dump-history", dump, "Print each run's history and final logs (stderr)");
  app.add_flag("--json", json, "One JSON object per run on stdout");
  // Every bad argument is exit status 2, as the README says (CLI11 has its
  // own codes); --help is 0.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::vector<planned_run> list;
  try {
    if (*seed_opt)
      list.push_back({*parse_seed(seed_text), fault_scale, workload_name, nodes, fault_model});
    auto first_seed = *parse_seed(first_seed_text);
    if (seeds > 0 && first_seed > std::numeric_limits<uint64_t>::max() - (seeds - 1))
      throw CLI::ValidationError("--first-seed", "--first-seed " + first_seed_text + " with --seeds "
                                                   + std::to_string(seeds)
                                                   + " runs past 2^64-1");
    for (uint64_t s = 0; s < seeds; ++s)
      list.push_back({first_seed + s, fault_scale, workload_name, nodes, fault_model});
    if (!regression.empty()) {
      auto runs = read_seed_file(regression);
      if (runs.empty())
        throw CLI::ValidationError("--regression", regression + " lists no run");
      for (auto r : runs)
        list.push_back(r);
    }
  } catch (const CLI::Error& e) {
    app.exit(e);
    return 2;
  }
  if (fresh > 0) {
    std::random_device rd;
    for (uint64_t i = 0; i < fresh; ++i)
      list.push_back({(static_cast<uint64_t>(rd()) << 32) ^ rd(), fault_scale, workload_name, nodes,
                      fault_model});
  }
  if (list.empty()) {
    std::cerr << "caftx-sim: give --seed, --seeds, --regression or --fresh (see --help)\n";
    return 2;
  }
  if (!caftx::fault::enabled())
    std::cerr << "caftx-sim: built without fault points (CAFTX_FAULT_POINTS=OFF): "
                 "crashes at fault points are not simulated\n";

  std::map<std::string, uint64_t> faults;
  std::map<std::string, uint64_t> points;
  uint64_t failed = 0;
  uint64_t commits = 0;
  uint64_t aborts = 0;
  uint64_t idle_under_faults = 0; // passed, but committed nothing while faults were on
  auto started = std::chrono::steady_clock::now();
  for (auto& planned : list) {
    auto s = planned.seed;
    sim_options o;
    o.seed = s;
    o.active_ms = active_ms;
    o.faults = !no_faults;
    o.fault_scale = planned.fault_scale;
    o.load = planned.workload == "northwind" ? workload::northwind : workload::mixed;
    o.northwind_dir = northwind_dir;
    o.nodes = planned.nodes;
    o.fault_model = planned.fault_model;
    auto replay = "caftx-sim --seed " + std::to_string(s)
                  + (o.load == workload::northwind ? " --workload northwind" : "")
                  + (o.nodes != 1 ? " --nodes " + std::to_string(o.nodes) : "")
                  + (o.nodes != 1 && o.fault_model != 4 ? " --fault-model " + std::to_string(o.fault_model) : "")
                  + (planned.fault_scale != 1.0 ? " --fault-scale " + fmt_scale(planned.fault_scale) : "")
                  + (active_ms != 20000 ? " --active-ms " + std::to_string(active_ms) : "")
                  + (no_faults ? " --no-faults" : "");
    o.verbose = verbose;
    o.dump_history = dump;
    auto r = run_simulation(o);
    for (auto& [k, v] : r.faults)
      faults[k] += v;
    for (auto& [k, v] : r.points_hit)
      points[k] += v;
    commits += r.commits;
    aborts += r.aborts;
    if (r.ok() && r.commits_under_faults == 0 && !no_faults)
      ++idle_under_faults;
    if (json) {
      nlohmann::json j{{"seed", s},          {"ok", r.ok()},           {"trace_hash", r.trace_hash},
                       {"events", r.events}, {"steps", r.steps},       {"simulated_ms", r.simulated_ms},
                       {"commits", r.commits}, {"aborts", r.aborts},
                       {"commits_under_faults", r.commits_under_faults}, {"faults", r.faults},
                       {"fault_scale", planned.fault_scale}, {"workload", planned.workload},
                       {"nodes", planned.nodes},
                       {"failure", r.failure}};
      for (auto& v : r.violations)
        j["violations"].push_back(to_string(v));
      std::cout << j.dump() << "\n";
    }
    if (!r.ok()) {
      ++failed;
      char trace[24];
      std::snprintf(trace, sizeof trace, "%016llx", static_cast<unsigned long long>(r.trace_hash));
      std::fflush(stdout);
      std::cerr << "seed " << s << " (trace " << trace << ") FAILED: "
                << (r.failure.empty() ? to_string(r.violations.front()) : r.failure) << "\n"
                << "  replay: " << replay << "\n";
      for (size_t i = 1; i < r.violations.size() && i < 10; ++i)
        std::cerr << "  also: " << to_string(r.violations[i]) << "\n";
    } else if (!json) {
      std::printf("seed %llu ok  trace %016llx  %zu events  %llu commits  %llu aborts\n",
                  static_cast<unsigned long long>(s), static_cast<unsigned long long>(r.trace_hash),
                  r.events, static_cast<unsigned long long>(r.commits),
                  static_cast<unsigned long long>(r.aborts));
    }
  }
  std::fflush(stdout); // the summary (stderr) after the last run's line
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr, "%zu seeds, %llu failed, %.1f s; %llu commits, %llu aborts\nfaults injected:",
               list.size(), static_cast<unsigned long long>(failed), secs,
               static_cast<unsigned long long>(commits), static_cast<unsigned long long>(aborts));
  for (auto& [k, v] : faults)
    std::fprintf(stderr, " %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
  if (idle_under_faults > 0)
    std::fprintf(stderr, "\n%llu passing runs committed nothing while faults were on (each "
                         "committed once they stopped)",
                 static_cast<unsigned long long>(idle_under_faults));
  std::fprintf(stderr, "\nfault points hit:");
  for (auto& p : caftx::fault::all_points())
    std::fprintf(stderr, " %s=%llu", p.c_str(), static_cast<unsigned long long>(points[p]));
  std::fprintf(stderr, "\n");
  for (auto& p : caftx::fault::all_points())
    if (list.size() >= 50 && faults["point." + p] == 0
        && (nodes > 1 || !caftx::fault::replication_point(p)))
      std::fprintf(stderr, "fault point never fired: %s\n", p.c_str());
  return failed == 0 ? 0 : 1;
}
