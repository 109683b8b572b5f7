// The producer supervises its session actor: a killed session is replaced
// at the next call, the records it held fail, and the producer goes on
// with a new identity (no duplicate, no silent loss).
#include "fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/client/producer.hpp"
#include "actors/client/producer_session.hpp"

namespace caftx::testing {
namespace {

using ProducerSessionTest = node_fixture;

TEST_F(ProducerSessionTest, KilledSessionIsReplacedItsRecordsFailAndTheProducerGoesOn) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.linger_ms = 1000; // records wait in the session until flushed
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
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
  p.set_driver(deterministic_driver());
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

// A session alone, against fakes that log what reaches them in order.
class session_alone : public node_fixture {
protected:
  caf::actor session;
  std::vector<caf::actor> fakes; // killed at the end with the session

  template <class F>
  caf::actor fake(F behavior) {
    fakes.push_back(sys.spawn(std::move(behavior)));
    return fakes.back();
  }

  void TearDown() override {
    fakes.push_back(session);
    for (auto& a : fakes)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    sched.run();
  }

  /// Flushes and runs every timer until the session answers.
  session_flush_result flush() {
    auto handle = self->request(session, caf::infinite, session_flush{false});
    sched.run();
    while (self->mailbox().empty() && sched.trigger_timeout())
      sched.run();
    session_flush_result result;
    handle.receive([&](session_flush_result& r) { result = std::move(r); },
                   [&](caf::error& e) { ADD_FAILURE() << "no reply: " << sys.render(e); });
    return result;
  }
};

// The session against a fake broker, coordinator and partition leader.
class SessionAddPartitionsTest : public session_alone {
protected:
  std::vector<std::string> log;
  std::vector<error_code> add_replies; // scripted, then NONE
  caf::actor coordinator, broker_fake, leader;

  void SetUp() override {
    coordinator = fake([this]() -> caf::behavior {
      return {[this](const add_partitions_to_txn_request& r) {
        std::string line = "add " + r.transactional_id + " pid " + std::to_string(r.pid.value)
                           + " epoch " + std::to_string(r.epoch.value) + ":";
        for (auto& tp : r.partitions)
          line += " " + to_string(tp);
        log.push_back(line);
        error_code e = error_code::none;
        if (!add_replies.empty()) {
          e = add_replies.front();
          add_replies.erase(add_replies.begin());
        }
        return txn_response{e, e == error_code::none ? "" : "scripted"};
      }};
    });
    broker_fake = fake([this]() -> caf::behavior {
      return {[this](const find_coordinator_request& r) {
        log.push_back("find " + r.key);
        return find_coordinator_response{error_code::none, "", 0, coordinator};
      }};
    });
    leader = fake([this]() -> caf::behavior {
      return {[this](const produce_request& r) {
        auto h = v2::validate(r.records);
        EXPECT_TRUE(h.ok()) << h.error().to_string();
        auto base_sequence = h.ok() ? h->base_sequence : -2;
        log.push_back("produce " + to_string(r.tp) + " seq " + std::to_string(base_sequence));
        return produce_response{error_code::none, "", 100 + base_sequence, 0};
      }};
    });
    producer_config pc;
    pc.transactional_id = "tx";
    pc.linger_ms = 1000;
    pc.batch_size = 1; // every record a batch
    session = spawn_producer_session(sys, pc, broker_fake);
    caf::anon_send(session, session_identity{producer_id{9}, producer_epoch{4}});
  }

  void record_for(int partition, uint64_t id, bool add) {
    caf::anon_send(session, session_record{id, {"t", partition}, caf::actor_cast<partition_actor>(leader),
                                           record{"", "v", {}, 1}, add});
  }

};

TEST_F(SessionAddPartitionsTest, ABurstOfNewPartitionsIsAddedInOneRequestBeforeTheirFirstBatch) {
  record_for(2, 1, true);
  record_for(0, 2, true);
  record_for(2, 3, false); // already being added
  record_for(1, 4, true);
  auto r = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"find tx", "add tx pid 9 epoch 4: t-0 t-1 t-2",
                                           "produce t-0 seq 0", "produce t-1 seq 0",
                                           "produce t-2 seq 0", "produce t-2 seq 1"}));
  ASSERT_EQ(r.completions.size(), 4u);
  for (auto& c : r.completions) {
    EXPECT_EQ(c.error, error_code::none);
    EXPECT_FALSE(c.add_failed);
  }
  // A partition added once is not added again; a new one is, alone.
  log.clear();
  record_for(1, 5, false);
  record_for(3, 6, true);
  flush();
  EXPECT_EQ(log, (std::vector<std::string>{"produce t-1 seq 1", "add tx pid 9 epoch 4: t-3",
                                           "produce t-3 seq 0"}));
}

TEST_F(SessionAddPartitionsTest, ConcurrentTransactionsIsRetriedThenAFencedAddFailsTheHeldRecords) {
  add_replies = {error_code::concurrent_transactions, error_code::producer_fenced};
  record_for(0, 1, true);
  record_for(0, 2, false);
  auto r = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"find tx", "add tx pid 9 epoch 4: t-0",
                                           "add tx pid 9 epoch 4: t-0"}));
  ASSERT_EQ(r.completions.size(), 2u);
  for (auto& c : r.completions) {
    EXPECT_EQ(c.error, error_code::producer_fenced);
    EXPECT_TRUE(c.add_failed);
    EXPECT_EQ(c.offset, -1);
  }
}

TEST_F(SessionAddPartitionsTest, AnAbortBeforeTheAddDropsTheHeldRecordsAndTheNextTransactionAddsAgain) {
  record_for(0, 1, true);
  auto handle = self->request(session, caf::infinite, session_flush{true}); // before the add ran
  sched.run();
  session_flush_result r;
  handle.receive([&](session_flush_result& x) { r = std::move(x); },
                 [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  ASSERT_EQ(r.completions.size(), 1u);
  EXPECT_EQ(r.completions[0].error, error_code::invalid_txn_state);
  EXPECT_EQ(log, std::vector<std::string>{}); // nothing was requested nor produced
  // EndTxn(abort) bumped the epoch; the next transaction adds again.
  caf::anon_send(session, session_identity{producer_id{9}, producer_epoch{5}});
  record_for(0, 2, true);
  auto next = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"find tx", "add tx pid 9 epoch 5: t-0",
                                           "produce t-0 seq 0"}));
  ASSERT_EQ(next.completions.size(), 1u);
  EXPECT_EQ(next.completions[0].offset, 100);
}

// A leader that answers NOT_LEADER_OR_FOLLOWER or is gone: the session
// asks the broker for the topic's leaders (Kafka's Sender requests a
// metadata update) and retries the same batch, with the same sequence, to
// the leader the broker names, instead of the handle that failed.
class SessionLeaderMovesTest : public session_alone {
protected:
  std::vector<std::string> log;
  std::vector<error_code> old_replies; // scripted answers of the old leader, then NONE
  std::vector<std::vector<partition_actor>> metadata; // the broker's answers; the last repeats
  caf::actor broker_fake, old_leader, new_leader;

  caf::actor fake_leader(const std::string& name, std::vector<error_code>* replies) {
    return fake([this, name, replies]() -> caf::behavior {
      return {[this, name, replies](const produce_request& r) {
        auto h = v2::validate(r.records);
        auto seq = h.ok() ? h->base_sequence : -2;
        log.push_back(name + " " + to_string(r.tp) + " seq " + std::to_string(seq));
        error_code e = error_code::none;
        if (replies && !replies->empty()) {
          e = replies->front();
          replies->erase(replies->begin());
        }
        if (e != error_code::none)
          return produce_response{e, "scripted", -1, 0};
        return produce_response{error_code::none, "", 100 + seq, 0};
      }};
    });
  }

  void SetUp() override {
    old_leader = fake_leader("old", &old_replies);
    new_leader = fake_leader("new", nullptr);
    broker_fake = fake([this]() -> caf::behavior {
      return {[this](const metadata_request& r) {
        log.push_back("metadata " + r.topics.at(0));
        topic_metadata tm{r.topics.at(0), error_code::none, metadata.front()};
        if (metadata.size() > 1)
          metadata.erase(metadata.begin());
        if (tm.partitions.empty() || !tm.partitions.front())
          tm.error = error_code::leader_not_available;
        return metadata_response{{tm}};
      }};
    });
    producer_config pc;
    pc.linger_ms = 1000;
    pc.batch_size = 1; // every record a batch
    session = spawn_producer_session(sys, pc, broker_fake);
    caf::anon_send(session, session_identity{producer_id{9}, producer_epoch{0}});
  }

  /// The flush resolved exactly one record, delivered at `offset`.
  static void expect_one_delivered_at(const session_flush_result& r, int64_t offset) {
    ASSERT_EQ(r.completions.size(), 1u);
    EXPECT_EQ(r.completions[0].error, error_code::none);
    EXPECT_EQ(r.completions[0].offset, offset);
  }

  void record_via(const caf::actor& leader, uint64_t id) {
    caf::anon_send(session, session_record{id, {"t", 0}, caf::actor_cast<partition_actor>(leader),
                                           record{"", "v", {}, 1}, false});
  }

};

TEST_F(SessionLeaderMovesTest, NotLeaderOrFollowerSendsTheRetryToTheLeaderTheBrokerNames) {
  old_replies = {error_code::not_leader_or_follower};
  metadata = {{caf::actor_cast<partition_actor>(new_leader)}};
  record_via(old_leader, 1);
  auto r = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"old t-0 seq 0", "metadata t", "new t-0 seq 0"}));
  expect_one_delivered_at(r, 100);
  // A record that still carries the old leader (the producer's cached
  // metadata) goes to the new one.
  log.clear();
  record_via(old_leader, 2);
  r = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"new t-0 seq 1"}));
  expect_one_delivered_at(r, 101);
}

TEST_F(SessionLeaderMovesTest, AStoppedLeaderIsLookedUpAgainUntilTheBrokerKnowsANewOne) {
  caf::anon_send_exit(old_leader, caf::exit_reason::kill);
  sched.run();
  // The broker knows no leader at first (LEADER_NOT_AVAILABLE), then the
  // new one.
  metadata = {{partition_actor{}}, {caf::actor_cast<partition_actor>(new_leader)}};
  record_via(old_leader, 1);
  auto r = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"metadata t", "metadata t", "new t-0 seq 0"}));
  expect_one_delivered_at(r, 100);
}

// A partition without a leader in the producer's metadata (Kafka lists it
// with leader -1): its records are queued and the session asks for the
// leader before the first send.
TEST_F(SessionLeaderMovesTest, ARecordWithoutALeaderWaitsForTheOneTheBrokerNames) {
  metadata = {{caf::actor_cast<partition_actor>(new_leader)}};
  record_via(caf::actor{}, 1);
  auto r = flush();
  EXPECT_EQ(log, (std::vector<std::string>{"metadata t", "new t-0 seq 0"}));
  expect_one_delivered_at(r, 100);
}

} // namespace
} // namespace caftx::testing
