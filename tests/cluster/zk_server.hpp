// A throwaway ZooKeeper server for tests that need real processes: one
// standalone JVM per test binary (started on first use, stopped when the
// binary exits), on a free 127.0.0.1 port with its data in a temporary
// directory, and a fresh chroot per test. Also the C-client tricks tests
// need (forcing a session expiry), and an ensemble of several servers.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace caftx::testing {

class zk_server {
public:
  /// The binary's server, started (and ready: `ruok` answers `imok`) on the
  /// first call. Throws std::runtime_error if java or the server jar is
  /// missing or the server does not answer within 30 s.
  static zk_server& shared();

  /// Starts a server now (ready when the constructor returns).
  zk_server();
  /// Stops it: SIGTERM, SIGKILL after 10 s; removes its directory.
  ~zk_server();
  zk_server(const zk_server&) = delete;
  zk_server& operator=(const zk_server&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  /// "127.0.0.1:<port>".
  std::string hosts() const;
  /// A chroot no test used before: "/test-<name>-<n>" (name sanitized).
  std::string fresh_chroot(const std::string& name);
  /// hosts() + chroot.
  std::string connect(const std::string& chroot) const { return hosts() + chroot; }

  /// Freezes the JVM (SIGSTOP) / lets it go on (SIGCONT).
  void pause();
  void resume();
  /// True if `ruok` gets `imok` before `deadline`.
  bool ready_within(std::chrono::milliseconds deadline) const;

private:
  void start();
  void stop();
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
  int next_chroot_ = 1;
};

/// A ZooKeeper ensemble of `n` servers on 127.0.0.1 for the tests of a
/// server failing (a quorum is n / 2 + 1): each its own JVM, data
/// directory and client port. Serving (every server in a mode) when the
/// constructor returns, else std::runtime_error after 60 s; the destructor
/// stops every server still running (SIGTERM, then SIGKILL) by its PID and
/// removes the directories.
class zk_ensemble {
public:
  explicit zk_ensemble(int n);
  ~zk_ensemble();
  zk_ensemble(const zk_ensemble&) = delete;
  zk_ensemble& operator=(const zk_ensemble&) = delete;

  /// Every server's client address, "127.0.0.1:<port>,...".
  std::string hosts() const;
  std::string connect(const std::string& chroot) const { return hosts() + chroot; }
  /// The index of the running server whose `srvr` says "Mode: leader", or -1.
  int leader() const;
  /// SIGKILLs server `i` and reaps it.
  void kill(int i);

private:
  void stop_all();
  std::string dir_;
  std::vector<int> ports_;
  std::vector<pid_t> pids_;
};

/// Expires the session (id, password) as ZooKeeper's tests do: opens a
/// second handle with the same session and closes it, again until a handle
/// resuming the session is told it expired (the session's own handle may
/// take it back before the close). False if that did not happen within
/// `deadline`.
bool expire_zookeeper_session(const std::string& connect, int64_t session_id,
                              const std::string& password, std::chrono::milliseconds deadline);

} // namespace caftx::testing
