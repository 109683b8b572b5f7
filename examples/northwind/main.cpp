// northwind-pipeline: the Northwind orders pipeline, exactly once, on an
// embedded caftx node, with injected crashes. Prints the result and whether
// it equals the sequential computation; exits 1 on any difference.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <unistd.h>

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

void print_text(const northwind::job_report& r, double seconds) {
  auto& a = r.actual;
  std::cout << "Northwind orders pipeline on caftx (exactly once)\n";
  for (auto& e : r.events)
    std::cout << "  injected: " << e << "\n";
  std::cout << "processor crashes:      " << r.crashes_injected << "\n"
            << "node restarts:          " << r.node_restarts << "\n"
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

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs the Northwind orders pipeline exactly once on an embedded caftx node, "
               "injecting crashes, and checks the result against a sequential computation."};
  northwind::job_options opts;
  opts.input_dir = CAFTX_NORTHWIND_DIR;
  bool json = false;
  bool keep = false;
  app.add_option("--seed", opts.seed, "seed of the fault plan")->default_val(1);
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
                 "the node's data directory (default: a fresh temporary one, removed after)");
  app.add_flag("--json", json, "print the report as JSON");
  app.add_flag("--keep-data", keep, "keep the temporary data directory");
  CLI11_PARSE(app, argc, argv);

  bool temporary = opts.data_dir.empty();
  if (temporary) {
    auto base = std::filesystem::temp_directory_path()
                / ("caftx-northwind-" + std::to_string(::getpid()));
    std::filesystem::remove_all(base);
    opts.data_dir = base.string();
  }
  int rc = 0;
  {
    config cfg;
    caf::actor_system sys{cfg};
    try {
      auto t0 = std::chrono::steady_clock::now();
      auto report = northwind::run_job(sys, opts);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (json) {
        nlohmann::json j{{"seed", opts.seed},
                         {"crashes_injected", report.crashes_injected},
                         {"node_restarts", report.node_restarts},
                         {"transactions_committed", report.transactions_committed},
                         {"events", report.events},
                         {"result", to_json(report.actual)},
                         {"expected", to_json(report.expected)},
                         {"equal", report.equal()},
                         {"elapsed_s", secs}};
        std::cout << j.dump(2) << std::endl;
      } else {
        print_text(report, secs);
      }
      rc = report.equal() ? 0 : 1;
    } catch (const std::exception& e) {
      std::cerr << "northwind-pipeline: " << e.what() << std::endl;
      rc = 2;
    }
  }
  if (temporary && !keep)
    std::filesystem::remove_all(opts.data_dir);
  return rc;
}
