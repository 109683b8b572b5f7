// The node processes a drill may kill, stop, pause and restart: a cluster
// directory in the layout of tools/local-cluster.sh (docs/node.md §A local
// cluster) — `nodeI.properties`, `nodeI.pid`, `nodeI.log` per node id I,
// `zookeeper.pid` — either one that script started (attach) or one the
// drill lays out and starts itself (start_local: ZooKeeper and N nodes on
// 127.0.0.1 and free ports, in a fresh directory). Processes are told apart
// by the PIDs in those files only; a restarted node's PID is written back,
// so the script's `stop` still finds it. Not thread-safe: one drill thread
// drives it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/status.hpp"

namespace caftx::drill {

/// A TCP port on 127.0.0.1 that was free a moment ago (the OS's pick for
/// a socket bound to port 0, then closed).
uint16_t free_port();

/// One node of the cluster directory.
struct node_process_info {
  int32_t id = -1;
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string properties; // path of nodeI.properties
  std::string log;        // path of nodeI.log
  /// zookeeper.session.timeout.ms of its properties (Kafka's 18000 if
  /// not set): how long a paused node takes to be declared dead.
  int32_t session_timeout_ms = 18000;
  std::string endpoint() const { return host + ":" + std::to_string(port); }
};

/// Options of a cluster the drill starts itself.
struct local_cluster_options {
  int32_t nodes = 3;
  /// Where the cluster lives; removed by the destructor unless `keep`.
  std::string dir;
  bool keep = false;
  std::string node_binary;
  /// Lines added to every node's properties (key -> value).
  std::map<std::string, std::string> node_properties;
};

class cluster_processes {
public:
  /// A cluster started by tools/local-cluster.sh in `dir`: reads each
  /// nodeI.properties (node.id, listeners, zookeeper.session.timeout.ms)
  /// and nodeI.pid. Restarts use the executable of a running node, else
  /// `node_binary`. Errors: INVALID_CONFIG naming the file (no nodes, a
  /// file that does not parse).
  static status_or<cluster_processes> attach(const std::string& dir,
                                             const std::string& node_binary);

  /// Starts ZooKeeper (the jar of Debian's libzookeeper-java on a local
  /// JRE) and `opts.nodes` nodes in `opts.dir`, waits until every node
  /// registered (60 s each). Errors: INVALID_CONFIG (no java, no jar, no
  /// node binary), REQUEST_TIMED_OUT (a process did not come up: its log
  /// is named).
  static status_or<cluster_processes> start_local(const local_cluster_options& opts);

  cluster_processes() = default;
  cluster_processes(cluster_processes&&) noexcept;
  cluster_processes& operator=(cluster_processes&&) noexcept;
  cluster_processes(const cluster_processes&) = delete;
  cluster_processes& operator=(const cluster_processes&) = delete;
  /// A cluster it started: every process stopped (SIGTERM, SIGKILL after
  /// 30 s) by its PID and, unless kept, its directory removed. An attached
  /// cluster is left running.
  ~cluster_processes();

  const std::vector<node_process_info>& nodes() const { return nodes_; }
  const node_process_info& node(int32_t id) const;
  /// "host:port,..." of every node.
  std::string bootstrap_servers() const;
  const std::string& dir() const { return dir_; }
  bool owned() const { return owned_; }

  /// True while node `id`'s process lives (not a zombie; a stopped child
  /// of this process is reaped here).
  bool running(int32_t id);
  /// Sends `sig` to node `id`'s process. False if it does not run.
  bool signal(int32_t id, int sig);
  /// Sends `sig` and waits up to `deadline` for the process to end; true if
  /// it ended.
  bool stop(int32_t id, int sig, std::chrono::milliseconds deadline);
  /// Starts node `id` again on its properties (its log appended), writes
  /// its new PID and waits until it registered with ZooKeeper (60 s).
  /// Errors: REQUEST_TIMED_OUT naming the log.
  status restart(int32_t id);
  /// Stops every node (SIGTERM one after another, SIGKILL after 30 s) and,
  /// for a cluster it started, ZooKeeper; the data stays.
  void stop_all();

private:
  status spawn_node(const node_process_info& n);
  status await_registered(const node_process_info& n, std::uintmax_t log_from);
  pid_t pid_of(int32_t id) const;

  std::string dir_;
  std::string node_binary_;
  bool owned_ = false;
  bool keep_ = false;
  std::vector<node_process_info> nodes_;
  pid_t zookeeper_pid_ = -1;
};

} // namespace caftx::drill
