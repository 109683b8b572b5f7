// The producer supervises its session actor: a killed session is replaced
// at the next call, the records it held fail, and the producer goes on
// with a new identity (no duplicate, no silent loss).
#include "fixture.hpp"

#include <caf/send.hpp>

#include "actors/client/producer.hpp"

namespace caftx::testing {
namespace {

class ProducerSessionTest : public node_fixture {
protected:
  /// Runs the deterministic scheduler for a blocked client call.
  client_driver driver() {
    client_driver d;
    d.clock_ms = [this] { return now_ms; };
    d.sleep_ms = [this](int64_t ms) {
      now_ms += ms;
      sched.advance_time(std::chrono::milliseconds(ms));
      sched.run();
    };
    d.await = [this](caf::scoped_actor& waiter, caf::message_id reply) {
      for (;;) {
        while (auto* e = waiter->mailbox().peek()) {
          if (e->mid == reply)
            return;
          waiter->dequeue();
        }
        if (sched.has_job())
          sched.run_once();
        else if (!sched.trigger_timeout())
          FAIL() << "a client call waits for a reply that cannot come";
      }
    };
    return d;
  }
};

TEST_F(ProducerSessionTest, KilledSessionIsReplacedItsRecordsFailAndTheProducerGoesOn) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.linger_ms = 1000; // records wait in the session until flushed
  producer p{sys, broker(), cfg};
  p.set_driver(driver());
  std::vector<std::pair<std::string, status>> outcomes;
  auto cb = [&outcomes](const std::string& v) {
    return [&outcomes, v](const record_metadata& m, const status& st) {
      outcomes.push_back({v + "@" + std::to_string(m.offset), st});
    };
  };
  p.send({"t", 0, "k", "r1", {}, -1}, cb("r1"));
  p.flush();
  auto first = p.producer_identity();
  p.send({"t", 0, "k", "r2", {}, -1}, cb("r2")); // held by the session
  caf::anon_send_exit(p.session_actor(), caf::exit_reason::kill);
  sched.run();

  p.flush(); // replaces the session: r2 fails, nothing else to wait for
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].first, "r1@0");
  EXPECT_TRUE(outcomes[0].second.ok());
  EXPECT_EQ(outcomes[1].first, "r2@-1");
  EXPECT_EQ(outcomes[1].second.code(), error_code::unknown_server_error);
  auto second = p.producer_identity();
  EXPECT_NE(second.first, first.first); // a new producer id: sequences start again

  p.send({"t", 0, "k", "r3", {}, -1}, cb("r3"));
  p.flush();
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[2].first, "r3@1");
  EXPECT_TRUE(outcomes[2].second.ok());
  EXPECT_EQ(visible_values({"t", 0}, isolation_level::read_committed),
            (std::vector<std::string>{"r1", "r3"}));
}

TEST_F(ProducerSessionTest, KilledSessionMakesTheOpenTransactionAbortableThenTheEpochIsBumped) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.transactional_id = "tx";
  cfg.linger_ms = 1000;
  producer p{sys, broker(), cfg};
  p.set_driver(driver());
  p.init_transactions();
  auto before = p.producer_identity();
  p.begin_transaction();
  p.send({"t", 0, "k", "a", {}, -1});
  caf::anon_send_exit(p.session_actor(), caf::exit_reason::kill);
  sched.run();
  try {
    p.commit_transaction();
    FAIL() << "a commit after the session died must not succeed";
  } catch (const kafka_exception& e) {
    EXPECT_TRUE(e.is_abortable()) << e.what();
    EXPECT_EQ(e.code(), error_code::unknown_server_error);
  }
  p.abort_transaction(); // EndTxn(abort) bumps, then the KIP-360 bump
  auto after = p.producer_identity();
  EXPECT_EQ(after.first, before.first);
  EXPECT_EQ(after.second, before.second + 2);
  p.begin_transaction();
  p.send({"t", 0, "k", "b", {}, -1});
  p.commit_transaction();
  EXPECT_EQ(visible_values({"t", 0}, isolation_level::read_committed),
            (std::vector<std::string>{"b"}));
}

} // namespace
} // namespace caftx::testing
