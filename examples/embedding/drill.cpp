// A component drill in an application that embeds a node (docs/drills.md
// §Embedding): a transactional producer commits while the transaction
// coordinator shard of its transactional.id is killed twice — once at once,
// once at a named fault point in the middle of a commit — and each time its
// supervisor restarts it; the program prints the restart counts and reload
// times, and checks that every committed record is read back exactly once.
// Exit 0 when it did, 1 otherwise.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "actors/broker/component_drill.hpp"
#include "actors/broker/network_drill.hpp"
#include "actors/broker/node.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/messages.hpp"
#include "runtime/partitioner.hpp"

struct config : caf::actor_system_config {
  config() { caftx::register_message_types(*this); }
};

int main() {
  auto dir = std::filesystem::temp_directory_path() / "caftx-embedding-drill-example";
  std::filesystem::remove_all(dir);
  int rc = 0;
  {
    config cfg;
    caf::actor_system sys{cfg};
    caftx::node_config ncfg;
    ncfg.data_dir = dir.string();
    // The fault drills of this process: armed only by this program.
    caftx::node_options opts;
    opts.faults = std::make_shared<caftx::fault_drills>();
    caftx::install_fault_drills(opts.faults);
    auto started = caftx::node::start(sys, ncfg, opts);
    if (!started.ok()) {
      std::cerr << started.error().to_string() << "\n";
      return 1;
    }
    auto node = std::move(started).value();
    if (auto st = node->create_topic("ledger", 3); !st.ok()) {
      std::cerr << st.to_string() << "\n";
      return 1;
    }
    const std::string tid = "ledger-writer";
    auto shard = caftx::partition_for(tid, ncfg.transaction_state_log_num_partitions);

    caftx::producer p{sys, node->broker(), caftx::properties{{"transactional.id", tid}}};
    p.init_transactions();
    std::set<std::string> committed;
    std::set<std::string> unknown; // of a commit that failed: either outcome is allowed
    int n = 0;
    auto transaction = [&] {
      std::vector<std::string> values;
      for (int i = 0; i < 3; ++i)
        values.push_back("entry " + std::to_string(n) + "." + std::to_string(i));
      ++n;
      try {
        p.begin_transaction();
        for (auto& v : values)
          p.send({"ledger", std::nullopt, "k" + v.substr(6), v, {}, -1});
        p.commit_transaction();
        committed.insert(values.begin(), values.end());
      } catch (const caftx::kafka_exception& e) {
        std::cout << "a commit failed (" << e.what() << "); aborting\n";
        unknown.insert(values.begin(), values.end());
        p.abort_transaction();
      }
    };
    for (int i = 0; i < 5; ++i)
      transaction();

    // 1. Kill the shard now; its supervisor restarts it and it reloads.
    auto now = caftx::kill_coordinator_shard(*node, shard);
    if (!now.ok()) {
      std::cerr << "kill: " << now.error().to_string() << "\n";
      return 1;
    }
    std::cout << "coordinator shard " << now->shard << " killed: restarts "
              << now->restarts_before << " -> " << now->restarts_after << ", answered again after "
              << now->reload_time.count() << " µs\n";

    // 2. Kill it at a fault point: right after a commit decision is
    // durable, before its markers are written, while transactions go on.
    // The restarted coordinator finishes what it decided. (A Release build
    // has no fault points.)
    if (caftx::fault::enabled()) {
      std::atomic<bool> done{false};
      std::thread writer{[&] {
        while (!done)
          transaction();
      }};
      auto at = caftx::kill_coordinator_at(*node, *opts.faults, "txn_coordinator.prepare_durable");
      done = true;
      writer.join();
      if (!at.ok()) {
        std::cerr << "kill at a fault point: " << at.error().to_string() << "\n";
        return 1;
      }
      std::cout << "coordinator shard " << at->shard
                << " killed at txn_coordinator.prepare_durable: restarts " << at->restarts_before
                << " -> " << at->restarts_after << ", answered again after "
                << at->reload_time.count() << " µs\n";
    }
    for (int i = 0; i < 5; ++i)
      transaction();

    // Every committed entry exactly once under read_committed.
    caftx::consumer c{sys, node->broker(), caftx::properties{{"isolation.level", "read_committed"},
                                                             {"auto.offset.reset", "earliest"}}};
    c.assign({{"ledger", 0}, {"ledger", 1}, {"ledger", 2}});
    std::multiset<std::string> seen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto all_seen = [&] {
      for (auto& v : committed)
        if (!seen.count(v))
          return false;
      return true;
    };
    while (!all_seen() && std::chrono::steady_clock::now() < deadline)
      for (auto& r : c.poll(std::chrono::milliseconds(200)))
        seen.insert(r.value);
    bool exact = all_seen();
    for (auto& v : seen)
      exact = exact && seen.count(v) == 1 && (committed.count(v) || unknown.count(v));
    std::cout << committed.size() << " entries committed, " << seen.size() << " read: "
              << (exact ? "each exactly once" : "MISMATCH") << "\n";
    rc = exact ? 0 : 1;
  }
  std::filesystem::remove_all(dir);
  return rc;
}
