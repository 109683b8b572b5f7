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

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
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

/// Thrown by node_store reads on a read error or corruption, and by
/// components whose stored bytes do not decode: what() is
/// "KAFKA_STORAGE_ERROR: ..." naming the key and LevelDB's reason (the file
/// where LevelDB names it).
class storage_read_error : public std::runtime_error {
public:
  explicit storage_read_error(const std::string& reason)
    : std::runtime_error("KAFKA_STORAGE_ERROR: " + reason), reason_(reason) {}
  /// what() without the error's name.
  const std::string& reason() const { return reason_; }

private:
  std::string reason_;
};

/// A read while a failed reopen left the database closed (see write()):
/// passes once the disk takes writes again.
class storage_closed_error : public storage_read_error {
public:
  using storage_read_error::storage_read_error;
};

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
  /// After a failed write the database is reopened (LevelDB refuses every
  /// write after one failed) by the next write, but at most once per this
  /// many milliseconds; writes in between fail at once.
  int64_t reopen_backoff_ms = 1000;
  /// The node.id kept in the directory's meta.properties (0: the embedded
  /// node has no id of its own).
  int32_t node_id = 0;
};

/// Counters for tests and benchmarks.
struct node_store_stats {
  uint64_t writes = 0;       // write() calls completed
  uint64_t disk_writes = 0;  // LevelDB Write calls issued for them
};

class node_store {
public:
  using callback = std::function<void(const status&)>;

  /// Opens the database in `dir`, creating it (and then its identity file,
  /// meta.properties) only when `dir` holds no database files yet. Errors:
  /// KAFKA_STORAGE_ERROR naming the directory and the reason: locked by
  /// another running node, LevelDB's CURRENT missing, meta.properties
  /// missing beside database files or malformed (file and line), or
  /// LevelDB's own reason (storage/data_dir.hpp).
  static status_or<std::unique_ptr<node_store>> open(const std::string& dir,
                                                     node_store_options opts = {});

  ~node_store();
  node_store(const node_store&) = delete;
  node_store& operator=(const node_store&) = delete;

  /// Queues `batch` (taken over) for a durable write; `done` runs once it
  /// is on disk (or failed), on the writer thread, or before write()
  /// returns with background_writer = false. Writes complete in the order
  /// they were queued. A failed write (disk full, I/O error) gives
  /// KAFKA_STORAGE_ERROR with the OS error and writes one line to stderr
  /// naming the directory; later writes fail too until the database has
  /// been reopened, which they attempt themselves (see reopen_backoff_ms):
  /// a small probe file is written and synced first, and only if it is the
  /// database closed and reopened, so it stays readable while the disk is
  /// full, and the store recovers on its own once the disk accepts writes
  /// again.
  void write(leveldb::WriteBatch batch, callback done);

  /// Writes `batch` durably on the calling thread (start-up and tools only).
  status write_now(leveldb::WriteBatch& batch);

  /// Reads one key; nullopt if it is absent. Throws storage_read_error
  /// ("KAFKA_STORAGE_ERROR: ...") on a read error or corruption (checksums
  /// are verified), so a damaged store is never taken for a missing key;
  /// storage_closed_error in the rare case that a reopen failed after its
  /// probe write succeeded. Reads never run during a reopen (they share a
  /// lock the reopen takes exclusively).
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
  /// True from a failed write until the database was reopened.
  bool write_failed() const;

private:
  node_store(std::string dir, node_store_options opts, leveldb::DB* db);
  void run_writer();
  status reopen_if_failed();
  void note_write(const status& st, bool corrupt);

  struct pending;
  std::string dir_;
  node_store_options opts_;
  // Guards db_ itself: shared by reads and writes, exclusive for a reopen.
  mutable std::shared_mutex db_mtx_;
  std::unique_ptr<leveldb::DB> db_;
  // After a failed write: the error, and when a reopen was last tried.
  mutable std::mutex fault_mtx_;
  std::optional<status> write_error_;
  bool corrupt_ = false; // write_error_ was a corruption: never reopened
  std::optional<std::chrono::steady_clock::time_point> last_reopen_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<pending> queue_;
  bool stopping_ = false;
  node_store_stats stats_;
  std::thread writer_;
};

} // namespace caftx
