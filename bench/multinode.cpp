// The cluster benchmark: transactions from a client process (this one)
// over caftx-node processes on a real ZooKeeper, with a topic of three
// partitions and the transaction's coordinator all on one node, or spread
// over three nodes (each partition on its own node, the coordinator on one
// of them). Its floor, measured in the same run: the fsync p50 of the
// disk plus the p50 of a CAF middleman round trip between this process and
// a node (caftx's hello), the two waits on EndTxn's path (the PrepareCommit
// card's durable write at the coordinator, the request and its reply).
#include "bench/suite.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/wait.h>
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
#include "actors/common/middleman.hpp"
#include "runtime/messages.hpp"
#include "tests/cluster/zk_server.hpp"

extern char** environ;

namespace caftx::bench {

namespace {

using namespace std::chrono_literals;

// A 127.0.0.1 port that was free a moment ago (bound to 0, read back).
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string read_all(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One caftx-node process, stopped (SIGTERM, then SIGKILL) and reaped at
// destruction.
class node_proc {
public:
  node_proc(const std::string& dir, int32_t id, uint16_t port, const std::string& zk)
    : log_(dir + "/node" + std::to_string(id) + ".log"), port_(port) {
    auto props = dir + "/node" + std::to_string(id) + ".properties";
    {
      std::ofstream out{props};
      out << "node.id=" << id << "\nlisteners=caftx://127.0.0.1:" << port
          << "\nlog.dirs=" << dir << "/data" << id << "\nzookeeper.connect=" << zk
          << "\nzookeeper.session.timeout.ms=6000\ntransaction.state.log.num.partitions=3"
          << "\noffsets.topic.num.partitions=3\nlog.level=info"
          // One replica per partition: these lines measure the
          // inter-process path (the replicated ones are their own).
          << "\ntransaction.state.log.replication.factor=1\noffsets.topic.replication.factor=1\n";
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<std::string> argv{CAFTX_NODE_BINARY, "--config", props};
    std::vector<char*> args;
    for (auto& a : argv)
      args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0)
      throw std::runtime_error("cannot start " + argv[0]);
    posix_spawn_file_actions_destroy(&fa);
  }
  ~node_proc() {
    ::kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 200; ++i) {
      if (::waitpid(pid_, &st, WNOHANG) == pid_)
        return;
      std::this_thread::sleep_for(50ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &st, 0);
  }
  bool logged(const std::string& what) const { return read_all(log_).find(what) != std::string::npos; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }

private:
  std::string log_;
  uint16_t port_;
  pid_t pid_ = -1;
};

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  auto until = clock_type::now() + deadline;
  while (!cond()) {
    if (clock_type::now() >= until)
      return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A cluster of `n` nodes under its own chroot, each registered and
// connected to every other one.
struct node_cluster {
  std::vector<std::unique_ptr<node_proc>> nodes;
  std::string bootstrap;

  node_cluster(const std::string& dir, int n, const std::string& zk) {
    std::filesystem::create_directories(dir);
    for (int id = 1; id <= n; ++id) {
      nodes.push_back(std::make_unique<node_proc>(dir, id, free_port(), zk));
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
  std::vector<node_cluster*> clusters{&one, &three};
  std::vector<std::unique_ptr<producer>> producers;
  for (auto* c : clusters) {
    admin_client admin{c->client()};
    auto st = admin.create_topic("lat", 3);
    if (!st.ok())
      throw std::runtime_error("multinode: CreateTopics: " + st.to_string());
    producers.push_back(std::make_unique<producer>(c->client({{"transactional.id", "lat"}})));
    producers.back()->init_transactions();
  }
  int txns = ctx.quick ? 5 : 100;
  std::vector<line> lines(2);
  const char* names[] = {"1 node", "3 nodes"};
  for (size_t i = 0; i < 2; ++i) {
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
  if (lines[0].stats().median > 0)
    lines[1].note += "; x" + fmt("%.2f", lines[1].stats().median / lines[0].stats().median)
                     + " of 1 node (EndTxn), x"
                     + fmt("%.2f", lines[1].extra["transaction_cycle_p50_ms"].get<double>()
                                     / lines[0].extra["transaction_cycle_p50_ms"].get<double>())
                     + " (whole transaction)";
  producers.clear();
  for (auto& l : lines)
    report(l);
}

} // namespace caftx::bench
