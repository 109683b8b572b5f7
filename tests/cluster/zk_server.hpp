// A throwaway ZooKeeper server for tests that need real processes: one
// standalone JVM per test binary (started on first use, stopped when the
// binary exits), on a free 127.0.0.1 port with its data in a temporary
// directory, and a fresh chroot per test. Also the C-client tricks tests
// need (forcing a session expiry).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

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

/// Expires the session (id, password) as ZooKeeper's tests do: opens a
/// second handle with the same session and closes it, again until a handle
/// resuming the session is told it expired (the session's own handle may
/// take it back before the close). False if that did not happen within
/// `deadline`.
bool expire_zookeeper_session(const std::string& connect, int64_t session_id,
                              const std::string& password, std::chrono::milliseconds deadline);

} // namespace caftx::testing
