// The simulator itself: a seed replays exactly, faults of every kind are
// injected, and a run without faults is clean. (The checker's rules are
// tested on hand-made histories in tests/unit/history_checker_test.cpp.)
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "runtime/fault_point.hpp"
#include "tools/sim/simulator.hpp"

namespace caftx::sim {
namespace {

sim_result run(uint64_t seed, bool faults = true) {
  sim_options o;
  o.seed = seed;
  o.faults = faults;
  return run_simulation(o);
}

TEST(Simulator, SameSeedGivesTheSameTrace) {
  auto a = run(7);
  auto b = run(7);
  ASSERT_TRUE(a.ok()) << a.failure;
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.simulated_ms, b.simulated_ms);
  EXPECT_EQ(a.faults, b.faults);
  EXPECT_EQ(a.points_hit, b.points_hit);
  EXPECT_EQ(a.commits, b.commits);
  EXPECT_GT(a.events, 100u);
}

TEST(Simulator, OtherSeedsGiveOtherTraces) {
  std::set<uint64_t> hashes;
  for (uint64_t seed = 1; seed <= 5; ++seed)
    hashes.insert(run(seed).trace_hash);
  EXPECT_EQ(hashes.size(), 5u);
}

TEST(Simulator, WithoutFaultsNothingIsInjectedAndWorkIsDone) {
  auto r = run(3, false);
  ASSERT_TRUE(r.ok()) << r.failure;
  EXPECT_TRUE(r.faults.empty());
  EXPECT_GT(r.commits, 10u);
  // A Release build compiles the fault points out: nothing to count then.
  if (fault::enabled())
    EXPECT_GT(r.points_hit["partition.append_durable"], 0u);
  else
    EXPECT_TRUE(r.points_hit.empty());
}

// The faults injected over seeds 1 to `seeds` with `nodes` nodes, each
// run expected to pass.
std::map<std::string, uint64_t> faults_over(uint64_t seeds, int32_t nodes) {
  std::map<std::string, uint64_t> faults;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    sim_options o;
    o.seed = seed;
    o.nodes = nodes;
    auto r = run_simulation(o);
    EXPECT_TRUE(r.ok()) << "seed " << seed << ": "
                        << (r.failure.empty() ? to_string(r.violations.front()) : r.failure);
    for (auto& [k, v] : r.faults)
      faults[k] += v;
  }
  return faults;
}

TEST(Simulator, EveryKindOfFaultIsInjectedOverFiftySeeds) {
  auto faults = faults_over(50, 1);
  for (auto kind : {"network.drop", "network.drop_reply", "network.duplicate", "network.delay",
                    "kill.partition", "kill.txn_coordinator", "kill.group_coordinator",
                    "node.crash", "client.crash", "client.pause"})
    EXPECT_GT(faults[kind], 0u) << kind;
  for (auto& point : fault::all_points())
    if (!fault::replication_point(point)) {
      EXPECT_GT(faults["point." + point], 0u) << point;
    }
}

// A three-node cluster: node pauses, network partitions both ways and one
// way, cuts from ZooKeeper, and every fault point of replication.
TEST(Simulator, EveryClusterFaultIsInjectedOverFortySeeds) {
  auto faults = faults_over(40, 3);
  for (auto kind : {"node.crash", "node.pause", "network.partition", "network.partition_one_way",
                    "zookeeper.cut", "zookeeper.session_expired"})
    EXPECT_GT(faults[kind], 0u) << kind;
  for (auto& point : fault::all_points())
    if (fault::replication_point(point)) {
      EXPECT_GT(faults["point." + point], 0u) << point;
    }
}

} // namespace
} // namespace caftx::sim
