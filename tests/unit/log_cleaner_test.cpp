// The cleaner core (docs/compaction.md) over a partition_core whose log is
// in memory: the newest record of each key stays at its offset, tombstones
// stay until their delete horizon, aborted data goes, markers go only once
// their transaction's data is gone and their horizon passed, a producer's
// last batch stays (empty if need be), keyless records are refused, and
// nothing at or above the round's bound or younger than the compaction lag
// is touched.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "actors/client/read_committed_filter.hpp"
#include "actors/partition/log_cleaner.hpp"
#include "partition_harness.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

using iso = isolation_level;

// A record as the tests write it: key and value, nullopt = tombstone.
struct kv {
  std::string key;
  std::optional<std::string> value;
};

// What a stored record reads back as.
struct stored_record {
  std::string key;
  std::optional<std::string> value;
  int64_t timestamp_ms;
  bool operator==(const stored_record& o) const {
    return key == o.key && value == o.value && timestamp_ms == o.timestamp_ms;
  }
};

std::ostream& operator<<(std::ostream& os, const stored_record& r) {
  return os << r.key << "=" << (r.value ? *r.value : "<null>") << "@" << r.timestamp_ms;
}

class Cleaner : public ::testing::Test {
protected:
  testing::logged_partition p{topic_partition{"t", 0}};
  compaction_policy policy{1000, 0.5, 0, 1000000};
  cleaner_checkpoint checkpoint;
  int64_t now = 100000;
  std::vector<int64_t> dropped_aborted; // of the last round

  record_batch make(int64_t pid, int32_t seq, std::vector<kv> records, bool txn = false) {
    record_batch b;
    b.pid = producer_id{pid};
    b.epoch = producer_epoch{static_cast<int16_t>(pid < 0 ? -1 : 0)};
    b.base_sequence = pid < 0 ? no_sequence : seq;
    b.attributes = txn ? attr_transactional : 0;
    for (auto& r : records) {
      record rec{r.key, r.value.value_or(""), {}, now};
      rec.null_value = !r.value;
      b.records.push_back(rec);
    }
    return b;
  }

  // Appends and makes durable; returns the base offset.
  int64_t produce(record_batch b, bool durable = true) {
    auto d = p.validate_produce(b);
    EXPECT_TRUE(d.ok()) << d.error().to_string();
    auto off = p.append(std::move(b), 0).base_offset;
    if (durable)
      p.set_high_watermark(p.log_end_offset());
    return off;
  }

  int64_t marker(int64_t pid, control_type type) {
    auto b = p.append_marker(producer_id{pid}, producer_epoch{0}, {type, coordinator_epoch{0}}, now);
    p.set_high_watermark(p.log_end_offset());
    return b.base_offset;
  }

  // One whole round up to `bound` (default min(LSO, HW)), `step` batches
  // per call, its rewrites applied to the stored log.
  void clean(int64_t bound = -1, size_t step = 1000) {
    if (bound < 0)
      bound = std::min(p.last_stable_offset(), p.high_watermark());
    int64_t dirty_position = checkpoint.clean_offset >= p.log_start_offset()
                               ? checkpoint.clean_position
                               : p.log_start_position();
    cleaning_round r{policy,           checkpoint, p.log_start_offset(), dirty_position,
                     bound,            now,        p.aborted_index()};
    for (;;) {
      auto m = r.build_map(p.reader(), step);
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      if (*m)
        break;
    }
    dropped_aborted.clear();
    for (;;) {
      auto c = r.clean(p.reader(), p.log_start_offset(), p.producers(), step);
      ASSERT_TRUE(c.ok()) << c.error().to_string();
      for (auto& w : c->rewrites) {
        if (w.bytes)
          p.stored().put(w.base_offset, *w.bytes);
        else
          p.stored().erase(w.base_offset);
      }
      p.apply_cleaned(c->bytes_removed, c->dropped_aborted);
      dropped_aborted.insert(dropped_aborted.end(), c->dropped_aborted.begin(),
                             c->dropped_aborted.end());
      if (c->done)
        break;
    }
    checkpoint = r.checkpoint();
  }

  // Every stored data record by offset.
  std::map<int64_t, stored_record> records() const {
    std::map<int64_t, stored_record> out;
    for (auto& [base, bytes] : p.stored().batches()) {
      auto b = v2::decode(bytes);
      EXPECT_TRUE(b.ok()) << b.error().to_string(); // the CRC was recomputed
      if (!b.ok() || b->is_control())
        continue;
      EXPECT_EQ(b->base_offset, base);
      for (size_t k = 0; k < b->records.size(); ++k) {
        auto& r = b->records[k];
        out[b->offset_of(k)] = {r.key, r.null_value ? std::nullopt : std::optional{r.value},
                                r.timestamp_ms};
      }
    }
    return out;
  }

  std::vector<int64_t> stored_bases() const {
    std::vector<int64_t> out;
    for (auto& [base, bytes] : p.stored().batches())
      out.push_back(base);
    return out;
  }

  v2::batch_header header_at(int64_t base) const {
    auto h = v2::read_header(p.stored().batches().at(base));
    EXPECT_TRUE(h.ok());
    return *h;
  }
};

stored_record rec(std::string k, std::optional<std::string> v, int64_t ts) {
  return {std::move(k), std::move(v), ts};
}

TEST_F(Cleaner, KeepsTheNewestRecordOfEachKeyAtItsOriginalOffset) {
  produce(make(-1, 0, {{"a", "1"}, {"b", "1"}})); // 0, 1
  produce(make(-1, 0, {{"a", "2"}}));             // 2
  now += 10;
  produce(make(-1, 0, {{"c", "1"}, {"a", "3"}})); // 3, 4
  produce(make(-1, 0, {{"b", "2"}}));             // 5
  clean();
  std::map<int64_t, stored_record> expected{
    {3, rec("c", "1", 100010)}, {4, rec("a", "3", 100010)}, {5, rec("b", "2", 100010)}};
  EXPECT_EQ(records(), expected);
  // The first two batches left; the third kept its offsets, the fourth is as it was.
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{3, 5}));
  auto h = header_at(3);
  EXPECT_EQ(h.last_offset_delta, 1);
  EXPECT_EQ(h.record_count, 2);
  EXPECT_EQ(checkpoint.clean_offset, 6);
  // Fetching an offset inside the removed range returns the next batch
  // (Kafka); the log end and start did not move.
  auto f = p.fetch(1, 1 << 20, iso::read_uncommitted);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->batches.size(), 2u);
  EXPECT_EQ(f->batches[0].base_offset, 3);
  EXPECT_EQ(p.log_start_offset(), 0);
  EXPECT_EQ(p.log_end_offset(), 6);
  // The consumer's filter takes the records' offsets from their deltas.
  auto consumed = filter_fetched(p.tp(), 1, f->batches, {}, iso::read_uncommitted, 100);
  ASSERT_EQ(consumed.records.size(), 3u);
  EXPECT_EQ(consumed.records[0].offset, 3);
  EXPECT_EQ(consumed.records[1].offset, 4);
  EXPECT_EQ(consumed.records[2].offset, 5);
  EXPECT_EQ(consumed.next_offset, 6);
  // The log's size follows the bytes removed.
  int64_t stored = 0;
  for (auto& [base, bytes] : p.stored().batches())
    stored += static_cast<int64_t>(bytes.size());
  EXPECT_EQ(p.log_size_bytes(), stored);
}

TEST_F(Cleaner, ARecordWhoseTrailingRecordsWentStillAdvancesTheConsumerPastItsBatch) {
  produce(make(-1, 0, {{"a", "1"}, {"b", "1"}, {"c", "1"}})); // 0, 1, 2
  produce(make(-1, 0, {{"b", "2"}, {"c", "2"}}));             // 3, 4
  clean();
  auto f = p.fetch(0, 1 << 20, iso::read_uncommitted);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->batches.size(), 2u);
  EXPECT_EQ(f->batches[0].last_offset(), 2); // kept the offset range of 3 records
  auto first = filter_fetched(p.tp(), 0, {f->batches[0]}, {}, iso::read_uncommitted, 100);
  ASSERT_EQ(first.records.size(), 1u);
  EXPECT_EQ(first.records[0].offset, 0);
  EXPECT_EQ(first.next_offset, 3); // not 1: offsets 1 and 2 are gone, not unread
}

TEST_F(Cleaner, KeepsATombstoneUntilItsDeleteHorizonAndThenDropsIt) {
  produce(make(-1, 0, {{"a", "1"}}));      // 0
  produce(make(-1, 0, {{"a", std::nullopt}})); // 1: tombstone
  produce(make(-1, 0, {{"b", "1"}}));      // 2
  clean();
  std::map<int64_t, stored_record> expected{{1, rec("a", std::nullopt, 100000)},
                                            {2, rec("b", "1", 100000)}};
  EXPECT_EQ(records(), expected);
  // KIP-534: the first round that keeps the tombstone sets the horizon in
  // the batch header (bit 6, base timestamp); the record's timestamp is kept.
  auto h = header_at(1);
  EXPECT_NE(h.attributes & attr_delete_horizon, 0);
  EXPECT_EQ(h.base_timestamp, 101000);
  EXPECT_EQ(checkpoint.next_delete_horizon_ms, 101000);
  EXPECT_FALSE(should_clean(policy, 0, checkpoint, 100999));
  EXPECT_TRUE(should_clean(policy, 0, checkpoint, 101000));

  now = 100999; // before the horizon: stays, horizon unchanged
  clean();
  EXPECT_EQ(records(), expected);
  EXPECT_EQ(header_at(1).base_timestamp, 101000);

  now = 101000; // at the horizon: gone
  clean();
  expected.erase(1);
  EXPECT_EQ(records(), expected);
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{2}));
  EXPECT_EQ(checkpoint.next_delete_horizon_ms, -1);
}

TEST_F(Cleaner, DropsAbortedDataAndTheMarkerOnceTheDataIsGoneAndTheHorizonPassed) {
  produce(make(5, 0, {{"a", "aborted"}}, true)); // 0
  int64_t abort_at = marker(5, control_type::abort); // 1
  produce(make(5, 1, {{"b", "committed"}}, true)); // 2
  int64_t commit_at = marker(5, control_type::commit); // 3
  produce(make(-1, 0, {{"c", "plain"}}));         // 4
  ASSERT_EQ(abort_at, 1);
  ASSERT_EQ(commit_at, 3);
  ASSERT_EQ(p.aborted_index().size(), 1u);

  // Round 1: the aborted batch goes; its marker stays (a batch of its
  // transaction was still seen), as does the commit marker (its data stays).
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(v2::delete_horizon(header_at(1)), std::nullopt);
  EXPECT_EQ(p.aborted_index().size(), 1u);
  // Round 2: no batch of the aborted transaction is left: its marker gets
  // the horizon; the commit marker still has data.
  now += 10;
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(v2::delete_horizon(header_at(1)), std::optional<int64_t>{101010});
  EXPECT_EQ(v2::delete_horizon(header_at(3)), std::nullopt);
  EXPECT_EQ(checkpoint.next_delete_horizon_ms, 101010);
  // Round 3, at the horizon: the abort marker and its index entry go.
  now = 101010;
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(dropped_aborted, (std::vector<int64_t>{1}));
  EXPECT_TRUE(p.aborted_index().empty());
  std::map<int64_t, stored_record> expected{{2, rec("b", "committed", 100000)},
                                            {4, rec("c", "plain", 100000)}};
  EXPECT_EQ(records(), expected);
  // The commit marker stays while its transaction's record does.
  now += 1000000;
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{2, 3, 4}));
}

TEST_F(Cleaner, ACommitMarkerGoesAfterItsHorizonOnceItsDataIsSuperseded) {
  produce(make(5, 0, {{"a", "1"}}, true)); // 0
  marker(5, control_type::commit);         // 1
  produce(make(6, 0, {{"a", "2"}}));       // 2: producer 6's last batch
  produce(make(5, 1, {{"z", "1"}}));       // 3: producer 5's last batch
  clean(); // a@0 goes (superseded): the commit marker saw its data
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(v2::delete_horizon(header_at(1)), std::nullopt);
  clean(); // no data left: the marker gets its horizon
  EXPECT_EQ(v2::delete_horizon(header_at(1)), std::optional<int64_t>{101000});
  now = 101000;
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{2, 3}));
}

TEST_F(Cleaner, KeepsAProducersLastBatchEmptySoItsStateSurvivesARestart) {
  produce(make(7, 0, {{"a", "1"}})); // 0: producer 7's last batch
  produce(make(8, 0, {{"a", "2"}})); // 1
  clean();
  ASSERT_EQ(stored_bases(), (std::vector<int64_t>{0, 1}));
  auto h = header_at(0);
  EXPECT_EQ(h.record_count, 0);
  EXPECT_EQ(h.last_offset_delta, 0);
  EXPECT_EQ(h.producer_id, 7);
  EXPECT_EQ(h.producer_epoch, 0);
  EXPECT_EQ(h.base_sequence, 0);
  EXPECT_EQ(h.base_timestamp, -1); // Kafka's writeEmptyHeader
  EXPECT_EQ(h.max_timestamp, 100000);
  std::map<int64_t, stored_record> expected{{1, rec("a", "2", 100000)}};
  EXPECT_EQ(records(), expected);
  // A restart replaying the stored batches knows producer 7's last batch:
  // its retry is a duplicate with the original offset.
  testing::logged_partition fresh{p.tp()};
  auto st = p.reader()(0, [&](const v2::batch_header& hh, std::string_view bytes) {
    EXPECT_TRUE(static_cast<partition_core&>(fresh).replay(v2::info_of(hh, bytes)).ok());
    return true;
  });
  ASSERT_TRUE(st.ok());
  auto retry = fresh.validate_produce(make(7, 0, {{"a", "1"}}));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->base_offset, 0);
  EXPECT_EQ(fresh.validate_produce(make(7, 2, {{"a", "x"}})).error().code(),
            error_code::out_of_order_sequence_number);
  // Without the producer's state (expired), the batch goes.
  p.remove_expired_producers(now + 1, 1);
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1}));
}

TEST_F(Cleaner, ReplayCrossesTheGapsTheCleanerLeft) {
  produce(make(-1, 0, {{"a", "1"}}));
  produce(make(-1, 0, {{"a", "2"}}));
  produce(make(-1, 0, {{"a", "3"}, {"b", "1"}}));
  clean();
  ASSERT_EQ(stored_bases(), (std::vector<int64_t>{2}));
  partition_core fresh{p.tp()};
  auto st = p.reader()(0, [&](const v2::batch_header& h, std::string_view bytes) {
    auto r = fresh.replay(v2::info_of(h, bytes));
    EXPECT_TRUE(r.ok()) << r.to_string();
    return true;
  });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(fresh.log_end_offset(), 4);
  // A batch below the log end is still refused.
  record_batch again = make(-1, 0, {{"a", "x"}});
  again.base_offset = 3;
  EXPECT_EQ(fresh.replay(info_of(again)).code(), error_code::kafka_storage_error);
}

TEST_F(Cleaner, RefusesRecordsWithoutAKeyOnACompactedTopic) {
  auto bytes = v2::encode(make(-1, 0, {{"a", "1"}, {"", "keyless"}}));
  auto h = v2::validate(bytes);
  ASSERT_TRUE(h.ok());
  auto st = check_keys_for_compaction(bytes, *h, p.tp());
  EXPECT_EQ(st.code(), error_code::invalid_record);
  EXPECT_EQ(st.message(), "Compacted topic cannot accept message without key in topic partition t-0.");
  auto keyed = v2::encode(make(-1, 0, {{"a", "1"}, {"b", std::nullopt}}));
  EXPECT_TRUE(check_keys_for_compaction(keyed, *v2::validate(keyed), p.tp()).ok());
  auto control = v2::encode(make_control_batch(producer_id{1}, producer_epoch{0},
                                               {control_type::commit, coordinator_epoch{0}}, now));
  EXPECT_TRUE(check_keys_for_compaction(control, *v2::read_header(control), p.tp()).ok());
}

TEST_F(Cleaner, TouchesNothingAtOrAboveTheLastStableOffsetOrTheHighWatermark) {
  produce(make(-1, 0, {{"a", "1"}}));             // 0
  produce(make(5, 0, {{"a", "open"}}, true));     // 1: open transaction, LSO 1
  produce(make(-1, 0, {{"a", "2"}}));             // 2
  produce(make(-1, 0, {{"a", "3"}}), false);      // 3: not durable, HW 3
  ASSERT_EQ(p.last_stable_offset(), 1);
  auto before = p.stored().batches();
  clean();
  EXPECT_EQ(p.stored().batches(), before); // a@0's newer versions are all above the LSO
  EXPECT_EQ(checkpoint.clean_offset, 1);
  p.set_high_watermark(4);
  marker(5, control_type::commit); // 4; LSO 5
  clean();
  // a@1 is producer 5's last data batch: kept, empty; a@3 stays.
  std::map<int64_t, stored_record> expected{{3, rec("a", "3", 100000)}};
  EXPECT_EQ(records(), expected);
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(header_at(1).record_count, 0);
}

TEST_F(Cleaner, AnExplicitBoundLeavesTheBatchesAboveItAsAppended) {
  produce(make(-1, 0, {{"a", "1"}}));
  produce(make(-1, 0, {{"a", "2"}}));
  produce(make(-1, 0, {{"a", "3"}}));
  produce(make(-1, 0, {{"a", "4"}}));
  clean(2); // the newest snapshot at 2, say
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(checkpoint.clean_offset, 2);
}

TEST_F(Cleaner, LeavesRecordsYoungerThanTheCompactionLag) {
  policy.min_compaction_lag_ms = 5000;
  now = 90000;
  produce(make(-1, 0, {{"a", "1"}}));
  produce(make(-1, 0, {{"a", "2"}}));
  now = 96000;
  produce(make(-1, 0, {{"a", "3"}})); // 4 s old at 100000
  produce(make(-1, 0, {{"a", "4"}}));
  now = 100000;
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(checkpoint.clean_offset, 2);
  now = 101000; // 5 s: cleanable
  clean();
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{3}));
}

TEST_F(Cleaner, AFullMapEndsTheRoundAndTheNextRoundGoesOn) {
  policy.max_map_keys = 2;
  produce(make(-1, 0, {{"a", "1"}, {"b", "1"}})); // 0, 1
  produce(make(-1, 0, {{"c", "1"}}));             // 2: would overflow the map
  produce(make(-1, 0, {{"a", "2"}, {"c", "2"}})); // 3, 4
  clean();
  EXPECT_EQ(checkpoint.clean_offset, 2);
  EXPECT_EQ(stored_bases(), (std::vector<int64_t>{0, 2, 3})); // nothing superseded yet
  clean(); // c
  EXPECT_EQ(checkpoint.clean_offset, 3);
  clean(); // a, c
  EXPECT_EQ(checkpoint.clean_offset, 5);
  std::map<int64_t, stored_record> expected{
    {1, rec("b", "1", 100000)}, {3, rec("a", "2", 100000)}, {4, rec("c", "2", 100000)}};
  EXPECT_EQ(records(), expected);
}

TEST_F(Cleaner, StepsOfOneBatchGiveTheSameLogAsOneStep) {
  auto fill = [&] {
    for (int i = 0; i < 20; ++i)
      produce(make(-1, 0, {{"k" + std::to_string(i % 3), std::to_string(i)},
                           {"j" + std::to_string(i % 4), i % 5 == 0 ? std::nullopt
                                                                    : std::optional{std::to_string(i)}}}));
  };
  fill();
  clean(-1, 1000);
  auto whole = p.stored().batches();
  auto whole_checkpoint = checkpoint;
  auto tp = p.tp();
  p = testing::logged_partition{tp};
  checkpoint = {};
  fill();
  clean(-1, 1);
  EXPECT_EQ(p.stored().batches(), whole);
  EXPECT_EQ(checkpoint.clean_offset, whole_checkpoint.clean_offset);
  EXPECT_EQ(checkpoint.next_delete_horizon_ms, whole_checkpoint.next_delete_horizon_ms);
}

TEST(CleanerRatio, DirtyBytesOverTheBytesBelowTheEnd) {
  cleaner_checkpoint c{100, 4000, -1};
  // Log of 10000 bytes ever appended below the end, 2000 removed by the
  // cleaner (start position 2000): 8000 stored, 6000 of them dirty.
  EXPECT_DOUBLE_EQ(dirty_ratio(c, 0, 2000, 300, 10000), 0.75);
  EXPECT_DOUBLE_EQ(dirty_ratio(c, 0, 2000, 100, 4000), 0.0); // nothing dirty below the end
  // The log start passed the checkpoint: everything left is dirty.
  EXPECT_DOUBLE_EQ(dirty_ratio(c, 150, 5000, 300, 10000), 1.0);
  compaction_policy p;
  EXPECT_TRUE(should_clean(p, 0.51, c, 0));
  EXPECT_FALSE(should_clean(p, 0.5, c, 0)); // Kafka: strictly above the minimum
  EXPECT_EQ(max_map_keys(134217728), 5033164u);
}

TEST(CleanerCheckpoint, RoundTripsAndHasAFixedLayout) {
  cleaner_checkpoint c{258, 1, -1};
  auto bytes = encode(c);
  EXPECT_EQ(to_hex(bytes), "01" "0201000000000000" "0100000000000000" "ffffffffffffffff");
  auto back = decode_cleaner_checkpoint(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->clean_offset, 258);
  EXPECT_EQ(back->clean_position, 1);
  EXPECT_EQ(back->next_delete_horizon_ms, -1);
  EXPECT_EQ(decode_cleaner_checkpoint(bytes.substr(0, 24)).error().code(),
            error_code::kafka_storage_error);
  bytes[0] = 2;
  EXPECT_EQ(decode_cleaner_checkpoint(bytes).error().code(), error_code::kafka_storage_error);
}

TEST(KeyDigest, IsTheFirst16BytesOfSha256) {
  // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad
  auto d = key_digest::of("abc");
  std::string bytes(d.bytes.begin(), d.bytes.end());
  EXPECT_EQ(to_hex(bytes), "ba7816bf8f01cfea414140de5dae2223");
  offset_map m;
  m.put("abc", 3);
  m.put("abd", 4);
  m.put("abc", 7);
  EXPECT_EQ(m.get("abc"), 7);
  EXPECT_EQ(m.get("abd"), 4);
  EXPECT_EQ(m.get("abe"), -1);
  EXPECT_EQ(m.size(), 2u);
}

} // namespace
} // namespace caftx
