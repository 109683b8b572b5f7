#include "storage/node_store.hpp"

#include "storage/data_dir.hpp"

#include <cstdio>
#include <stdexcept>

#include <leveldb/db.h>
#include <leveldb/env.h>
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

// Writes, syncs and removes a 64 KiB file beside the database: whether the
// disk takes writes again, before the database is closed to be reopened.
status probe_write(leveldb::Env* env, const std::string& dir) {
  auto name = dir + "/write.probe";
  leveldb::WritableFile* raw = nullptr;
  auto st = env->NewWritableFile(name, &raw);
  if (st.ok()) {
    std::unique_ptr<leveldb::WritableFile> f{raw};
    st = f->Append(std::string(64 * 1024, '\0'));
    if (st.ok())
      st = f->Sync();
    auto closed = f->Close();
    if (st.ok())
      st = closed;
  }
  env->RemoveFile(name);
  return to_status(st, "write to " + dir + " (probe before reopening)");
}

leveldb::Options leveldb_options(const node_store_options& opts, bool create) {
  leveldb::Options o;
  o.create_if_missing = create;
  o.error_if_exists = create;
  // Corruption is reported as an error (KAFKA_STORAGE_ERROR), never read as
  // data nor as a shorter log.
  o.paranoid_checks = true;
  if (opts.env != nullptr)
    o.env = opts.env;
  return o;
}

} // namespace

status_or<std::unique_ptr<node_store>> node_store::open(const std::string& dir,
                                                        node_store_options opts) {
  auto* env = opts.env != nullptr ? opts.env : leveldb::Env::Default();
  // A database is created only in a new or empty directory; anything else
  // must carry the identity file (storage/data_dir.hpp).
  auto kind = inspect_data_dir(env, dir, opts.node_id);
  if (!kind.ok())
    return kind.error();
  bool fresh = kind.value() == data_dir_kind::fresh;
  leveldb::DB* db = nullptr;
  auto st = leveldb::DB::Open(leveldb_options(opts, fresh), dir, &db);
  if (!st.ok())
    return to_status(st, "cannot open data directory " + dir);
  if (fresh || kind.value() == data_dir_kind::adopted) {
    meta_properties identity;
    if (!fresh) { // keeps what else the file holds (cluster.id)
      std::string text;
      auto file = dir + "/" + meta_properties_file;
      if (auto r = leveldb::ReadFileToString(env, file, &text); !r.ok()) {
        delete db;
        return to_status(r, "cannot read " + file);
      }
      auto parsed = parse_meta_properties(text, file);
      if (!parsed.ok()) {
        delete db;
        return parsed.error();
      }
      identity = *parsed;
    }
    identity.node_id = opts.node_id;
    if (auto w = write_identity(env, dir, identity); !w.ok()) {
      delete db;
      return w;
    }
  }
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
  auto st = reopen_if_failed();
  if (st.ok()) {
    leveldb::WriteOptions wo;
    wo.sync = opts_.sync;
    leveldb::Status written;
    {
      std::shared_lock<std::shared_mutex> db_lock{db_mtx_};
      written = db_ ? db_->Write(wo, &batch)
                    : leveldb::Status::IOError(dir_, "closed after a failed write");
    }
    st = to_status(written, "write to " + dir_);
    note_write(st, written.IsCorruption()); // after db_mtx_: reopen_if_failed takes fault_mtx_ first
  }
  std::lock_guard<std::mutex> guard{mtx_};
  ++stats_.disk_writes;
  return st;
}

// The first failure is logged (the OS error is in LevelDB's status:
// "IO error: <file>: No space left on device"); the ones after it until the
// reopen are not.
// A corruption (LevelDB found a damaged table file, say while compacting)
// does not heal: no reopen is tried, and writes stay refused until the
// node is restarted on a repaired or restored directory.
void node_store::note_write(const status& st, bool corrupt) {
  if (st.ok())
    return;
  std::lock_guard<std::mutex> guard{fault_mtx_};
  if (!write_error_ && corrupt)
    std::fprintf(stderr,
                 "caftx: %s; the database is damaged: writes are answered KAFKA_STORAGE_ERROR "
                 "until the node is restarted on a repaired directory\n",
                 st.message().c_str());
  else if (!write_error_)
    std::fprintf(stderr,
                 "caftx: %s; writes are answered KAFKA_STORAGE_ERROR until the disk accepts "
                 "them again\n",
                 st.message().c_str());
  write_error_ = st;
  corrupt_ = corrupt_ || corrupt;
}

bool node_store::write_failed() const {
  std::lock_guard<std::mutex> guard{fault_mtx_};
  return write_error_.has_value();
}

// LevelDB fails every write after one failed (its log is in an unknown
// state): only a reopen, which recovers from the log and the table files,
// makes it write again. Readers wait for the reopen (db_mtx_).
status node_store::reopen_if_failed() {
  std::lock_guard<std::mutex> guard{fault_mtx_};
  if (!write_error_)
    return {};
  if (corrupt_)
    return *write_error_;
  auto now = std::chrono::steady_clock::now();
  if (last_reopen_ && now - *last_reopen_ < std::chrono::milliseconds(opts_.reopen_backoff_ms))
    return *write_error_;
  last_reopen_ = now;
  // The database stays open (readable) until the disk takes a write again.
  if (auto probe = probe_write(opts_.env != nullptr ? opts_.env : leveldb::Env::Default(), dir_);
      !probe.ok()) {
    write_error_ = probe;
    return *write_error_;
  }
  std::unique_lock<std::shared_mutex> db_lock{db_mtx_};
  db_.reset();
  leveldb::DB* db = nullptr;
  auto st = leveldb::DB::Open(leveldb_options(opts_, false), dir_, &db);
  if (!st.ok()) {
    write_error_ = to_status(st, "reopening " + dir_ + " after a failed write");
    return *write_error_;
  }
  db_.reset(db);
  write_error_.reset();
  std::fprintf(stderr, "caftx: data directory %s accepts writes again\n", dir_.c_str());
  return {};
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

// Keys hold NUL separators (storage/FORMAT.md): shown as \x00.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// Where a scan stopped: LevelDB does not name the file of a damaged block.
std::string after_key(const std::string& last) {
  return last.empty() ? std::string() : " after key " + last;
}

[[noreturn]] void read_failed(const std::string& what, const leveldb::Status& st) {
  throw storage_read_error("reading " + printable(what) + ": " + st.ToString());
}

// REQUIRES: db_mtx_ held (shared).
void require_open(const std::unique_ptr<leveldb::DB>& db, const std::string& dir) {
  if (!db)
    throw storage_closed_error("data directory " + dir
                             + " is closed after a failed write (reopen failed)");
}

} // namespace

std::optional<std::string> node_store::get(const std::string& key) const {
  std::string value;
  std::shared_lock<std::shared_mutex> db_lock{db_mtx_};
  require_open(db_, dir_);
  auto st = db_->Get(checked_reads(), key, &value);
  if (st.IsNotFound())
    return std::nullopt;
  if (!st.ok())
    read_failed("key " + key, st);
  return value;
}

void node_store::scan(const std::string& prefix,
                      const std::function<bool(const std::string&, const std::string&)>& fn) const {
  std::shared_lock<std::shared_mutex> db_lock{db_mtx_};
  require_open(db_, dir_);
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  // The status before every key: a damaged block is skipped by LevelDB's
  // iterator, which records the error and goes on with the next block, so
  // a check after the loop alone would show later keys as if the damaged
  // ones were never written.
  std::string last;
  for (it->Seek(prefix); it->Valid() && it->status().ok(); it->Next()) {
    auto k = it->key();
    if (!k.starts_with(prefix))
      break;
    last = k.ToString();
    if (!fn(last, it->value().ToString()))
      return;
  }
  if (!it->status().ok())
    read_failed("keys " + prefix + after_key(last), it->status());
}

size_t node_store::scan_after(const std::string& prefix, const std::string& after,
                              size_t max_entries,
                              const std::function<void(std::string_view, std::string_view)>& fn) const {
  std::shared_lock<std::shared_mutex> db_lock{db_mtx_};
  require_open(db_, dir_);
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  if (after.empty()) {
    it->Seek(prefix);
  } else {
    it->Seek(after);
    if (it->Valid() && it->key() == leveldb::Slice(after))
      it->Next();
  }
  size_t visited = 0;
  std::string last = after;
  for (; visited < max_entries && it->Valid() && it->status().ok(); it->Next()) { // as scan()
    auto k = it->key();
    if (!k.starts_with(prefix))
      break;
    last.assign(k.data(), k.size());
    auto v = it->value();
    fn(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size()));
    ++visited;
  }
  if (!it->status().ok())
    read_failed("keys " + prefix + after_key(last), it->status());
  return visited;
}

void node_store::scan_from_floor(
  const std::string& prefix, const std::string& from,
  const std::function<bool(std::string_view, std::string_view)>& fn) const {
  std::shared_lock<std::shared_mutex> db_lock{db_mtx_};
  require_open(db_, dir_);
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(checked_reads())};
  it->Seek(from);
  if (it->status().ok() && (!it->Valid() || it->key() != leveldb::Slice(from))) {
    if (it->Valid())
      it->Prev();
    else
      it->SeekToLast();
    if (it->status().ok() && (!it->Valid() || !it->key().starts_with(prefix)))
      it->Seek(prefix);
  }
  // The status before every key, as scan(): a damaged block must not look
  // like a gap in the log.
  std::string last;
  for (; it->Valid() && it->status().ok(); it->Next()) {
    auto k = it->key();
    if (!k.starts_with(prefix))
      break;
    last.assign(k.data(), k.size());
    auto v = it->value();
    if (!fn(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size())))
      return;
  }
  if (!it->status().ok())
    read_failed("keys " + prefix + after_key(last), it->status());
}

std::optional<std::pair<std::string, std::string>> node_store::last(const std::string& prefix) const {
  std::shared_lock<std::shared_mutex> db_lock{db_mtx_};
  require_open(db_, dir_);
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
  if (it->status().ok() && it->Valid() && it->key().starts_with(prefix))
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
