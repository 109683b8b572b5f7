// The generic supervisor on the deterministic scheduler: a restart waits
// until the dead child's queued writes are settled (supervisor_options::
// settle), and requests meanwhile get the `unavailable` reply.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <functional>

#include "actors/common/supervisor.hpp"
#include "runtime/messages.hpp"

namespace caftx::testing {
namespace {

struct config : caf::actor_system_config {
  config() {
    register_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

class SupervisorTest : public ::testing::Test {
protected:
  config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched
    = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  caf::scoped_actor self{sys, true};
  int spawned = 0;
  std::function<void(const status&)> ready; // held by the test: the writes "settle" when it runs

  caf::actor start() {
    supervisor_options opts;
    opts.spawn_child = [this](caf::actor_system& s) {
      ++spawned;
      int incarnation = spawned;
      return s.spawn([incarnation](caf::event_based_actor*) -> caf::behavior {
        return {[incarnation](const describe_transaction_request&) {
          describe_transaction_response r;
          r.coordinator_epoch = incarnation;
          return r;
        }};
      });
    };
    opts.settle = [this](std::function<void(const status&)> r) { ready = std::move(r); };
    opts.unavailable = [](const caf::message&, const status&) -> std::optional<caf::message> {
      describe_transaction_response r;
      r.error = error_code::coordinator_not_available;
      return caf::make_message(r);
    };
    auto sup = spawn_supervisor(sys, opts);
    sched.run();
    return sup;
  }

  describe_transaction_response ask(const caf::actor& sup) {
    auto h = self->request(sup, caf::infinite, describe_transaction_request{"tx"});
    sched.run();
    describe_transaction_response r;
    h.receive([&](describe_transaction_response& x) { r = x; },
              [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
    return r;
  }

  ~SupervisorTest() override {
    self->send_exit(sup_, caf::exit_reason::user_shutdown);
    sched.run();
  }
  caf::actor sup_;
};

TEST_F(SupervisorTest, RestartWaitsUntilTheDeadChildsWritesAreSettled) {
  sup_ = start();
  EXPECT_EQ(ask(sup_).coordinator_epoch, 1);
  self->send(sup_, kill_child_request{});
  sched.run();
  // The child is dead, its writes not yet settled: no new child, requests
  // get the unavailable reply.
  ASSERT_TRUE(ready != nullptr);
  EXPECT_EQ(spawned, 1);
  EXPECT_EQ(ask(sup_).error, error_code::coordinator_not_available);
  ready(status{});
  sched.run();
  EXPECT_EQ(spawned, 2);
  auto r = ask(sup_);
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.coordinator_epoch, 2);
}

} // namespace
} // namespace caftx::testing
