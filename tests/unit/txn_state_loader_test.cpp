// txn_state_loader: a coordinator shard's partition of `__transaction_state`
// replayed into txn_coordinator_core a chunk at a time (docs/transactions.md
// §Load): the last record per transactional id wins, a tombstone removes
// it; and the shard's stored producer id counter.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <leveldb/write_batch.h>

#include "actors/coordinator/txn_state_loader.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

namespace fs = std::filesystem;

txn_card card_of(const std::string& tid, int64_t pid, txn_state state) {
  txn_card c;
  c.transactional_id = tid;
  c.pid = producer_id{pid};
  c.epoch = producer_epoch{1};
  c.txn_timeout_ms = 60000;
  c.state = state;
  if (state != txn_state::empty)
    c.txn_start_ms = 100;
  if (state == txn_state::ongoing || state == txn_state::prepare_commit
      || state == txn_state::prepare_abort)
    c.partitions = {topic_partition{"orders", 0}};
  c.last_update_ms = 200;
  return c;
}

// One batch per record list, as the coordinator appends them, stamped at
// consecutive offsets from `base`; returns the concatenation.
class log_builder {
public:
  explicit log_builder(int64_t base = 0) : next_(base) {}
  log_builder& card(const txn_card& c) { return batch({record_of(c)}); }
  log_builder& tombstone(const std::string& tid) {
    record r{coordinator_records::encode_txn_key(tid), {}, {}, 300, true};
    return batch({r});
  }
  log_builder& batch(std::vector<record> records) {
    record_batch b;
    b.records = std::move(records);
    auto bytes = v2::encode(b);
    v2::stamp(bytes, next_, 0);
    next_ += static_cast<int64_t>(b.records.size());
    bytes_ += bytes;
    return *this;
  }
  static record record_of(const txn_card& c) {
    return {coordinator_records::encode_txn_key(c.transactional_id),
            coordinator_records::encode_txn_value(c), {}, 200};
  }
  int64_t end() const { return next_; }
  const std::string& bytes() const { return bytes_; }

private:
  int64_t next_;
  std::string bytes_;
};

class TxnStateLoader : public ::testing::Test {
protected:
  // Shard 3: id-00 .. id-24, every fifth PrepareCommit, every seventh
  // PrepareAbort, the rest Ongoing or CompleteCommit.
  std::vector<txn_card> shard_3(log_builder& log) {
    std::vector<txn_card> cards;
    for (int i = 0; i < 25; ++i) {
      auto tid = std::string("id-") + (i < 10 ? "0" : "") + std::to_string(i);
      auto state = i % 5 == 0   ? txn_state::prepare_commit
                   : i % 7 == 0 ? txn_state::prepare_abort
                   : i % 2 == 0 ? txn_state::ongoing
                                : txn_state::complete_commit;
      cards.push_back(card_of(tid, 3 + 50 * i, state));
      log.card(cards.back());
    }
    return cards;
  }

  bool chunk(txn_state_loader& loader, size_t max) {
    auto r = loader.next_chunk(core_, max);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() && r.value();
  }

  txn_coordinator_core core_{txn_coordinator_settings{3, 50, 900000}};
};

TEST_F(TxnStateLoader, ReplaysTheFedBatchesInChunksOfAtLeastMaxCardsRecords) {
  log_builder log;
  auto cards = shard_3(log);
  txn_state_loader loader{log.end()};
  loader.feed(log.bytes());
  EXPECT_FALSE(chunk(loader, 10));
  EXPECT_EQ(core_.size(), 10u);
  EXPECT_EQ(loader.loaded(), 10u);
  EXPECT_EQ(loader.next_offset(), 10);
  EXPECT_FALSE(chunk(loader, 10));
  EXPECT_EQ(core_.size(), 20u);
  EXPECT_TRUE(chunk(loader, 10)); // 5 records: the end offset reached
  EXPECT_TRUE(loader.done());
  EXPECT_EQ(core_.size(), 25u);
  for (auto& c : cards) {
    auto* loaded = core_.find(c.transactional_id);
    ASSERT_NE(loaded, nullptr) << c.transactional_id;
    EXPECT_EQ(*loaded, c);
  }
  EXPECT_EQ(loader.in_prepare(core_),
            (std::vector<std::string>{"id-00", "id-05", "id-07", "id-10", "id-14", "id-15",
                                      "id-20", "id-21"}));
}

TEST_F(TxnStateLoader, TheLastRecordOfAnIdWinsAndATombstoneRemovesIt) {
  log_builder log;
  auto a = card_of("a", 3, txn_state::prepare_commit);
  auto a2 = card_of("a", 3, txn_state::complete_commit);
  auto b = card_of("b", 53, txn_state::ongoing);
  auto c = card_of("c", 103, txn_state::prepare_abort);
  auto c2 = card_of("c", 153, txn_state::empty);
  // a: Prepare then Complete; b: card, tombstone; c: card, tombstone, a new
  // card (the id returned), in one multi-record batch at the end.
  log.card(a).card(b).card(c).card(a2).tombstone("b").tombstone("c");
  log.batch({log_builder::record_of(c2)});
  txn_state_loader loader{log.end()};
  loader.feed(log.bytes());
  EXPECT_TRUE(chunk(loader, 100));
  EXPECT_EQ(core_.size(), 2u);
  ASSERT_NE(core_.find("a"), nullptr);
  EXPECT_EQ(*core_.find("a"), a2);
  EXPECT_EQ(core_.find("b"), nullptr);
  ASSERT_NE(core_.find("c"), nullptr);
  EXPECT_EQ(*core_.find("c"), c2);
  // Both were Prepare* once; neither is now.
  EXPECT_TRUE(loader.in_prepare(core_).empty());
  EXPECT_EQ(loader.loaded(), 7u);
}

TEST_F(TxnStateLoader, RecordsAtOrAfterTheElectionsLogEndAreNotReplayed) {
  log_builder log;
  log.card(card_of("a", 3, txn_state::empty)).card(card_of("b", 53, txn_state::empty));
  txn_state_loader loader{1};
  loader.feed(log.bytes());
  EXPECT_TRUE(chunk(loader, 100));
  EXPECT_TRUE(loader.done());
  EXPECT_EQ(core_.size(), 1u);
  EXPECT_EQ(core_.find("b"), nullptr);
}

TEST_F(TxnStateLoader, AFetchStartingInsideABatchSkipsTheBatchBeforeTheNextOffset) {
  log_builder log;
  log.batch({log_builder::record_of(card_of("a", 3, txn_state::empty)),
             log_builder::record_of(card_of("b", 53, txn_state::empty))});
  log.card(card_of("c", 103, txn_state::empty));
  txn_state_loader loader{log.end()};
  loader.set_next_offset(2); // a and b were replayed from an earlier fetch
  loader.feed(log.bytes());
  EXPECT_TRUE(chunk(loader, 100));
  EXPECT_EQ(core_.size(), 1u);
  EXPECT_NE(core_.find("c"), nullptr);
}

TEST_F(TxnStateLoader, UndecodableCardIsKafkaStorageErrorNamingItsOffset) {
  log_builder log;
  log.card(card_of("a", 3, txn_state::empty));
  log.batch({record{coordinator_records::encode_txn_key("b"), std::string("\x00\x09junk", 6), {},
                    200}});
  txn_state_loader loader{log.end()};
  loader.feed(log.bytes());
  auto r = loader.next_chunk(core_, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(),
            "__transaction_state record at offset 1: TransactionLogValue: unknown version 9");
  EXPECT_NE(core_.find("a"), nullptr);
}

class TxnShardMeta : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fresh_test_dir("loader");
    node_store_options opts;
    opts.background_writer = false;
    auto s = node_store::open(dir_, opts);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void put(const std::string& key, const std::string& value) {
    leveldb::WriteBatch wb;
    wb.Put(key, value);
    ASSERT_TRUE(store_->write_now(wb).ok());
  }
  std::string dir_;
  std::unique_ptr<node_store> store_;
};

TEST_F(TxnShardMeta, ProducerIdCounterIsZeroUntilWritten) {
  auto fresh = read_txn_shard_meta(*store_, 3);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->next_pid_counter, 0);
  put(keys::next_pid(3), codec::encode_int64(17));
  auto meta = read_txn_shard_meta(*store_, 3);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->next_pid_counter, 17);
  put(keys::next_pid(3), "");
  auto bad = read_txn_shard_meta(*store_, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "key txnmeta/03/next_pid: empty counter value");
}

} // namespace
} // namespace caftx
