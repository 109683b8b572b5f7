// Freezing a child process in a test: SIGSTOP that waits until it took effect.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <cerrno>

namespace caftx::testing {

/// Sends SIGSTOP to the child `pid` and returns once every thread of it has
/// stopped: kill() only queues the signal, and a thread running on another
/// core may still answer a request for a moment. True when stopped; false
/// when the child exited instead (reaped; `exit_status` is its wait status)
/// or could not be signalled (`exit_status` untouched).
inline bool freeze_child(pid_t pid, int& exit_status) {
  if (::kill(pid, SIGSTOP) != 0)
    return false;
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &st, WUNTRACED)) == -1 && errno == EINTR) {
  }
  if (r != pid)
    return false;
  if (WIFSTOPPED(st))
    return true;
  exit_status = st;
  return false;
}

} // namespace caftx::testing
