// crash_env: an in-memory LevelDB environment that loses, at a simulated
// power loss, every write not yet made durable. Used by the deterministic
// simulator so that a node's store survives a crash exactly as far as its
// fsyncs promise.
//
// Files live in a memenv (leveldb/helpers/memenv.h) owned by the env, where
// Sync() is a no-op and appends are visible at once. crash_env records, per
// file written through NewWritableFile or NewAppendableFile, the length at
// its last Sync(); crash() cuts each such file back to that length and
// deletes a file created since the last crash that was never synced.
//
// Modelled: a WritableFile's data is durable up to its last successful
// Sync(); Append, Flush and Close make nothing durable. A file opened by
// NewWritableFile, or by NewAppendableFile where it did not exist, starts
// empty and not durable (a truncated file counts as newly created). Files
// not written through the env since the last crash count as durable.
//
// Not modelled: directory syncs. A rename or a removal is durable at once,
// and a synced file's name is durable with its data, as if every directory
// were synced. LevelDB 1.23 needs no more: it syncs the MANIFEST and
// writes CURRENT as a synced temporary file renamed into place. Nor are
// torn or reordered writes modelled: an unsynced tail is lost whole.
//
// The idea follows LevelDB's fault-injection test environment
// (db/fault_injection_test.cc); only its behaviour is reproduced here.
//
// Thread-safety: every member is safe to call from any thread (LevelDB
// writes compaction output on its background thread), but crash() must not
// run while a DB is open on the env.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <leveldb/env.h>

namespace caftx::sim {

class crash_env : public leveldb::EnvWrapper {
public:
  /// An empty in-memory file system; threads, scheduling and the clock come
  /// from `base`, which must outlive the env.
  explicit crash_env(leveldb::Env* base = leveldb::Env::Default());
  ~crash_env() override;

  crash_env(const crash_env&) = delete;
  crash_env& operator=(const crash_env&) = delete;

  leveldb::Status NewWritableFile(const std::string& fname,
                                  leveldb::WritableFile** result) override;
  leveldb::Status NewAppendableFile(const std::string& fname,
                                    leveldb::WritableFile** result) override;
  leveldb::Status RemoveFile(const std::string& fname) override;
  leveldb::Status RenameFile(const std::string& src, const std::string& dst) override;
  leveldb::Status LockFile(const std::string& fname, leveldb::FileLock** lock) override;
  leveldb::Status UnlockFile(leveldb::FileLock* lock) override;

  /// Simulates a power loss: every file written since the last crash is cut
  /// back to the length of its last Sync(); one created since the last
  /// crash and never synced is deleted. Afterwards all that remains counts
  /// as durable.
  /// REQUIRES: no DB open on the env. Throws std::logic_error while a file
  /// lock is held (an open DB holds its LOCK), std::runtime_error if the
  /// in-memory file system fails.
  void crash();

  /// Successful Sync() calls on files of the env, over its lifetime.
  uint64_t syncs() const;
  /// Bytes that the last crash() removed: cut tails plus deleted files.
  uint64_t bytes_lost_at_last_crash() const;
  /// crash() calls so far.
  uint64_t crashes() const;

private:
  struct file_state;
  class tracked_file;

  mutable std::mutex mtx_;
  // Files written since the last crash, by name. Shared with their open
  // tracked_file handles, which outlive a rename or removal.
  std::map<std::string, std::shared_ptr<file_state>> files_;
  int locks_held_ = 0;
  uint64_t syncs_ = 0;
  uint64_t bytes_lost_ = 0;
  uint64_t crashes_ = 0;
};

} // namespace caftx::sim
