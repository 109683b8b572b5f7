// Retention and DeleteRecords at a partition leader, in simulated time
// (docs/producer-state.md §Retention): data older than retention.ms
// disappears at the next check, deduplication and fencing go on across it,
// an open transaction is never cut, the log start survives a restart, and
// bad topic configs are refused naming the key.
#include "fixture.hpp"

#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};

class RetentionTest : public node_fixture {
protected:
  void SetUp() override {
    ncfg.log_retention_check_interval_ms = 1000;
    start_node();
    auto r = call<txn_response>(broker(), create_topic_request{"t", 1, {{"retention.ms", "60000"}}});
    ASSERT_EQ(r.error, error_code::none) << r.message;
  }

  // Lets `ms` of simulated time pass, on the clock and for the timers.
  void pass(int64_t ms) {
    now_ms += ms;
    sched.advance_time(std::chrono::milliseconds(ms));
    sched.run();
  }

  produce_response idem(int16_t epoch, int32_t seq, const std::string& v) {
    return produce(t0, "", batch(producer_id{7}, producer_epoch{epoch}, seq, {v}, false));
  }

  std::vector<std::string> visible_values_from(int64_t from, iso level = iso::read_committed) {
    return visible_values(t0, level, from);
  }

  int64_t earliest() {
    return call<list_offsets_response>(leader("t", 0), list_offsets_request{t0, -2, iso::read_committed})
      .offset;
  }
};

TEST_F(RetentionTest, DataOlderThanRetentionMsDisappearsAndDeduplicationGoesOn) {
  ASSERT_EQ(idem(0, 0, "a").base_offset, 0);
  ASSERT_EQ(idem(0, 1, "b").base_offset, 1);
  pass(30000);
  ASSERT_EQ(idem(0, 2, "c").base_offset, 2);
  pass(31000); // a and b are 61 s old, c 31 s
  EXPECT_EQ(earliest(), 2);
  auto f = fetch(t0, 0, iso::read_committed);
  EXPECT_EQ(f.error, error_code::offset_out_of_range);
  EXPECT_EQ(f.log_start_offset, 2);
  EXPECT_EQ(visible_values_from(2), std::vector<std::string>{"c"});
  // The producer's state outlived its deleted batches: a retry of "b" is
  // still answered with its offset, and the sequence goes on.
  auto retry = idem(0, 1, "b");
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 1);
  EXPECT_EQ(fetch(t0, 2, iso::read_uncommitted).high_watermark, 3); // nothing appended
  EXPECT_EQ(idem(0, 4, "gap").error, error_code::out_of_order_sequence_number);
  EXPECT_EQ(idem(0, 3, "d").base_offset, 3);
  pass(61000);
  EXPECT_EQ(earliest(), 4);
  // Fencing too: a batch of an older epoch is refused after all of the
  // producer's data is gone.
  ASSERT_EQ(idem(1, 0, "e").base_offset, 4);
  EXPECT_EQ(idem(0, 4, "zombie").error, error_code::invalid_producer_epoch);
}

TEST_F(RetentionTest, AnOpenTransactionIsNeverCut) {
  ASSERT_EQ(idem(0, 0, "old").base_offset, 0);
  auto p = init("tx", 900000);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"open"}, true)).base_offset, 1);
  ASSERT_EQ(idem(0, 1, "after").base_offset, 2);
  pass(120000);
  EXPECT_EQ(earliest(), 1); // up to the open transaction, no further
  EXPECT_EQ(visible_values_from(1, iso::read_uncommitted), (std::vector<std::string>{"open", "after"}));
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(visible_values_from(1), (std::vector<std::string>{"open", "after"}));
  pass(61000);
  EXPECT_EQ(earliest(), 4); // the marker is 61 s old as well now
}

TEST_F(RetentionTest, TheLogStartAndTheProducerStateSurviveARestart) {
  ASSERT_EQ(idem(0, 0, "a").base_offset, 0);
  ASSERT_EQ(idem(0, 1, "b").base_offset, 1);
  pass(61000);
  ASSERT_EQ(earliest(), 2);
  stop_node();
  {
    auto store = node_store::open(dir, node_store_options{});
    ASSERT_TRUE(store.ok());
    size_t batches = 0;
    (*store)->scan(keys::log_prefix(t0), [&](const std::string&, const std::string&) {
      ++batches;
      return true;
    });
    EXPECT_EQ(batches, 0u); // removed from disk, not only hidden
  }
  start_node();
  EXPECT_EQ(earliest(), 2);
  EXPECT_EQ(fetch(t0, 1, iso::read_committed).error, error_code::offset_out_of_range);
  auto retry = idem(0, 1, "b");
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 1);
  EXPECT_EQ(idem(0, 2, "c").base_offset, 2);
}

TEST_F(RetentionTest, DeleteRecordsMovesTheLogStartExplicitly) {
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(idem(0, i, "v" + std::to_string(i)).error, error_code::none);
  auto r = call<delete_records_response>(leader("t", 0), delete_records_request{t0, 3});
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.low_watermark, 3);
  EXPECT_EQ(earliest(), 3);
  EXPECT_EQ(visible_values_from(3), std::vector<std::string>{"v3"});
  auto above = call<delete_records_response>(leader("t", 0), delete_records_request{t0, 5});
  EXPECT_EQ(above.error, error_code::offset_out_of_range);
  EXPECT_EQ(above.low_watermark, 3);
  auto to_hw = call<delete_records_response>(leader("t", 0), delete_records_request{t0, -1});
  EXPECT_EQ(to_hw.low_watermark, 4);
  stop_node();
  start_node();
  EXPECT_EQ(earliest(), 4);
}

TEST_F(RetentionTest, TopicConfigsOutOfRangeOrUnknownAreInvalidConfig) {
  auto bad = call<txn_response>(broker(), create_topic_request{"u", 1, {{"retention.ms", "-2"}}});
  EXPECT_EQ(bad.error, error_code::invalid_config);
  EXPECT_EQ(bad.message, "config 'retention.ms' = '-2' is out of range [-1, 9223372036854775807]");
  auto unknown = call<txn_response>(broker(), create_topic_request{"u", 1, {{"retention.mss", "1"}}});
  EXPECT_EQ(unknown.error, error_code::invalid_config);
  EXPECT_NE(unknown.message.find("retention.mss"), std::string::npos) << unknown.message;
  auto policy = call<txn_response>(broker(), create_topic_request{"u", 1, {{"cleanup.policy", "compacted"}}});
  EXPECT_EQ(policy.error, error_code::invalid_config);
  EXPECT_NE(policy.message.find("cleanup.policy"), std::string::npos) << policy.message;
  auto ok = call<txn_response>(broker(), create_topic_request{"u", 1, {{"retention.bytes", "-1"},
                                                                      {"segment.bytes", "1073741824"}}});
  EXPECT_EQ(ok.error, error_code::none) << ok.message;
}

} // namespace
} // namespace caftx::testing
