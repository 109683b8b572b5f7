// txn_state_loader: a coordinator shard's cards read back from a real
// LevelDB into txn_coordinator_core a chunk at a time (docs/transactions.md §Load), and
// the shard's stored coordinator epoch and producer id counter.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <leveldb/write_batch.h>

#include "actors/coordinator/txn_state_loader.hpp"
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

class TxnStateLoader : public ::testing::Test {
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

  // Shard 3: id-00 .. id-24, every fifth PrepareCommit, every seventh
  // PrepareAbort, the rest Ongoing or CompleteCommit; neighbours in shards
  // 2 and 4.
  std::vector<txn_card> fill_shard_3() {
    std::vector<txn_card> cards;
    for (int i = 0; i < 25; ++i) {
      auto tid = std::string("id-") + (i < 10 ? "0" : "") + std::to_string(i);
      auto state = i % 5 == 0   ? txn_state::prepare_commit
                   : i % 7 == 0 ? txn_state::prepare_abort
                   : i % 2 == 0 ? txn_state::ongoing
                                : txn_state::complete_commit;
      cards.push_back(card_of(tid, 3 + 50 * i, state));
      put(keys::card(3, tid), codec::encode(cards.back()));
    }
    put(keys::card(2, "zz"), codec::encode(card_of("zz", 2, txn_state::empty)));
    put(keys::card(4, "aa"), codec::encode(card_of("aa", 4, txn_state::empty)));
    return cards;
  }

  std::string dir_;
  std::unique_ptr<node_store> store_;
  txn_coordinator_core core_{txn_coordinator_settings{3, 50, 900000}};
};

TEST_F(TxnStateLoader, LoadsTheShardsCardsInChunksOfAtMostMaxCards) {
  auto cards = fill_shard_3();
  txn_state_loader loader{*store_, 3};
  auto chunk = [&] {
    auto r = loader.next_chunk(core_, 10);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() && r.value();
  };
  EXPECT_FALSE(chunk());
  EXPECT_EQ(core_.size(), 10u);
  EXPECT_EQ(loader.loaded(), 10u);
  EXPECT_FALSE(chunk());
  EXPECT_EQ(core_.size(), 20u);
  EXPECT_TRUE(chunk()); // 5 cards: fewer than 10, the shard is exhausted
  EXPECT_EQ(core_.size(), 25u);
  EXPECT_EQ(loader.loaded(), 25u);
  for (auto& c : cards) {
    auto* loaded = core_.find(c.transactional_id);
    ASSERT_NE(loaded, nullptr) << c.transactional_id;
    EXPECT_EQ(*loaded, c);
  }
  EXPECT_EQ(core_.find("zz"), nullptr);
  EXPECT_EQ(core_.find("aa"), nullptr);
  EXPECT_EQ(loader.in_prepare(),
            (std::vector<std::string>{"id-00", "id-05", "id-07", "id-10", "id-14", "id-15",
                                      "id-20", "id-21"}));
}

TEST_F(TxnStateLoader, ShardOfExactlyNChunksEndsWithAnEmptyChunk) {
  fill_shard_3();
  txn_state_loader loader{*store_, 3};
  for (int i = 0; i < 5; ++i) {
    auto r = loader.next_chunk(core_, 5);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r.value()) << i;
  }
  auto last = loader.next_chunk(core_, 5);
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last.value());
  EXPECT_EQ(core_.size(), 25u);
  txn_state_loader empty{*store_, 7};
  auto none = empty.next_chunk(core_, 5);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value());
  EXPECT_EQ(empty.loaded(), 0u);
}

TEST_F(TxnStateLoader, CorruptCardIsKafkaStorageErrorNamingItsKey) {
  put(keys::card(3, "a"), codec::encode(card_of("a", 3, txn_state::empty)));
  put(keys::card(3, "b"), std::string("\x09junk", 5));
  txn_state_loader loader{*store_, 3};
  auto r = loader.next_chunk(core_, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(), "key txn/03/b: unknown transaction state card value version 9");
}

TEST_F(TxnStateLoader, CardUnderAnotherIdsKeyIsKafkaStorageError) {
  put(keys::card(3, "a"), codec::encode(card_of("b", 3, txn_state::empty)));
  txn_state_loader loader{*store_, 3};
  auto r = loader.next_chunk(core_, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(), "key txn/03/a: card of transactional id b");
  EXPECT_EQ(core_.size(), 0u);
}

TEST_F(TxnStateLoader, ShardMetaIsMinusOneAndZeroUntilWritten) {
  auto fresh = read_txn_shard_meta(*store_, 3);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->coordinator_epoch, -1);
  EXPECT_EQ(fresh->next_pid_counter, 0);
  put(keys::coordinator_epoch(3), codec::encode_int64(4));
  put(keys::next_pid(3), codec::encode_int64(17));
  auto meta = read_txn_shard_meta(*store_, 3);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->coordinator_epoch, 4);
  EXPECT_EQ(meta->next_pid_counter, 17);
  put(keys::next_pid(3), "");
  auto bad = read_txn_shard_meta(*store_, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "key txnmeta/03/next_pid: empty counter value");
}

} // namespace
} // namespace caftx
