// northwind-pipeline: the Northwind orders pipeline, exactly once, on an
// embedded caftx node (or, with --bootstrap-servers, against a running
// caftx-node), with injected crashes. Prints the result and whether it
// equals the sequential computation; exits 1 on any difference.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <csignal>
#include <vector>
#include <cstdio>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "actors/common/middleman.hpp"
#include "pipeline.hpp"
#include "runtime/messages.hpp"

#ifndef CAFTX_NORTHWIND_DIR
#define CAFTX_NORTHWIND_DIR "data/northwind"
#endif

namespace {

struct config : caf::actor_system_config {
  config() {
    caftx::register_message_types(*this);
    set("scheduler.max-threads", 2);
  }
};

// A client process of a running node: the middleman with caftx's settings.
struct remote_config : caf::actor_system_config {
  remote_config() {
    caftx::configure_middleman(*this, caftx::middleman_config{});
    set("scheduler.max-threads", 2);
  }
};

void print_text(const northwind::job_report& r, const northwind::job_options& opts,
                const std::string& bootstrap, double seconds) {
  auto& a = r.actual;
  std::cout << "Northwind orders pipeline on caftx (exactly once)\n";
  if (!bootstrap.empty())
    std::cout << "against the node at " << bootstrap << "\n";
  if (r.orders_loaded == 0)
    std::cout << "orders already loaded in "
              << (bootstrap.empty() ? opts.data_dir : std::string("the node")) << ": resuming\n";
  for (auto& e : r.events)
    std::cout << "  injected: " << e << "\n";
  std::cout << "processor crashes:      " << r.crashes_injected << " of " << r.crashes_requested
            << " requested\n"
            << "node restarts:          " << r.node_restarts << " of "
            << r.node_restarts_requested << " requested\n"
            << "transactions committed: " << r.transactions_committed << "\n"
            << "orders confirmed:       " << a.confirmed.size() << "\n"
            << "orders rejected:        " << a.rejected.size() << "\n"
            << "order lines written:    " << a.lines_written << "\n"
            << "final stock per product (product_id:units):\n ";
  int col = 0;
  for (auto& [product, units] : a.final_stock) {
    std::cout << " " << product << ":" << units;
    if (++col % 12 == 0)
      std::cout << "\n ";
  }
  std::cout << "\n";
  std::cout << "sequential computation: " << r.expected.confirmed.size() << " confirmed, "
            << r.expected.rejected.size() << " rejected, " << r.expected.lines_written
            << " lines\n";
  std::cout << "result equals the sequential computation: " << (r.equal() ? "yes" : "NO") << "\n";
  std::cout << "elapsed: " << seconds << " s\n";
}

nlohmann::json to_json(const northwind::result& r) {
  nlohmann::json stock = nlohmann::json::object();
  for (auto& [p, u] : r.final_stock)
    stock[std::to_string(p)] = u;
  return {{"orders_confirmed", r.confirmed.size()},
          {"orders_rejected", r.rejected.size()},
          {"order_lines_written", r.lines_written},
          {"final_stock", stock}};
}

nlohmann::json report_json(const northwind::job_report& report,
                           const northwind::job_options& opts, double secs) {
  return {{"seed", opts.seed},
          {"data_dir", opts.data_dir},
          {"orders_loaded", report.orders_loaded},
          {"crashes_requested", report.crashes_requested},
          {"crashes_injected", report.crashes_injected},
          {"node_restarts_requested", report.node_restarts_requested},
          {"node_restarts", report.node_restarts},
          {"transactions_committed", report.transactions_committed},
          {"events", report.events},
          {"result", to_json(report.actual)},
          {"expected", to_json(report.expected)},
          {"equal", report.equal()},
          {"elapsed_s", secs}};
}

} // namespace

// Holds an exclusive lock on `<data_dir>/northwind.lock` for the whole job,
// so that a second job cannot take the database during a node restart.
class job_lock {
public:
  explicit job_lock(const std::string& data_dir) {
    auto path = data_dir + "/northwind.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      throw std::runtime_error("data directory " + data_dir
                               + " is in use by another northwind-pipeline");
  }
  ~job_lock() { ::close(fd_); }

private:
  int fd_ = -1;
};

// SIGINT and SIGTERM are taken by one thread (blocked everywhere else,
// also in CAF's threads, which inherit the mask), which exits with 128 +
// signal at once. The temporary data directory is removed by a reaper
// process forked before any thread exists: the signal thread passes it the
// path, and it removes the directory once its pipe reports end of file,
// that is once every thread of the job is gone. (Removed from inside, the
// directory could be created again by a thread still running, LevelDB
// opening the store say, even while the process exits.)
struct interrupt_cleanup {
  std::mutex mtx;
  std::string dir;     // removed on a signal; empty: nothing to remove
  int reaper_fd = -1;  // the pipe to the reaper; -1: none (fork failed)

  void start() {
    int fds[2];
    if (::pipe(fds) == 0) {
      pid_t pid = ::fork();
      if (pid == 0)
        reap(fds[0], fds[1]);
      ::close(fds[0]);
      if (pid > 0) {
        reaper_fd = fds[1];
        ::fcntl(reaper_fd, F_SETFD, FD_CLOEXEC);
      } else {
        ::close(fds[1]);
      }
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    std::thread([this, stop] {
      int sig = 0;
      sigwait(&stop, &sig);
      std::lock_guard<std::mutex> guard{mtx};
      std::cerr << "northwind-pipeline: interrupted by signal " << sig;
      if (!dir.empty()) {
        if (reaper_fd >= 0) {
          auto left = dir.size();
          for (const char* p = dir.data(); left > 0;) {
            auto n = ::write(reaper_fd, p, left);
            if (n < 0 && errno == EINTR)
              continue;
            if (n <= 0)
              break;
            p += n;
            left -= static_cast<size_t>(n);
          }
        } else {
          std::error_code ignored;
          std::filesystem::remove_all(dir, ignored);
        }
        std::cerr << "; removing " << dir;
      }
      std::cerr << std::endl;
      std::_Exit(128 + sig);
    }).detach();
  }

  // The reaper (single-threaded, forked before the job's threads): reads
  // the path until end of file, then removes it, if one came.
  [[noreturn]] static void reap(int from, int unused) {
    ::close(unused);
    ::signal(SIGINT, SIG_IGN); // a terminal's Ctrl-C reaches the whole group
    ::signal(SIGTERM, SIG_IGN);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
    std::string path;
    char buf[4096];
    for (;;) {
      auto n = ::read(from, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      path.append(buf, static_cast<size_t>(n));
    }
    if (!path.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    std::_Exit(0);
  }

  /// Taken by main before it cleans up and returns: a signal being
  /// handled finishes first (and exits with its status), a later one finds
  /// nothing to remove.
  std::unique_lock<std::mutex> finish() {
    std::unique_lock<std::mutex> guard{mtx};
    dir.clear();
    return guard;
  }

  /// Creates a unique directory from `pattern` (mkdtemp) and, if
  /// `remove`, registers it for removal, in one step under the lock: a
  /// signal never finds the directory created but not registered.
  std::string create_temporary(std::string pattern, bool remove) {
    std::lock_guard<std::mutex> guard{mtx};
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error(pattern + ": " + std::strerror(errno));
    if (remove)
      dir = pattern;
    return pattern;
  }
};

int main(int argc, char** argv) {
  static interrupt_cleanup interrupts;
  interrupts.start();
  CLI::App app{"Runs the Northwind orders pipeline exactly once on an embedded caftx node, "
               "injecting crashes, and checks the result against a sequential computation. "
               "Exit status: 0 equal, 1 different, 2 error."};
  northwind::job_options opts;
  opts.input_dir = CAFTX_NORTHWIND_DIR;
  bool json = false;
  bool keep = false;
  std::string seed = "1";
  app.add_option("--seed", seed, "seed of the fault plan (0 to 18446744073709551615)")
    ->default_val("1")
    ->check([](const std::string& s) -> std::string {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
        return "'" + s + "' is not a whole number in [0, 18446744073709551615]";
      return {};
    });
  app.add_option("--crashes", opts.crashes, "processor crashes to inject")
    ->default_val(4)
    ->check(CLI::Range(0, 1000));
  app.add_option("--node-restarts", opts.node_restarts, "whole-node restarts to inject")
    ->default_val(1)
    ->check(CLI::Range(0, 100));
  app.add_option("--orders-per-transaction", opts.orders_per_transaction,
                 "orders handled in one transaction")
    ->default_val(10)
    ->check(CLI::Range(1, 100000));
  app.add_option("--input", opts.input_dir, "directory with the Northwind CSVs")
    ->check(CLI::ExistingDirectory);
  app.add_option("--data-dir", opts.data_dir,
                 "the node's data directory, kept afterwards; a rerun on it resumes "
                 "(default: a fresh temporary directory, removed afterwards)");
  std::string bootstrap;
  app.add_option("--bootstrap-servers", bootstrap,
                 "host:port,... of a running caftx-node: run the job against it (no embedded "
                 "node, no node restarts; the crash plan restarts processor instances only)");
  app.add_flag("--json", json, "print the report as JSON");
  app.add_flag("--keep-data", keep, "keep the temporary data directory");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::from_chars(seed.data(), seed.data() + seed.size(), opts.seed);
  if (!bootstrap.empty()) {
    if (app.count("--node-restarts") > 0 && opts.node_restarts != 0) {
      std::cerr << "northwind-pipeline: --node-restarts needs the embedded node; with "
                   "--bootstrap-servers the node is not this process's to restart\n";
      return 2;
    }
    if (app.count("--data-dir") > 0 || keep) {
      std::cerr << "northwind-pipeline: --data-dir and --keep-data are the embedded node's; "
                   "the running node keeps its data in its own log.dirs\n";
      return 2;
    }
    opts.node_restarts = 0;
  }

  auto fail = [&](const std::string& what) {
    if (json)
      std::cout << nlohmann::json{{"error", what}}.dump(2) << std::endl;
    std::cerr << "northwind-pipeline: " << what << std::endl;
    return 2;
  };
  if (!bootstrap.empty()) {
    auto servers = caftx::parse_endpoint_list("--bootstrap-servers", bootstrap);
    if (!servers.ok())
      return fail(servers.error().message());
    int rc = 0;
    try {
      // Fail early, naming what went wrong, when no bootstrap server
      // answers; the job's clients then connect on their own
      // (bootstrap.servers), as Kafka clients do.
      {
        remote_config cfg;
        caf::actor_system sys{cfg};
        std::string why;
        bool reachable = false;
        for (auto& at : *servers) {
          auto c = caftx::connect_to_node(sys, at, {0, "", -1, caftx::wire_build_id()},
                                          std::chrono::seconds(30));
          if (c.ok()) {
            reachable = true;
            break;
          }
          why += (why.empty() ? "" : "; ") + c.error().to_string();
        }
        if (!reachable)
          return fail("no bootstrap server reachable: " + why);
      }
      auto t0 = std::chrono::steady_clock::now();
      auto report = northwind::run_job_against(bootstrap, opts);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (json)
        std::cout << report_json(report, opts, secs).dump(2) << std::endl;
      else
        print_text(report, opts, bootstrap, secs);
      rc = report.equal() ? 0 : 1;
    } catch (const std::exception& e) {
      rc = fail(e.what());
    }
    return rc;
  }
  bool temporary = opts.data_dir.empty();
  try {
    if (temporary) {
      // A new, unique directory: never one that an earlier run left behind.
      auto pattern = (std::filesystem::temp_directory_path() / "caftx-northwind-XXXXXX").string();
      opts.data_dir = interrupts.create_temporary(pattern, !keep);
    } else {
      std::filesystem::create_directories(opts.data_dir);
    }
  } catch (const std::exception& e) {
    return fail(std::string("cannot create the data directory: ") + e.what());
  }
  int rc = 0;
  try {
    job_lock lock{opts.data_dir};
    config cfg;
    caf::actor_system sys{cfg};
    auto t0 = std::chrono::steady_clock::now();
    auto report = northwind::run_job(sys, opts);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (json)
      std::cout << report_json(report, opts, secs).dump(2) << std::endl;
    else
      print_text(report, opts, "", secs);
    rc = report.equal() ? 0 : 1;
  } catch (const std::exception& e) {
    rc = fail(e.what());
  }
  auto finishing = interrupts.finish();
  if (temporary && !keep) {
    std::error_code ignored;
    std::filesystem::remove_all(opts.data_dir, ignored);
  } else if (!json) {
    std::cout << "data directory (kept): " << opts.data_dir << "\n";
  }
  return rc;
}
