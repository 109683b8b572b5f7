// A node process killed with SIGKILL in the middle of a stream of
// transactions: a new node on the same data directory has every
// acknowledged (committed) record, in order, once.
#include "fixture.hpp"

#include <csignal>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"

namespace caftx::testing {
namespace {

using namespace std::chrono_literals;

// The child: commits record i in transaction i and reports i on `fd`
// after commit_transaction() returned, until it is killed.
[[noreturn]] void run_child(const std::string& dir, int fd) {
  threaded_config cfg;
  caf::actor_system sys{cfg};
  node_config ncfg;
  ncfg.data_dir = dir;
  auto n = node::start(sys, ncfg);
  if (!n.ok())
    _exit(3);
  auto& node = *n.value();
  if (!node.create_topic("k", 1).ok())
    _exit(4);
  producer p{sys, node.broker(), properties{{"transactional.id", "killed"}}};
  p.init_transactions();
  for (int i = 0;; ++i) {
    p.begin_transaction();
    p.send({"k", 0, "", std::to_string(i), {}, -1});
    p.commit_transaction();
    auto line = std::to_string(i) + "\n";
    if (write(fd, line.data(), line.size()) < 0)
      _exit(5);
  }
}

TEST(SigKill, EveryCommittedRecordSurvivesSigkillOfTheNodeProcess) {
  auto dir = fresh_dir();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    run_child(dir, fds[1]);
  }
  close(fds[1]);
  FILE* in = fdopen(fds[0], "r");
  int acknowledged = -1;
  char line[64];
  while (acknowledged < 30 && fgets(line, sizeof(line), in) != nullptr)
    acknowledged = std::atoi(line);
  kill(child, SIGKILL);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  fclose(in);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
  ASSERT_EQ(acknowledged, 30);

  threaded_config cfg;
  caf::actor_system sys{cfg};
  node_config ncfg;
  ncfg.data_dir = dir;
  auto started = node::start(sys, ncfg);
  ASSERT_TRUE(started.ok()) << started.error().to_string();
  auto n = std::move(started).value();
  // A new instance of the application fences the killed one and finishes
  // (or aborts) whatever it left open.
  producer p{sys, n->broker(), properties{{"transactional.id", "killed"}}};
  p.init_transactions();
  consumer c{sys, n->broker(),
             properties{{"isolation.level", "read_committed"}, {"auto.offset.reset", "earliest"}}};
  topic_partition tp{"k", 0};
  c.assign({tp});
  auto end = c.end_offset(tp);
  std::vector<int> values;
  while (c.position(tp) < end)
    for (auto& r : c.poll(100ms))
      values.push_back(std::stoi(r.value));
  // 0, 1, 2, ... without gaps or duplicates, at least up to the last
  // acknowledged one (the child may have committed one more before dying).
  ASSERT_GE(values.size(), static_cast<size_t>(acknowledged + 1));
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(values[i], static_cast<int>(i));
  n->stop();
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace caftx::testing
