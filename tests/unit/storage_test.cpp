// storage: the value codec (round trips, golden bytes that lock the on-disk
// format, corrupt input) and node_store on a real LevelDB in a temp dir.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <leveldb/write_batch.h>
#include <unistd.h>

#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

namespace fs = std::filesystem;

// A fixed transactional batch: two records, one with a header.
record_batch fixed_batch() {
  record_batch b;
  b.base_offset = 42;
  b.pid = producer_id{4000};
  b.epoch = producer_epoch{3};
  b.base_sequence = 7;
  b.attributes = attr_transactional;
  b.records.push_back(record{"k1", "v1", {{"h", "x"}}, 1700000000000});
  b.records.push_back(record{"", "value-2", {}, 1700000000001});
  return b;
}

// A fixed PrepareCommit card of a rotated producer id.
txn_card fixed_card() {
  txn_card c;
  c.transactional_id = "txn-A";
  c.pid = producer_id{53};
  c.previous_pid = producer_id{3};
  c.epoch = producer_epoch{2};
  c.txn_timeout_ms = 60000;
  c.state = txn_state::prepare_commit;
  c.partitions = {topic_partition{"orders", 0}, topic_partition{"orders", 1}};
  c.txn_start_ms = 1500;
  c.last_update_ms = 2000;
  return c;
}

void expect_same_batch(const record_batch& a, const record_batch& b) {
  EXPECT_EQ(a.base_offset, b.base_offset);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.base_sequence, b.base_sequence);
  EXPECT_EQ(a.attributes, b.attributes);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].key, b.records[i].key);
    EXPECT_EQ(a.records[i].value, b.records[i].value);
    EXPECT_EQ(a.records[i].timestamp_ms, b.records[i].timestamp_ms);
    ASSERT_EQ(a.records[i].headers.size(), b.records[i].headers.size());
    for (size_t k = 0; k < a.records[i].headers.size(); ++k) {
      EXPECT_EQ(a.records[i].headers[k].key, b.records[i].headers[k].key);
      EXPECT_EQ(a.records[i].headers[k].value, b.records[i].headers[k].value);
    }
  }
}

// -- codec round trips ------------------------------------------------------------

// Record batches are stored as RecordBatch v2 bytes (golden bytes in
// record_batch_v2_test.cpp).
TEST(Codec, RecordBatchRoundTrip) {
  auto b = fixed_batch();
  auto bytes = v2::encode(b);
  EXPECT_EQ(static_cast<int8_t>(bytes[v2::magic_pos]), v2::magic);
  auto back = v2::decode(bytes);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  expect_same_batch(*back, b);
}

TEST(Codec, ControlBatchRoundTripKeepsMarker) {
  auto b = make_control_batch(producer_id{5000}, producer_epoch{3},
                              {control_type::abort, coordinator_epoch{9}}, 1234);
  b.base_offset = 13;
  auto back = v2::decode(v2::encode(b));
  ASSERT_TRUE(back.ok());
  expect_same_batch(*back, b);
  auto marker = parse_control_batch(*back);
  ASSERT_TRUE(marker.has_value());
  EXPECT_EQ(marker->type, control_type::abort);
  EXPECT_EQ(marker->cepoch, coordinator_epoch{9});
}

TEST(Codec, TxnCardRoundTrip) {
  for (auto state : {txn_state::empty, txn_state::ongoing, txn_state::prepare_commit,
                     txn_state::prepare_abort, txn_state::complete_commit,
                     txn_state::complete_abort}) {
    auto c = fixed_card();
    c.state = state;
    auto back = codec::decode_card(codec::encode(c));
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, c);
  }
}

TEST(Codec, TopicAndCounterRoundTrip) {
  auto t = codec::decode_topic(codec::encode(codec::topic_record{"orders", 12, {{"retention.ms", "1000"}}}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "orders");
  EXPECT_EQ(t->partitions, 12);
  EXPECT_EQ(t->configs, (std::map<std::string, std::string>{{"retention.ms", "1000"}}));
  auto n = codec::decode_int64(codec::encode_int64(-1234567890123));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, -1234567890123);
}

// -- golden bytes: the on-disk format -----------------------------------------------

// The card as class version 0 wrote it, before next_pid and ended_by_*
// existed. Never edit these bytes: a data directory may still hold them.
const std::string golden_card_class_version_0 =
  "010000000000050000000000000074786e2d4100000000003500000000000000"
  "03000000000000000000000000020060ea000002000000000002000000000000"
  "0000000000000000000006000000000000006f72646572730000000006000000"
  "000000006f726465727301000000dc05000000000000d007000000000000";

TEST(Codec, GoldenBytesOfTxnCardClassVersion0AreStillRead) {
  auto back = codec::decode_card(from_hex(golden_card_class_version_0));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, fixed_card()); // next_pid and ended_by_* read as -1
  EXPECT_EQ(back->next_pid, no_producer_id);
  EXPECT_EQ(back->ended_by_pid, no_producer_id);
  EXPECT_EQ(back->ended_by_epoch, no_producer_epoch);
}

TEST(Codec, GoldenBytesOfTxnCard) {
  // Value version 1, card class version 1; see storage/FORMAT.md. If this
  // fails, the on-disk format changed: bump the class version and keep a
  // reader for this one instead of editing the bytes.
  auto card = fixed_card();
  card.next_pid = producer_id{103};
  card.ended_by_pid = producer_id{53};
  card.ended_by_epoch = producer_epoch{1};
  const std::string golden =
    "010001000000050000000000000074786e2d4100000000003500000000000000"
    "03000000000000000000000000020060ea000002000000000002000000000000"
    "0000000000000000000006000000000000006f72646572730000000006000000"
    "000000006f726465727301000000dc05000000000000d007000000000000"
    "670000000000000035000000000000000100";
  EXPECT_EQ(to_hex(codec::encode(card)), golden);
  auto back = codec::decode_card(from_hex(golden));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, card);
}

// -- the card layout read without an archive (decode_card's fast path) -----------------

TEST(Codec, CardLayoutReaderReadsBothGoldenClassVersions) {
  auto v0 = codec::read_card_layout(from_hex(golden_card_class_version_0));
  ASSERT_TRUE(v0.has_value());
  EXPECT_EQ(*v0, fixed_card());
  auto card = fixed_card();
  card.next_pid = producer_id{103};
  card.ended_by_pid = producer_id{53};
  card.ended_by_epoch = producer_epoch{1};
  auto v1 = codec::read_card_layout(codec::encode(card));
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(*v1, card);
}

TEST(Codec, CardLayoutReaderAgreesWithTheArchiveOnEveryShapeOfCard) {
  // 0-3 partitions (the element class info comes with the first only),
  // every persisted state, ids and topics around the short-string size,
  // extreme values.
  const std::vector<std::string> ids = {"", "a", std::string(15, 'x'), std::string(16, 'y'),
                                        "payments-settlement-7f3a09c1-12", std::string(300, 'z')};
  const std::vector<std::string> topics = {"t", "orders", "inventory-events-eu-west-1"};
  int n = 0;
  for (auto& id : ids)
    for (int state = 0; state <= 5; ++state)
      for (size_t parts = 0; parts <= 3; ++parts) {
        txn_card c;
        c.transactional_id = id;
        c.pid = producer_id{n % 2 == 0 ? std::numeric_limits<int64_t>::max() : n};
        c.previous_pid = producer_id{-1};
        c.next_pid = producer_id{n % 3 == 0 ? -1 : 4000 + n};
        c.epoch = producer_epoch{static_cast<int16_t>(n % 2 == 0 ? 32767 : n)};
        c.txn_timeout_ms = n % 5 == 0 ? std::numeric_limits<int32_t>::max() : 60000;
        c.state = static_cast<txn_state>(state);
        for (size_t k = 0; k < parts; ++k)
          c.partitions.push_back({topics[k], static_cast<int32_t>(k == 2 ? -1 : 7 * k)});
        c.txn_start_ms = n % 4 == 0 ? -1 : 1700000000000 + n;
        c.last_update_ms = std::numeric_limits<int64_t>::min() + n;
        c.ended_by_pid = producer_id{n % 2 == 0 ? -1 : n};
        c.ended_by_epoch = producer_epoch{static_cast<int16_t>(n % 2 == 0 ? -1 : 5)};
        auto bytes = codec::encode(c); // written by the archive
        auto direct = codec::read_card_layout(bytes);
        ASSERT_TRUE(direct.has_value()) << "card " << n;
        EXPECT_EQ(*direct, c) << "card " << n;
        ++n;
      }
  EXPECT_EQ(n, 6 * 6 * 4);
}

TEST(Codec, CardLayoutReaderLeavesAnythingElseToTheArchive) {
  auto bytes = codec::encode(fixed_card());
  ASSERT_TRUE(codec::read_card_layout(bytes).has_value());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(codec::read_card_layout(std::string_view(bytes).substr(0, n)).has_value()) << n;
  EXPECT_FALSE(codec::read_card_layout(bytes + '\0').has_value()); // trailing byte
  auto tracked = bytes;
  tracked[1] = 1; // the card's tracking flag
  EXPECT_FALSE(codec::read_card_layout(tracked).has_value());
  auto newer = bytes;
  newer[2] = 2; // card class version 2
  EXPECT_FALSE(codec::read_card_layout(newer).has_value());
  auto other_value_version = bytes;
  other_value_version[0] = 2;
  EXPECT_FALSE(codec::read_card_layout(other_value_version).has_value());
  // An id length beyond the value is not allocated, only refused.
  auto huge = bytes;
  huge[13] = '\x7f'; // the top byte of the id's 64-bit length
  EXPECT_FALSE(codec::read_card_layout(huge).has_value());
  EXPECT_FALSE(codec::decode_card(huge).ok());
}

// -- corrupt input ---------------------------------------------------------------------

TEST(Codec, UnknownVersionByteIsKafkaStorageError) {
  auto bytes = codec::encode(fixed_card());
  bytes[0] = 2;
  auto r = codec::decode_card(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(), "unknown transaction state card value version 2");
}

TEST(Codec, EmptyValueIsKafkaStorageError) {
  auto r = codec::decode_card("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(), "empty transaction state card value");
}

TEST(Codec, TruncatedBytesAreKafkaStorageError) {
  auto card = codec::encode(fixed_card());
  for (size_t n = 1; n < card.size(); ++n) {
    auto r = codec::decode_card(std::string_view(card).substr(0, n));
    ASSERT_FALSE(r.ok()) << "card prefix of " << n << " bytes";
    EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  }
  auto batch = v2::encode(fixed_batch());
  for (size_t n = 1; n < batch.size(); ++n) {
    auto r = v2::decode(std::string_view(batch).substr(0, n));
    ASSERT_FALSE(r.ok()) << "batch prefix of " << n << " bytes";
    EXPECT_EQ(r.error().code(), error_code::corrupt_message);
  }
}

// -- key layout ------------------------------------------------------------------------

TEST(Keys, LayoutAndOffsetOrder) {
  topic_partition tp{"orders", 3};
  EXPECT_EQ(keys::log_entry(tp, 12),
            std::string("log/orders\0", 11) + "0000000003/00000000000000000012");
  EXPECT_LT(keys::log_entry(tp, 9), keys::log_entry(tp, 10));
  EXPECT_EQ(keys::card(3, "txn-A"), "txn/03/txn-A");
  EXPECT_EQ(keys::next_pid(3), "txnmeta/03/next_pid");
  EXPECT_EQ(keys::coordinator_epoch(49), "txnmeta/49/coordinator_epoch");
  EXPECT_EQ(keys::topic("orders"), "topic/orders");
}

// -- node_store ------------------------------------------------------------------------

class NodeStore : public ::testing::Test {
protected:
  void SetUp() override { dir_ = fresh_test_dir("store"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<node_store> open(node_store_options opts = {}) {
    auto s = node_store::open(dir_, opts);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return s.ok() ? std::move(s.value()) : nullptr;
  }

  std::string dir_;
};

TEST_F(NodeStore, BackgroundWriteCallsBackThenReopenReadsBack) {
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    std::promise<status> done;
    auto written = done.get_future();
    leveldb::WriteBatch wb;
    wb.Put(keys::card(3, "txn-A"), codec::encode(fixed_card()));
    wb.Put("plain", "value");
    store->write(std::move(wb), [&](const status& st) { done.set_value(st); });
    auto st = written.get(); // blocks until the writer thread ran the callback
    EXPECT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(store->stats().writes, 1u);
    EXPECT_EQ(store->stats().disk_writes, 1u);
    EXPECT_EQ(store->get("plain"), std::optional<std::string>{"value"});
  }
  auto again = open();
  ASSERT_NE(again, nullptr);
  auto raw = again->get(keys::card(3, "txn-A"));
  ASSERT_TRUE(raw.has_value());
  auto card = codec::decode_card(*raw);
  ASSERT_TRUE(card.ok());
  EXPECT_EQ(*card, fixed_card());
  EXPECT_EQ(again->get("plain"), std::optional<std::string>{"value"});
  EXPECT_EQ(again->get("missing"), std::nullopt);
}

TEST_F(NodeStore, CorruptLogIsKafkaStorageErrorNotFewerRecords) {
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 3; ++i) {
      leveldb::WriteBatch wb;
      wb.Put("log/" + std::to_string(i), std::string(200, static_cast<char>('a' + i)));
      ASSERT_TRUE(store->write_now(wb).ok());
    }
  }
  // Flip a byte inside the second record of LevelDB's write-ahead log.
  std::string log;
  for (auto& e : fs::directory_iterator(dir_))
    if (e.path().extension() == ".log")
      log = e.path().string();
  ASSERT_FALSE(log.empty());
  {
    std::fstream f{log, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(300);
    f.put('\xff');
  }
  auto reopened = node_store::open(dir_, {});
  ASSERT_FALSE(reopened.ok()) << "a damaged log was read as a shorter one";
  EXPECT_EQ(reopened.error().code(), error_code::kafka_storage_error);
  EXPECT_NE(reopened.error().message().find("Corruption"), std::string::npos)
    << reopened.error().message();
}

TEST_F(NodeStore, BackgroundWritesCompleteInQueueOrder) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  std::vector<int> order;
  std::mutex mtx;
  std::promise<void> last;
  auto all_done = last.get_future();
  for (int i = 0; i < 20; ++i) {
    leveldb::WriteBatch wb;
    wb.Put("k", std::to_string(i));
    store->write(std::move(wb), [&, i](const status& st) {
      EXPECT_TRUE(st.ok());
      std::lock_guard<std::mutex> guard{mtx};
      order.push_back(i);
      if (i == 19)
        last.set_value();
    });
  }
  all_done.get();
  std::lock_guard<std::mutex> guard{mtx};
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(order[i], i);
  EXPECT_EQ(store->get("k"), std::optional<std::string>{"19"}); // the last write wins
  EXPECT_EQ(store->stats().writes, 20u);
  EXPECT_LE(store->stats().disk_writes, 20u); // group commit merges queued writes
}

TEST_F(NodeStore, InlineModeCallsBackBeforeWriteReturns) {
  node_store_options opts;
  opts.background_writer = false;
  auto store = open(opts);
  ASSERT_NE(store, nullptr);
  auto caller = std::this_thread::get_id();
  bool called = false;
  leveldb::WriteBatch wb;
  wb.Put("a", "1");
  store->write(std::move(wb), [&](const status& st) {
    EXPECT_TRUE(st.ok());
    EXPECT_EQ(std::this_thread::get_id(), caller);
    called = true;
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(store->get("a"), std::optional<std::string>{"1"});
  EXPECT_EQ(store->stats().writes, 1u);
  EXPECT_EQ(store->stats().disk_writes, 1u);
  leveldb::WriteBatch now;
  now.Put("b", "2");
  EXPECT_TRUE(store->write_now(now).ok());
  EXPECT_EQ(store->get("b"), std::optional<std::string>{"2"});
}

TEST_F(NodeStore, ScanVisitsPrefixInKeyOrderAndStopsWhenAsked) {
  node_store_options opts;
  opts.background_writer = false;
  auto store = open(opts);
  ASSERT_NE(store, nullptr);
  topic_partition tp{"orders", 0};
  topic_partition other{"orders", 1};
  leveldb::WriteBatch wb;
  for (int64_t off : {10, 2, 0, 7})
    wb.Put(keys::log_entry(tp, off), std::to_string(off));
  wb.Put(keys::log_entry(other, 1), "other");
  wb.Put("log/ordersX", "not a log key of orders-0");
  wb.Put("a", "before");
  store->write(std::move(wb), nullptr);

  std::vector<std::string> seen;
  store->scan(keys::log_prefix(tp), [&](const std::string& k, const std::string& v) {
    EXPECT_EQ(k.rfind(keys::log_prefix(tp), 0), 0u);
    seen.push_back(v);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "2", "7", "10"}));

  seen.clear();
  store->scan(keys::log_prefix(tp), [&](const std::string&, const std::string& v) {
    seen.push_back(v);
    return seen.size() < 2;
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "2"}));

  seen.clear();
  store->scan("zzz", [&](const std::string&, const std::string& v) {
    seen.push_back(v);
    return true;
  });
  EXPECT_TRUE(seen.empty());
}

TEST_F(NodeStore, ScanAfterResumesFromTheLastKeyAndVisitsAtMostMaxEntries) {
  node_store_options opts;
  opts.background_writer = false;
  auto store = open(opts);
  ASSERT_NE(store, nullptr);
  leveldb::WriteBatch wb;
  for (auto id : {"e", "a", "d", "b", "c"})
    wb.Put(keys::card(3, id), id);
  wb.Put(keys::card(2, "z"), "shard 2");
  wb.Put(keys::card(4, "0"), "shard 4");
  store->write(std::move(wb), nullptr);

  std::vector<std::string> keys_seen;
  std::vector<std::string> values;
  auto chunk = [&](const std::string& after, size_t max) {
    return store->scan_after(keys::card_prefix(3), after, max,
                             [&](std::string_view k, std::string_view v) {
                               keys_seen.emplace_back(k);
                               values.emplace_back(v);
                             });
  };
  EXPECT_EQ(chunk("", 2), 2u);
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(keys_seen.back(), keys::card(3, "b"));
  EXPECT_EQ(chunk(keys_seen.back(), 2), 2u);
  EXPECT_EQ(chunk(keys_seen.back(), 2), 1u); // fewer than asked: the prefix is exhausted
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(chunk(keys_seen.back(), 2), 0u);
  // A key that is no longer there: the scan goes on after where it was.
  values.clear();
  EXPECT_EQ(chunk(keys::card(3, "bb"), 10), 3u);
  EXPECT_EQ(values, (std::vector<std::string>{"c", "d", "e"}));
  values.clear();
  EXPECT_EQ(store->scan_after(keys::card_prefix(5), "", 10,
                              [&](std::string_view, std::string_view v) { values.emplace_back(v); }),
            0u);
  EXPECT_TRUE(values.empty());
}

TEST_F(NodeStore, OpeningSameDirectoryTwiceIsKafkaStorageError) {
  auto first = open();
  ASSERT_NE(first, nullptr);
  auto second = node_store::open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), error_code::kafka_storage_error);
  EXPECT_NE(second.error().message().find("cannot open data directory " + dir_),
            std::string::npos)
    << second.error().message();
  first.reset();
  auto third = node_store::open(dir_);
  EXPECT_TRUE(third.ok()) << third.error().to_string();
}

} // namespace
} // namespace caftx

namespace caftx {
namespace {

status_or<txn_card> decode_card_in(txn_state state) {
  txn_card card;
  card.transactional_id = "tx";
  card.state = state;
  return codec::decode_card(codec::encode(card));
}

TEST(StorageCodec, CardWithAStateThatIsNeverPersistedIsCorrupt) {
  auto st = decode_card_in(txn_state::dead);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(st.error().message(), "transaction state card with invalid state 6");
  EXPECT_TRUE(decode_card_in(txn_state::complete_abort).ok());
}

TEST(StorageCodec, CardInPrepareEpochFenceIsCorrupt) {
  auto st = decode_card_in(txn_state::prepare_epoch_fence);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(st.error().message(), "transaction state card with invalid state 7");
}

TEST(NodeStoreWriter, DurableWritesCompleteOnTheWriterThreadNotTheCaller) {
  auto dir = std::filesystem::path(::testing::TempDir()) / "caftx-writer-thread";
  std::filesystem::remove_all(dir);
  auto store = node_store::open(dir.string());
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  std::promise<std::thread::id> ran_on;
  leveldb::WriteBatch wb;
  wb.Put("k", "v");
  store.value()->write(std::move(wb), [&](const status& st) {
    EXPECT_TRUE(st.ok());
    ran_on.set_value(std::this_thread::get_id());
  });
  auto id = ran_on.get_future().get();
  EXPECT_NE(id, std::this_thread::get_id());
  EXPECT_EQ(store.value()->get("k"), std::optional<std::string>{"v"});
  store.value().reset();
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace caftx
