// A partition leader's storage (storage/FORMAT.md): the data directory's
// storage format, producer-state snapshots that a restart loads instead of
// replaying the log before them, persisted aborted-index entries, reads of
// old data from LevelDB and of the tail from memory, and stored corruption
// reported as KAFKA_STORAGE_ERROR, never as data.
#include "fixture.hpp"

#include <leveldb/write_batch.h>

#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
const topic_partition t0{"t", 0};

class PartitionStorageTest : public node_fixture {
protected:
  // Writes `fn`'s batch into the stopped node's store and starts it again.
  void with_store(const std::function<void(node_store&)>& fn) {
    stop_node();
    {
      auto store = node_store::open(dir, node_store_options{});
      ASSERT_TRUE(store.ok()) << store.error().to_string();
      fn(**store);
    }
    start_node();
  }

  /// The start of a node on a directory whose format key says `format`.
  status start_error_with_format(const std::string& format) {
    {
      auto store = node_store::open(dir, node_store_options{});
      EXPECT_TRUE(store.ok());
      leveldb::WriteBatch wb;
      wb.Put(keys::storage_format, format);
      EXPECT_TRUE((*store)->write_now(wb).ok());
    }
    return start_error();
  }

  status start_error() {
    node_options o;
    o.background_writer = false;
    o.wait_on_stop = false;
    auto started = node::start(sys, ncfg, o);
    return started.ok() ? status{} : started.error();
  }

  // Idempotent batches of producer 7, epoch 0: offsets 0..n-1, one record
  // each, sequences 0..n-1.
  void produce_n(int n) {
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(produce(t0, "", batch(producer_id{7}, producer_epoch{0}, i, {"v" + std::to_string(i)}, false)).error,
                error_code::none);
  }

  std::vector<std::string> snapshot_keys(node_store& store) {
    std::vector<std::string> keys;
    store.scan(keys::producer_snapshot_prefix(t0), [&](const std::string& k, const std::string&) {
      keys.push_back(k);
      return true;
    });
    return keys;
  }
};

TEST_F(PartitionStorageTest, NewDataDirectoryGetsTheCurrentStorageFormat) {
  start_node();
  stop_node();
  auto store = node_store::open(dir, node_store_options{});
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->get(keys::storage_format), std::optional<std::string>{"4"});
}

TEST_F(PartitionStorageTest, DirectoryOfAnOlderCaftxIsRefusedAndLeftAsItWas) {
  {
    auto store = node_store::open(dir, node_store_options{});
    ASSERT_TRUE(store.ok());
    leveldb::WriteBatch wb;
    wb.Put(keys::log_entry(t0, 0), std::string("\x01old boost archive", 18));
    ASSERT_TRUE((*store)->write_now(wb).ok());
  }
  auto st = start_error();
  EXPECT_EQ(st.code(), error_code::kafka_storage_error);
  EXPECT_NE(st.message().find("data directory " + dir + " was written by an older caftx (storage format 1"),
            std::string::npos)
    << st.message();
  auto store = node_store::open(dir, node_store_options{});
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE((*store)->get(keys::storage_format).has_value()); // nothing written
  EXPECT_EQ((*store)->get(keys::log_entry(t0, 0)), std::optional<std::string>(std::string("\x01old boost archive", 18)));
}

// An older format is named with what changed since; any other as it is.
TEST_F(PartitionStorageTest, DirectoryOfAnotherFormatIsRefusedNamingWhatChanged) {
  const std::vector<std::pair<std::string, std::string>> formats{
    {"5", ""},
    {"2", " (transaction state and offsets as node-local keys, not as records of "
          "__transaction_state and __consumer_offsets)"},
    {"3", " (topics as node-local keys and producer ids from per-shard stripes, not as znodes "
          "of the controller's metadata store)"}};
  for (auto& [format, why] : formats) {
    auto st = start_error_with_format(format);
    EXPECT_EQ(st.to_string(), "KAFKA_STORAGE_ERROR: data directory " + dir + " has storage format "
                                + format + why
                                + "; this caftx reads and writes format 4 and does not migrate: "
                                  "use a new data directory");
  }
}

TEST_F(PartitionStorageTest, StoredBatchesAreTheProducedBytesWithBaseOffsetAndLeaderEpochStamped) {
  start_node();
  create_topic("t", 1);
  auto b = batch(producer_id{7}, producer_epoch{0}, 0, {"a", "b"}, false);
  ASSERT_EQ(produce(t0, "", b).error, error_code::none);
  auto f = fetch(t0, 0, iso::read_uncommitted);
  auto expected = v2::encode(b);
  v2::stamp(expected, 0, 0);
  EXPECT_EQ(f.records, expected);
  stop_node();
  auto store = node_store::open(dir, node_store_options{});
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->get(keys::log_entry(t0, 0)), std::optional<std::string>{expected});
}

TEST_F(PartitionStorageTest, CorruptBatchFromAClientIsCorruptMessageAndAppendsNothing) {
  start_node();
  create_topic("t", 1);
  auto bytes = v2::encode(batch(producer_id{7}, producer_epoch{0}, 0, {"a"}, false));
  bytes.back() = static_cast<char>(bytes.back() ^ 0x01);
  auto r = call<produce_response>(leader("t", 0), produce_request{t0, "", bytes});
  EXPECT_EQ(r.error, error_code::corrupt_message);
  EXPECT_EQ(r.message, "RecordBatch v2: CRC-32C mismatch");
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).high_watermark, 0);
  auto short_batch = call<produce_response>(leader("t", 0), produce_request{t0, "", "abc"});
  EXPECT_EQ(short_batch.error, error_code::corrupt_message);
}

TEST_F(PartitionStorageTest, RestartLoadsTheSnapshotAndReadsNoBatchBeforeIt) {
  ncfg.log_snapshot_interval_bytes = 1; // a snapshot with every write
  start_node();
  create_topic("t", 1);
  produce_n(8); // offsets 0..7; the newest snapshot covers [0, 8)
  // Garbage at offset 0: a restart that replayed the log from 0 would fail.
  with_store([&](node_store& store) {
    EXPECT_EQ(snapshot_keys(store), std::vector<std::string>{keys::producer_snapshot(t0, 8)});
    leveldb::WriteBatch wb;
    wb.Put(keys::log_entry(t0, 0), "not a batch");
    ASSERT_TRUE(store.write_now(wb).ok());
  });
  auto f = fetch(t0, 7, iso::read_uncommitted);
  EXPECT_EQ(f.error, error_code::none);
  EXPECT_EQ(f.high_watermark, 8);
  // The duplicate window came back from the snapshot: the retry of
  // sequence 5 (offset 5) gets its original offset and appends nothing.
  auto retry = produce(t0, "", batch(producer_id{7}, producer_epoch{0}, 5, {"v5"}, false));
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.base_offset, 5);
  auto next = produce(t0, "", batch(producer_id{7}, producer_epoch{0}, 8, {"v8"}, false));
  EXPECT_EQ(next.base_offset, 8);
  auto gap = produce(t0, "", batch(producer_id{7}, producer_epoch{0}, 10, {"v10"}, false));
  EXPECT_EQ(gap.error, error_code::out_of_order_sequence_number);
  // The damaged batch itself is never served as data.
  auto damaged = fetch(t0, 0, iso::read_uncommitted);
  EXPECT_EQ(damaged.error, error_code::kafka_storage_error);
  EXPECT_NE(damaged.message.find("stored batch 00000000000000000000"), std::string::npos)
    << damaged.message;
}

TEST_F(PartitionStorageTest, WithoutASnapshotTheRestartReplaysTheWholeLog) {
  start_node(); // the default interval: no snapshot for a few bytes
  create_topic("t", 1);
  produce_n(3);
  with_store([&](node_store& store) { EXPECT_TRUE(snapshot_keys(store).empty()); });
  auto retry = produce(t0, "", batch(producer_id{7}, producer_epoch{0}, 0, {"v0"}, false));
  EXPECT_EQ(retry.base_offset, 0); // from the replayed log
}

TEST_F(PartitionStorageTest, AbortedTransactionsBeforeTheSnapshotStayFilteredAfterARestart) {
  ncfg.log_snapshot_interval_bytes = 1;
  start_node();
  create_topic("t", 1);
  auto p = init("tx");
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"aborted"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, false).error, error_code::none); // ABORT marker at 1
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"kept"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none); // COMMIT marker at 3
  with_store([&](node_store& store) {
    EXPECT_EQ(snapshot_keys(store), std::vector<std::string>{keys::producer_snapshot(t0, 4)});
    EXPECT_TRUE(store.get(keys::aborted_txn(t0, 1)).has_value());
  });
  auto f = fetch(t0, 0, iso::read_committed);
  ASSERT_EQ(f.aborted_transactions.size(), 1u);
  EXPECT_EQ(f.aborted_transactions[0].pid, p.pid);
  EXPECT_EQ(f.aborted_transactions[0].first_offset, 0);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"kept"});
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), (std::vector<std::string>{"aborted", "kept"}));
}

// docs/producer-state.md §First-batches: a partition takes a producer it
// has no state for at any sequence only once it dropped producer state by
// expiry, and remembers that across restarts (the expiry at load finds it
// again; a snapshot keeps it).
TEST_F(PartitionStorageTest, ProducerStateDroppedByExpiryIsRememberedAcrossRestarts) {
  ncfg.producer_id_expiration_ms = 60000;
  start_node();
  create_topic("t", 1);
  auto idem = [&](int64_t pid, int32_t sequence) {
    return produce(t0, "", batch(producer_id{pid}, producer_epoch{0}, sequence, {"x"}, false)).error;
  };
  EXPECT_EQ(idem(8, 3), error_code::out_of_order_sequence_number); // never dropped anything
  produce_n(2); // producer 7: sequences 0, 1
  // Idle beyond producer.id.expiration.ms while the node is down: the load
  // drops producer 7, which comes back with its next sequence.
  stop_node();
  now_ms += 61000;
  start_node();
  EXPECT_EQ(idem(7, 2), error_code::none);
  EXPECT_EQ(idem(8, 3), error_code::none);
  // Written into the snapshot: remembered by a restart that expires nothing.
  EXPECT_EQ(call<txn_response>(leader("t", 0), write_snapshot_request{}).error, error_code::none);
  stop_node();
  start_node();
  EXPECT_EQ(idem(9, 5), error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted),
            (std::vector<std::string>{"v0", "v1", "x", "x", "x"}));
}

TEST_F(PartitionStorageTest, FetchesReadTheSameBytesFromStorageAsFromTheTailCache) {
  ncfg.log_tail_cache_bytes = 0; // every fetch reads LevelDB
  start_node();
  create_topic("t", 1);
  produce_n(5);
  auto from_store = fetch(t0, 2, iso::read_uncommitted);
  stop_node();
  ncfg.log_tail_cache_bytes = 1 << 20; // everything replayed is in the cache
  start_node();
  auto from_cache = fetch(t0, 2, iso::read_uncommitted);
  EXPECT_EQ(from_store.error, error_code::none);
  EXPECT_EQ(from_store.records, from_cache.records);
  auto batches = batches_of(from_store);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].base_offset, 2);
  EXPECT_EQ(batches[2].records.at(0).value, "v4");
  // A fetch of one byte still gets one whole batch; the next starts after it.
  auto one = call<fetch_response>(leader("t", 0), fetch_request{t0, 3, 1, iso::read_uncommitted});
  ASSERT_EQ(batches_of(one).size(), 1u);
  EXPECT_EQ(batches_of(one)[0].base_offset, 3);
}

} // namespace
} // namespace caftx::testing
