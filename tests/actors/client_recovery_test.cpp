// The C++ producer and consumer against one node on the deterministic
// scheduler, in simulated time, where the cluster's state moves under
// them: a transactional id that expired at its coordinator.
#include "fixture.hpp"

#include "actors/client/producer.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};

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

} // namespace
} // namespace caftx::testing
