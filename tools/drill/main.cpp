// caftx-drill: a failure drill against a running caftx cluster, or one it
// starts itself (docs/drills.md). Exit 0 when every rule held, 1 on an
// anomaly (or when the drill could not judge the run), 2 on bad input.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/cli/cli_common.hpp"
#include "tools/drill/drill.hpp"

namespace {

std::atomic<bool> interrupted{false};
bool progress_shown = false; // a progress line waits for its line end

extern "C" void on_signal(int) {
  interrupted = true;
}

using namespace caftx;
using namespace caftx::drill;

// The caftx-node beside this executable.
std::string sibling_node_binary() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return "caftx-node";
  std::string self(buf, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + "caftx-node";
}

// One progress line on stderr: rewritten in place on a terminal, else one
// line every ten seconds.
void show(const drill_progress& p) {
  static bool tty = ::isatty(2) != 0;
  static int64_t last_line_ms = -10000;
  char line[256];
  std::snprintf(line, sizeof(line),
                "[%6.1f s] %-8s committed %lld, aborted %lld, acknowledged %lld, faults %d/%d",
                static_cast<double>(p.elapsed_ms) / 1000.0, p.phase.c_str(),
                static_cast<long long>(p.committed), static_cast<long long>(p.aborted),
                static_cast<long long>(p.acknowledged), p.faults_injected, p.faults_planned);
  if (tty) {
    std::fprintf(stderr, "\r%s\033[K", line);
    progress_shown = true;
  } else if (p.elapsed_ms - last_line_ms >= 10000 || p.phase != "running") {
    std::fprintf(stderr, "%s\n", line);
    last_line_ms = p.elapsed_ms;
  }
  std::fflush(stderr);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-drill: runs a workload against a caftx cluster while injecting faults, "
               "then judges the run (docs/drills.md). Exit 0: every rule held; 1: an anomaly "
               "(or the run could not be judged); 2: bad input."};
  drill_options opts;
  std::string workload = "bank";
  std::string faults;
  std::string drill_file;
  double duration_s = 60;
  double hold_s = 5;
  double cooldown_s = 15;
  bool json = false;
  opts.node_binary = sibling_node_binary();
#ifdef CAFTX_NORTHWIND_DIR
  opts.northwind_dir = CAFTX_NORTHWIND_DIR;
#endif
  auto* servers = app.add_option("--bootstrap-servers,--bootstrap-server", opts.bootstrap_servers,
                                 "host:port,... of a running cluster");
  auto* local = app.add_option("--local", opts.local_nodes,
                               "start a cluster of N nodes (and ZooKeeper) on 127.0.0.1 in a "
                               "temporary directory, removed at the end")
                  ->check(CLI::Range(1, 9));
  auto* dir = app.add_option("--cluster-dir", opts.cluster_dir,
                             "the directory of tools/local-cluster.sh: lets the drill kill, "
                             "stop, pause and restart its node processes");
  local->excludes(servers)->excludes(dir);
  app.add_option("--workload", workload, "northwind, bank (default) or idempotent");
  app.add_option("--faults", faults,
                 "comma-separated fault names, injected one after another: " + fault_names()
                   + " (default: every one the cluster allows)");
  app.add_option("--drill-file", drill_file,
                 "a JSON drill file with a fault schedule (docs/drills.md §Drill files); "
                 "options given on the command line override it");
  app.add_option("--seed", opts.seed, "picks the nodes the faults hit and the workload's "
                                      "choices (default 1)");
  app.add_option("--duration-s", duration_s, "how long the workload runs at least (default 60)")
    ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--hold-s", hold_s, "how long each fault lasts beyond its minimum (default 5)")
    ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--cooldown-s", cooldown_s,
                 "how long the workload runs after the last fault healed (default 15)")
    ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--producers", opts.producers, "producer threads (default 2)")
    ->check(CLI::Range(1, 64));
  app.add_option("--partitions", opts.partitions, "partitions of the workload topic (default 6)")
    ->check(CLI::Range(1, 1000));
  app.add_option("--accounts", opts.accounts, "bank accounts (default 24)")
    ->check(CLI::Range(2, 1000000));
  app.add_option("--node-binary", opts.node_binary,
                 "caftx-node for --local and restarts (default: beside caftx-drill)");
  app.add_option("--northwind-dir", opts.northwind_dir, "the Northwind CSVs (northwind workload)");
  app.add_flag("--json", json, "print the report as one JSON object on stdout");
  if (auto rc = cli::parse_command_line(app, argc, argv))
    return *rc;

  if (!drill_file.empty()) {
    if (auto st = read_drill_file(drill_file, opts); !st.ok())
      return cli::refuse("caftx-drill", st.message());
  }
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (given("--workload") || drill_file.empty()) {
    auto k = parse_workload(workload);
    if (!k)
      return cli::refuse("caftx-drill", "--workload: '" + workload
                                          + "' is not one of northwind, bank, idempotent");
    opts.workload = *k;
  }
  if (given("--duration-s") || drill_file.empty())
    opts.duration = std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  if (given("--hold-s") || drill_file.empty())
    opts.hold = std::chrono::milliseconds(static_cast<int64_t>(hold_s * 1000));
  if (given("--cooldown-s") || drill_file.empty())
    opts.cooldown = std::chrono::milliseconds(static_cast<int64_t>(cooldown_s * 1000));
  if (!faults.empty()) {
    if (!opts.schedule.empty())
      return cli::refuse("caftx-drill", "--faults and a drill file's faults cannot be combined");
    std::stringstream list{faults};
    std::string name;
    while (std::getline(list, name, ',')) {
      auto k = parse_fault(name);
      if (!k)
        return cli::refuse("caftx-drill", "--faults: '" + name + "' is not one of "
                                            + fault_names());
      opts.faults.push_back(*k);
    }
  }
  if (opts.bootstrap_servers.empty() && opts.local_nodes == 0 && opts.cluster_dir.empty())
    return cli::refuse("caftx-drill", "give --bootstrap-servers, --cluster-dir or --local N");
  if (opts.workload == workload_kind::northwind && opts.northwind_dir.empty())
    return cli::refuse("caftx-drill", "--northwind-dir: the directory of the Northwind CSVs");

  // SIGINT and SIGTERM end the drill cleanly: the held fault healed and,
  // with --local, every process stopped and the directory removed (the
  // nodes run in process groups of their own, so a terminal's Ctrl-C
  // reaches only this process).
  opts.cancel = &interrupted;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto report = run_drill(opts, show);
  if (progress_shown)
    std::fprintf(stderr, "\n");
  if (!report.ok()) {
    if (report.error().code() == error_code::invalid_config)
      return cli::refuse("caftx-drill", report.error().message());
    std::cerr << "caftx-drill: the drill could not run: " << report.error().to_string() << "\n";
    if (json)
      std::cout << nlohmann::ordered_json{{"verdict", "not judged"},
                                          {"error", report.error().to_string()},
                                          {"anomalies", nlohmann::json::array()}}
                     .dump(2)
                << "\n";
    return cli::exit_failed;
  }
  std::cout << (json ? to_json(*report) : to_text(*report));
  return report->clean() ? cli::exit_ok : cli::exit_failed;
}
