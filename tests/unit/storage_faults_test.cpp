// Storage faults on a real LevelDB in a temp dir: a data directory that lost
// its CURRENT file or its identity file (meta.properties) is refused, with
// nothing lost or overwritten; flipped bytes in table files are reported as
// KAFKA_STORAGE_ERROR, never read as data.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "../disk_full_env.hpp"
#include "storage/data_dir.hpp"
#include "storage/node_store.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << bytes;
}

// Every file of `dir` with its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (auto& e : fs::directory_iterator(dir))
    files[e.path().filename().string()] = read_file(e.path());
  return files;
}

std::vector<std::string> files_ending(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext)
      out.push_back(e.path().string());
  return out;
}

constexpr int keys_written = 200;

std::string key_of(int i) {
  return "log/" + std::to_string(1000 + i);
}

std::string value_of(int i) {
  return std::string(100, static_cast<char>('a' + i % 26)) + std::to_string(i);
}

class StorageFaults : public ::testing::Test {
protected:
  void SetUp() override { dir_ = fresh_test_dir("faults"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes keys_written keys, then closes and reopens the store twice so
  // that LevelDB moved them from its log into a table file (.ldb).
  void write_data_into_table_files() {
    {
      auto store = node_store::open(dir_);
      ASSERT_TRUE(store.ok()) << store.error().to_string();
      for (int i = 0; i < keys_written; ++i) {
        leveldb::WriteBatch wb;
        wb.Put(key_of(i), value_of(i));
        ASSERT_TRUE(store.value()->write_now(wb).ok());
      }
    }
    for (int round = 0; round < 2; ++round) {
      auto store = node_store::open(dir_);
      ASSERT_TRUE(store.ok()) << store.error().to_string();
    }
    ASSERT_FALSE(files_ending(dir_, ".ldb").empty()) << "no table file was written";
  }

  void expect_all_data_reads_back() {
    auto store = node_store::open(dir_);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    for (int i = 0; i < keys_written; ++i)
      EXPECT_EQ(store.value()->get(key_of(i)), std::optional<std::string>{value_of(i)}) << i;
  }

  std::string refused_without(const std::string& file);

  // A store on `env` that retries its reopen at once.
  std::unique_ptr<node_store> open_on(leveldb::Env& env) {
    node_store_options opts;
    opts.env = &env;
    opts.reopen_backoff_ms = 0;
    auto opened = node_store::open(dir_, opts);
    EXPECT_TRUE(opened.ok()) << opened.error().to_string();
    return opened.ok() ? std::move(opened).value() : nullptr;
  }

  std::string dir_;
};

TEST_F(StorageFaults, NewDirectoryGetsItsIdentityFile) {
  {
    auto store = node_store::open(dir_);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
  }
  auto text = read_file(fs::path(dir_) / "meta.properties");
  EXPECT_NE(text.find("\nversion=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nnode.id=0\n"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "meta.properties.tmp"));
  auto again = node_store::open(dir_);
  EXPECT_TRUE(again.ok()) << again.error().to_string();
}

// Removes `file` from a directory whose data is in table files, opens it,
// checks the open is refused with KAFKA_STORAGE_ERROR and changed nothing,
// restores the file and checks everything reads back. Returns the message.
std::string StorageFaults::refused_without(const std::string& file) {
  write_data_into_table_files();
  auto saved = read_file(fs::path(dir_) / file);
  fs::remove(fs::path(dir_) / file);
  auto before = snapshot(dir_);
  auto opened = node_store::open(dir_);
  EXPECT_FALSE(opened.ok()) << "opened without " << file;
  if (opened.ok())
    return {};
  EXPECT_EQ(opened.error().code(), error_code::kafka_storage_error);
  EXPECT_EQ(snapshot(dir_), before) << "the refused open changed the directory";
  write_file(fs::path(dir_) / file, saved);
  expect_all_data_reads_back();
  return opened.error().message();
}

TEST_F(StorageFaults, MissingCurrentIsRefusedAndNothingIsLostOrOverwritten) {
  auto msg = refused_without("CURRENT");
  EXPECT_NE(msg.find("data directory " + dir_), std::string::npos) << msg;
  EXPECT_NE(msg.find("CURRENT file is missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".ldb"), std::string::npos) << msg;
}

TEST_F(StorageFaults, MissingIdentityFileIsRefusedAndNothingIsLostOrOverwritten) {
  auto msg = refused_without("meta.properties");
  EXPECT_NE(msg.find("data directory " + dir_ + " holds database files ("), std::string::npos)
    << msg;
  EXPECT_NE(msg.find(") but no meta.properties"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CURRENT"), std::string::npos) << msg;
}

TEST_F(StorageFaults, StrayTableFileWithoutIdentityIsRefusedOtherFilesAreLeftAlone) {
  fs::create_directories(dir_);
  write_file(fs::path(dir_) / "000007.ldb", "table");
  auto opened = node_store::open(dir_);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), error_code::kafka_storage_error);
  EXPECT_NE(opened.error().message().find("holds database files (000007.ldb) but no meta.properties"),
            std::string::npos)
    << opened.error().message();
  EXPECT_EQ(snapshot(dir_), (std::map<std::string, std::string>{{"000007.ldb", "table"}}));
  // An application's own file is no database: the database is created beside it.
  fs::remove(fs::path(dir_) / "000007.ldb");
  write_file(fs::path(dir_) / "app.lock", "");
  {
    auto store = node_store::open(dir_);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
  }
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "meta.properties"));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "app.lock"));
}

TEST_F(StorageFaults, MalformedOrUnknownIdentityNamesFileAndLine) {
  write_data_into_table_files();
  auto file = (fs::path(dir_) / "meta.properties").string();
  struct bad_case {
    std::string text;
    std::string error;
  };
  std::vector<bad_case> cases = {
    {"#x\nversion=1\nnode.id 0\n", file + ":3: expected key=value, found 'node.id 0'"},
    {"version=2\nnode.id=0\n", file + ":1: unknown version '2' (this release reads version 1)"},
    {"version=1\nnode.id=-4\n", file + ":2: node.id '-4' is not an integer in [0, 2147483647]"},
    {"version=1\n=0\n", file + ":2: empty key in '=0'"},
    {"node.id=0\n", file + ": no version= line"},
    {"version=1\nnode.id=7\n",
     file + ": node.id=7 does not match this node's id 0 (if the directory is this node's, "
            "moved, correct node.id there; a new node needs an empty directory)"},
  };
  for (auto& c : cases) {
    write_file(file, c.text);
    auto opened = node_store::open(dir_);
    ASSERT_FALSE(opened.ok()) << c.text;
    EXPECT_EQ(opened.error().code(), error_code::kafka_storage_error);
    EXPECT_EQ(opened.error().message(), c.error);
  }
  write_file(file, "#c\r\nversion=1\r\nnode.id=0\r\ncluster.id=abc\r\ndirectory.id=x\r\n");
  expect_all_data_reads_back();
}

// A node keeps its node.id in meta.properties (Kafka's broker.id there):
// another node's directory is refused. A directory saying node.id=0 (as
// every node wrote before the id was kept) is taken over once by the
// first node that opens it, its other keys kept.
TEST_F(StorageFaults, DataDirectoryKeepsItsNodeIdAndOldZeroIdsAreTakenOverOnce) {
  auto file = (fs::path(dir_) / "meta.properties").string();
  {
    node_store_options so;
    so.node_id = 2;
    auto store = node_store::open(dir_, so);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
  }
  auto text = snapshot(dir_)["meta.properties"];
  EXPECT_NE(text.find("\nnode.id=2\n"), std::string::npos) << text;
  node_store_options other;
  other.node_id = 3;
  auto refused = node_store::open(dir_, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(),
            file + ": node.id=2 does not match this node's id 3 (if the directory is this "
                   "node's, moved, correct node.id there; a new node needs an empty directory)");
  write_file(file, "version=1\nnode.id=0\ncluster.id=abc\n");
  {
    auto store = node_store::open(dir_, other);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
  }
  text = snapshot(dir_)["meta.properties"];
  EXPECT_NE(text.find("\nnode.id=3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ncluster.id=abc\n"), std::string::npos) << text;
  node_store_options first;
  first.node_id = 2;
  EXPECT_FALSE(node_store::open(dir_, first).ok()) << "taken over twice";
}

// Twelve single-bit flips spread over a table file: each one is either
// refused at open or reported by the read that meets it as
// storage_read_error; never read as other data, nor as fewer keys.
TEST_F(StorageFaults, FlippedBitsInATableFileAreReportedNeverReadAsData) {
  write_data_into_table_files();
  auto tables = files_ending(dir_, ".ldb");
  ASSERT_EQ(tables.size(), 1u);
  auto pristine = snapshot(dir_);
  auto table = fs::path(tables[0]).filename().string();
  auto size = pristine[table].size();
  int reported = 0;
  for (int i = 0; i < 12; ++i) {
    auto pos = size * (2 * i + 1) / 24;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (auto& [name, bytes] : pristine)
      write_file(fs::path(dir_) / name, bytes);
    auto flipped = pristine[table];
    flipped[pos] = static_cast<char>(flipped[pos] ^ 0x10);
    write_file(fs::path(dir_) / table, flipped);
    auto store = node_store::open(dir_);
    if (!store.ok()) {
      EXPECT_EQ(store.error().code(), error_code::kafka_storage_error);
      ++reported;
      continue;
    }
    try {
      int seen = 0;
      store.value()->scan("log/", [&](const std::string& k, const std::string& v) {
        EXPECT_EQ(k, key_of(seen)) << "flip at " << pos;
        EXPECT_EQ(v, value_of(seen)) << "flip at " << pos;
        ++seen;
        return true;
      });
      EXPECT_EQ(seen, keys_written) << "flip at " << pos;
    } catch (const storage_read_error& e) {
      std::string what = e.what();
      // LevelDB names no file for a damaged block: the scan names where it
      // stopped.
      EXPECT_EQ(what.rfind("KAFKA_STORAGE_ERROR: reading keys log/", 0), 0u) << what;
      EXPECT_NE(what.find(": Corruption: "), std::string::npos) << what;
      ++reported;
    }
  }
  EXPECT_GE(reported, 10) << "flips that were not noticed are only allowed where no data is";
}

// A full disk on the background writer: the write is answered
// KAFKA_STORAGE_ERROR with the OS error, later writes too (LevelDB keeps
// refusing), and once the disk accepts writes the next write reopens the
// database, while a reader thread keeps reading; everything acknowledged
// reads back.
TEST_F(StorageFaults, FullDiskFailsWritesUntilItHasSpaceThenTheStoreReopensUnderReaders) {
  testing::disk_full_env disk;
  auto opened = open_on(disk);
  ASSERT_TRUE(opened);
  auto& store = *opened;
  auto write = [&](const std::string& k, const std::string& v) {
    std::promise<status> done;
    auto written = done.get_future();
    leveldb::WriteBatch wb;
    wb.Put(k, v);
    store.write(std::move(wb), [&](const status& st) { done.set_value(st); });
    return written.get();
  };
  ASSERT_TRUE(write("k0", "v0").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop) {
      try {
        EXPECT_EQ(store.get("k0"), std::optional<std::string>{"v0"});
      } catch (const storage_read_error& e) {
        ADD_FAILURE() << e.what();
      }
      ++reads;
    }
  });
  disk.full = true;
  auto failed = write("k1", "v1");
  EXPECT_EQ(failed.code(), error_code::kafka_storage_error);
  EXPECT_NE(failed.message().find("No space left on device"), std::string::npos)
    << failed.message();
  EXPECT_TRUE(store.write_failed());
  EXPECT_EQ(write("k1", "v1").code(), error_code::kafka_storage_error); // reopen fails too
  disk.full = false;
  for (int i = 2; i < 10; ++i) // the first reopens
    EXPECT_TRUE(write("k" + std::to_string(i), "v").ok()) << i;
  EXPECT_FALSE(store.write_failed());
  while (reads < 100)
    std::this_thread::yield();
  stop = true;
  reader.join();
  for (int i = 2; i < 10; ++i)
    EXPECT_EQ(store.get("k" + std::to_string(i)), std::optional<std::string>{"v"});
}

TEST_F(StorageFaults, ACorruptionIsNotRetriedLikeAFullDiskAndWritesStayRefused) {
  testing::disk_full_env disk;
  auto opened = open_on(disk);
  ASSERT_TRUE(opened);
  auto& store = *opened;
  leveldb::WriteBatch wb;
  wb.Put("k0", "v0");
  ASSERT_TRUE(store.write_now(wb).ok());
  disk.corrupt = true;
  auto failed = store.write_now(wb);
  EXPECT_EQ(failed.code(), error_code::kafka_storage_error);
  EXPECT_NE(failed.message().find("Corruption"), std::string::npos) << failed.message();
  disk.corrupt = false;
  // A full disk would be reopened here; a damaged database is not.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(store.write_now(wb).to_string(), failed.to_string()) << i;
  EXPECT_TRUE(store.write_failed());
  EXPECT_EQ(store.get("k0"), std::optional<std::string>{"v0"}); // still readable
}

TEST(MetaProperties, FormatParsesBack) {
  meta_properties p;
  p.node_id = 12;
  p.cluster_id = "MkU3OEVBNTcwNTJENDM2Qk";
  auto back = parse_meta_properties(format_meta_properties(p), "m");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->version, 1);
  EXPECT_EQ(back->node_id, 12);
  EXPECT_EQ(back->cluster_id, p.cluster_id);
}

} // namespace
} // namespace caftx
