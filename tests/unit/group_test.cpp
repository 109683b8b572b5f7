// group_coordinator_core: transactional offsets (TxnOffsetCommit) stay
// pending until the producer's marker (docs/transactions.md §TxnOffsetCommit
// step 9, §Consume-transform-produce); every change is a record of the
// `__consumer_offsets` partition applied in log order, so the later record
// wins. group_offsets_loader: replaying hand-built batches of that
// partition gives the same state.

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "actors/group/group_coordinator_core.hpp"
#include "actors/group/group_offsets_loader.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/record_batch_v2.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

const group_offset_key in0{"group", topic_partition{"in", 0}};
const group_offset_key in1{"group", topic_partition{"in", 1}};
const group_offset_key other_group_in0{"other", topic_partition{"in", 0}};

using offset_list = std::vector<std::pair<group_offset_key, offset_and_metadata>>;

offset_and_metadata om(int64_t offset, std::string metadata = "") {
  return {offset, std::move(metadata)};
}

// Drives the core as the shell does: check, then apply at the next log
// offsets (the partition's log end).
class GroupCoordinatorCore : public ::testing::Test {
protected:
  group_coordinator_core g;
  int64_t log_end = 0;
  int64_t now = 1000;

  void commit(const group_offset_key& k, offset_and_metadata v) {
    g.apply_commit(k, std::move(v), now, log_end++);
  }

  status txn_commit(int64_t pid, int16_t epoch, const offset_list& offsets) {
    auto s = g.check_txn_offset_commit(producer_id{pid}, producer_epoch{epoch});
    if (!s.ok())
      return s;
    for (auto& [k, v] : offsets)
      g.apply_txn_offset_commit(producer_id{pid}, producer_epoch{epoch}, k, v, now, log_end++);
    return {};
  }

  status marker(int64_t pid, int16_t epoch, control_type result, int8_t version = 2) {
    auto s = g.check_marker(producer_id{pid}, producer_epoch{epoch}, version);
    if (!s.ok())
      return s;
    ++log_end;
    g.apply_marker(producer_id{pid}, producer_epoch{epoch}, result, now);
    return {};
  }
};

TEST_F(GroupCoordinatorCore, TxnOffsetsInvisibleUntilCommitMarker) {
  commit(in0, om(40));
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45, "m")}}).ok());
  auto& p = g.pending().at(producer_id{4000});
  EXPECT_EQ(p.epoch, producer_epoch{0});
  ASSERT_EQ(p.offsets.size(), 1u);
  EXPECT_EQ(p.offsets.at(in0).value, om(45, "m"));
  EXPECT_EQ(p.offsets.at(in0).log_offset, 1);
  // OffsetFetch still answers the previous value; require_stable would say
  // UNSTABLE_OFFSET_COMMIT.
  EXPECT_EQ(g.fetch(in0), om(40));
  EXPECT_TRUE(g.has_pending(in0));
  EXPECT_FALSE(g.has_pending(in1));
  EXPECT_FALSE(g.has_pending(other_group_in0));

  // The coordinator's marker carries the epoch bumped at EndTxn.
  ASSERT_TRUE(g.check_marker(producer_id{4000}, producer_epoch{1}).ok());
  auto changed = g.apply_marker(producer_id{4000}, producer_epoch{1}, control_type::commit, now);
  EXPECT_EQ(changed, std::vector<group_offset_key>{in0});
  EXPECT_EQ(g.fetch(in0), om(45, "m"));
  EXPECT_EQ(g.committed().at(in0).log_offset, 1);
  EXPECT_FALSE(g.has_pending(in0));
  EXPECT_TRUE(g.pending().empty());
}

// Defect (b): TxnOffsetCommit(pid 13232, foo-0 -> 37), then a plain
// OffsetCommit(foo-0 -> 57), then the COMMIT marker: the plain commit is
// the later record in the log and stays (Kafka's
// CommitRecordMetadataAndOffset.olderThan).
TEST_F(GroupCoordinatorCore, PlainCommitWrittenAfterTheTxnOffsetCommitWinsAtTheCommitMarker) {
  const group_offset_key foo0{"group", topic_partition{"foo", 0}};
  ASSERT_TRUE(txn_commit(13232, 0, {{foo0, om(37)}}).ok());
  commit(foo0, om(57));
  ASSERT_TRUE(marker(13232, 1, control_type::commit).ok());
  EXPECT_EQ(g.fetch(foo0), om(57));
  EXPECT_EQ(g.committed().at(foo0).log_offset, 1);
  EXPECT_TRUE(g.pending().empty());
}

TEST_F(GroupCoordinatorCore, TxnOffsetCommitWrittenAfterThePlainCommitWinsAtTheCommitMarker) {
  const group_offset_key foo0{"group", topic_partition{"foo", 0}};
  commit(foo0, om(57));
  ASSERT_TRUE(txn_commit(13232, 0, {{foo0, om(37)}}).ok());
  ASSERT_TRUE(marker(13232, 1, control_type::commit).ok());
  EXPECT_EQ(g.fetch(foo0), om(37));
}

TEST_F(GroupCoordinatorCore, AbortedTxnOffsetCommitLeavesThePlainCommit) {
  const group_offset_key foo0{"group", topic_partition{"foo", 0}};
  ASSERT_TRUE(txn_commit(13232, 0, {{foo0, om(37)}}).ok());
  commit(foo0, om(57));
  ASSERT_TRUE(marker(13232, 1, control_type::abort).ok());
  EXPECT_EQ(g.fetch(foo0), om(57));
}

TEST_F(GroupCoordinatorCore, AbortMarkerDiscardsPendingOffsets) {
  commit(in0, om(40));
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45)}, {in1, om(7)}}).ok());
  auto changed = g.apply_marker(producer_id{4000}, producer_epoch{1}, control_type::abort, now);
  EXPECT_TRUE(changed.empty());
  EXPECT_EQ(g.fetch(in0), om(40));
  EXPECT_EQ(g.fetch(in1), om(-1)); // never committed
  EXPECT_FALSE(g.has_pending(in0));
  EXPECT_FALSE(g.has_pending(in1));
  EXPECT_TRUE(g.pending().empty());
}

TEST_F(GroupCoordinatorCore, TxnOffsetCommitWithStaleEpochIsInvalidProducerEpoch) {
  ASSERT_TRUE(txn_commit(4000, 3, {{in0, om(45)}}).ok());
  auto r = txn_commit(4000, 2, {{in0, om(99)}, {in1, om(5)}});
  EXPECT_EQ(r.code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(r.message(), "producer epoch 2 is older than 3");
  // Nothing of the stale request was kept.
  auto& p = g.pending().at(producer_id{4000});
  EXPECT_EQ(p.epoch, producer_epoch{3});
  ASSERT_EQ(p.offsets.size(), 1u);
  EXPECT_EQ(p.offsets.at(in0).value, om(45));
  EXPECT_FALSE(g.has_pending(in1));
}

TEST_F(GroupCoordinatorCore, TxnOffsetCommitsOfOneTransactionAccumulate) {
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45)}}).ok());
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(50)}, {in1, om(3)}}).ok());
  auto& p = g.pending().at(producer_id{4000});
  EXPECT_EQ(p.offsets.size(), 2u);
  EXPECT_EQ(p.offsets.at(in0).value, om(50));
  EXPECT_EQ(p.offsets.at(in0).log_offset, 1);
  EXPECT_EQ(p.offsets.at(in1).value, om(3));
}

TEST_F(GroupCoordinatorCore, HigherEpochDropsOffsetsLeftByFencedEpoch) {
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45)}}).ok());
  ASSERT_TRUE(txn_commit(4000, 1, {{in1, om(3)}}).ok());
  auto& p = g.pending().at(producer_id{4000});
  EXPECT_EQ(p.epoch, producer_epoch{1});
  ASSERT_EQ(p.offsets.size(), 1u);
  EXPECT_EQ(p.offsets.at(in1).value, om(3));
  EXPECT_FALSE(g.has_pending(in0));
}

TEST_F(GroupCoordinatorCore, MarkerWithEpochBelowPendingIsInvalidProducerEpoch) {
  ASSERT_TRUE(txn_commit(4000, 2, {{in0, om(45)}}).ok());
  auto r = marker(4000, 1, control_type::commit);
  EXPECT_EQ(r.code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(r.message(), "marker epoch 1 is not above 2 of the pending offsets");
  EXPECT_TRUE(g.has_pending(in0));
  EXPECT_EQ(g.fetch(in0), om(-1));
  // A fencing abort marker carries a higher epoch and discards them.
  ASSERT_TRUE(marker(4000, 3, control_type::abort).ok());
  EXPECT_FALSE(g.has_pending(in0));
}

TEST_F(GroupCoordinatorCore, MarkerWithoutPendingOffsetsChangesNothing) {
  commit(in0, om(40));
  ASSERT_TRUE(marker(4000, 0, control_type::commit).ok());
  EXPECT_EQ(g.fetch(in0), om(40));
}

TEST_F(GroupCoordinatorCore, MarkersOfOneProducerLeaveOtherProducersPending) {
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45)}}).ok());
  ASSERT_TRUE(txn_commit(5000, 2, {{in1, om(8)}}).ok());
  ASSERT_TRUE(marker(5000, 3, control_type::commit).ok());
  EXPECT_EQ(g.fetch(in1), om(8));
  EXPECT_EQ(g.fetch(in0), om(-1));
  EXPECT_TRUE(g.has_pending(in0));
  EXPECT_EQ(g.pending().size(), 1u);
  EXPECT_EQ(g.pending().count(producer_id{4000}), 1u);
}

TEST_F(GroupCoordinatorCore, MarkerWithEpochOfPendingOffsetsIsInvalidProducerEpoch) {
  // A delayed marker of the previous transaction (its bumped epoch is the
  // epoch of the offsets now pending) must not commit them (KIP-890 part 2).
  ASSERT_TRUE(txn_commit(4000, 1, {{in0, om(45)}}).ok());
  EXPECT_EQ(marker(4000, 1, control_type::commit).code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(g.fetch(in0), om(-1));
  EXPECT_TRUE(g.has_pending(in0));
  // Transaction version 1 (equal epochs) is still accepted.
  ASSERT_TRUE(marker(4000, 1, control_type::commit, 1).ok());
  EXPECT_EQ(g.fetch(in0), om(45));
}

TEST_F(GroupCoordinatorCore, LateTxnOffsetCommitAfterTheMarkerIsInvalidProducerEpoch) {
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45)}}).ok());
  ASSERT_TRUE(marker(4000, 1, control_type::commit).ok());
  // The same TxnOffsetCommit delivered again after its transaction ended.
  auto late = txn_commit(4000, 0, {{in0, om(99)}});
  EXPECT_EQ(late.code(), error_code::invalid_producer_epoch);
  EXPECT_EQ(late.message(), "producer epoch 0 is older than the last marker's 1");
  EXPECT_TRUE(g.pending().empty());
  // The next transaction, at the bumped epoch, goes on.
  EXPECT_TRUE(txn_commit(4000, 1, {{in0, om(50)}}).ok());
}

TEST_F(GroupCoordinatorCore, VerificationNeededUntilOffsetsArePendingAtThatEpoch) {
  EXPECT_TRUE(g.needs_verification(producer_id{4000}, producer_epoch{0}));
  ASSERT_TRUE(txn_commit(4000, 0, {{in0, om(45)}}).ok());
  EXPECT_FALSE(g.needs_verification(producer_id{4000}, producer_epoch{0}));
  EXPECT_TRUE(g.needs_verification(producer_id{4000}, producer_epoch{1}));
  EXPECT_TRUE(g.needs_verification(producer_id{5000}, producer_epoch{0}));
}

TEST_F(GroupCoordinatorCore, PlainCommitAndTombstone) {
  EXPECT_EQ(g.fetch(in0), om(-1));
  commit(in0, om(12, "meta"));
  EXPECT_EQ(g.fetch(in0), om(12, "meta"));
  EXPECT_EQ(g.fetch(other_group_in0), om(-1));
  g.apply_tombstone(in0);
  EXPECT_EQ(g.fetch(in0), om(-1));
  EXPECT_TRUE(g.committed().empty());
}

TEST_F(GroupCoordinatorCore, OffsetsExpireByCommitTimestampExceptWhileACommitIsWritten) {
  now = 1000;
  commit(in0, om(1));
  now = 5000;
  commit(in1, om(2));
  ASSERT_TRUE(txn_commit(4000, 0, {{other_group_in0, om(3)}}).ok()); // pending: never expires
  EXPECT_TRUE(g.expired_offsets(5999, 5000).empty());
  EXPECT_EQ(g.expired_offsets(6000, 5000), std::vector<group_offset_key>{in0});
  EXPECT_EQ(g.expired_offsets(10000, 5000), (std::vector<group_offset_key>{in0, in1}));
  g.begin_commit({in0});
  EXPECT_EQ(g.expired_offsets(10000, 5000), std::vector<group_offset_key>{in1});
  g.end_commit({in0});
  EXPECT_EQ(g.expired_offsets(10000, 5000).size(), 2u);
}

// Bounded state: a producer's marker epoch is forgotten once it was idle
// for producer.id.expiration.ms, never while it has offsets pending.
TEST_F(GroupCoordinatorCore, MarkerEpochsOfIdleProducersExpire) {
  now = 1000;
  ASSERT_TRUE(marker(4000, 1, control_type::commit).ok());
  now = 3000;
  ASSERT_TRUE(marker(5000, 1, control_type::commit).ok());
  ASSERT_TRUE(txn_commit(5000, 1, {{in0, om(5)}}).ok());
  EXPECT_EQ(g.marker_epoch_count(), 2u);
  EXPECT_EQ(g.expire_producers(1999, 1000), 0u);
  EXPECT_EQ(g.expire_producers(2000, 1000), 1u); // 4000
  EXPECT_EQ(g.marker_epoch_count(), 1u);
  // 4000's late commit at its old epoch is no longer recognised here; the
  // transaction coordinator's verification rejects it (KIP-890 part 1).
  EXPECT_TRUE(g.check_txn_offset_commit(producer_id{4000}, producer_epoch{0}).ok());
  EXPECT_EQ(g.expire_producers(100000, 1000), 0u); // 5000 has offsets pending
  ASSERT_TRUE(marker(5000, 2, control_type::abort).ok());
  EXPECT_EQ(g.expire_producers(100000, 1000), 1u);
  EXPECT_EQ(g.marker_epoch_count(), 0u);
}

// -- group_offsets_loader ---------------------------------------------------------------

// Builds a `__consumer_offsets` partition's log as the shell writes it.
class offsets_log {
public:
  offsets_log& commit(const group_offset_key& k, int64_t offset, int64_t ts = 500) {
    return batch({value_record(k, offset, ts)});
  }
  offsets_log& tombstone(const group_offset_key& k) {
    return batch({record{coordinator_records::encode_offset_key(k), {}, {}, 600, true}});
  }
  offsets_log& txn(int64_t pid, int16_t epoch, std::vector<record> records) {
    record_batch b;
    b.pid = producer_id{pid};
    b.epoch = producer_epoch{epoch};
    b.base_sequence = no_sequence;
    b.attributes = attr_transactional;
    b.records = std::move(records);
    return add(b);
  }
  offsets_log& marker(int64_t pid, int16_t epoch, control_type type, int64_t ts = 700) {
    return add(make_control_batch(producer_id{pid}, producer_epoch{epoch},
                                  end_txn_marker{type, coordinator_epoch{0}}, ts));
  }
  offsets_log& batch(std::vector<record> records) {
    record_batch b;
    b.records = std::move(records);
    return add(b);
  }
  static record value_record(const group_offset_key& k, int64_t offset, int64_t ts = 500) {
    return {coordinator_records::encode_offset_key(k),
            coordinator_records::encode_offset_value({offset, "m"}, ts), {}, ts};
  }
  int64_t end() const { return next_; }
  const std::string& bytes() const { return bytes_; }

private:
  offsets_log& add(const record_batch& b) {
    auto bytes = v2::encode(b);
    v2::stamp(bytes, next_, 0);
    next_ += b.record_count();
    bytes_ += bytes;
    return *this;
  }
  int64_t next_ = 0;
  std::string bytes_;
};

TEST(GroupOffsetsLoader, ReplaysCommitsTombstonesAndTransactionsInLogOrder) {
  const group_offset_key foo0{"group", topic_partition{"foo", 0}};
  offsets_log log;
  log.commit(in0, 10, 111)                                      // 0
    .txn(13232, 0, {offsets_log::value_record(foo0, 37)})       // 1
    .commit(foo0, 57)                                           // 2: later than 1
    .txn(4000, 2, {offsets_log::value_record(in1, 8),           // 3
                   offsets_log::value_record(other_group_in0, 9)}) // 4
    .marker(13232, 1, control_type::commit, 900)                // 5
    .tombstone(in0)                                             // 6
    .txn(5000, 0, {offsets_log::value_record(in0, 70)})         // 7
    .marker(5000, 1, control_type::abort);                      // 8
  group_coordinator_core core;
  group_membership_core members{{}, 1};
  group_offsets_loader loader{log.end()};
  loader.feed(log.bytes());
  // Chunks of at least two records, whole batches each.
  int chunks = 0;
  for (bool used_up = false; !used_up; ++chunks) {
    auto r = loader.next_chunk(core, members, 2);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    used_up = r.value();
  }
  EXPECT_EQ(chunks, 4);
  EXPECT_TRUE(loader.done());
  EXPECT_EQ(loader.next_offset(), 9);
  EXPECT_EQ(loader.loaded(), 9u);
  EXPECT_EQ(core.fetch(foo0), om(57, "m")); // the later plain commit stays
  EXPECT_EQ(core.committed().at(foo0).log_offset, 2);
  EXPECT_EQ(core.committed().at(foo0).commit_timestamp_ms, 500);
  EXPECT_EQ(core.fetch(in0), om(-1)); // tombstone; 5000's offsets aborted
  EXPECT_EQ(core.fetch(in1), om(-1)); // 4000 still open
  ASSERT_EQ(core.pending().size(), 1u);
  auto& p = core.pending().at(producer_id{4000});
  EXPECT_EQ(p.epoch, producer_epoch{2});
  EXPECT_EQ(p.offsets.at(in1).log_offset, 3);
  EXPECT_EQ(p.offsets.at(other_group_in0).log_offset, 4);
  EXPECT_EQ(p.offsets.at(other_group_in0).value, om(9, "m"));
  // The markers' epochs came back with the log: a late commit of 13232's
  // finished transaction is refused.
  EXPECT_EQ(core.check_txn_offset_commit(producer_id{13232}, producer_epoch{0}).code(),
            error_code::invalid_producer_epoch);
  EXPECT_EQ(core.marker_epoch_count(), 2u);
}

TEST(GroupOffsetsLoader, StopsAtTheElectionsLogEndAndSkipsBatchesBeforeItsStart) {
  offsets_log log;
  log.commit(in0, 1).commit(in0, 2).commit(in0, 3);
  group_coordinator_core core;
  group_membership_core members{{}, 1};
  group_offsets_loader loader{2};
  loader.set_next_offset(1);
  loader.feed(log.bytes());
  auto r = loader.next_chunk(core, members, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value());
  EXPECT_TRUE(loader.done());
  EXPECT_EQ(core.fetch(in0), om(2, "m"));
  EXPECT_EQ(loader.loaded(), 1u);
}

TEST(GroupOffsetsLoader, UndecodableRecordIsStorageErrorNamingItsOffset) {
  offsets_log log;
  log.commit(in0, 1).batch({record{std::string{'\0', '\1', 'x'}, "v", {}, 5}});
  group_coordinator_core core;
  group_membership_core members{{}, 1};
  group_offsets_loader loader{log.end()};
  loader.feed(log.bytes());
  auto r = loader.next_chunk(core, members, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message().rfind("__consumer_offsets record at offset 1: ", 0), 0u)
    << r.error().message();
  EXPECT_EQ(core.fetch(in0), om(1, "m")); // the records before it
}

// Group records (GroupMetadataKey v2) among the offsets: the last one of
// a group restores it, a tombstone forgets it; one in a transactional
// batch counts too, as in Kafka.
TEST(GroupOffsetsLoader, ReplaysGroupRecordsTheLastOneWinning) {
  auto group = [](const std::string& id, int32_t generation) {
    group_metadata_record g;
    g.group_id = id;
    g.protocol_type = "consumer";
    g.generation = generation;
    g.protocol_name = "range";
    g.leader = "m";
    g.members = {{"m", "", "c", "/h", 30000, 10000, "S", "A"}};
    return record{coordinator_records::encode_group_key(id),
                  coordinator_records::encode_group_value(g), {}, 1};
  };
  offsets_log log;
  log.batch({group("g", 1)})
    .commit(in0, 5)
    .batch({group("g", 2), group("gone", 1)})
    .batch({record{coordinator_records::encode_group_key("gone"), {}, {}, 2, true}});
  group_coordinator_core core;
  group_membership_core members{{}, 1};
  group_offsets_loader loader{log.end()};
  loader.feed(log.bytes());
  auto r = loader.next_chunk(core, members, 100);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(loader.loaded(), 5u);
  members.loaded(0);
  EXPECT_EQ(members.generation("g"), 2);
  EXPECT_EQ(members.state("g"), group_state::stable);
  EXPECT_EQ(members.describe("g").members.at(0).assignment, "A");
  EXPECT_FALSE(members.has_group("gone"));
  EXPECT_EQ(core.fetch(in0), om(5, "m"));

  offsets_log txn;
  txn.txn(7, 0, {group("g", 3)});
  group_offsets_loader in_txn{txn.end()};
  in_txn.feed(txn.bytes());
  auto e = in_txn.next_chunk(core, members, 100);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(members.generation("g"), 3);
}

} // namespace
} // namespace caftx
