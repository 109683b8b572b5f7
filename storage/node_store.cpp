#include "storage/node_store.hpp"

#include <stdexcept>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <vector>

namespace caftx {

struct node_store::pending {
  leveldb::WriteBatch batch;
  callback done;
};

namespace {

status to_status(const leveldb::Status& st, const std::string& what) {
  if (st.ok())
    return {};
  return {error_code::kafka_storage_error, what + ": " + st.ToString()};
}

} // namespace

status_or<std::unique_ptr<node_store>> node_store::open(const std::string& dir,
                                                        node_store_options opts) {
  leveldb::Options o;
  o.create_if_missing = true;
  // Corruption is reported as an error (KAFKA_STORAGE_ERROR), never read as
  // data nor as a shorter log.
  o.paranoid_checks = true;
  if (opts.env != nullptr)
    o.env = opts.env;
  leveldb::DB* db = nullptr;
  auto st = leveldb::DB::Open(o, dir, &db);
  if (!st.ok())
    return to_status(st, "cannot open data directory " + dir);
  return std::unique_ptr<node_store>(new node_store(dir, opts, db));
}

node_store::node_store(std::string dir, node_store_options opts, leveldb::DB* db)
  : dir_(std::move(dir)), opts_(opts), db_(db) {
  if (opts_.background_writer)
    writer_ = std::thread([this] { run_writer(); });
}

node_store::~node_store() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable())
    writer_.join();
}

void node_store::write(leveldb::WriteBatch batch, callback done) {
  if (!opts_.background_writer) {
    auto st = write_now(batch);
    {
      std::lock_guard<std::mutex> guard{mtx_};
      ++stats_.writes;
    }
    if (done)
      done(st);
    return;
  }
  {
    std::lock_guard<std::mutex> guard{mtx_};
    queue_.push_back(pending{std::move(batch), std::move(done)});
  }
  cv_.notify_one();
}

status node_store::write_now(leveldb::WriteBatch& batch) {
  leveldb::WriteOptions wo;
  wo.sync = opts_.sync;
  auto st = to_status(db_->Write(wo, &batch), "write to " + dir_);
  std::lock_guard<std::mutex> guard{mtx_};
  ++stats_.disk_writes;
  return st;
}

void node_store::run_writer() {
  std::vector<pending> group;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock{mtx_};
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping and drained
      while (!queue_.empty()) {
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    // Group commit: one synchronous write for everything queued meanwhile.
    leveldb::WriteBatch merged;
    for (auto& p : group)
      merged.Append(p.batch);
    auto st = write_now(merged);
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stats_.writes += group.size();
    }
    for (auto& p : group)
      if (p.done)
        p.done(st);
    group.clear();
  }
}

namespace {

leveldb::ReadOptions checked_reads() {
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  return ro;
}

[[noreturn]] void read_failed(const std::string& what, const leveldb::Status& st) {
  throw std::runtime_error("KAFKA_STORAGE_ERROR: reading " + what + ": " + st.ToString());
}

} // namespace

std::optional<std::string> node_store::get(const std::string& key) const {
  std::string value;
  auto st = db_->Get(checked_reads(), key, &value);
  if (st.IsNotFound())
    return std::nullopt;
  if (!st.ok())
    read_failed("key " + key, st);
  return value;
}

void node_store::scan(const std::string& prefix,
                      const std::function<bool(const std::string&, const std::string&)>& fn) const {
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    auto k = it->key();
    if (!k.starts_with(prefix))
      break;
    if (!fn(k.ToString(), it->value().ToString()))
      return;
  }
  if (!it->status().ok())
    read_failed("keys " + prefix, it->status());
}

size_t node_store::scan_after(const std::string& prefix, const std::string& after,
                              size_t max_entries,
                              const std::function<void(std::string_view, std::string_view)>& fn) const {
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  if (after.empty()) {
    it->Seek(prefix);
  } else {
    it->Seek(after);
    if (it->Valid() && it->key() == leveldb::Slice(after))
      it->Next();
  }
  size_t visited = 0;
  for (; visited < max_entries && it->Valid(); it->Next()) {
    auto k = it->key();
    if (!k.starts_with(prefix))
      break;
    auto v = it->value();
    fn(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size()));
    ++visited;
  }
  if (!it->status().ok())
    read_failed("keys " + prefix, it->status());
  return visited;
}

void node_store::scan_from_floor(
  const std::string& prefix, const std::string& from,
  const std::function<bool(std::string_view, std::string_view)>& fn) const {
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  it->Seek(from);
  if (!it->Valid() || it->key() != leveldb::Slice(from)) {
    if (it->Valid())
      it->Prev();
    else
      it->SeekToLast();
    if (!it->Valid() || !it->key().starts_with(prefix))
      it->Seek(prefix);
  }
  for (; it->Valid(); it->Next()) {
    auto k = it->key();
    if (!k.starts_with(prefix))
      break;
    auto v = it->value();
    if (!fn(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size())))
      return;
  }
  if (!it->status().ok())
    read_failed("keys " + prefix, it->status());
}

std::optional<std::pair<std::string, std::string>> node_store::last(const std::string& prefix) const {
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  // The first key after every key of the prefix: the prefix with its last
  // byte incremented (prefixes here end in '/').
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  it->Seek(end);
  if (it->Valid())
    it->Prev();
  else
    it->SeekToLast();
  std::optional<std::pair<std::string, std::string>> r;
  if (it->Valid() && it->key().starts_with(prefix))
    r.emplace(it->key().ToString(), it->value().ToString());
  if (!it->status().ok())
    read_failed("keys " + prefix, it->status());
  return r;
}

node_store_stats node_store::stats() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stats_;
}

} // namespace caftx
