// The durable store of one node: a single LevelDB database under the node's
// data directory holding partition logs, transaction state cards, producer
// id counters, coordinator epochs, topic metadata and consumer offsets
// (key layout in storage/FORMAT.md). Its write-ahead log is the node's one
// log, so concurrent writers group-commit.
//
// Thread-safety: every member is safe to call from any thread. Durable
// writes run on one writer thread that merges whatever is queued into one
// synchronous LevelDB write; callers are never blocked by an fsync.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "runtime/status.hpp"

namespace leveldb {
class DB;
class Env;
class WriteBatch;
} // namespace leveldb

namespace caftx {

/// Options of a node_store.
struct node_store_options {
  /// fsync every durable write (Kafka's acks=all on one replica). Turning it
  /// off keeps data across a process crash but not across a power loss.
  bool sync = true;
  /// Durable writes on a background writer thread (the default). false runs
  /// them inline in write(), for the deterministic test scheduler.
  bool background_writer = true;
  /// LevelDB environment; nullptr means the default (real disk).
  leveldb::Env* env = nullptr;
};

/// Counters for tests and benchmarks.
struct node_store_stats {
  uint64_t writes = 0;       // write() calls completed
  uint64_t disk_writes = 0;  // LevelDB Write calls issued for them
};

class node_store {
public:
  using callback = std::function<void(const status&)>;

  /// Opens (creating if missing) the database in `dir`. Errors:
  /// KAFKA_STORAGE_ERROR naming the directory and LevelDB's reason (for
  /// example the directory is locked by another running node).
  static status_or<std::unique_ptr<node_store>> open(const std::string& dir,
                                                     node_store_options opts = {});

  ~node_store();
  node_store(const node_store&) = delete;
  node_store& operator=(const node_store&) = delete;

  /// Queues `batch` (taken over) for a durable write; `done` runs once it
  /// is on disk (or failed), on the writer thread, or before write()
  /// returns with background_writer = false. Writes complete in the order
  /// they were queued.
  void write(leveldb::WriteBatch batch, callback done);

  /// Writes `batch` durably on the calling thread (start-up and tools only).
  status write_now(leveldb::WriteBatch& batch);

  /// Reads one key; nullopt if it is absent. Throws std::runtime_error
  /// ("KAFKA_STORAGE_ERROR: ...") on a read error or corruption (checksums
  /// are verified), so a damaged store is never taken for a missing key.
  std::optional<std::string> get(const std::string& key) const;

  /// Calls `fn(key, value)` for every key starting with `prefix`, in key
  /// order, until it returns false. Throws like get() if the scan stops on
  /// an error, so a damaged log is never read as a shorter one.
  void scan(const std::string& prefix,
            const std::function<bool(const std::string&, const std::string&)>& fn) const;

  /// Resumable scan: calls `fn(key, value)`, in key order, for at most
  /// `max_entries` keys that start with `prefix` and sort after `after`
  /// (from the first key of the prefix when `after` is empty). The views
  /// are valid during the call only. Returns how many keys were visited;
  /// fewer than `max_entries` means the prefix is exhausted. Continue with
  /// `after` = the last key visited.
  size_t scan_after(const std::string& prefix, const std::string& after, size_t max_entries,
                    const std::function<void(std::string_view, std::string_view)>& fn) const;

  /// Calls `fn(key, value)`, in key order, for the keys that start with
  /// `prefix` from the last one at or before `from` on (from the first key
  /// of the prefix if none is at or before it), until it returns false.
  /// The views are valid during the call only. Throws like scan(). A
  /// partition reads the batch holding an offset this way.
  void scan_from_floor(const std::string& prefix, const std::string& from,
                       const std::function<bool(std::string_view, std::string_view)>& fn) const;

  /// The last key that starts with `prefix`, with its value; nullopt if
  /// there is none. Throws like get().
  std::optional<std::pair<std::string, std::string>> last(const std::string& prefix) const;

  node_store_stats stats() const;
  const std::string& dir() const { return dir_; }

private:
  node_store(std::string dir, node_store_options opts, leveldb::DB* db);
  void run_writer();

  struct pending;
  std::string dir_;
  node_store_options opts_;
  std::unique_ptr<leveldb::DB> db_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<pending> queue_;
  bool stopping_ = false;
  node_store_stats stats_;
  std::thread writer_;
};

} // namespace caftx
