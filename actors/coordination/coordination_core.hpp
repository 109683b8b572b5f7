// The pure core of a coordination store (docs/coordination-store.md): a
// znode tree with ZooKeeper's semantics, without CAF, clock or disk. The
// local store (local_store.hpp) and a simulated store drive it:
//   prepare(ops)  -> checks every op against the committed tree and computes
//                    the new state of each touched znode (nothing changes);
//   (persist)     -> the shell writes the persistent part durably;
//   commit()      -> applies it and returns the watch events that fire.
// One write is prepared at a time: the shell prepares the next only after
// the previous one was committed.
//
// Semantics follow ZooKeeper 3.8's server (PrepRequestProcessor, DataTree):
// the rc order of each op, multi all-or-nothing under one zxid with per-op
// results [ZOK.., failed rc, ZRUNTIMEINCONSISTENCY..], sequential names from
// the parent's count of child creates ("%010d"), no children for ephemerals, one-shot
// data / exist / child watches, each armed by a watcher (the session that
// read; the local store has one, the simulator's ZooKeeper one per node).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/coordination_types.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// One znode: its data and stat (num_children and data_length are derived
/// when it is read). stat.cversion is stored as ZooKeeper's DataTree keeps
/// it, the number of child creates; stat_of() reports creates + deletes.
struct znode {
  std::string data;
  znode_stat stat;
  std::set<std::string> children; // names
};

/// A write checked against the tree and not yet applied.
struct coord_prepared {
  zrc rc = zrc::ZOK;
  std::vector<coord_op_result> results; // one per op, as ZooKeeper reports them
  int64_t zxid = 0;                     // the write's zxid; 0 if it failed
  /// The new state of every touched znode (nullopt: deleted), by path.
  std::map<std::string, std::optional<znode>> changes;
  /// What happened, in op order, for the watches: (kind, path), kind one of
  /// coord_op::create / set / remove.
  std::vector<std::pair<int8_t, std::string>> effects;
  bool ok() const { return rc == zrc::ZOK; }
};

/// The stored value of a persistent znode (storage/FORMAT.md, "Coordination
/// store"): version byte 1, czxid, mzxid, pzxid, ctime, mtime (int64),
/// version, cversion (child creates), aversion (int32), little-endian, then
/// the data.
std::string encode_znode_value(const znode& n);
/// KAFKA_STORAGE_ERROR naming `key` if `bytes` is short or of another version.
status_or<znode> decode_znode_value(const std::string& key, const std::string& bytes);

/// The stored last zxid (`meta/last_zxid`): int64 little-endian, 8 bytes.
std::string encode_zxid_value(int64_t zxid);
/// KAFKA_STORAGE_ERROR if `bytes` is not 8 bytes long.
status_or<int64_t> decode_zxid_value(const std::string& bytes);

class coordination_core {
public:
  /// An empty tree: only "/" (czxid 0).
  coordination_core();

  // -- loading -------------------------------------------------------------

  /// Adds a stored znode (children are linked from the paths; parents may
  /// come later). Used when a store loads its persistent znodes.
  void load(const std::string& path, znode node);
  /// The last zxid handed out (the next write gets last_zxid() + 1).
  void set_last_zxid(int64_t zxid) { last_zxid_ = zxid; }
  int64_t last_zxid() const { return last_zxid_; }

  // -- reads (each may arm a one-shot watch) ---------------------------------

  /// get: rc ZOK / ZNONODE / ZBADARGUMENTS; a data watch only if present.
  /// `watcher` names who armed a watch (a session id; 0 for the one
  /// watcher of a local store).
  zrc get(const std::string& path, bool watch, std::string& data, znode_stat& stat,
          int64_t watcher = 0);
  /// exists: rc ZOK / ZNONODE / ZBADARGUMENTS; with watch a data watch if
  /// present, an exist watch (fires created) if absent.
  zrc exists(const std::string& path, bool watch, znode_stat& stat, int64_t watcher = 0);
  /// get_children: sorted names; rc ZOK / ZNONODE / ZBADARGUMENTS; a child
  /// watch only if present.
  zrc get_children(const std::string& path, bool watch, std::vector<std::string>& children,
                   znode_stat& stat, int64_t watcher = 0);

  // -- writes ------------------------------------------------------------------

  /// Checks `ops` in order as one transaction of `session` at `now_ms`.
  coord_prepared prepare(const std::vector<coord_op>& ops, int64_t session, int64_t now_ms) const;
  /// The deletion of every ephemeral of `session` as one transaction (the
  /// session ended); rc ZOK, results empty; zxid 0 if it had none.
  coord_prepared prepare_session_end(int64_t session) const;
  /// A watch that fired: whose it was, what happened, where.
  struct fired_watch {
    int64_t watcher;
    watch_event_type type;
    std::string path;
  };
  /// Applies a successful prepared write; returns the watch events that
  /// fire, in op order (for one op, by watcher); each watch fires once and
  /// is then gone.
  std::vector<fired_watch> commit_watched(const coord_prepared& p);
  /// commit_watched() for a store with one watcher: the events alone.
  std::vector<std::pair<watch_event_type, std::string>> commit(const coord_prepared& p);

  /// The committed znode at `path`, or nullptr.
  const znode* find(const std::string& path) const;
  /// The stat of `n` as read (num_children, data_length filled in).
  static znode_stat stat_of(const znode& n);
  /// Every znode, by path (for tests and the simulation's checks).
  const std::map<std::string, znode>& nodes() const { return nodes_; }
  /// Drops every watch (the session that armed them ended).
  void clear_watches();
  /// Drops the watches `watcher` armed (its session ended).
  void clear_watches(int64_t watcher);

private:
  std::map<std::string, znode> nodes_;
  int64_t last_zxid_ = 0;
  // Path -> the watchers that armed a watch there.
  using watches = std::map<std::string, std::set<int64_t>>;
  watches data_watches_;  // get / exists on a present znode
  watches exist_watches_; // exists on an absent path
  watches child_watches_;
};

} // namespace caftx
