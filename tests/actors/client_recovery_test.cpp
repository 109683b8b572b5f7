// The C++ producer against one node on the deterministic scheduler, in
// simulated time, where the cluster's state moves under it: a
// transactional id that expired at its coordinator; a partition leader
// restart that bounces a fresh producer's first batch while its second is
// on the way.
#include "fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <deque>

#include "actors/client/client_context.hpp"
#include "actors/client/producer.hpp"

namespace caftx::testing {
namespace {

using namespace std::chrono_literals;
using iso = isolation_level;
const topic_partition t0{"t", 0};

using hold_atom = caf::atom_constant<caf::atom("hold")>;
using bounce_first_atom = caf::atom_constant<caf::atom("bounce1st")>;

// Stands between the producer and t-0's leader (its supervisor). Forwards
// produce requests; after hold, keeps them until bounce_first, then answers
// the first one as a leader that died with it in its mailbox does
// (request_receiver_down), forwards the others in order, and forwards
// everything again.
caf::behavior leader_gate(caf::event_based_actor* self, caf::actor leader) {
  struct held_request {
    caf::response_promise rp;
    produce_request req;
  };
  auto held = std::make_shared<std::deque<held_request>>();
  auto open = std::make_shared<bool>(true);
  return {
    [=](produce_request& req) -> caf::result<caf::message> {
      auto rp = self->make_response_promise();
      if (*open)
        rp.delegate(leader, std::move(req));
      else
        held->push_back({rp, std::move(req)});
      return rp;
    },
    [=](hold_atom) { *open = false; },
    [=](bounce_first_atom) {
      *open = true;
      if (held->empty())
        return;
      held->front().rp.deliver(caf::make_error(caf::sec::request_receiver_down));
      held->pop_front();
      for (auto& h : *held)
        h.rp.delegate(leader, std::move(h.req));
      held->clear();
    },
  };
}

// The node's broker, except that t's partition 0 is led by `gate`.
caf::behavior broker_behind_gate(caf::event_based_actor* self, caf::actor broker,
                                 caf::actor gate) {
  return {
    [=](const metadata_request& req) -> caf::result<metadata_response> {
      auto rp = self->make_response_promise<metadata_response>();
      self->request(broker, caf::infinite, req).then([=](metadata_response r) mutable {
        for (auto& t : r.topics)
          if (t.name == "t" && !t.partitions.empty())
            t.partitions[0] = caf::actor_cast<partition_actor>(gate);
        rp.deliver(std::move(r));
      });
      return rp;
    },
    [=](init_producer_id_request& req) -> caf::result<caf::message> {
      return self->delegate(broker, std::move(req));
    },
    [=](find_coordinator_request& req) -> caf::result<caf::message> {
      return self->delegate(broker, std::move(req));
    },
  };
}

class ClientRecoveryTest : public node_fixture {
protected:
  void SetUp() override {
    ncfg.transactional_id_expiration_ms = 10000;
    ncfg.transaction_remove_expired_transaction_cleanup_interval_ms = 1000;
    start_node();
    create_topic("t", 1);
  }

  /// Lets `ms` of simulated time pass in steps of the expiration check
  /// interval (1 s), so that every check due meanwhile runs.
  void let_time_pass(int64_t ms) {
    for (int64_t passed = 0; passed < ms; passed += 1000) {
      now_ms += 1000;
      sched.advance_time(std::chrono::milliseconds(1000));
      sched.run();
    }
  }

  static producer_record to_t0(const std::string& value) { return {"t", 0, "k", value, {}, -1}; }

  // t-0's leader restarts while `gate` holds what the producer sent it
  // meanwhile; then the first held batch is bounced, the others go to the
  // restarted leader.
  void restart_leader_bouncing_the_first(const caf::actor& gate) {
    auto sup = supervisor(leader("t", 0));
    call<supervisor_stats>(sup, kill_child_request{});
    sched.run();
    ASSERT_EQ(call<supervisor_stats>(sup, supervisor_stats_request{}).restarts, 1);
    caf::anon_send(gate, bounce_first_atom::value);
    sched.run();
  }
};

TEST_F(ClientRecoveryTest, ProducerWhoseTransactionalIdExpiredAbortsWithoutEndTxnAndGetsANewId) {
  producer_config cfg;
  cfg.transactional_id = "tx";
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  p.init_transactions();
  auto first = p.producer_identity();
  p.begin_transaction();
  p.send(to_t0("a"));
  p.flush();
  p.abort_transaction();
  // Idle beyond transactional.id.expiration.ms: the coordinator forgets "tx".
  let_time_pass(12000);
  ASSERT_EQ(describe("tx").error, error_code::transactional_id_not_found);

  p.begin_transaction();
  p.send(to_t0("b"));
  try {
    p.flush();
    FAIL() << "AddPartitionsToTxn of an expired transactional id must fail";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::invalid_producer_id_mapping) << e.what();
    EXPECT_TRUE(e.is_abortable()) << e.what();
  }
  // No EndTxn (it could only answer INVALID_PRODUCER_ID_MAPPING again):
  // InitProducerId makes the id new, with the shard's next producer id.
  p.abort_transaction();
  auto second = p.producer_identity();
  EXPECT_NE(second.first, first.first);
  EXPECT_EQ(second.second, 0);
  EXPECT_EQ(describe("tx").state, "Empty");

  p.begin_transaction();
  p.send(to_t0("c"));
  p.commit_transaction();
  sched.run();
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"c"});
}

// docs/producer-state.md §First-batches: a new producer pipelines two
// batches to the empty t-0; the leader restarts with the first one in its
// mailbox (bounced), the second reaches the restarted leader, which has no
// state for the producer. Both must end in order, the first at offset 0.
TEST_F(ClientRecoveryTest, FreshProducersBouncedFirstBatchStillLandsBeforeItsSecond) {
  auto gate = sys.spawn(leader_gate, supervisor(leader("t", 0)));
  auto broker_view = sys.spawn(broker_behind_gate, broker(), gate);
  producer_config cfg;
  cfg.batch_size = 1; // every record is a batch of its own
  std::vector<std::string> outcomes;
  auto cb = [&outcomes](const std::string& v) {
    return [&outcomes, v](const record_metadata& m, const status& st) {
      outcomes.push_back(v + "@" + std::to_string(m.offset) + " " + to_string(st.code()));
    };
  };
  {
    producer p{sys, broker_view, cfg};
    p.set_driver(deterministic_driver());
    caf::anon_send(gate, hold_atom::value);
    p.send(to_t0("r1"), cb("r1"));
    p.send(to_t0("r2"), cb("r2"));
    sched.run(); // the session sends what it may; the gate holds it
    restart_leader_bouncing_the_first(gate);
    EXPECT_NO_THROW(p.flush());
  }
  EXPECT_EQ(outcomes, (std::vector<std::string>{"r1@0 NONE", "r2@1 NONE"}));
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), (std::vector<std::string>{"r1", "r2"}));
  for (auto* a : {&gate, &broker_view})
    caf::anon_send_exit(*a, caf::exit_reason::kill);
  sched.run();
}

// The same at the start of a transactional producer's second transaction:
// a new epoch of a producer id the partition knows, whose batches the
// session pipelines at once; the partition takes the new epoch only from
// sequence 0, so the second batch waits for the first.
TEST_F(ClientRecoveryTest, BouncedFirstBatchOfANewEpochStillLandsBeforeItsSecond) {
  auto gate = sys.spawn(leader_gate, supervisor(leader("t", 0)));
  auto broker_view = sys.spawn(broker_behind_gate, broker(), gate);
  producer_config cfg;
  cfg.transactional_id = "tx";
  cfg.batch_size = 1;
  {
    producer p{sys, broker_view, cfg};
    p.set_driver(deterministic_driver());
    p.init_transactions();
    p.begin_transaction();
    p.send(to_t0("a"));
    p.commit_transaction();
    sched.run();
    p.begin_transaction();
    caf::anon_send(gate, hold_atom::value);
    p.send(to_t0("b1"));
    p.send(to_t0("b2"));
    sched.run(); // AddPartitionsToTxn, then both batches: the gate holds them
    restart_leader_bouncing_the_first(gate);
    EXPECT_NO_THROW(p.commit_transaction());
    sched.run();
  }
  EXPECT_EQ(visible_values(t0, iso::read_committed), (std::vector<std::string>{"a", "b1", "b2"}));
  for (auto* a : {&gate, &broker_view})
    caf::anon_send_exit(*a, caf::exit_reason::kill);
  sched.run();
}

// A request to a partition leader or a coordinator that is gone (stopped
// or moved with its leadership) ends with what a Kafka broker that no
// longer leads answers: NOT_LEADER_OR_FOLLOWER for the partition,
// NOT_COORDINATOR for the coordinator; both retriable.
TEST_F(ClientRecoveryTest, ARequestToAGoneLeaderOrCoordinatorEndsWithKafkasNotLeaderErrors) {
  auto gone = sys.spawn([]() -> caf::behavior { return {[](const list_offsets_request&) {}}; });
  caf::anon_send_exit(gone, caf::exit_reason::user_shutdown);
  sched.run();
  detail::client_channel ch{sys, broker()};
  ch.set_driver(deterministic_driver());
  auto leader_gone = ch.call<list_offsets_response>(caf::actor_cast<partition_actor>(gone),
                                                    list_offsets_request{t0, -1}, 1s);
  ASSERT_FALSE(leader_gone.ok());
  EXPECT_EQ(leader_gone.error().code(), error_code::not_leader_or_follower);
  auto coordinator_gone = ch.call<txn_response>(gone, list_offsets_request{t0, -1}, 1s);
  ASSERT_FALSE(coordinator_gone.ok());
  EXPECT_EQ(coordinator_gone.error().code(), error_code::not_coordinator);
  auto none = ch.call<list_offsets_response>(partition_actor{}, list_offsets_request{t0, -1}, 1s);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), error_code::not_leader_or_follower);
}

} // namespace
} // namespace caftx::testing
