// Real processes for the cluster tests: a caftx-node (or the message echo
// server) started with posix_spawn on 127.0.0.1, its stdout and stderr in
// files of a temporary directory, stopped by its PID (SIGTERM, or SIGKILL
// for crash tests) and always reaped. Waits are on conditions with a
// deadline, never on a fixed sleep.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/freeze_child.hpp"

extern char** environ;

namespace caftx::testing {

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0,
/// then closed).
inline uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    throw std::runtime_error("bind");
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// Polls `cond` every 5 ms until it holds or `deadline` passes; returns
/// whether it held.
inline bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= until)
      return cond();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A temporary directory, removed with everything in it at destruction.
class temp_dir {
public:
  explicit temp_dir(const std::string& name) {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (std::filesystem::path(::testing::TempDir())
             / ("caftx-cluster-" + std::to_string(::getpid()) + "-"
                + (info ? std::string(info->name()) : std::string("x")) + "-" + name))
              .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

/// A child process with its output in `<dir>/<name>.out` and `.err`.
class child_process {
public:
  /// `stdin_path`: the file its standard input reads ("": the test's own).
  child_process(const std::string& dir, const std::string& name, std::vector<std::string> argv,
                const std::string& stdin_path = "")
    : out_(dir + "/" + name + ".out"), err_(dir + "/" + name + ".err") {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!stdin_path.empty())
      posix_spawn_file_actions_addopen(&fa, 0, stdin_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<char*> args;
    for (auto& a : argv)
      args.push_back(a.data());
    args.push_back(nullptr);
    int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
      throw std::runtime_error("cannot spawn " + argv[0]);
  }

  /// Kills (SIGKILL) and reaps the process if it still runs.
  ~child_process() {
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }

  pid_t pid() const { return pid_; }
  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

  /// Waits until the process exited (up to `deadline`); its wait status.
  std::optional<int> wait_exit(std::chrono::milliseconds deadline) {
    if (exited_)
      return status_;
    bool done = wait_until(
      [&] {
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) {
          status_ = st;
          exited_ = true;
        }
        return exited_;
      },
      deadline);
    if (!done)
      return std::nullopt;
    return status_;
  }

  /// freeze_child for this process. False if it exited instead.
  bool freeze() {
    if (exited_)
      return false;
    int st = -1;
    if (freeze_child(pid_, st))
      return true;
    if (st != -1) {
      status_ = st;
      exited_ = true;
    }
    return false;
  }

  /// SIGCONT for a frozen process.
  bool thaw() { return !exited_ && ::kill(pid_, SIGCONT) == 0; }

  /// Sends `sig` and waits for the exit; the wait status.
  std::optional<int> stop(int sig, std::chrono::milliseconds deadline) {
    if (!exited_)
      ::kill(pid_, sig);
    return wait_exit(deadline);
  }

  bool running() {
    return !wait_exit(std::chrono::milliseconds(0)).has_value();
  }

private:
  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

/// A server.properties for a node on 127.0.0.1:`port` over `data_dir`,
/// with short middleman timeouts, plus `extra`.
inline std::string write_server_properties(const std::string& dir, const std::string& name,
                                           uint16_t port, const std::string& data_dir,
                                           const std::map<std::string, std::string>& extra = {}) {
  std::map<std::string, std::string> props{
    {"node.id", "1"},
    {"listeners", "caftx://127.0.0.1:" + std::to_string(port)},
    {"log.dirs", data_dir},
    {"transaction.state.log.num.partitions", "4"},
    {"offsets.topic.num.partitions", "4"},
    {"caftx.middleman.heartbeat.interval.ms", "200"},
    {"caftx.middleman.connection.timeout.ms", "2000"},
  };
  for (auto& [k, v] : extra)
    props[k] = v;
  auto path = dir + "/" + name;
  std::ofstream out{path};
  out << "# written by the cluster tests\n";
  for (auto& [k, v] : props)
    out << k << "=" << v << "\n";
  return path;
}

/// A running caftx-node: started, and ready once its "started" line is
/// logged (up to 30 s).
class node_process {
public:
  node_process(const std::string& dir, const std::string& name, const std::string& properties,
               std::vector<std::string> overrides = {})
    : proc_(dir, name, args(properties, overrides)) {}

  /// Waits for the started line; false if the process exited or it did not
  /// come within 30 s.
  bool await_started() {
    return wait_until(
      [&] { return proc_.out().find("] started (") != std::string::npos || !proc_.running(); },
      std::chrono::seconds(30))
           && proc_.running();
  }

  child_process& proc() { return proc_; }

private:
  static std::vector<std::string> args(const std::string& properties,
                                       const std::vector<std::string>& overrides) {
    std::vector<std::string> a{CAFTX_NODE_BINARY, "--config", properties};
    for (auto& o : overrides) {
      a.push_back("--override");
      a.push_back(o);
    }
    return a;
  }

  child_process proc_;
};

inline int exit_code(const std::optional<int>& wait_status) {
  if (!wait_status || !WIFEXITED(*wait_status))
    return -1;
  return WEXITSTATUS(*wait_status);
}

} // namespace caftx::testing
