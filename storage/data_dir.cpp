#include "storage/data_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <leveldb/env.h>

namespace caftx {

namespace {

status storage_error(std::string message) {
  return {error_code::kafka_storage_error, std::move(message)};
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\f");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\f");
  return s.substr(b, e - b + 1);
}

// "a, b, c and 4 more": the first few names, for an error message.
std::string name_some(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  constexpr size_t shown = 5;
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > shown)
    out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// A name LevelDB gives its own files (db/filename.cc ParseFileName):
// only these can hold a database, and only these does LevelDB delete.
bool is_leveldb_file(const std::string& n) {
  if (n == "CURRENT" || n == "LOCK" || n == "LOG" || n == "LOG.old" || n.rfind("MANIFEST-", 0) == 0)
    return true;
  auto dot = n.find('.');
  if (dot == 0 || dot == std::string::npos
      || n.find_first_not_of("0123456789") != dot)
    return false;
  auto ext = n.substr(dot);
  return ext == ".log" || ext == ".ldb" || ext == ".sst" || ext == ".dbtmp";
}

std::optional<int32_t> parse_int32(const std::string& v) {
  if (v.empty() || v.size() > 10 || v.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  auto x = std::stoll(v);
  if (x > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  return static_cast<int32_t>(x);
}

// Syncs the directory entry of a renamed file (real disk only; other
// environments have no directories to sync).
status sync_dir(leveldb::Env* env, const std::string& dir) {
  if (env != leveldb::Env::Default())
    return {};
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return storage_error("cannot open directory " + dir + " to sync it: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    return storage_error("cannot sync directory " + dir + ": " + std::strerror(err));
  return {};
}

} // namespace

status_or<meta_properties> parse_meta_properties(const std::string& text, const std::string& file) {
  meta_properties props;
  bool has_version = false;
  bool has_node_id = false;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    auto line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    auto at = file + ":" + std::to_string(line_no) + ": ";
    auto t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == '!')
      continue;
    auto eq = t.find('=');
    if (eq == std::string::npos)
      return storage_error(at + "expected key=value, found '" + t + "'");
    auto key = trim(t.substr(0, eq));
    auto value = trim(t.substr(eq + 1));
    if (key.empty())
      return storage_error(at + "empty key in '" + t + "'");
    if (key == "version") {
      if (value != std::to_string(meta_properties_version))
        return storage_error(at + "unknown version '" + value + "' (this release reads version "
                             + std::to_string(meta_properties_version) + ")");
      has_version = true;
    } else if (key == "node.id") {
      auto id = parse_int32(value);
      if (!id)
        return storage_error(at + "node.id '" + value + "' is not an integer in [0, 2147483647]");
      props.node_id = *id;
      has_node_id = true;
    } else if (key == "cluster.id") {
      props.cluster_id = value;
    }
  }
  if (!has_version)
    return storage_error(file + ": no version= line");
  if (!has_node_id)
    return storage_error(file + ": no node.id= line");
  return props;
}

std::string format_meta_properties(const meta_properties& props) {
  std::string out = "#caftx data directory identity (storage/FORMAT.md)\n";
  out += "version=" + std::to_string(props.version) + "\n";
  out += "node.id=" + std::to_string(props.node_id) + "\n";
  if (props.cluster_id)
    out += "cluster.id=" + *props.cluster_id + "\n";
  return out;
}

status_or<data_dir_kind> inspect_data_dir(leveldb::Env* env, const std::string& dir,
                                          int32_t node_id) {
  env->CreateDir(dir); // fails if it exists; GetChildren reports real trouble
  std::vector<std::string> children;
  auto st = env->GetChildren(dir, &children);
  if (!st.ok())
    return storage_error("cannot list data directory " + dir + ": " + st.ToString());
  children.erase(std::remove_if(children.begin(), children.end(),
                                [](const std::string& n) { return n == "." || n == ".."; }),
                 children.end());
  auto has = [&](const std::string& name) {
    return std::find(children.begin(), children.end(), name) != children.end();
  };
  if (!has(meta_properties_file)) {
    std::vector<std::string> database_files;
    for (auto& n : children)
      if (is_leveldb_file(n))
        database_files.push_back(n);
    // Other files (an application's lock file, say) are left alone, as
    // LevelDB leaves them.
    if (database_files.empty())
      return data_dir_kind::fresh;
    return storage_error("data directory " + dir + " holds database files ("
                         + name_some(database_files) + ") but no " + meta_properties_file
                         + ": it was not created by this release, or its identity file was "
                           "removed; no database is created over them");
  }
  auto file = dir + "/" + meta_properties_file;
  std::string text;
  st = leveldb::ReadFileToString(env, file, &text);
  if (!st.ok())
    return storage_error("cannot read " + file + ": " + st.ToString());
  auto props = parse_meta_properties(text, file);
  if (!props.ok())
    return props.error();
  // node.id=0 with another id configured: a directory from before node
  // ids were kept (every node wrote 0), taken over once by this node.
  bool adopt = props->node_id == 0 && node_id != 0;
  if (props->node_id != node_id && !adopt)
    return storage_error(file + ": node.id=" + std::to_string(props->node_id)
                         + " does not match this node's id " + std::to_string(node_id)
                         + " (if the directory is this node's, moved, correct node.id there; "
                           "a new node needs an empty directory)");
  if (!has("CURRENT")) {
    std::vector<std::string> tables;
    for (auto& n : children)
      if (is_leveldb_file(n) && n != "LOCK" && n != "LOG" && n != "LOG.old")
        tables.push_back(n);
    std::string found = tables.empty()
                          ? "no table files are left"
                          : std::to_string(tables.size()) + " table and log files are still there ("
                              + name_some(tables) + ")";
    return storage_error("data directory " + dir + ": LevelDB's CURRENT file is missing but "
                         + meta_properties_file + " says a database was created here; " + found
                         + "; refusing to create an empty database over them (restore CURRENT: "
                           "one line naming the MANIFEST file in use)");
  }
  return adopt ? data_dir_kind::adopted : data_dir_kind::existing;
}

status write_identity(leveldb::Env* env, const std::string& dir, const meta_properties& props) {
  auto file = dir + "/" + meta_properties_file;
  auto tmp = file + ".tmp";
  auto text = format_meta_properties(props);
  leveldb::WritableFile* raw = nullptr;
  auto st = env->NewWritableFile(tmp, &raw);
  if (st.ok()) {
    std::unique_ptr<leveldb::WritableFile> f{raw};
    st = f->Append(text);
    if (st.ok())
      st = f->Sync();
    auto closed = f->Close();
    if (st.ok())
      st = closed;
  }
  if (st.ok())
    st = env->RenameFile(tmp, file);
  if (!st.ok()) {
    env->RemoveFile(tmp);
    return storage_error("cannot write " + file + ": " + st.ToString());
  }
  return sync_dir(env, dir);
}

} // namespace caftx
