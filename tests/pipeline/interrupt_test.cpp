// The northwind-pipeline program interrupted by SIGINT or SIGTERM: it exits
// with 128 + the signal and leaves no temporary data directory behind (its
// reaper process removes it right after the exit).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.hpp"

namespace caftx::testing {
namespace {

namespace fs = std::filesystem;

// Runs the program with TMPDIR = `tmp`, waits until its temporary data
// directory exists, sends `sig`, and returns the wait status.
int interrupted_run(const std::string& tmp, int sig) {
  pid_t child = fork();
  if (child == 0) {
    setenv("TMPDIR", tmp.c_str(), 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execl(CAFTX_NORTHWIND_PIPELINE, "northwind-pipeline", "--crashes", "0", "--node-restarts",
          "0", "--orders-per-transaction", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  // A bounded wait for the process to have created its directory.
  for (int i = 0; i < 10000 && fs::is_empty(tmp); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(fs::is_empty(tmp)) << "the program created no data directory";
  kill(child, sig);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  return wstatus;
}

TEST(Interrupt, SigintAndSigtermRemoveTheTemporaryDataDirectory) {
  for (int sig : {SIGINT, SIGTERM}) {
    auto tmp = fresh_dir("-tmp");
    fs::create_directories(tmp);
    int wstatus = interrupted_run(tmp, sig);
    ASSERT_TRUE(WIFEXITED(wstatus)) << "signal " << sig;
    EXPECT_EQ(WEXITSTATUS(wstatus), 128 + sig);
    // Its reaper removes the directory once the process is gone.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!fs::is_empty(tmp) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(fs::is_empty(tmp)) << "signal " << sig << ": left " << fs::directory_iterator(tmp)->path();
    fs::remove_all(tmp);
  }
}

} // namespace
} // namespace caftx::testing
