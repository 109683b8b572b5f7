// The local coordination store (actors/coordination/local_store.hpp) on
// CAF's deterministic scheduler with inline durable writes: what the
// conformance suite (tests/cluster/) cannot reach, its disk and its
// ordering.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

#include "actors/coordination/local_store.hpp"
#include "runtime/coordination_messages.hpp"
#include "storage/node_store.hpp"
#include "tests/actors/fixture.hpp"

namespace caftx {
namespace {

class local_store_fixture : public ::testing::Test {
protected:
  local_store_fixture() {
    dir = (std::filesystem::temp_directory_path()
           / ("caftx-local-store-" + std::to_string(::getpid()) + "-"
              + ::testing::UnitTest::GetInstance()->current_test_info()->name()))
            .string();
    std::filesystem::remove_all(dir);
    node_store_options opts;
    opts.background_writer = false;
    opts.env = &fenv;
    opts.reopen_backoff_ms = 0;
    auto s = node_store::open(dir, opts);
    if (!s.ok())
      throw std::runtime_error(s.error().to_string());
    disk = std::move(*s);
    store = spawn_local_store(sys, {disk, caf::actor_cast<caf::actor>(self), [] { return 7; }});
    sched.run();
  }
  ~local_store_fixture() override {
    caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
    sched.run();
    disk.reset();
    std::filesystem::remove_all(dir);
  }

  template <class Response, class Request>
  Response call(Request req) {
    auto handle = self->request(store, caf::infinite, std::move(req));
    sched.run();
    Response result;
    bool got = false;
    handle.receive([&](Response& r) { result = std::move(r), got = true; },
                   [&](caf::error& e) { ADD_FAILURE() << "no reply: " << sys.render(e); });
    EXPECT_TRUE(got);
    return result;
  }

  testing::deterministic_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched
    = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  caf::scoped_actor self{sys, true};
  testing::failing_env fenv; // outlives the store
  std::string dir;
  std::shared_ptr<node_store> disk;
  caf::actor store;
};

// A write the disk refused has an unknown outcome (LevelDB may hold it after
// a restart): ZCONNECTIONLOSS, and memory keeps the state before it.
TEST_F(local_store_fixture, AFailedDurableWriteAnswersConnectionLossAndChangesNothing) {
  ASSERT_EQ(call<coord_create_response>(coord_create_request{"/a", "v0", 0}).rc, zrc::ZOK);
  fenv.fail = true;
  EXPECT_EQ(call<coord_create_response>(coord_create_request{"/b", "", 0}).rc,
            zrc::ZCONNECTIONLOSS);
  EXPECT_EQ(call<coord_stat_response>(coord_set_request{"/a", "v1", 0}).rc,
            zrc::ZCONNECTIONLOSS);
  auto g = call<coord_get_response>(coord_get_request{"/a", false});
  EXPECT_EQ(g.data, "v0");
  EXPECT_EQ(g.stat.version, 0);
  EXPECT_EQ(call<coord_stat_response>(coord_exists_request{"/b", false}).rc, zrc::ZNONODE);
  fenv.fail = false; // the store reopens the database on the next write
  auto b = call<coord_create_response>(coord_create_request{"/b", "", 0});
  EXPECT_EQ(b.rc, zrc::ZOK);
  EXPECT_EQ(b.stat.czxid, 2); // the failed writes handed out no zxid
}

// A read that arrives while a write is being persisted waits for it: it
// sees the write, as a ZooKeeper session's reads see its earlier writes.
TEST_F(local_store_fixture, ARequestWaitsForTheWriteBeforeItInArrivalOrder) {
  auto created = self->request(store, caf::infinite, coord_create_request{"/a", "x", 0});
  auto read = self->request(store, caf::infinite, coord_get_request{"/a", false});
  sched.run();
  bool got_create = false;
  created.receive([&](coord_create_response& r) { got_create = r.rc == zrc::ZOK; },
                  [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_TRUE(got_create);
  coord_get_response g;
  g.rc = zrc::ZSYSTEMERROR;
  read.receive([&](coord_get_response& r) { g = r; },
               [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(g.rc, zrc::ZOK);
  EXPECT_EQ(g.data, "x");
  EXPECT_EQ(g.stat.ctime, 7);
}

} // namespace
} // namespace caftx
