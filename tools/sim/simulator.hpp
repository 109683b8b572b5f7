// The deterministic simulator: a whole caftx node — broker, partition
// leaders, transaction coordinator shards, group coordinators — and its
// clients (transactional and idempotent producers, a consume-transform-
// produce worker, readers) in one process on CAF's test scheduler, driven
// by one seed. The seed decides which ready actor runs next, what the
// network between components does to each message (drop, delay, duplicate,
// lose the reply; reordering only across connections), when components,
// clients and the whole node crash, which fault points fire, and what the
// workload does. Time is simulated. The run's history is judged by
// check_history() (history_checker.hpp).
//
// Same seed, same build: same run, same trace hash.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/sim/history_checker.hpp"

namespace caftx::sim {

/// What the clients do.
enum class workload : uint8_t {
  /// Transactional, idempotent, consume-transform-produce clients and
  /// readers, judged by the history checker.
  mixed,
  /// The Northwind orders pipeline (examples/northwind) with processor
  /// crashes, judged by comparing its result with the sequential one.
  northwind,
};

struct sim_options {
  uint64_t seed = 1;
  workload load = workload::mixed;
  /// The Northwind CSVs (orders.csv, order_details.csv, products.csv), for
  /// workload::northwind.
  std::string northwind_dir;
  /// Simulated milliseconds during which clients work and faults happen;
  /// then the run settles (clients finish, no faults) for the liveness
  /// bound and is checked.
  int64_t active_ms = 20000;
  /// false: the same workload and scheduling, without any fault.
  bool faults = true;
  /// Multiplies every fault rate drawn from the seed (storms: 5, 10).
  double fault_scale = 1.0;
  /// 1: the embedded single node over its local store. 3 to 5: a cluster
  /// of that many nodes over a simulated ZooKeeper (sim_zookeeper.hpp),
  /// every partition replicated on three of them (min.insync.replicas 2),
  /// with node crashes, ZooKeeper cuts and session expiry among the faults.
  int32_t nodes = 1;
  /// With several nodes: 1, the faults up to node crashes and ZooKeeper
  /// cuts (the seeds found with them replay as they did); 2, also node
  /// pauses past the session timeout, network partitions between nodes
  /// (both ways and one way) and kills at the fault points of replication;
  /// 3, also leaderships moving back to their preferred replicas every
  /// 10 s (auto.leader.rebalance.enable); 4 (default), also power loss of
  /// the whole cluster, the nodes back one by one at times drawn from the
  /// seed.
  int32_t fault_model = 4;
  /// Print each fault as it is injected (stderr).
  bool verbose = false;
  /// Print the whole history, one event per line, after the run (stderr).
  bool dump_history = false;
};

/// One line describing `e`, for history dumps.
std::string describe(const event& e);

struct sim_result {
  uint64_t seed = 0;
  /// Hash of the run: every scheduling decision and every history event.
  uint64_t trace_hash = 0;
  std::vector<violation> violations;
  /// The run itself broke down (a client waited for a reply that could
  /// never come, the step budget ran out): named like a violation.
  std::string failure;
  /// Faults injected, by kind ("network.drop", "kill.partition",
  /// "node.crash", ...), and fault points hit (whether or not they fired).
  std::map<std::string, uint64_t> faults;
  std::map<std::string, uint64_t> points_hit;
  size_t events = 0;
  uint64_t steps = 0;
  int64_t simulated_ms = 0;
  /// Committed / aborted transactions the clients saw end.
  uint64_t commits = 0;
  uint64_t aborts = 0;
  /// Commits while faults were on (before the run settled).
  uint64_t commits_under_faults = 0;

  bool ok() const { return violations.empty() && failure.empty(); }
};

/// Runs one simulation. Thread-compatible: one at a time per process (fault
/// points have one process-wide handler).
sim_result run_simulation(const sim_options& opts);

} // namespace caftx::sim
