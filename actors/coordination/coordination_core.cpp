#include "actors/coordination/coordination_core.hpp"

#include <cstdio>

namespace caftx {

namespace {

constexpr uint8_t znode_value_version = 1;
constexpr size_t znode_header_size = 1 + 5 * 8 + 3 * 4;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const std::string& in, size_t& pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[pos + i])) << (8 * i);
  pos += bytes;
  return v;
}

std::string child_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// The overlay of one transaction over the committed tree.
class overlay {
public:
  explicit overlay(const coordination_core& tree, coord_prepared& p) : tree_(tree), p_(p) {}

  const znode* find(const std::string& path) const {
    auto i = p_.changes.find(path);
    if (i != p_.changes.end())
      return i->second ? &*i->second : nullptr;
    return tree_.find(path);
  }

  // A mutable copy of an existing znode, kept in the overlay.
  znode& touch(const std::string& path) {
    auto i = p_.changes.find(path);
    if (i == p_.changes.end())
      i = p_.changes.emplace(path, *tree_.find(path)).first;
    return *i->second;
  }

  void put(const std::string& path, znode n) { p_.changes[path] = std::move(n); }
  void erase(const std::string& path) { p_.changes[path] = std::nullopt; }

private:
  const coordination_core& tree_;
  coord_prepared& p_;
};

// The checks check, set and delete share, in ZooKeeper's order: a valid
// path, the znode present, the expected version (-1: any).
zrc find_versioned(const overlay& ov, const coord_op& op, const znode*& n) {
  if (!valid_znode_path(op.path))
    return zrc::ZBADARGUMENTS;
  n = ov.find(op.path);
  if (!n)
    return zrc::ZNONODE;
  if (op.version != -1 && n->stat.version != op.version)
    return zrc::ZBADVERSION;
  return zrc::ZOK;
}

// One op against the overlay; the created name goes to `res.path`, the
// new stat of a set to `res.stat`.
zrc apply_op(overlay& ov, const coord_op& op, int64_t zxid, int64_t session, int64_t now_ms,
             coord_op_result& res, std::vector<std::pair<int8_t, std::string>>& effects) {
  switch (op.kind) {
    case coord_op::check: {
      const znode* n = nullptr;
      return find_versioned(ov, op, n);
    }
    case coord_op::create: {
      if ((op.flags & ~(znode_ephemeral | znode_sequential)) != 0)
        return zrc::ZBADARGUMENTS;
      bool sequential = (op.flags & znode_sequential) != 0;
      // A sequential create may end in '/': the suffix is the last name.
      if (!valid_znode_path(sequential ? op.path + "0" : op.path) || op.path == "/")
        return zrc::ZBADARGUMENTS;
      auto parent_path = znode_parent(sequential ? op.path + "0" : op.path);
      auto parent = ov.find(parent_path);
      if (!parent)
        return zrc::ZNONODE;
      auto path = op.path;
      if (sequential) {
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%010d", parent->stat.cversion);
        path += suffix;
      }
      if (ov.find(path))
        return zrc::ZNODEEXISTS;
      if (parent->stat.ephemeral_owner != 0)
        return zrc::ZNOCHILDRENFOREPHEMERALS;
      znode n;
      n.data = op.data;
      n.stat.czxid = n.stat.mzxid = n.stat.pzxid = zxid;
      n.stat.ctime = n.stat.mtime = now_ms;
      n.stat.ephemeral_owner = (op.flags & znode_ephemeral) ? session : 0;
      auto& p = ov.touch(parent_path);
      p.stat.cversion += 1;
      p.stat.pzxid = zxid;
      p.children.insert(child_name(path));
      ov.put(path, std::move(n));
      res.path = path;
      effects.emplace_back(coord_op::create, path);
      return zrc::ZOK;
    }
    case coord_op::set: {
      const znode* n = nullptr;
      if (auto rc = find_versioned(ov, op, n); rc != zrc::ZOK)
        return rc;
      auto& m = ov.touch(op.path);
      m.data = op.data;
      m.stat.version += 1;
      m.stat.mzxid = zxid;
      m.stat.mtime = now_ms;
      res.stat = coordination_core::stat_of(m);
      effects.emplace_back(coord_op::set, op.path);
      return zrc::ZOK;
    }
    case coord_op::remove: {
      if (op.path == "/")
        return zrc::ZBADARGUMENTS;
      const znode* n = nullptr;
      if (auto rc = find_versioned(ov, op, n); rc != zrc::ZOK)
        return rc;
      if (!n->children.empty())
        return zrc::ZNOTEMPTY;
      // The stored cversion counts child creates only (ZooKeeper's
      // DataTree.deleteNode leaves it): sequential names come from it.
      auto parent_path = znode_parent(op.path);
      auto& p = ov.touch(parent_path);
      p.stat.pzxid = zxid;
      p.children.erase(child_name(op.path));
      ov.erase(op.path);
      effects.emplace_back(coord_op::remove, op.path);
      return zrc::ZOK;
    }
  }
  return zrc::ZBADARGUMENTS;
}

} // namespace

std::string encode_znode_value(const znode& n) {
  std::string out;
  out.reserve(znode_header_size + n.data.size());
  out.push_back(static_cast<char>(znode_value_version));
  for (auto v : {n.stat.czxid, n.stat.mzxid, n.stat.pzxid, n.stat.ctime, n.stat.mtime})
    put_le(out, static_cast<uint64_t>(v), 8);
  for (auto v : {n.stat.version, n.stat.cversion, n.stat.aversion})
    put_le(out, static_cast<uint32_t>(v), 4);
  out += n.data;
  return out;
}

status_or<znode> decode_znode_value(const std::string& key, const std::string& in) {
  if (in.size() < znode_header_size || static_cast<uint8_t>(in[0]) != znode_value_version)
    return status{error_code::kafka_storage_error, "znode value of " + key +
                                                     " does not decode (" +
                                                     std::to_string(in.size()) + " bytes)"};
  znode n;
  size_t pos = 1;
  n.stat.czxid = static_cast<int64_t>(get_le(in, pos, 8));
  n.stat.mzxid = static_cast<int64_t>(get_le(in, pos, 8));
  n.stat.pzxid = static_cast<int64_t>(get_le(in, pos, 8));
  n.stat.ctime = static_cast<int64_t>(get_le(in, pos, 8));
  n.stat.mtime = static_cast<int64_t>(get_le(in, pos, 8));
  n.stat.version = static_cast<int32_t>(get_le(in, pos, 4));
  n.stat.cversion = static_cast<int32_t>(get_le(in, pos, 4));
  n.stat.aversion = static_cast<int32_t>(get_le(in, pos, 4));
  n.data = in.substr(pos);
  return n;
}

std::string encode_zxid_value(int64_t zxid) {
  std::string out;
  put_le(out, static_cast<uint64_t>(zxid), 8);
  return out;
}

status_or<int64_t> decode_zxid_value(const std::string& bytes) {
  if (bytes.size() != 8)
    return status{error_code::kafka_storage_error,
                  "meta/last_zxid does not decode (" + std::to_string(bytes.size()) + " bytes)"};
  size_t pos = 0;
  return static_cast<int64_t>(get_le(bytes, pos, 8));
}

coordination_core::coordination_core() {
  nodes_.emplace("/", znode{});
}

void coordination_core::load(const std::string& path, znode node) {
  auto& slot = nodes_[path];
  auto children = std::move(slot.children); // linked by children loaded earlier
  slot = std::move(node);
  slot.children.insert(children.begin(), children.end());
  if (path != "/")
    nodes_[znode_parent(path)].children.insert(child_name(path));
}

const znode* coordination_core::find(const std::string& path) const {
  auto i = nodes_.find(path);
  return i == nodes_.end() ? nullptr : &i->second;
}

znode_stat coordination_core::stat_of(const znode& n) {
  auto st = n.stat;
  st.num_children = static_cast<int32_t>(n.children.size());
  // ZooKeeper's DataNode.copyStat: every create but those of the children
  // still present had a delete, so creates + deletes = 2 x creates - children.
  st.cversion = n.stat.cversion * 2 - st.num_children;
  st.data_length = static_cast<int32_t>(n.data.size());
  return st;
}

zrc coordination_core::get(const std::string& path, bool watch, std::string& data,
                           znode_stat& stat, int64_t watcher) {
  if (!valid_znode_path(path))
    return zrc::ZBADARGUMENTS;
  auto n = find(path);
  if (!n)
    return zrc::ZNONODE;
  data = n->data;
  stat = stat_of(*n);
  if (watch)
    data_watches_[path].insert(watcher);
  return zrc::ZOK;
}

zrc coordination_core::exists(const std::string& path, bool watch, znode_stat& stat,
                              int64_t watcher) {
  if (!valid_znode_path(path))
    return zrc::ZBADARGUMENTS;
  auto n = find(path);
  if (!n) {
    if (watch)
      exist_watches_[path].insert(watcher);
    return zrc::ZNONODE;
  }
  stat = stat_of(*n);
  if (watch)
    data_watches_[path].insert(watcher);
  return zrc::ZOK;
}

zrc coordination_core::get_children(const std::string& path, bool watch,
                                    std::vector<std::string>& children, znode_stat& stat,
                                    int64_t watcher) {
  if (!valid_znode_path(path))
    return zrc::ZBADARGUMENTS;
  auto n = find(path);
  if (!n)
    return zrc::ZNONODE;
  children.assign(n->children.begin(), n->children.end());
  stat = stat_of(*n);
  if (watch)
    child_watches_[path].insert(watcher);
  return zrc::ZOK;
}

coord_prepared coordination_core::prepare(const std::vector<coord_op>& ops, int64_t session,
                                          int64_t now_ms) const {
  coord_prepared p;
  p.results.resize(ops.size());
  if (ops.empty())
    return p;
  overlay ov{*this, p};
  auto zxid = last_zxid_ + 1;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto rc = apply_op(ov, ops[i], zxid, session, now_ms, p.results[i], p.effects);
    if (rc == zrc::ZOK)
      continue;
    // ZooKeeper's DataTree for a failed multi: ZOK before, the code, then
    // ZRUNTIMEINCONSISTENCY; nothing applied.
    p.rc = rc;
    for (size_t j = 0; j < ops.size(); ++j)
      p.results[j] = coord_op_result{j < i ? zrc::ZOK
                                           : (j == i ? rc : zrc::ZRUNTIMEINCONSISTENCY),
                                     {}, {}};
    p.changes.clear();
    p.effects.clear();
    return p;
  }
  p.zxid = zxid;
  return p;
}

coord_prepared coordination_core::prepare_session_end(int64_t session) const {
  std::vector<coord_op> ops;
  for (auto& [path, n] : nodes_)
    if (n.stat.ephemeral_owner == session && session != 0)
      ops.push_back(coord_op::remove_node(path));
  auto p = prepare(ops, session, 0);
  p.results.clear();
  return p;
}

std::vector<coordination_core::fired_watch>
coordination_core::commit_watched(const coord_prepared& p) {
  std::vector<fired_watch> events;
  if (!p.ok() || p.zxid == 0)
    return events;
  for (auto& [path, n] : p.changes) {
    if (n) {
      nodes_[path] = *n;
    } else {
      nodes_.erase(path);
    }
  }
  last_zxid_ = p.zxid;
  // Fires the watches of `path` in `w` and returns their watchers. Those
  // in `skip` hear nothing: their watch stays armed with `keep_skipped`,
  // else it is gone too.
  auto fire = [&](watches& w, const std::string& path, watch_event_type t,
                  const std::set<int64_t>& skip = {}, bool keep_skipped = false) {
    std::set<int64_t> fired;
    auto i = w.find(path);
    if (i == w.end())
      return fired;
    std::set<int64_t> kept;
    for (auto watcher : i->second) {
      if (skip.count(watcher) == 0) {
        fired.insert(watcher);
        events.push_back({watcher, t, path});
      } else if (keep_skipped) {
        kept.insert(watcher);
      }
    }
    if (kept.empty())
      w.erase(i);
    else
      i->second = std::move(kept);
    return fired;
  };
  for (auto& [kind, path] : p.effects) {
    auto parent = znode_parent(path);
    switch (kind) {
      case coord_op::create: {
        // A watcher with an exist watch hears `created` once, even if it
        // also had a data watch.
        auto by_exists = fire(exist_watches_, path, watch_event_type::created);
        fire(data_watches_, path, watch_event_type::created, by_exists, true);
        fire(child_watches_, parent, watch_event_type::child);
        break;
      }
      case coord_op::set:
        fire(data_watches_, path, watch_event_type::changed);
        break;
      case coord_op::remove: {
        // Each watcher hears `deleted` once, whether armed by a read or a
        // listing.
        auto by_data = fire(data_watches_, path, watch_event_type::deleted);
        fire(child_watches_, path, watch_event_type::deleted, by_data);
        fire(child_watches_, parent, watch_event_type::child);
        break;
      }
      default:
        break;
    }
  }
  return events;
}

std::vector<std::pair<watch_event_type, std::string>>
coordination_core::commit(const coord_prepared& p) {
  std::vector<std::pair<watch_event_type, std::string>> events;
  for (auto& f : commit_watched(p))
    events.emplace_back(f.type, std::move(f.path));
  return events;
}

void coordination_core::clear_watches() {
  data_watches_.clear();
  exist_watches_.clear();
  child_watches_.clear();
}

void coordination_core::clear_watches(int64_t watcher) {
  for (auto* w : {&data_watches_, &exist_watches_, &child_watches_})
    for (auto i = w->begin(); i != w->end();) {
      i->second.erase(watcher);
      i = i->second.empty() ? w->erase(i) : std::next(i);
    }
}

} // namespace caftx
