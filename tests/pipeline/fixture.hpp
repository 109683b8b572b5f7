// An actor system with the real (threaded) scheduler and a node on a
// fresh data directory, for end-to-end tests through the client API.
#pragma once

#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <thread>

#include "actors/broker/node.hpp"
#include "actors/client/admin.hpp"
#include "runtime/messages.hpp"

namespace caftx::testing {

struct threaded_config : caf::actor_system_config {
  threaded_config() {
    register_message_types(*this);
    set("scheduler.max-threads", 2);
  }
};

inline std::string fresh_dir(const std::string& suffix = "") {
  auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // The process id keeps concurrent test runs on one machine apart.
  auto dir = std::filesystem::path(::testing::TempDir())
             / ("caftx-pipeline-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "."
                + info->name() + suffix);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

class threaded_fixture : public ::testing::Test {
protected:
  threaded_config cfg;
  caf::actor_system sys{cfg};
  std::string dir = fresh_dir();
  node_config ncfg;
  std::unique_ptr<node> n;

  /// Throws if the node does not start, which fails the calling test.
  void start_node() {
    ncfg.data_dir = dir;
    auto started = node::start(sys, ncfg);
    if (!started.ok())
      throw std::runtime_error("node did not start: " + started.error().to_string());
    n = std::move(started).value();
  }

  /// commit_transaction() returns once the commit is decided; waits (up to
  /// 10 s) until `tid`'s markers are written, so its data is readable.
  void await_complete(const std::string& tid) {
    for (int i = 0; i < 10000; ++i) {
      auto r = describe_transaction(sys, n->broker(), tid);
      if (r.ok() && (r->state == "CompleteCommit" || r->state == "CompleteAbort"))
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL() << "transaction of " << tid << " did not complete";
  }

  void TearDown() override {
    if (n)
      n->stop();
    n.reset();
    std::filesystem::remove_all(dir);
  }
};

} // namespace caftx::testing
