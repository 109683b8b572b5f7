// The simulator's crash_env: at crash() a file keeps exactly what its last
// Sync() made durable, on raw files, under LevelDB and under node_store.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/write_batch.h>

#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "tools/sim/crash_env.hpp"
#include "unit_test_support.hpp"

namespace caftx::sim {
namespace {

// The whole content of `fname`; fails the test if it cannot be read.
std::string read_all(leveldb::Env& env, const std::string& fname) {
  std::string out;
  auto s = leveldb::ReadFileToString(&env, fname, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::unique_ptr<leveldb::WritableFile> new_file(leveldb::Env& env, const std::string& fname) {
  leveldb::WritableFile* f = nullptr;
  auto s = env.NewWritableFile(fname, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<leveldb::WritableFile>(f);
}

std::unique_ptr<leveldb::WritableFile> append_to(leveldb::Env& env, const std::string& fname) {
  leveldb::WritableFile* f = nullptr;
  auto s = env.NewAppendableFile(fname, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<leveldb::WritableFile>(f);
}

// -- raw files -------------------------------------------------------------------------

TEST(CrashEnvFile, SyncedPrefixSurvivesAndUnsyncedTailIsLost) {
  crash_env env;
  auto f = new_file(env, "/d/a");
  ASSERT_TRUE(f->Append("abc").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("def").ok());
  ASSERT_TRUE(f->Flush().ok());
  ASSERT_TRUE(f->Close().ok());
  f.reset();
  EXPECT_EQ(read_all(env, "/d/a"), "abcdef"); // visible before the crash
  env.crash();
  EXPECT_EQ(read_all(env, "/d/a"), "abc");
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 3u);
  EXPECT_EQ(env.syncs(), 1u);
  EXPECT_EQ(env.crashes(), 1u);
}

TEST(CrashEnvFile, NewFileNeverSyncedIsGoneEvenAfterClose) {
  crash_env env;
  auto f = new_file(env, "/d/new");
  ASSERT_TRUE(f->Append("xyz").ok());
  ASSERT_TRUE(f->Close().ok());
  f.reset();
  ASSERT_TRUE(env.FileExists("/d/new"));
  env.crash();
  EXPECT_FALSE(env.FileExists("/d/new"));
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 3u);
  EXPECT_EQ(env.syncs(), 0u);
}

TEST(CrashEnvFile, NewFileSyncedEmptyStaysEmpty) {
  crash_env env;
  auto f = new_file(env, "/d/empty");
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("lost").ok());
  f.reset();
  env.crash();
  ASSERT_TRUE(env.FileExists("/d/empty"));
  EXPECT_EQ(read_all(env, "/d/empty"), "");
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 4u);
}

TEST(CrashEnvFile, RenamedFileKeepsItsSyncedContentUnderTheNewName) {
  crash_env env;
  auto f = new_file(env, "/d/tmp");
  ASSERT_TRUE(f->Append("abc").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("de").ok()); // unsynced: the rename does not save it
  ASSERT_TRUE(f->Close().ok());
  f.reset();
  // Replace an existing file, as LevelDB does with CURRENT.
  auto old = new_file(env, "/d/current");
  ASSERT_TRUE(old->Append("older").ok());
  ASSERT_TRUE(old->Sync().ok());
  old.reset();
  ASSERT_TRUE(env.RenameFile("/d/tmp", "/d/current").ok());
  env.crash();
  EXPECT_FALSE(env.FileExists("/d/tmp"));
  EXPECT_EQ(read_all(env, "/d/current"), "abc");
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 2u);
}

TEST(CrashEnvFile, RemovedFileIsForgotten) {
  crash_env env;
  auto f = new_file(env, "/d/gone");
  ASSERT_TRUE(f->Append("abc").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("def").ok());
  f.reset();
  ASSERT_TRUE(env.RemoveFile("/d/gone").ok());
  env.crash();
  EXPECT_FALSE(env.FileExists("/d/gone"));
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 0u);
  // The name reused: a new file, not the removed one's synced state.
  f = new_file(env, "/d/reused");
  ASSERT_TRUE(f->Append("abc").ok());
  ASSERT_TRUE(f->Sync().ok());
  f.reset();
  ASSERT_TRUE(env.RemoveFile("/d/reused").ok());
  f = append_to(env, "/d/reused");
  ASSERT_TRUE(f->Append("jk").ok());
  f.reset();
  env.crash();
  EXPECT_FALSE(env.FileExists("/d/reused"));
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 2u);
}

TEST(CrashEnvFile, TruncatingAFileMakesItNewUntilSynced) {
  crash_env env;
  for (auto name : {"/d/synced", "/d/unsynced"}) {
    auto f = new_file(env, name);
    ASSERT_TRUE(f->Append("durable").ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  env.crash(); // nothing lost; both files are durable from here on
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 0u);
  auto a = new_file(env, "/d/synced");
  ASSERT_TRUE(a->Append("xy").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(a->Append("z").ok());
  auto b = new_file(env, "/d/unsynced");
  ASSERT_TRUE(b->Append("xy").ok());
  a.reset();
  b.reset();
  env.crash();
  EXPECT_EQ(read_all(env, "/d/synced"), "xy");
  EXPECT_FALSE(env.FileExists("/d/unsynced"));
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 1u + 2u);
  EXPECT_EQ(env.crashes(), 2u);
}

TEST(CrashEnvFile, AppendingKeepsDurableContentAndLosesTheUnsyncedAppends) {
  crash_env env;
  {
    auto f = new_file(env, "/d/log");
    ASSERT_TRUE(f->Append("abc").ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append("de").ok());
  }
  {
    // Reopening the tracked file does not make "de" durable.
    auto f = append_to(env, "/d/log");
    ASSERT_TRUE(f->Append("f").ok());
  }
  EXPECT_EQ(read_all(env, "/d/log"), "abcdef");
  env.crash();
  EXPECT_EQ(read_all(env, "/d/log"), "abc");
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 3u);
  {
    // Untracked after the crash, so "abc" is durable; a missing file is new.
    auto f = append_to(env, "/d/log");
    ASSERT_TRUE(f->Append("ghi").ok());
    auto g = append_to(env, "/d/fresh");
    ASSERT_TRUE(g->Append("jk").ok());
  }
  env.crash();
  EXPECT_EQ(read_all(env, "/d/log"), "abc");
  EXPECT_FALSE(env.FileExists("/d/fresh"));
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 3u + 2u);
}

TEST(CrashEnvFile, SecondCrashLosesNothingMore) {
  crash_env env;
  auto f = new_file(env, "/d/a");
  ASSERT_TRUE(f->Append("abc").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("def").ok());
  f.reset();
  env.crash();
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 3u);
  env.crash();
  EXPECT_EQ(read_all(env, "/d/a"), "abc");
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 0u);
  EXPECT_EQ(env.crashes(), 2u);
}

// -- LevelDB ---------------------------------------------------------------------------

std::unique_ptr<leveldb::DB> open_db(leveldb::Env& env, const std::string& name) {
  leveldb::Options o;
  o.create_if_missing = true;
  o.paranoid_checks = true;
  o.env = &env;
  leveldb::DB* db = nullptr;
  auto s = leveldb::DB::Open(o, name, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<leveldb::DB>(db);
}

leveldb::WriteOptions synced(bool sync) {
  leveldb::WriteOptions wo;
  wo.sync = sync;
  return wo;
}

std::string key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "key%06d", i);
  return buf;
}

TEST(CrashEnvLevelDB, SyncedPutSurvivesAndUnsyncedPutIsLost) {
  crash_env env;
  {
    auto db = open_db(env, "/db");
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->Put(synced(true), "k1", "v1").ok());
    ASSERT_TRUE(db->Put(synced(false), "k2", "v2").ok());
  } // deleting the DB does not sync its log
  env.crash();
  // The log record of k2: 7-byte header + 12-byte batch header + tag,
  // length-prefixed key and value (1 + 3 + 3).
  EXPECT_EQ(env.bytes_lost_at_last_crash(), 7u + 12u + 7u);
  auto db = open_db(env, "/db");
  ASSERT_NE(db, nullptr);
  std::string v;
  ASSERT_TRUE(db->Get({}, "k1", &v).ok());
  EXPECT_EQ(v, "v1");
  EXPECT_TRUE(db->Get({}, "k2", &v).IsNotFound());
}

TEST(CrashEnvLevelDB, ThousandSyncedPutsSurviveThousandUnsyncedAreLost) {
  crash_env env;
  {
    auto db = open_db(env, "/db");
    ASSERT_NE(db, nullptr);
    for (int i = 0; i < 2000; ++i)
      ASSERT_TRUE(db->Put(synced(i < 1000), key(i), "value-" + std::to_string(i)).ok());
  }
  env.crash();
  EXPECT_GT(env.bytes_lost_at_last_crash(), 0u);
  auto db = open_db(env, "/db");
  ASSERT_NE(db, nullptr);
  std::unique_ptr<leveldb::Iterator> it{db->NewIterator({})};
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++n) {
    ASSERT_EQ(it->key().ToString(), key(n));
    ASSERT_EQ(it->value().ToString(), "value-" + std::to_string(n));
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  EXPECT_EQ(n, 1000);
}

TEST(CrashEnvLevelDB, TablesWrittenInTheBackgroundSurvive) {
  crash_env env;
  leveldb::Options o;
  o.create_if_missing = true;
  o.paranoid_checks = true;
  o.write_buffer_size = 64 * 1024; // several memtable flushes below
  o.env = &env;
  const std::string value(100, 'v');
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(o, "/db", &raw).ok());
    std::unique_ptr<leveldb::DB> db{raw};
    // Every write synced: a synced write syncs the current log only, so an
    // unsynced write before a log switch may be lost even when a later
    // synced one is not (LevelDB 1.23).
    for (int i = 0; i < 5000; ++i)
      ASSERT_TRUE(db->Put(synced(true), key(i), value).ok());
    db->CompactRange(nullptr, nullptr); // flushes the memtable and waits
    for (int i = 5000; i < 5010; ++i)
      ASSERT_TRUE(db->Put(synced(false), key(i), value).ok());
  }
  std::vector<std::string> children;
  ASSERT_TRUE(env.GetChildren("/db", &children).ok());
  EXPECT_TRUE(std::any_of(children.begin(), children.end(), [](const std::string& f) {
    return f.size() > 4 && f.compare(f.size() - 4, 4, ".ldb") == 0;
  })) << "no table was written";
  env.crash();
  EXPECT_GT(env.bytes_lost_at_last_crash(), 0u);
  leveldb::DB* raw = nullptr;
  ASSERT_TRUE(leveldb::DB::Open(o, "/db", &raw).ok());
  std::unique_ptr<leveldb::DB> db{raw};
  std::unique_ptr<leveldb::Iterator> it{db->NewIterator({})};
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++n)
    ASSERT_EQ(it->key().ToString(), key(n));
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  EXPECT_EQ(n, 5000);
}

TEST(CrashEnvLevelDB, CrashWhileADbIsOpenIsRefused) {
  crash_env env;
  auto db = open_db(env, "/db");
  ASSERT_NE(db, nullptr);
  EXPECT_THROW(env.crash(), std::logic_error);
  EXPECT_EQ(env.crashes(), 0u);
  db.reset();
  env.crash();
  EXPECT_EQ(env.crashes(), 1u);
}

// -- node_store ------------------------------------------------------------------------

record_batch one_batch() {
  record_batch b;
  b.base_offset = 0;
  b.pid = producer_id{7};
  b.epoch = producer_epoch{0};
  b.base_sequence = 0;
  b.records.push_back(record{"k", "acknowledged", {}, 1700000000000});
  return b;
}

// Appends one_batch() at offset 0 of `tp` through a node_store on `env`
// and returns once the store has acknowledged it.
void append_acknowledged(crash_env& env, bool sync, const topic_partition& tp) {
  node_store_options opts;
  opts.env = &env;
  opts.sync = sync;
  auto store = node_store::open("/node", opts);
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  leveldb::WriteBatch wb;
  wb.Put(keys::log_entry(tp, 0), v2::encode(one_batch()));
  std::promise<status> done;
  auto acked = done.get_future();
  (*store)->write(std::move(wb), [&](const status& st) { done.set_value(st); });
  auto st = acked.get();
  ASSERT_TRUE(st.ok()) << st.to_string();
}

std::optional<std::string> read_entry(crash_env& env, const topic_partition& tp) {
  node_store_options opts;
  opts.env = &env;
  auto store = node_store::open("/node", opts);
  EXPECT_TRUE(store.ok()) << store.error().to_string();
  return store.ok() ? (*store)->get(keys::log_entry(tp, 0)) : std::nullopt;
}

TEST(CrashEnvNodeStore, AcknowledgedRecordBatchSurvivesCrash) {
  crash_env env;
  topic_partition tp{"orders", 0};
  append_acknowledged(env, true, tp);
  env.crash();
  auto raw = read_entry(env, tp);
  ASSERT_TRUE(raw.has_value());
  auto batch = v2::decode(*raw);
  ASSERT_TRUE(batch.ok()) << batch.error().to_string();
  EXPECT_EQ(batch->base_offset, 0);
  EXPECT_EQ(batch->pid, producer_id{7});
  ASSERT_EQ(batch->records.size(), 1u);
  EXPECT_EQ(batch->records[0].key, "k");
  EXPECT_EQ(batch->records[0].value, "acknowledged");
}

TEST(CrashEnvNodeStore, WithoutSyncAnAcknowledgedBatchIsLostAtCrash) {
  crash_env env;
  topic_partition tp{"orders", 0};
  append_acknowledged(env, false, tp);
  env.crash();
  EXPECT_GT(env.bytes_lost_at_last_crash(), 0u);
  EXPECT_EQ(read_entry(env, tp), std::nullopt);
}

} // namespace
} // namespace caftx::sim
