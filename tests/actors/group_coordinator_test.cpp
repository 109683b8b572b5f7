// The group coordinator writes through its own partition
// `__consumer_offsets-N` (docs/transactions.md §TxnOffsetCommit): offsets
// change in memory only once their records are durable, the later record
// wins when a transaction commits, a crash after a durable write fails the
// request at once, a restart replays the partition (offsets and the
// groups' membership), old offsets expire by tombstones, and the partition
// reads like any other.
#include "fixture.hpp"

#include <map>

#include "actors/client/consumer.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

const topic_partition t0{"t", 0};
const topic_partition foo0{"foo", 0};

class GroupCoordinatorTest : public node_fixture {
protected:
  caf::actor group_coordinator(const std::string& group) {
    return call<find_coordinator_response>(broker(), find_coordinator_request{0, group}).coordinator;
  }

  int64_t fetch_offset(const std::string& group, const topic_partition& tp) {
    auto r = call<offset_fetch_response>(group_coordinator(group), offset_fetch_request{group, {tp}});
    EXPECT_EQ(r.error, error_code::none);
    return r.offsets.empty() ? -2 : r.offsets[0];
  }

  void let_time_pass(int64_t ms, int64_t step = 1000) {
    for (int64_t passed = 0; passed < ms; passed += step) {
      now_ms += step;
      sched.advance_time(std::chrono::milliseconds(step));
      sched.run();
    }
  }

  // The offset records of `group`'s partition, described one per line.
  std::vector<std::string> offsets_log(const std::string& group) {
    topic_partition tp{consumer_offsets_topic,
                       partition_for(group, ncfg.offsets_topic_num_partitions)};
    std::vector<std::string> lines;
    auto r = call<fetch_response>(leader(consumer_offsets_topic, tp.partition),
                                  fetch_request{tp, 0});
    EXPECT_EQ(r.error, error_code::none) << r.message;
    auto batches = v2::decode_all(r.records);
    EXPECT_TRUE(batches.ok());
    for (auto& b : batches.value())
      if (!b.is_control())
        for (auto& rec : b.records)
          lines.push_back((b.is_transactional() ? "txn " : "")
                          + coordinator_records::describe(consumer_offsets_topic, rec.key,
                                                          rec.value, rec.null_value));
    return lines;
  }
};

// Defect (a): an OffsetFetch arriving while the OffsetCommit's records are
// being written answers the previous offset (before, memory changed first
// and the fetch answered one a crash could then lose).
TEST_F(GroupCoordinatorTest, OffsetFetchWhileTheCommitIsWrittenAnswersThePreviousOffset) {
  start_node();
  create_topic("t", 1);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {10}}).error,
            error_code::none);
  auto gc = group_coordinator("g");
  // Both requests are in the coordinator's mailbox before it runs: the
  // fetch is handled before the partition answers the commit's append.
  auto commit = self->request(gc, caf::infinite, offset_commit_request{"g", {t0}, {20}});
  auto fetch = self->request(gc, caf::infinite, offset_fetch_request{"g", {t0}});
  sched.run();
  std::vector<int64_t> fetched;
  error_code committed = error_code::unknown_server_error;
  commit.receive([&](const txn_response& r) { committed = r.error; },
                 [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  fetch.receive([&](const offset_fetch_response& r) { fetched = r.offsets; },
                [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(committed, error_code::none);
  EXPECT_EQ(fetched, std::vector<int64_t>{10});
  EXPECT_EQ(fetch_offset("g", t0), 20);
  EXPECT_EQ(offsets_log("g"), (std::vector<std::string>{
                                "group=g topic=t partition=0 offset=10 metadata= commitTimestamp=1700000000000",
                                "group=g topic=t partition=0 offset=20 metadata= commitTimestamp=1700000000000"}));
}

// Defect (b): TxnOffsetCommit(foo-0 -> 37), then OffsetCommit(foo-0 -> 57),
// then the transaction commits: the plain commit is the later record and
// stays, live and after a restart replays the partition.
TEST_F(GroupCoordinatorTest, PlainCommitAfterTheTxnOffsetCommitWinsWhenTheTransactionCommits) {
  start_node();
  create_topic("foo", 1);
  auto p = init("tx");
  ASSERT_EQ(p.error, error_code::none);
  ASSERT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_offsets_to_txn_request{"tx", p.pid, p.epoch, "g"})
              .error,
            error_code::none);
  auto gc = group_coordinator("g");
  ASSERT_EQ(call<txn_response>(gc, txn_offset_commit_request{"tx", "g", p.pid, p.epoch, {foo0}, {37}})
              .error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(gc, offset_commit_request{"g", {foo0}, {57}}).error,
            error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(fetch_offset("g", foo0), 57);
  stop_node();
  start_node();
  EXPECT_EQ(fetch_offset("g", foo0), 57);
}

TEST_F(GroupCoordinatorTest, CommittedAndPendingOffsetsComeBackFromThePartitionAfterARestart) {
  start_node();
  create_topic("t", 1);
  create_topic("foo", 1);
  auto p = init("tx");
  ASSERT_EQ(call<txn_response>(coordinator_for("tx"),
                               add_offsets_to_txn_request{"tx", p.pid, p.epoch, "g"})
              .error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {4}}).error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"),
                               txn_offset_commit_request{"tx", "g", p.pid, p.epoch, {foo0}, {9}})
              .error,
            error_code::none);
  stop_node();
  start_node();
  EXPECT_EQ(fetch_offset("g", t0), 4);
  EXPECT_EQ(fetch_offset("g", foo0), -1);
  auto stable = call<offset_fetch_response>(group_coordinator("g"),
                                            offset_fetch_request{"g", {foo0}, true});
  EXPECT_EQ(stable.error, error_code::unstable_offset_commit);
  // The restarted transaction coordinator aborts or the producer commits:
  // here it commits, and the pending offset becomes the committed one.
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(fetch_offset("g", foo0), 9);
  EXPECT_EQ(offsets_log("g"), (std::vector<std::string>{
                                "group=g topic=t partition=0 offset=4 metadata= commitTimestamp=1700000000000",
                                "txn group=g topic=foo partition=0 offset=9 metadata= commitTimestamp=1700000000000"}));
}

// A group's record (Kafka's GroupMetadataValue) is written once the
// leader's assignment comes and read back by the restarted coordinator:
// the members go on at their generation with their assignments, the static
// member keeps its instance, and the partition shows the record.
TEST_F(GroupCoordinatorTest, GroupMembershipComesBackFromThePartitionAfterARestart) {
  ncfg.group_initial_rebalance_delay_ms = 0;
  start_node();
  create_topic("t", 1);
  auto join = [](const std::string& member, const std::string& instance) {
    join_group_request r{"g", 10000, 30000, member, "consumer",
                         {group_protocol{"range", "sub-" + instance}}, "client", "/10.0.0.1",
                         false, instance};
    return r;
  };
  auto j = call<join_group_response>(group_coordinator("g"), join("", "i-1"));
  ASSERT_EQ(j.error, error_code::none);
  ASSERT_EQ(j.generation_id, 1);
  auto s = call<sync_group_response>(group_coordinator("g"),
                                     sync_group_request{"g", 1, j.member_id,
                                                        {group_assignment{j.member_id, "A"}}, "i-1"});
  ASSERT_EQ(s.error, error_code::none);
  EXPECT_EQ(s.assignment, "A");
  stop_node();
  start_node();
  auto hb = call<txn_response>(group_coordinator("g"), heartbeat_request{"g", 1, j.member_id, "i-1"});
  EXPECT_EQ(hb.error, error_code::none) << hb.message;
  auto d = call<describe_groups_response>(group_coordinator("g"), describe_groups_request{{"g"}});
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].state, "Stable");
  ASSERT_EQ(d.groups[0].members.size(), 1u);
  EXPECT_EQ(d.groups[0].members[0].member_id, j.member_id);
  EXPECT_EQ(d.groups[0].members[0].group_instance_id, "i-1");
  EXPECT_EQ(d.groups[0].members[0].client_host, "/10.0.0.1");
  EXPECT_EQ(d.groups[0].members[0].metadata, "sub-i-1");
  EXPECT_EQ(d.groups[0].members[0].assignment, "A");
  EXPECT_EQ(offsets_log("g"), (std::vector<std::string>{
                                "group=g generation=1 protocolType=consumer protocol=range leader="
                                + j.member_id + " members=[" + j.member_id + "(instance=i-1)]"}));
}

// Defect (c): a group coordinator that crashes right after a durable write
// fails that request at once (request_receiver_down), instead of leaving
// the requester to its request timeout.
TEST_F(GroupCoordinatorTest, CrashAfterADurableWriteFailsTheRequestAtOnce) {
  if (!fault::enabled())
    GTEST_SKIP() << "built without fault points (CAFTX_FAULT_POINTS)";
  start_node();
  create_topic("t", 1);
  int crashes = 0;
  fault::set_handler([&crashes](const char* point, const void*) {
    if (std::string(point) == "group_coordinator.write_durable" && crashes++ == 0)
      return fault::action::crash_here;
    return fault::action::proceed;
  });
  auto handle = self->request(group_coordinator("g"), caf::infinite,
                              offset_commit_request{"g", {t0}, {7}});
  sched.run();
  fault::set_handler({});
  EXPECT_EQ(crashes, 1);
  ASSERT_FALSE(self->mailbox().empty()) << "the request was left unanswered";
  caf::error failure;
  handle.receive([&](const txn_response& r) { ADD_FAILURE() << "answered " << to_string(r.error); },
                 [&](caf::error& e) { failure = std::move(e); });
  EXPECT_EQ(failure, caf::make_error(caf::sec::request_receiver_down));
  // The write was durable: the restarted coordinator read it back.
  EXPECT_EQ(fetch_offset("g", t0), 7);
}

// offsets.retention.minutes: a committed offset older than the retention
// is removed by a tombstone in the partition; newer ones and pending
// transactional offsets stay.
TEST_F(GroupCoordinatorTest, CommittedOffsetsExpireAfterTheRetentionByTombstones) {
  ncfg.offsets_retention_minutes = 10;
  ncfg.offsets_retention_check_interval_ms = 60000;
  start_node();
  create_topic("t", 2);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {3}}).error,
            error_code::none);
  let_time_pass(300000, 60000); // 5 minutes
  topic_partition t1{"t", 1};
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t1}, {8}}).error,
            error_code::none);
  let_time_pass(360000, 60000); // t-0's commit is 11 minutes old, t-1's 6
  EXPECT_EQ(fetch_offset("g", t0), -1);
  EXPECT_EQ(fetch_offset("g", t1), 8);
  // The partition is compacted: the cleaner has removed t-0's record
  // that the tombstone superseded; the tombstone stays until
  // delete.retention.ms (docs/compaction.md).
  EXPECT_EQ(offsets_log("g"), (std::vector<std::string>{
                                "group=g topic=t partition=1 offset=8 metadata= commitTimestamp=1700000300000",
                                "group=g topic=t partition=0 <null>"}));
  stop_node();
  start_node();
  EXPECT_EQ(fetch_offset("g", t0), -1);
  EXPECT_EQ(fetch_offset("g", t1), 8);
}

// A caftx consumer reads `__consumer_offsets-N` like any partition, and
// coordinator_records::describe() prints its records.
TEST_F(GroupCoordinatorTest, ConsumerReadsTheOffsetsPartitionAndDescribeShowsTheRecords) {
  start_node();
  create_topic("t", 1);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {5}}).error,
            error_code::none);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {6}}).error,
            error_code::none);
  topic_partition tp{consumer_offsets_topic, partition_for("g", ncfg.offsets_topic_num_partitions)};
  consumer c{sys, broker(), properties{{"auto.offset.reset", "earliest"}}};
  c.set_driver(deterministic_driver());
  c.assign({tp});
  std::vector<std::string> lines;
  for (int i = 0; i < 10 && lines.size() < 2; ++i)
    for (auto& r : c.poll(std::chrono::milliseconds(100)))
      lines.push_back(std::to_string(r.offset) + " "
                      + coordinator_records::describe(r.topic, r.key, r.value, false));
  EXPECT_EQ(lines, (std::vector<std::string>{"0 group=g topic=t partition=0 offset=5 metadata= commitTimestamp=1700000000000",
                                             "1 group=g topic=t partition=0 offset=6 metadata= commitTimestamp=1700000000000"}));
  c.close();
}

} // namespace
} // namespace caftx
