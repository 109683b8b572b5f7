// A caftx-node process for the benchmarks that run nodes as processes
// (bench/multinode.cpp, bench/kafka_wire.cpp), and waiting on a condition.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/suite.hpp"

extern char** environ;

namespace caftx::bench {

inline std::string read_all(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One caftx-node process, stopped (SIGTERM, then SIGKILL) and reaped at
// destruction.
class node_proc {
public:
  /// `kafka_port`: when not 0, the node also serves Kafka's wire protocol
  /// on PLAINTEXT://127.0.0.1:kafka_port.
  node_proc(const std::string& dir, int32_t id, uint16_t port, const std::string& zk,
            int replication_factor, uint16_t kafka_port = 0)
    : log_(dir + "/node" + std::to_string(id) + ".log"), port_(port) {
    auto props = dir + "/node" + std::to_string(id) + ".properties";
    {
      std::ofstream out{props};
      out << "node.id=" << id << "\nlisteners=caftx://127.0.0.1:" << port
          << (kafka_port ? ",PLAINTEXT://127.0.0.1:" + std::to_string(kafka_port) : std::string())
          << "\nlog.dirs=" << dir << "/data" << id << "\nzookeeper.connect=" << zk
          << "\nzookeeper.session.timeout.ms=6000\ntransaction.state.log.num.partitions=3"
          << "\noffsets.topic.num.partitions=3\nlog.level=info"
          // One replica per partition (the inter-process path), or three
          // with min.insync.replicas 2 for every topic (acks=all waits
          // for the ISR).
          << "\ntransaction.state.log.replication.factor=" << replication_factor
          << "\noffsets.topic.replication.factor=" << replication_factor
          << "\ndefault.replication.factor=" << replication_factor
          << "\ntransaction.state.log.min.isr=" << std::min(2, replication_factor)
          << "\nmin.insync.replicas=" << std::min(2, replication_factor) << "\n";
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
    if (pid_ < 0)
      return;
    ::kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 200; ++i) {
      if (::waitpid(pid_, &st, WNOHANG) == pid_)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &st, 0);
  }
  bool logged(const std::string& what) const { return read_all(log_).find(what) != std::string::npos; }
  /// Sends `sig` (SIGKILL, or SIGTERM for a controlled shutdown); the
  /// process is reaped at destruction, or by reap().
  void signal(int sig) { ::kill(pid_, sig); }
  /// SIGKILL and wait: for a cluster whose nodes need no clean stop.
  void reap() {
    if (pid_ < 0)
      return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }

private:
  std::string log_;
  uint16_t port_;
  pid_t pid_ = -1;
};

inline bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  auto until = clock_type::now() + deadline;
  while (!cond()) {
    if (clock_type::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

} // namespace caftx::bench
