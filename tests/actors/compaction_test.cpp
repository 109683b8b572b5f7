// Log compaction at a partition leader in simulated time
// (docs/compaction.md): a topic created with cleanup.policy=compact keeps
// the newest record of each key at its original offset once the cleaner
// ran (every log.cleaner.backoff.ms, in steps of
// caftx.log.cleaner.step.batches), for fetches, consumers and after a
// restart; an idempotent producer's retry is still a duplicate; tombstones
// go after delete.retention.ms; keyless records, DeleteRecords and
// retention do what Kafka does on a compacted topic.
#include "fixture.hpp"

#include <map>

#include "actors/client/consumer.hpp"
#include "actors/partition/log_cleaner.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition c0{"c", 0};

struct offset_kv {
  int64_t offset;
  std::string key;
  std::string value;
  bool operator==(const offset_kv& o) const {
    return offset == o.offset && key == o.key && value == o.value;
  }
};

std::ostream& operator<<(std::ostream& os, const offset_kv& r) {
  return os << r.offset << ":" << r.key << "=" << r.value;
}

class CompactionTest : public node_fixture {
protected:
  void SetUp() override {
    ncfg.log_cleaner_backoff_ms = 1000;
    ncfg.log_cleaner_step_batches = 4; // a round takes several messages
    ncfg.log_retention_check_interval_ms = 1000;
    start_node();
    auto r = call<txn_response>(broker(), create_topic_request{"c", 1, {{"cleanup.policy", "compact"},
                                                                        {"delete.retention.ms", "60000"},
                                                                        {"retention.ms", "1000"}}});
    ASSERT_EQ(r.error, error_code::none) << r.message;
  }

  void pass(int64_t ms) {
    now_ms += ms;
    sched.advance_time(std::chrono::milliseconds(ms));
    sched.run();
  }

  record_batch keyed(int32_t seq, std::vector<std::pair<std::string, std::string>> kvs,
                     bool tombstone = false) const {
    record_batch b;
    b.pid = producer_id{7};
    b.epoch = producer_epoch{0};
    b.base_sequence = seq;
    for (auto& [k, v] : kvs) {
      record r{k, v, {}, now_ms};
      r.null_value = tombstone;
      b.records.push_back(r);
    }
    return b;
  }

  // Every data record of the log from offset 0, as a fetch returns it.
  std::vector<offset_kv> log_records() {
    auto r = fetch(c0, 0, iso::read_uncommitted);
    EXPECT_EQ(r.error, error_code::none) << r.message;
    std::vector<offset_kv> out;
    for (auto& b : batches_of(r))
      for (size_t k = 0; k < b.records.size(); ++k)
        if (!b.is_control())
          out.push_back({b.offset_of(k), b.records[k].key,
                         b.records[k].null_value ? "<null>" : b.records[k].value});
    return out;
  }

  // With the node stopped: the stored batches and the cleaner checkpoint.
  std::pair<size_t, std::optional<cleaner_checkpoint>> stored() {
    auto store = node_store::open(dir, node_store_options{});
    EXPECT_TRUE(store.ok());
    if (!store.ok())
      return {};
    size_t n = 0;
    (*store)->scan(keys::log_prefix(c0), [&](const std::string&, const std::string&) {
      ++n;
      return true;
    });
    std::optional<cleaner_checkpoint> cp;
    if (auto bytes = (*store)->get(keys::cleaner_checkpoint(c0))) {
      auto c = decode_cleaner_checkpoint(*bytes);
      EXPECT_TRUE(c.ok());
      if (c.ok())
        cp = *c;
    }
    return {n, cp};
  }

  // 30 batches of one record, keys k0, k1, k2 in turn: offsets 0..29.
  void write_versions() {
    for (int32_t i = 0; i < 30; ++i) {
      auto r = produce(c0, "", keyed(i, {{"k" + std::to_string(i % 3), "v" + std::to_string(i)}}));
      ASSERT_EQ(r.error, error_code::none) << r.message;
      ASSERT_EQ(r.base_offset, i);
    }
  }

  const std::vector<offset_kv> newest{{27, "k0", "v27"}, {28, "k1", "v28"}, {29, "k2", "v29"}};
};

TEST_F(CompactionTest, TheCleanerLeavesOneRecordPerKeyAtItsOriginalOffset) {
  write_versions();
  EXPECT_EQ(log_records().size(), 30u);
  pass(1000); // the cleaner's check: snapshot at the log end, then the round
  EXPECT_EQ(log_records(), newest);
  // A consumer reads exactly those, and its position goes past the gaps.
  {
    consumer c{sys, broker(), properties{{"auto.offset.reset", "earliest"}}};
    c.set_driver(deterministic_driver());
    c.assign({c0});
    auto got = c.poll(std::chrono::milliseconds(0));
    std::vector<offset_kv> seen;
    for (auto& r : got)
      seen.push_back({r.offset, r.key, r.value});
    EXPECT_EQ(seen, newest);
    EXPECT_EQ(c.position(c0), 30);
  }
  // The offsets did not move: the next record is at 30.
  auto next = produce(c0, "", keyed(30, {{"k0", "v30"}}));
  EXPECT_EQ(next.base_offset, 30);
  // The idempotent producer's retries after cleaning are duplicates with
  // the original offsets, also of a batch the cleaner removed (26).
  auto retry = produce(c0, "", keyed(29, {{"k2", "v29"}}));
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 29);
  auto removed = produce(c0, "", keyed(26, {{"k2", "v26"}}));
  EXPECT_EQ(removed.error, error_code::none);
  EXPECT_EQ(removed.base_offset, 26);
  EXPECT_EQ(fetch(c0, 0, iso::read_uncommitted).high_watermark, 31); // nothing appended
}

TEST_F(CompactionTest, ARestartReadsTheCleanedLogAndKnowsTheProducer) {
  write_versions();
  pass(1000);
  ASSERT_EQ(log_records(), newest);
  // On disk: the three batches the cleaner kept, and its checkpoint.
  stop_node();
  auto [batches, checkpoint] = stored();
  EXPECT_EQ(batches, 3u);
  ASSERT_TRUE(checkpoint.has_value());
  EXPECT_EQ(checkpoint->clean_offset, 30);
  EXPECT_EQ(checkpoint->next_delete_horizon_ms, -1);
  start_node();
  EXPECT_EQ(log_records(), newest);
  auto retry = produce(c0, "", keyed(28, {{"k1", "v28"}}));
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 28);
  EXPECT_EQ(produce(c0, "", keyed(31, {{"k0", "gap"}})).error,
            error_code::out_of_order_sequence_number);
  EXPECT_EQ(produce(c0, "", keyed(30, {{"k0", "v30"}})).base_offset, 30);
  // More versions: the next round cleans from the checkpoint on.
  for (int32_t i = 31; i < 60; ++i)
    ASSERT_EQ(produce(c0, "", keyed(i, {{"k1", "w" + std::to_string(i)}})).error, error_code::none);
  pass(1000);
  EXPECT_EQ(log_records(),
            (std::vector<offset_kv>{{29, "k2", "v29"}, {30, "k0", "v30"}, {59, "k1", "w59"}}));
}

TEST_F(CompactionTest, ACrashMidRoundLeavesAReadableLogAndTheRestartCleansAgain) {
  stop_node();
  ncfg.log_cleaner_step_batches = 1; // one batch per step: many writes per round
  env = &fenv;
  start_node();
  write_versions();
  now_ms += 1000;
  sched.advance_time(std::chrono::milliseconds(1000));
  // Into the round's rewrite steps: a few of them durable, not all.
  auto before = fenv.syncs.load();
  while (fenv.syncs.load() < before + 5 && sched.has_job())
    sched.run_once();
  fenv.fail = true; // the disk dies: no later step is written
  stop_node();
  fenv.fail = false;
  auto [batches, checkpoint] = stored();
  EXPECT_GT(batches, 3u);
  EXPECT_LT(batches, 30u); // some steps were written, not all
  EXPECT_FALSE(checkpoint.has_value()); // the round did not finish
  start_node();
  // Readable, and every key still reads its newest value.
  auto mid = log_records();
  std::map<std::string, std::pair<int64_t, std::string>> last;
  for (auto& r : mid)
    last[r.key] = {r.offset, r.value};
  EXPECT_EQ(last.size(), 3u);
  EXPECT_EQ(last["k0"], (std::pair<int64_t, std::string>{27, "v27"}));
  EXPECT_EQ(last["k1"], (std::pair<int64_t, std::string>{28, "v28"}));
  EXPECT_EQ(last["k2"], (std::pair<int64_t, std::string>{29, "v29"}));
  pass(1000); // the next check cleans again from the old checkpoint
  EXPECT_EQ(log_records(), newest);
  EXPECT_EQ(produce(c0, "", keyed(29, {{"k2", "v29"}})).base_offset, 29); // still a duplicate
}

TEST_F(CompactionTest, ATombstoneGoesAfterDeleteRetentionMs) {
  ASSERT_EQ(produce(c0, "", keyed(0, {{"a", "1"}, {"b", "1"}})).error, error_code::none);
  ASSERT_EQ(produce(c0, "", keyed(2, {{"a", ""}}, true)).error, error_code::none); // 2: tombstone
  ASSERT_EQ(produce(c0, "", keyed(3, {{"c", "1"}})).error, error_code::none);
  pass(1000);
  EXPECT_EQ(log_records(),
            (std::vector<offset_kv>{{1, "b", "1"}, {2, "a", "<null>"}, {3, "c", "1"}}));
  pass(58000); // 59 s after the first round: still there
  EXPECT_EQ(log_records().size(), 3u);
  pass(2000); // the horizon (60 s after the round that kept it) passed
  EXPECT_EQ(log_records(), (std::vector<offset_kv>{{1, "b", "1"}, {3, "c", "1"}}));
}

TEST_F(CompactionTest, KeylessRecordsDeleteRecordsAndRetentionOnACompactedTopic) {
  auto keyless = produce(c0, "", keyed(0, {{"", "no key"}}));
  EXPECT_EQ(keyless.error, error_code::invalid_record);
  EXPECT_EQ(keyless.message, "Compacted topic cannot accept message without key in topic partition c-0.");
  ASSERT_EQ(produce(c0, "", keyed(0, {{"a", "1"}})).base_offset, 0);
  ASSERT_EQ(produce(c0, "", keyed(1, {{"b", "1"}})).base_offset, 1);
  // Kafka: DeleteRecords needs cleanup.policy with delete.
  auto del = call<delete_records_response>(leader("c", 0), delete_records_request{c0, 1});
  EXPECT_EQ(del.error, error_code::policy_violation);
  EXPECT_EQ(del.low_watermark, 0);
  // retention.ms=1000 does not apply to a compact-only topic.
  pass(5000);
  EXPECT_EQ(call<list_offsets_response>(leader("c", 0), list_offsets_request{c0, -2, iso::read_committed})
              .offset,
            0);
  EXPECT_EQ(log_records(), (std::vector<offset_kv>{{0, "a", "1"}, {1, "b", "1"}}));
  // With compact,delete both apply.
  auto both = call<txn_response>(broker(), create_topic_request{"cd", 1, {{"cleanup.policy", "compact,delete"},
                                                                         {"retention.ms", "1000"}}});
  ASSERT_EQ(both.error, error_code::none) << both.message;
  topic_partition cd0{"cd", 0};
  record_batch b = keyed(0, {{"a", "1"}});
  b.pid = producer_id{8};
  ASSERT_EQ(produce(cd0, "", b).base_offset, 0);
  EXPECT_EQ(call<delete_records_response>(leader("cd", 0), delete_records_request{cd0, 1}).error,
            error_code::none);
}

} // namespace
} // namespace caftx::testing
