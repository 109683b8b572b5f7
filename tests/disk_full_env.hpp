// A LevelDB environment over the real disk that fills up on demand, for
// the storage fault tests (unit and actor). Header only.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <leveldb/env.h>

namespace caftx::testing {

// A disk that fills up on demand: while `full`, every append, flush and
// sync of a LevelDB file fails with ENOSPC, as write(2) does on a full
// file system; reads go on working.
class disk_full_env : public leveldb::EnvWrapper {
public:
  disk_full_env() : leveldb::EnvWrapper(leveldb::Env::Default()) {}
  std::atomic<bool> full{false};
  /// Appends fail as LevelDB's own checksum failures would: a corruption.
  std::atomic<bool> corrupt{false};

  leveldb::Status NewWritableFile(const std::string& name, leveldb::WritableFile** out) override {
    auto s = target()->NewWritableFile(name, out);
    if (s.ok())
      *out = new file(name, *out, full, corrupt);
    return s;
  }
  leveldb::Status NewAppendableFile(const std::string& name, leveldb::WritableFile** out) override {
    auto s = target()->NewAppendableFile(name, out);
    if (s.ok())
      *out = new file(name, *out, full, corrupt);
    return s;
  }

private:
  class file : public leveldb::WritableFile {
  public:
    file(std::string name, leveldb::WritableFile* f, std::atomic<bool>& full,
         std::atomic<bool>& corrupt)
      : name_(std::move(name)), f_(f), full_(full), corrupt_(corrupt) {}
    ~file() override { delete f_; }
    leveldb::Status Append(const leveldb::Slice& data) override {
      if (corrupt_)
        return leveldb::Status::Corruption(name_, "injected block checksum mismatch");
      return full_ ? enospc() : f_->Append(data);
    }
    leveldb::Status Close() override { return f_->Close(); }
    leveldb::Status Flush() override { return full_ ? enospc() : f_->Flush(); }
    leveldb::Status Sync() override { return full_ ? enospc() : f_->Sync(); }

  private:
    leveldb::Status enospc() const { return leveldb::Status::IOError(name_, std::strerror(ENOSPC)); }
    std::string name_;
    leveldb::WritableFile* f_;
    std::atomic<bool>& full_;
    std::atomic<bool>& corrupt_;
  };
};

} // namespace caftx::testing
