// Storage faults of a node on the deterministic scheduler: a full disk
// answers KAFKA_STORAGE_ERROR at once and the node recovers by itself once
// writes succeed again, losing nothing acknowledged; flipped bytes in a
// table file take down the component that reads them, for good, with
// KAFKA_STORAGE_ERROR naming it, while the rest of the node keeps serving.
#include "fixture.hpp"

#include "../disk_full_env.hpp"

#include <fstream>
#include <random>
#include <sstream>

#include <leveldb/write_batch.h>

#include "runtime/partitioner.hpp"
#include "storage/node_store.hpp"

namespace caftx::testing {
namespace {

using iso = isolation_level;
namespace fs = std::filesystem;
const topic_partition t0{"t", 0};
const topic_partition t1{"t", 1};

class StorageFaultsTest : public node_fixture {
protected:
  disk_full_env disk; // outlives the node's store

  caf::actor group_coordinator(const std::string& group) {
    return call<find_coordinator_response>(broker(), find_coordinator_request{0, group}).coordinator;
  }

  void let_time_pass(int64_t ms) {
    for (int64_t passed = 0; passed < ms; passed += 100) {
      now_ms += 100;
      sched.advance_time(std::chrono::milliseconds(100));
      sched.run();
    }
  }

  produce_response produce_plain(const topic_partition& tp, const init_producer_id_response& id,
                                 int32_t sequence, std::vector<std::string> values) {
    return produce(tp, "", batch(id.pid, id.epoch, sequence, std::move(values), false));
  }
};

// The README's embedding: node::start(...).value() on a directory another
// node holds throws the error instead of handing out an empty node.
TEST_F(StorageFaultsTest, ValueOfAFailedStartThrowsTheStorageError) {
  start_node();
  node_options o;
  o.background_writer = false;
  try {
    auto second = node::start(sys, ncfg, o).value();
    FAIL() << "a second node started on " << dir;
  } catch (const status_error& e) {
    EXPECT_EQ(e.code(), error_code::kafka_storage_error);
    EXPECT_EQ(std::string(e.what()).rfind("KAFKA_STORAGE_ERROR: cannot open data directory " + dir, 0),
              0u)
      << e.what();
  }
}

TEST_F(StorageFaultsTest, FullDiskAnswersStorageErrorAtOnceAndTheNodeRecoversByItself) {
  env = &disk;
  start_node();
  create_topic("t", 2);
  auto id = call<init_producer_id_response>(broker(), init_producer_id_request{});
  ASSERT_EQ(id.error, error_code::none);
  ASSERT_EQ(produce_plain(t0, id, 0, {"a"}).error, error_code::none);
  ASSERT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {1}}).error,
            error_code::none);

  disk.full = true;
  ::testing::internal::CaptureStderr();
  auto failed = produce_plain(t0, id, 1, {"b"});
  auto logged = ::testing::internal::GetCapturedStderr();
  // Answered (not left to time out), naming the OS error; one stderr line
  // names the directory and the OS error.
  EXPECT_EQ(failed.error, error_code::kafka_storage_error);
  EXPECT_NE(failed.message.find("No space left on device"), std::string::npos) << failed.message;
  EXPECT_NE(logged.find("caftx: write to " + dir + ": IO error: " + dir + "/"), std::string::npos)
    << logged;
  EXPECT_NE(logged.find(": No space left on device; writes are answered KAFKA_STORAGE_ERROR"),
            std::string::npos)
    << logged;
  // While the disk is full: t-0's leader is down and its supervisor answers
  // for it; t-1 (which wrote nothing) serves reads; a commit fails at once.
  EXPECT_EQ(produce_plain(t0, id, 1, {"b"}).error, error_code::kafka_storage_error);
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).error, error_code::kafka_storage_error);
  EXPECT_EQ(fetch(t1, 0, iso::read_uncommitted).error, error_code::none);
  EXPECT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {2}}).error,
            error_code::kafka_storage_error);
  let_time_pass(3000);
  EXPECT_EQ(produce_plain(t0, id, 1, {"b"}).error, error_code::kafka_storage_error);
  EXPECT_TRUE(n->failed_components().empty()) << n->failed_components().front();

  // Space freed: the store reopens, the components come back from disk.
  disk.full = false;
  let_time_pass(5000);
  EXPECT_EQ(produce_plain(t0, id, 1, {"b"}).error, error_code::none);
  EXPECT_EQ(produce_plain(t1, id, 0, {"c"}).error, error_code::none);
  EXPECT_EQ(call<txn_response>(group_coordinator("g"), offset_commit_request{"g", {t0}, {2}}).error,
            error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(n->failed_components().empty());

  // Everything acknowledged is on disk.
  stop_node();
  start_node();
  EXPECT_EQ(visible_values(t0, iso::read_uncommitted), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(visible_values(t1, iso::read_uncommitted), std::vector<std::string>{"c"});
  EXPECT_EQ(call<offset_fetch_response>(group_coordinator("g"), offset_fetch_request{"g", {t0}})
              .offsets,
            std::vector<int64_t>{2});
}

TEST_F(StorageFaultsTest, FullDiskDuringATransactionIsRetriableAndTheTransactionCommitsAfter) {
  env = &disk;
  start_node();
  create_topic("t", 1);
  auto p = init("tx");
  ASSERT_EQ(p.error, error_code::none);
  disk.full = true;
  auto r = add("tx", p, {t0});
  EXPECT_EQ(r.error, error_code::kafka_storage_error);
  EXPECT_TRUE(is_retriable(r.error));
  EXPECT_EQ(describe("tx").error, error_code::kafka_storage_error); // the shard is down
  disk.full = false;
  let_time_pass(5000);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(produce(t0, "tx", batch(p.pid, p.epoch, 0, {"a"}, true)).error, error_code::none);
  ASSERT_EQ(end("tx", p, true).error, error_code::none);
  EXPECT_EQ(visible_values(t0, iso::read_committed), std::vector<std::string>{"a"});
}

// -- flipped bytes in table files ----------------------------------------------------

std::string read_bytes(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Flips one bit inside the first of `markers` found in a table file of
// `dir` (LevelDB's compression may have turned a few into back-references);
// false if none is found.
bool flip_bit_in_table_at(const std::string& dir, const std::vector<std::string>& markers) {
  for (auto& m : markers)
    for (auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".ldb")
        continue;
      auto bytes = read_bytes(e.path());
      auto at = bytes.find(m);
      if (at == std::string::npos)
        continue;
      auto pos = at + m.size() / 2;
      std::fstream f{e.path(), std::ios::in | std::ios::out | std::ios::binary};
      f.seekp(static_cast<std::streamoff>(pos));
      f.put(static_cast<char>(bytes[pos] ^ 0x04));
      return true;
    }
  return false;
}

constexpr size_t marker_size = 40;

// 40 letters and digits from a fixed seed: bytes that, compressed or not,
// a table file holds literally and nothing else holds.
std::string marker(std::mt19937_64& rng) {
  static const std::string alnum =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string m;
  for (size_t i = 0; i < marker_size; ++i)
    m.push_back(alnum[rng() % alnum.size()]);
  return m;
}

// The markers starting `names` middle-out from index `middle`.
std::vector<std::string> markers_from(const std::vector<std::string>& names, size_t middle) {
  std::vector<std::string> out;
  for (size_t i = middle; i < middle + 20 && i < names.size(); ++i)
    out.push_back(names[i].substr(0, marker_size));
  return out;
}

class TableCorruptionTest : public StorageFaultsTest {
protected:
  std::mt19937_64 rng{7};

  // Restarts the node twice, so that what it wrote moved from LevelDB's
  // log into table files (at each open), then stops it.
  void move_into_table_files() {
    stop_node();
    start_node();
    stop_node();
  }
};

TEST_F(TableCorruptionTest, FlippedBitInAPartitionsLogTakesThatPartitionDownForGood) {
  start_node();
  create_topic("t", 2);
  auto id = call<init_producer_id_response>(broker(), init_producer_id_request{});
  std::vector<std::string> values;
  for (int i = 0; i < 200; ++i) // several table blocks of t-0's log alone
    values.push_back(marker(rng) + std::string(200, 'v'));
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(produce_plain(t0, id, i, {values[i]}).error, error_code::none);
  ASSERT_EQ(produce_plain(t1, id, 0, {"one"}).error, error_code::none);
  move_into_table_files();
  ASSERT_TRUE(flip_bit_in_table_at(dir, markers_from(values, 100)));

  start_node(); // the node starts; t-0's leader finds the damage
  auto failed = n->failed_components();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].rfind("partition t-0: KAFKA_STORAGE_ERROR: reading keys log/t\\x000000000000/", 0), 0u)
    << failed[0];
  // Where the scan stopped (LevelDB names no file for a damaged block).
  EXPECT_NE(failed[0].find("/ after key log/t\\x000000000000/"), std::string::npos) << failed[0];
  EXPECT_NE(failed[0].find(": Corruption: block checksum mismatch"), std::string::npos) << failed[0];
  auto f = fetch(t0, 0, iso::read_uncommitted);
  EXPECT_EQ(f.error, error_code::kafka_storage_error);
  const std::string prefix = "partition t-0: KAFKA_STORAGE_ERROR: ";
  EXPECT_EQ(f.message, "partition t-0: " + failed[0].substr(prefix.size()));
  EXPECT_EQ(produce_plain(t0, id, 200, {"x"}).error, error_code::kafka_storage_error);
  // No restart loop: still down, still the same single entry, later.
  let_time_pass(30000);
  EXPECT_EQ(fetch(t0, 0, iso::read_uncommitted).error, error_code::kafka_storage_error);
  EXPECT_EQ(n->failed_components().size(), 1u);
  // The rest of the node serves.
  EXPECT_EQ(visible_values(t1, iso::read_uncommitted), std::vector<std::string>{"one"});
  EXPECT_EQ(produce_plain(t1, id, 1, {"two"}).error, error_code::none);
  auto p = init("tx");
  EXPECT_EQ(p.error, error_code::none);
}

TEST_F(TableCorruptionTest, FlippedBitInAGroupsOffsetsPartitionTakesItDownAndItsCoordinatorAnswersItsError) {
  start_node();
  create_topic("t", 1);
  // Many groups of one __consumer_offsets partition, named by markers.
  auto target = partition_for("g", ncfg.offsets_topic_num_partitions);
  std::vector<std::string> groups;
  while (groups.size() < 150) {
    auto g = marker(rng) + std::string(100, 'g');
    if (partition_for(g, ncfg.offsets_topic_num_partitions) == target)
      groups.push_back(g);
  }
  for (auto& g : groups)
    ASSERT_EQ(call<txn_response>(group_coordinator(g), offset_commit_request{g, {t0}, {5}}).error,
              error_code::none);
  move_into_table_files();
  ASSERT_TRUE(flip_bit_in_table_at(dir, markers_from(groups, 75)));

  start_node();
  auto failed = n->failed_components();
  ASSERT_EQ(failed.size(), 1u);
  // The offsets are records of the group's __consumer_offsets partition:
  // that partition is down, and its group coordinator answers its error.
  auto name = "partition __consumer_offsets-" + std::to_string(target);
  EXPECT_EQ(failed[0].rfind(name + ": KAFKA_STORAGE_ERROR: reading keys log/__consumer_offsets", 0),
            0u)
    << failed[0];
  EXPECT_NE(failed[0].find("Corruption"), std::string::npos) << failed[0];
  auto r = call<offset_fetch_response>(group_coordinator(groups[0]),
                                       offset_fetch_request{groups[0], {t0}});
  EXPECT_EQ(r.error, error_code::kafka_storage_error);
  EXPECT_EQ(call<txn_response>(group_coordinator(groups[0]),
                               offset_commit_request{groups[0], {t0}, {6}})
              .error,
            error_code::kafka_storage_error);
  let_time_pass(30000);
  EXPECT_EQ(n->failed_components().size(), 1u);
  EXPECT_EQ(call<offset_fetch_response>(group_coordinator(groups[0]),
                                        offset_fetch_request{groups[0], {t0}})
              .error,
            error_code::kafka_storage_error);
  // Another group coordinator and the partitions serve.
  std::string other = "other";
  while (partition_for(other, ncfg.offsets_topic_num_partitions) == target)
    other += "x";
  EXPECT_EQ(call<txn_response>(group_coordinator(other), offset_commit_request{other, {t0}, {1}})
              .error,
            error_code::none);
  auto id = call<init_producer_id_response>(broker(), init_producer_id_request{});
  EXPECT_EQ(produce_plain(t0, id, 0, {"a"}).error, error_code::none);
}

TEST_F(TableCorruptionTest, FlippedBitInACoordinatorShardsCardsTakesThatShardDown) {
  start_node();
  create_topic("t", 1);
  auto target = partition_for("tx", ncfg.transaction_state_log_num_partitions);
  std::vector<std::string> ids;
  while (ids.size() < 150) {
    auto tid = marker(rng) + std::string(100, 't');
    if (partition_for(tid, ncfg.transaction_state_log_num_partitions) == target)
      ids.push_back(tid);
  }
  for (auto& tid : ids)
    ASSERT_EQ(init(tid).error, error_code::none);
  move_into_table_files();
  ASSERT_TRUE(flip_bit_in_table_at(dir, markers_from(ids, 75)));

  start_node();
  auto failed = n->failed_components();
  ASSERT_EQ(failed.size(), 1u);
  // The shard's partition is down; the shard answers its error.
  auto name = "partition __transaction_state-" + std::to_string(target);
  EXPECT_EQ(failed[0].rfind(name + ": KAFKA_STORAGE_ERROR: reading keys log/__transaction_state", 0),
            0u)
    << failed[0];
  EXPECT_NE(failed[0].find("Corruption"), std::string::npos) << failed[0];
  EXPECT_EQ(init(ids[0]).error, error_code::kafka_storage_error);
  EXPECT_EQ(describe(ids[0]).error, error_code::kafka_storage_error);
  let_time_pass(30000);
  EXPECT_EQ(n->failed_components().size(), 1u);
  // Another shard serves.
  std::string other = "other";
  while (partition_for(other, ncfg.transaction_state_log_num_partitions) == target)
    other += "x";
  EXPECT_EQ(init(other).error, error_code::none);
}

// The broker's topic records say which partition leaders exist: the node
// does not start without them (it cannot tell which topics are missing),
// and says why instead.
TEST_F(TableCorruptionTest, FlippedBitInTheTopicZnodesRefusesTheNodeStartNamingTheKeys) {
  start_node();
  std::vector<std::string> topics;
  for (int i = 0; i < 100; ++i) {
    topics.push_back(marker(rng) + std::string(150, 'x'));
    create_topic(topics.back(), 1);
  }
  move_into_table_files();
  // The first topic znode key of a table block holds "znode/topics/"
  // literally (LevelDB shares key prefixes only within a block): a bit of
  // it flipped damages that block.
  ASSERT_TRUE(flip_bit_in_table_at(dir, {"znode/topics/"}));
  node_options o;
  o.wait_on_stop = false;
  o.background_writer = false;
  auto started = node::start(sys, ncfg, o);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code(), error_code::kafka_storage_error);
  // The storage format key, read first, may share the damaged block.
  EXPECT_EQ(started.error().message().rfind("data directory " + dir + ": reading key", 0), 0u)
    << started.error().message();
  EXPECT_NE(started.error().message().find(": Corruption: block checksum mismatch"), std::string::npos)
    << started.error().message();
}

TEST_F(TableCorruptionTest, UndecodableTopicZnodeRefusesTheNodeStartNamingTheKey) {
  start_node();
  create_topic("t", 1);
  stop_node();
  {
    node_store_options so;
    so.background_writer = false;
    auto store = node_store::open(dir, so);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    leveldb::WriteBatch wb;
    wb.Put("znode/topics/t", std::string("\x01\x02", 2));
    ASSERT_TRUE(store.value()->write_now(wb).ok());
  }
  node_options o;
  o.background_writer = false;
  auto started = node::start(sys, ncfg, o);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(started.error().message(),
            "data directory " + dir + ": znode value of znode/topics/t does not decode (2 bytes)");
}

} // namespace
} // namespace caftx::testing
