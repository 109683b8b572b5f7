#include "tools/drill/cluster_processes.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/config.hpp"
#include "config/server_config.hpp"

extern char** environ;

namespace caftx::drill {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* zookeeper_jar = "/usr/share/java/zookeeper.jar";
constexpr const char* registered_line = "registered with node epoch";

std::string slurp(const std::string& path, std::uintmax_t from = 0) {
  std::ifstream in{path, std::ios::binary};
  in.seekg(static_cast<std::streamoff>(from));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::uintmax_t size_of(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

// Starts `argv` with its output appended to `log`, in a process group of
// its own (a terminal's Ctrl-C reaches the drill only, which then stops
// its processes in order); -1 on failure. With `die_with_parent` the
// process gets SIGTERM when the drill dies, however it dies (SIGKILL
// included): the processes of a cluster the drill started end with it.
pid_t spawn(std::vector<std::string> argv, const std::string& log, bool search_path,
            bool die_with_parent) {
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  auto parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0)
    return pid; // the parent, or -1
  // The child: async-signal-safe calls only.
  ::setpgid(0, 0);
  if (die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(127); // the drill died before prctl
  }
  int in = ::open("/dev/null", O_RDONLY);
  int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (in < 0 || out < 0)
    ::_exit(127);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(out, 2);
  if (search_path)
    ::execvp(args[0], args.data());
  else
    ::execv(args[0], args.data());
  ::_exit(127);
}

// True while `pid` lives: a child that ended is reaped here; another
// process's zombie counts as ended.
bool alive(pid_t pid) {
  if (pid <= 0)
    return false;
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) == pid)
    return false;
  if (::kill(pid, 0) != 0)
    return false;
  auto stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

bool wait_gone(pid_t pid, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() >= end)
      return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

void terminate(pid_t pid) {
  if (!alive(pid))
    return;
  ::kill(pid, SIGCONT); // a paused process cannot act on SIGTERM
  ::kill(pid, SIGTERM);
  if (!wait_gone(pid, 30s)) {
    ::kill(pid, SIGKILL);
    wait_gone(pid, 10s);
  }
}

pid_t read_pid(const std::string& path) {
  std::ifstream in{path};
  long pid = -1;
  in >> pid;
  return in ? static_cast<pid_t>(pid) : -1;
}

void write_pid(const std::string& path, pid_t pid) {
  std::ofstream{path} << pid << "\n";
}

// ZooKeeper's `ruok`: true once it answers `imok`.
bool zookeeper_ok(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0
      && ::write(fd, "ruok", 4) == 4) {
    char buf[8] = {};
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ok = ::read(fd, buf, 4) == 4 && std::string(buf, 4) == "imok";
  }
  ::close(fd);
  return ok;
}

status_or<node_process_info> read_node(const std::string& dir, int32_t id) {
  node_process_info n;
  n.id = id;
  n.properties = dir + "/node" + std::to_string(id) + ".properties";
  n.log = dir + "/node" + std::to_string(id) + ".log";
  auto props = load_properties_file(n.properties);
  if (!props.ok())
    return props.error();
  if (props->find("listeners") == props->end())
    return status{error_code::invalid_config, n.properties + ": no listeners"};
  // The caftx:// entry of listeners (a PLAINTEXT:// one beside it is the
  // node's Kafka listener, not what the drill connects to).
  auto config = server_config::parse(*props);
  if (!config.ok())
    return status{error_code::invalid_config, n.properties + ": " + config.error().message()};
  n.port = config->listener.port;
  if (!config->listener.host.empty() && config->listener.host != "0.0.0.0")
    n.host = config->listener.host;
  if (auto t = props->find("zookeeper.session.timeout.ms"); t != props->end())
    n.session_timeout_ms = std::atoi(t->second.c_str());
  return n;
}

} // namespace

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

cluster_processes::cluster_processes(cluster_processes&& other) noexcept {
  *this = std::move(other);
}

cluster_processes& cluster_processes::operator=(cluster_processes&& other) noexcept {
  dir_ = std::move(other.dir_);
  node_binary_ = std::move(other.node_binary_);
  owned_ = other.owned_;
  keep_ = other.keep_;
  nodes_ = std::move(other.nodes_);
  zookeeper_pid_ = other.zookeeper_pid_;
  other.owned_ = false;
  other.nodes_.clear();
  other.zookeeper_pid_ = -1;
  return *this;
}

cluster_processes::~cluster_processes() {
  if (!owned_)
    return;
  stop_all();
  if (!keep_ && !dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

status_or<cluster_processes> cluster_processes::attach(const std::string& dir,
                                                       const std::string& node_binary) {
  cluster_processes c;
  c.dir_ = dir;
  c.node_binary_ = node_binary;
  for (int32_t id = 1; fs::exists(dir + "/node" + std::to_string(id) + ".properties"); ++id) {
    auto n = read_node(dir, id);
    if (!n.ok())
      return n.error();
    c.nodes_.push_back(std::move(*n));
  }
  if (c.nodes_.empty())
    return status{error_code::invalid_config,
                  dir + ": no node1.properties (not a directory of tools/local-cluster.sh)"};
  // Restart a node with the binary the running ones were started with.
  for (auto& n : c.nodes_) {
    auto pid = c.pid_of(n.id);
    std::error_code ec;
    auto exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    if (alive(pid) && !ec) {
      c.node_binary_ = exe.string();
      break;
    }
  }
  if (::access(c.node_binary_.c_str(), X_OK) != 0)
    return status{error_code::invalid_config,
                  c.node_binary_ + " not found or not executable: a killed node could not be "
                                   "restarted (--node-binary)"};
  return c;
}

status_or<cluster_processes> cluster_processes::start_local(const local_cluster_options& opts) {
  if (!fs::exists(zookeeper_jar))
    return status{error_code::invalid_config, std::string(zookeeper_jar)
                                                + " not found: tools/install-deps.sh installs ZooKeeper"};
  if (::access(opts.node_binary.c_str(), X_OK) != 0)
    return status{error_code::invalid_config, opts.node_binary + " not found or not executable"};
  cluster_processes c;
  c.dir_ = opts.dir;
  c.node_binary_ = opts.node_binary;
  c.owned_ = true;
  c.keep_ = opts.keep;
  std::error_code ec;
  fs::create_directories(opts.dir + "/zookeeper", ec);
  if (ec)
    return status{error_code::invalid_config, "cannot create " + opts.dir + ": " + ec.message()};
  auto zk_port = free_port();
  {
    std::ofstream cfg{opts.dir + "/zoo.cfg"};
    cfg << "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=" << opts.dir
        << "/zookeeper\nclientPortAddress=127.0.0.1\nclientPort=" << zk_port
        << "\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n";
  }
  auto zk_log = opts.dir + "/zookeeper.log";
  c.zookeeper_pid_ = spawn({"java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                            "-cp", zookeeper_jar,
                            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                            opts.dir + "/zoo.cfg"},
                           zk_log, true, true);
  if (c.zookeeper_pid_ < 0)
    return status{error_code::invalid_config,
                  "cannot start java: tools/install-deps.sh installs a Java runtime"};
  write_pid(opts.dir + "/zookeeper.pid", c.zookeeper_pid_);
  auto end = std::chrono::steady_clock::now() + 60s;
  while (!zookeeper_ok(zk_port)) {
    if (!alive(c.zookeeper_pid_) || std::chrono::steady_clock::now() >= end)
      return status{error_code::request_timed_out,
                    "ZooKeeper did not start on 127.0.0.1:" + std::to_string(zk_port) + " (see "
                      + zk_log + ")"};
    std::this_thread::sleep_for(100ms);
  }
  // Kafka's internal-topic defaults (3 replicas, min ISR 2), scaled down
  // for a smaller cluster, as tools/local-cluster.sh does.
  auto internal_rf = std::to_string(std::min(opts.nodes, 3));
  auto internal_min_isr = std::to_string(opts.nodes < 2 ? 1 : 2);
  for (int32_t id = 1; id <= opts.nodes; ++id) {
    properties p{{"node.id", std::to_string(id)},
                 {"listeners", "caftx://127.0.0.1:" + std::to_string(free_port())},
                 {"log.dirs", opts.dir + "/data" + std::to_string(id)},
                 {"zookeeper.connect", "127.0.0.1:" + std::to_string(zk_port) + "/caftx"},
                 {"transaction.state.log.replication.factor", internal_rf},
                 {"transaction.state.log.min.isr", internal_min_isr},
                 {"offsets.topic.replication.factor", internal_rf}};
    for (auto& [k, v] : opts.node_properties)
      p[k] = v;
    auto path = opts.dir + "/node" + std::to_string(id) + ".properties";
    std::ofstream out{path};
    out << "# written by caftx-drill --local\n";
    for (auto& [k, v] : p)
      out << k << "=" << v << "\n";
    out.close();
    auto n = read_node(opts.dir, id);
    if (!n.ok())
      return n.error();
    c.nodes_.push_back(std::move(*n));
  }
  for (auto& n : c.nodes_)
    if (auto st = c.spawn_node(n); !st.ok())
      return st;
  for (auto& n : c.nodes_)
    if (auto st = c.await_registered(n, 0); !st.ok())
      return st;
  return c;
}

const node_process_info& cluster_processes::node(int32_t id) const {
  for (auto& n : nodes_)
    if (n.id == id)
      return n;
  throw std::out_of_range("no node " + std::to_string(id));
}

std::string cluster_processes::bootstrap_servers() const {
  std::string out;
  for (auto& n : nodes_)
    out += (out.empty() ? "" : ",") + n.endpoint();
  return out;
}

pid_t cluster_processes::pid_of(int32_t id) const {
  return read_pid(dir_ + "/node" + std::to_string(id) + ".pid");
}

bool cluster_processes::running(int32_t id) {
  return alive(pid_of(id));
}

bool cluster_processes::signal(int32_t id, int sig) {
  auto pid = pid_of(id);
  return alive(pid) && ::kill(pid, sig) == 0;
}

bool cluster_processes::stop(int32_t id, int sig, std::chrono::milliseconds deadline) {
  auto pid = pid_of(id);
  if (!alive(pid))
    return true;
  ::kill(pid, sig);
  return wait_gone(pid, deadline);
}

status cluster_processes::spawn_node(const node_process_info& n) {
  // A node of a cluster the drill started ends with the drill; one it
  // restarts in a cluster it attached to outlives it.
  auto pid = spawn({node_binary_, "--config", n.properties}, n.log, false, owned_);
  if (pid < 0)
    return {error_code::invalid_config, "cannot start " + node_binary_};
  write_pid(dir_ + "/node" + std::to_string(n.id) + ".pid", pid);
  return {};
}

status cluster_processes::await_registered(const node_process_info& n, std::uintmax_t log_from) {
  auto end = std::chrono::steady_clock::now() + 60s;
  while (slurp(n.log, log_from).find(registered_line) == std::string::npos) {
    if (!running(n.id) || std::chrono::steady_clock::now() >= end)
      return {error_code::request_timed_out,
              "node " + std::to_string(n.id) + " did not register (see " + n.log + ")"};
    std::this_thread::sleep_for(100ms);
  }
  return {};
}

status cluster_processes::restart(int32_t id) {
  auto& n = node(id);
  if (running(id))
    return {error_code::invalid_request, "node " + std::to_string(id) + " still runs"};
  auto from = size_of(n.log);
  if (auto st = spawn_node(n); !st.ok())
    return st;
  return await_registered(n, from);
}

void cluster_processes::stop_all() {
  for (auto& n : nodes_)
    terminate(pid_of(n.id));
  if (owned_) {
    terminate(zookeeper_pid_);
    zookeeper_pid_ = -1;
  }
}

} // namespace caftx::drill
