#include "tools/sim/crash_env.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include <leveldb/helpers/memenv.h>

namespace caftx::sim {

// What the env knows of one file written since the last crash. Guarded by
// crash_env::mtx_.
struct crash_env::file_state {
  uint64_t length = 0;  // bytes in the file
  uint64_t durable = 0; // length at the last Sync()
  bool created = false; // started empty since the last crash
  bool synced = false;  // a Sync() succeeded since the last crash
};

class crash_env::tracked_file final : public leveldb::WritableFile {
public:
  tracked_file(crash_env* env, leveldb::WritableFile* file, std::shared_ptr<file_state> state)
    : env_(env), file_(file), state_(std::move(state)) {}

  leveldb::Status Append(const leveldb::Slice& data) override {
    auto s = file_->Append(data);
    if (s.ok()) {
      std::lock_guard<std::mutex> guard{env_->mtx_};
      state_->length += data.size();
    }
    return s;
  }

  leveldb::Status Close() override { return file_->Close(); }
  leveldb::Status Flush() override { return file_->Flush(); }

  leveldb::Status Sync() override {
    auto s = file_->Sync();
    if (s.ok()) {
      std::lock_guard<std::mutex> guard{env_->mtx_};
      state_->durable = state_->length;
      state_->synced = true;
      ++env_->syncs_;
    }
    return s;
  }

private:
  crash_env* env_;
  std::unique_ptr<leveldb::WritableFile> file_;
  std::shared_ptr<file_state> state_;
};

namespace {

// Rewrites `fname` in `mem` with only its first `length` bytes.
leveldb::Status cut(leveldb::Env* mem, const std::string& fname, uint64_t length) {
  std::string prefix;
  prefix.reserve(length);
  {
    leveldb::SequentialFile* raw = nullptr;
    auto s = mem->NewSequentialFile(fname, &raw);
    if (!s.ok())
      return s;
    std::unique_ptr<leveldb::SequentialFile> in{raw};
    constexpr uint64_t chunk = 64 * 1024;
    std::vector<char> scratch(chunk);
    while (prefix.size() < length) {
      leveldb::Slice got;
      s = in->Read(std::min(chunk, length - prefix.size()), &got, scratch.data());
      if (!s.ok())
        return s;
      if (got.empty())
        return leveldb::Status::Corruption(fname, "shorter than its durable length");
      prefix.append(got.data(), got.size());
    }
  }
  leveldb::WritableFile* raw = nullptr;
  auto s = mem->NewWritableFile(fname, &raw);
  if (!s.ok())
    return s;
  std::unique_ptr<leveldb::WritableFile> out{raw};
  s = out->Append(prefix);
  if (s.ok())
    s = out->Close();
  return s;
}

void check(const leveldb::Status& s) {
  if (!s.ok())
    throw std::runtime_error("crash_env::crash: " + s.ToString());
}

} // namespace

crash_env::crash_env(leveldb::Env* base) : leveldb::EnvWrapper(leveldb::NewMemEnv(base)) {}

crash_env::~crash_env() {
  delete target();
}

leveldb::Status crash_env::NewWritableFile(const std::string& fname,
                                           leveldb::WritableFile** result) {
  leveldb::WritableFile* file = nullptr;
  auto s = target()->NewWritableFile(fname, &file);
  if (!s.ok())
    return s;
  auto state = std::make_shared<file_state>();
  state->created = true;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    files_[fname] = state;
  }
  *result = new tracked_file(this, file, std::move(state));
  return s;
}

leveldb::Status crash_env::NewAppendableFile(const std::string& fname,
                                             leveldb::WritableFile** result) {
  uint64_t size = 0;
  bool existed = target()->GetFileSize(fname, &size).ok();
  leveldb::WritableFile* file = nullptr;
  // memenv's NewAppendableFile (LevelDB 1.23) does not register a missing
  // file: its name maps to null and the appends go nowhere.
  auto s = existed ? target()->NewAppendableFile(fname, &file)
                   : target()->NewWritableFile(fname, &file);
  if (!s.ok())
    return s;
  std::shared_ptr<file_state> state;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto& tracked = files_[fname];
    if (tracked == nullptr) {
      // Untracked content is durable; a missing file starts as a new one.
      tracked = std::make_shared<file_state>();
      tracked->length = size;
      tracked->durable = size;
      tracked->created = !existed;
    }
    // A tracked file keeps its durable length: reopening syncs nothing.
    state = tracked;
  }
  *result = new tracked_file(this, file, std::move(state));
  return s;
}

leveldb::Status crash_env::RemoveFile(const std::string& fname) {
  auto s = target()->RemoveFile(fname);
  if (s.ok()) {
    std::lock_guard<std::mutex> guard{mtx_};
    files_.erase(fname);
  }
  return s;
}

leveldb::Status crash_env::RenameFile(const std::string& src, const std::string& dst) {
  auto s = target()->RenameFile(src, dst);
  if (!s.ok())
    return s;
  std::lock_guard<std::mutex> guard{mtx_};
  auto it = files_.find(src);
  if (it == files_.end()) {
    files_.erase(dst); // replaced by an untracked, hence durable, file
  } else {
    auto state = std::move(it->second);
    files_.erase(it);
    files_[dst] = std::move(state);
  }
  return s;
}

leveldb::Status crash_env::LockFile(const std::string& fname, leveldb::FileLock** lock) {
  auto s = target()->LockFile(fname, lock);
  if (s.ok()) {
    std::lock_guard<std::mutex> guard{mtx_};
    ++locks_held_;
  }
  return s;
}

leveldb::Status crash_env::UnlockFile(leveldb::FileLock* lock) {
  auto s = target()->UnlockFile(lock);
  if (s.ok()) {
    std::lock_guard<std::mutex> guard{mtx_};
    --locks_held_;
  }
  return s;
}

void crash_env::crash() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (locks_held_ > 0)
    throw std::logic_error("crash_env::crash: a file lock is held (is a DB still open?)");
  uint64_t lost = 0;
  for (auto& [fname, state] : files_) {
    uint64_t size = 0;
    if (!target()->GetFileSize(fname, &size).ok())
      continue; // gone behind the env's back: nothing to cut
    if (state->created && !state->synced) {
      check(target()->RemoveFile(fname));
      lost += size;
    } else if (size > state->durable) {
      check(cut(target(), fname, state->durable));
      lost += size - state->durable;
    }
  }
  files_.clear();
  bytes_lost_ = lost;
  ++crashes_;
}

uint64_t crash_env::syncs() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return syncs_;
}

uint64_t crash_env::bytes_lost_at_last_crash() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return bytes_lost_;
}

uint64_t crash_env::crashes() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return crashes_;
}

} // namespace caftx::sim
