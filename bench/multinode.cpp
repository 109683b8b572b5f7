// The cluster benchmark: transactions from a client process (this one)
// over caftx-node processes on a real ZooKeeper, with a topic of three
// partitions and the transaction's coordinator all on one node, or spread
// over three nodes (each partition on its own node, the coordinator on one
// of them). Its floor, measured in the same run: the fsync p50 of the
// disk plus the p50 of a CAF middleman round trip between this process and
// a node (caftx's hello), the two waits on EndTxn's path (the PrepareCommit
// card's durable write at the coordinator, the request and its reply).
#include "bench/suite.hpp"
#include "bench/node_process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/client/admin.hpp"
#include "actors/client/producer.hpp"
#include "tools/drill/cluster_processes.hpp"
#include "actors/common/middleman.hpp"
#include "runtime/partitioner.hpp"
#include "runtime/ids.hpp"
#include "runtime/messages.hpp"
#include "tests/cluster/zk_server.hpp"

namespace caftx::bench {

namespace {

using namespace std::chrono_literals;
using drill::free_port;

// A cluster of `n` nodes under its own chroot, each registered and
// connected to every other one.
struct node_cluster {
  std::vector<std::unique_ptr<node_proc>> nodes;
  std::string bootstrap;

  node_cluster(const std::string& dir, int n, const std::string& zk, int replication_factor = 1) {
    std::filesystem::create_directories(dir);
    for (int id = 1; id <= n; ++id) {
      nodes.push_back(std::make_unique<node_proc>(dir, id, free_port(), zk, replication_factor));
      bootstrap += (bootstrap.empty() ? "" : ",") + nodes.back()->endpoint();
    }
    for (int id = 1; id <= n; ++id)
      for (int other = 1; other <= n; ++other)
        if (other != id
            && !wait_for([&] {
                 return nodes[id - 1]->logged("connected to node " + std::to_string(other) + " at");
               },
                         60s))
          throw std::runtime_error("multinode: node " + std::to_string(id) + " did not connect to "
                                   + std::to_string(other) + " (see " + dir + ")");
    if (n == 1
        && !wait_for([&] { return nodes[0]->logged("elected controller at controller epoch"); }, 60s))
      throw std::runtime_error("multinode: the node was not elected controller (see " + dir + ")");
  }

  properties client(properties extra = {}) const {
    properties p{{"bootstrap.servers", bootstrap}};
    for (auto& [k, v] : extra)
      p[k] = v;
    return p;
  }
};

// Round trips of caftx's hello to node `port`'s broker over the middleman,
// from this process (another actor system): their latencies in ms.
std::vector<double> middleman_round_trips(uint16_t port, int n) {
  caf::actor_system_config cfg;
  configure_middleman(cfg, middleman_config{});
  caf::actor_system sys{cfg};
  auto broker = sys.middleman().remote_actor("127.0.0.1", port);
  if (!broker)
    throw std::runtime_error("multinode: cannot reach the node on port " + std::to_string(port));
  caf::scoped_actor self{sys};
  std::vector<double> out;
  cluster_hello_request hello{0, "", -1, wire_build_id()};
  for (int i = 0; i < n + 10; ++i) {
    auto t0 = clock_type::now();
    self->request(*broker, 10s, hello).receive([](const cluster_hello_response&) {},
                                               [&](const caf::error& e) {
                                                 throw std::runtime_error(
                                                   "multinode: hello failed: " + sys.render(e));
                                               });
    if (i >= 10) // warm-up
      out.push_back(ms_since(t0));
  }
  return out;
}

} // namespace

void bench_multinode(const context& ctx) {
  auto& zk = testing::zk_server::shared();
  node_cluster one{ctx.dir + "/multinode-1", 1, zk.connect(zk.fresh_chroot("bench-1"))};
  node_cluster three{ctx.dir + "/multinode-3", 3, zk.connect(zk.fresh_chroot("bench-3"))};
  node_cluster replicated{ctx.dir + "/multinode-3-rf3", 3, zk.connect(zk.fresh_chroot("bench-3r")),
                          3};
  std::vector<node_cluster*> clusters{&one, &three, &replicated};
  std::vector<std::unique_ptr<producer>> producers;
  for (auto* c : clusters) {
    admin_client admin{c->client()};
    for (auto topic : {"lat", "tput"})
      if (auto st = admin.create_topic(topic, 3); !st.ok())
        throw std::runtime_error("multinode: CreateTopics: " + st.to_string());
    producers.push_back(std::make_unique<producer>(c->client({{"transactional.id", "lat"}})));
    producers.back()->init_transactions();
  }
  int txns = ctx.quick ? 5 : 100;
  std::vector<line> lines(3);
  const char* names[] = {"1 node", "3 nodes", "3 nodes RF 3"};
  for (size_t i = 0; i < lines.size(); ++i) {
    lines[i].benchmark = "multinode";
    lines[i].variant = std::string("end_txn ") + names[i];
    lines[i].unit = "ms p50";
    lines[i].higher_is_better = false;
  }
  std::vector<double> rtts;
  interleave(ctx, lines, [&](size_t i, int) {
    auto& p = *producers[i];
    std::vector<double> end_txn, cycle;
    for (int t = 0; t < txns; ++t) {
      auto t0 = clock_type::now();
      p.begin_transaction();
      for (int32_t part = 0; part < 3; ++part)
        p.send({"lat", part, "", "x", {}, -1});
      p.flush();
      auto t1 = clock_type::now();
      p.commit_transaction();
      end_txn.push_back(ms_since(t1));
      cycle.push_back(ms_since(t0));
    }
    for (auto v : middleman_round_trips(clusters[i]->nodes[0]->port(), ctx.quick ? 20 : 200))
      rtts.push_back(v);
    rep_result r;
    r.value = percentile(end_txn, 50);
    r.extra = {{"end_txn_p90_ms", percentile(end_txn, 90)},
               {"transaction_cycle_p50_ms", percentile(cycle, 50)}};
    return r;
  });
  double rtt = percentile(rtts, 50);
  for (auto& l : lines) {
    // The floor of EndTxn: the client's request and reply (one middleman
    // round trip) and the one durable write on its path, the PrepareCommit
    // card (one fsync). With replication that write is a replicated one:
    // the same floor, so the ratio shows what replication adds.
    double fsync = l.fsync_p50_ms();
    double floor = fsync + rtt;
    set_target(l, l.stats().median / floor,
               "/ (fsync p50 " + fmt("%.3f", fsync) + " + middleman RTT p50 " + fmt("%.3f", rtt)
                 + " ms)",
               5.0, false);
    std::vector<double> cycles;
    for (auto& r : l.reps)
      cycles.push_back(r.extra["transaction_cycle_p50_ms"].get<double>());
    l.extra = {{"middleman_round_trip_p50_ms", rtt},
               {"transaction_cycle_p50_ms", summarize(cycles).median}};
    l.note = "whole transaction p50 " + fmt("%.2f", summarize(cycles).median) + " ms";
  }
  for (size_t i = 1; i < lines.size(); ++i)
    if (lines[0].stats().median > 0)
      lines[i].note += "; x" + fmt("%.2f", lines[i].stats().median / lines[0].stats().median)
                       + " of 1 node (EndTxn), x"
                       + fmt("%.2f", lines[i].extra["transaction_cycle_p50_ms"].get<double>()
                                       / lines[0].extra["transaction_cycle_p50_ms"].get<double>())
                       + " (whole transaction)";
  for (auto& l : lines)
    report(l);

  // Transactional produce on the same three local nodes, one replica or
  // three (acks=all, min.insync.replicas 2): one producer sending 100 B
  // records to three partitions as fast as it can, committing every
  // 100 ms. Records committed per second.
  std::vector<line> tput(2);
  const char* tput_names[] = {"3 nodes RF 1", "3 nodes RF 3"};
  for (size_t i = 0; i < tput.size(); ++i) {
    tput[i].benchmark = "multinode";
    tput[i].variant = std::string("txn produce 100 ms 100 B ") + tput_names[i];
    tput[i].unit = "records/s";
  }
  auto seconds = ctx.quick ? 0.3 : 3.0;
  std::string value(100, 'v');
  interleave(ctx, tput, [&](size_t i, int) {
    auto& p = *producers[i + 1];
    int64_t committed = 0;
    auto start = clock_type::now();
    while (ms_since(start) < seconds * 1000) {
      auto txn_start = clock_type::now();
      p.begin_transaction();
      int64_t sent = 0;
      while (ms_since(txn_start) < 100) {
        for (int k = 0; k < 64; ++k)
          p.send({"tput", static_cast<int32_t>(sent++ % 3), "", value, {}, -1});
      }
      p.commit_transaction();
      committed += sent;
    }
    rep_result r;
    r.value = static_cast<double>(committed) / (ms_since(start) / 1000.0);
    return r;
  });
  if (!tput[0].reps.empty() && !tput[1].reps.empty() && tput[0].stats().median > 0) {
    tput[1].ratio = tput[1].stats().median / tput[0].stats().median; // no target: measured
    tput[1].ratio_of = "/ " + tput[0].variant;
  }
  for (auto& l : tput)
    report(l);
  producers.clear();
}

namespace {

// The zookeeper.session.timeout.ms of the benchmark's nodes.
constexpr double session_timeout_ms = 6000;

// One failover on a fresh three-node cluster, every topic on three
// replicas with min.insync.replicas 2: a transactional producer commits a
// few transactions on topic "fo" (one partition), then the node leading
// its coordinator's `__transaction_state` partition (`internal`) or "fo-0"
// gets `sig` between two transactions; the result is the time from the
// signal to the end of the next successful commit (ms), of which the
// record's acknowledgement took produce_ms, and whether the node was the
// controller.
struct failover_result {
  double total_ms = 0;
  double produce_ms = 0;
  bool controller = false;
};

failover_result failover_trial(const std::string& dir, bool internal, int sig) {
  auto& zk = testing::zk_server::shared();
  node_cluster c{dir, 3, zk.connect(zk.fresh_chroot("bench-failover")), 3};
  {
    admin_client admin{c.client()};
    if (auto st = admin.create_topic("fo", 1); !st.ok())
      throw std::runtime_error("failover: CreateTopics: " + st.to_string());
  }
  producer p{c.client({{"transactional.id", "fo"},
                       {"max.block.ms", "60000"},
                       {"delivery.timeout.ms", "60000"}})};
  p.init_transactions();
  // Returns when the record was acknowledged (the commit follows).
  auto commit_one = [&] {
    for (int attempt = 0;; ++attempt) {
      try {
        p.begin_transaction();
        auto acked = p.send({"fo", 0, "", "x", {}, -1});
        acked.wait();
        auto at = clock_type::now();
        p.commit_transaction();
        acked.get();
        return at;
      } catch (const kafka_exception& e) {
        // An abortable error (a send that failed for good): abort, again.
        if (e.cls() != error_class::abortable || attempt > 10)
          throw;
        p.abort_transaction();
      }
    }
  };
  for (int i = 0; i < 5; ++i)
    commit_one();
  auto shard = partition_for("fo", 3);
  std::string led = internal ? "transaction metadata from __transaction_state-" + std::to_string(shard)
                                 + " in"
                             : "became leader of fo-0 at leader epoch 0";
  int victim = -1;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i]->logged(led))
      victim = static_cast<int>(i);
  if (victim < 0)
    throw std::runtime_error("failover: no node logged '" + led + "' (see " + dir + ")");
  bool controller = c.nodes[victim]->logged("elected controller at controller epoch");
  auto t0 = clock_type::now();
  c.nodes[victim]->signal(sig);
  auto acked_at = commit_one();
  failover_result r;
  r.total_ms = ms_since(t0);
  r.produce_ms = std::chrono::duration<double, std::milli>(acked_at - t0).count();
  r.controller = controller;
  for (auto& n : c.nodes)
    n->reap();
  std::filesystem::remove_all(dir);
  return r;
}

} // namespace

void bench_failover(const context& ctx) {
  struct scenario {
    const char* variant;
    bool internal;
    int sig;
    double bound_ms;
    std::string of;
  };
  std::vector<scenario> scenarios{
    {"SIGKILL txn-state leader", true, SIGKILL, session_timeout_ms + 2000,
     "/ (session timeout 6000 + 2000 ms)"},
    {"SIGKILL data leader", false, SIGKILL, session_timeout_ms + 2000,
     "/ (session timeout 6000 + 2000 ms)"},
    {"SIGTERM txn-state leader", true, SIGTERM, 1000, "/ 1000 ms"},
    {"SIGTERM data leader", false, SIGTERM, 1000, "/ 1000 ms"},
  };
  std::vector<line> lines(scenarios.size());
  std::vector<int> controller_hits(scenarios.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    lines[i].benchmark = "failover";
    lines[i].variant = scenarios[i].variant;
    lines[i].unit = "ms p50";
    lines[i].higher_is_better = false;
  }
  int trial = 0;
  context few = ctx;
  few.reps = ctx.quick ? 1 : std::min(ctx.reps, 3);
  interleave(few, lines, [&](size_t i, int) {
    auto& s = scenarios[i];
    auto f = failover_trial(ctx.dir + "/failover-" + std::to_string(trial++), s.internal, s.sig);
    controller_hits[i] += f.controller ? 1 : 0;
    rep_result r;
    r.value = f.total_ms;
    r.extra = {{"victim_was_controller", f.controller}, {"produce_ms", f.produce_ms}};
    return r;
  });
  for (size_t i = 0; i < lines.size(); ++i) {
    auto& l = lines[i];
    set_target(l, l.stats().median / scenarios[i].bound_ms, scenarios[i].of, 1.0, false);
    std::vector<double> produce;
    for (auto& r : l.reps)
      produce.push_back(r.extra["produce_ms"].get<double>());
    l.extra = {{"produce_ms_p50", summarize(produce).median}};
    l.note = "record acknowledged after " + fmt("%.0f", summarize(produce).median) + " ms; "
             + std::to_string(controller_hits[i]) + " of " + std::to_string(l.reps.size())
             + " stopped nodes were the controller";
    report(l);
  }
}

} // namespace caftx::bench
