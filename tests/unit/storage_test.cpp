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

// A topic record with one config.
codec::topic_record fixed_topic() { return {"orders", 12, {{"retention.ms", "1000"}}}; }

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

// The topic record, the one value still written through the Boost archive
// (storage/FORMAT.md): version byte 1, the name (64-bit length + bytes),
// the partition count, the configs map (class info, count, item version,
// pair class info, then key and value strings). Never edit these bytes: a
// data directory holds them.
TEST(Codec, GoldenBytesOfATopicRecord) {
  const std::string golden =
    "0106000000000000006f72646572730c000000000000000001000000000000000000000000000000000c"
    "00000000000000726574656e74696f6e2e6d73040000000000000031303030";
  EXPECT_EQ(to_hex(codec::encode(fixed_topic())), golden);
  auto back = codec::decode_topic(from_hex(golden));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->name, "orders");
  EXPECT_EQ(back->partitions, 12);
  EXPECT_EQ(back->configs, (std::map<std::string, std::string>{{"retention.ms", "1000"}}));
}


// -- corrupt input ---------------------------------------------------------------------

TEST(Codec, UnknownVersionByteIsKafkaStorageError) {
  auto bytes = codec::encode(fixed_topic());
  bytes[0] = 2;
  auto r = codec::decode_topic(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(), "unknown topic value version 2");
}

TEST(Codec, EmptyValueIsKafkaStorageError) {
  auto r = codec::decode_topic("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(r.error().message(), "empty topic value");
}

TEST(Codec, TruncatedBytesAreKafkaStorageError) {
  auto topic = codec::encode(fixed_topic());
  for (size_t n = 1; n < topic.size(); ++n) {
    auto r = codec::decode_topic(std::string_view(topic).substr(0, n));
    ASSERT_FALSE(r.ok()) << "topic prefix of " << n << " bytes";
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
  EXPECT_EQ(keys::next_pid(3), "txnmeta/03/next_pid");
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
    wb.Put(keys::topic("orders"), codec::encode(fixed_topic()));
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
  auto raw = again->get(keys::topic("orders"));
  ASSERT_TRUE(raw.has_value());
  auto topic = codec::decode_topic(*raw);
  ASSERT_TRUE(topic.ok());
  EXPECT_EQ(topic->name, "orders");
  EXPECT_EQ(topic->partitions, 12);
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
    wb.Put(std::string("p/3/") + id, id);
  wb.Put("p/2/z", "shard 2");
  wb.Put("p/4/0", "shard 4");
  store->write(std::move(wb), nullptr);

  std::vector<std::string> keys_seen;
  std::vector<std::string> values;
  auto chunk = [&](const std::string& after, size_t max) {
    return store->scan_after("p/3/", after, max,
                             [&](std::string_view k, std::string_view v) {
                               keys_seen.emplace_back(k);
                               values.emplace_back(v);
                             });
  };
  EXPECT_EQ(chunk("", 2), 2u);
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(keys_seen.back(), "p/3/b");
  EXPECT_EQ(chunk(keys_seen.back(), 2), 2u);
  EXPECT_EQ(chunk(keys_seen.back(), 2), 1u); // fewer than asked: the prefix is exhausted
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(chunk(keys_seen.back(), 2), 0u);
  // A key that is no longer there: the scan goes on after where it was.
  values.clear();
  EXPECT_EQ(chunk("p/3/bb", 10), 3u);
  EXPECT_EQ(values, (std::vector<std::string>{"c", "d", "e"}));
  values.clear();
  EXPECT_EQ(store->scan_after("p/5/", "", 10,
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
