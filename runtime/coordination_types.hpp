// Value types of the coordination store (docs/coordination-store.md): a
// tree of znodes with ZooKeeper's semantics, the coordination service of
// Kafka's ZooKeeper mode (kafka.zk.KafkaZkClient). Return codes, create
// flags, event types and session states carry ZooKeeper's names and
// numbers (zookeeper.h of the C client, org.apache.zookeeper.KeeperException
// .Code, Watcher.Event), so logs read the same as ZooKeeper's.
// Plain C++: used by the pure store core and by the messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace caftx {

/// ZooKeeper's return codes (zookeeper.h `ZOO_ERRORS`, KeeperException.Code):
/// same names, same numbers.
enum class zrc : int32_t {
  ZOK = 0,
  ZSYSTEMERROR = -1,
  ZRUNTIMEINCONSISTENCY = -2, // multi: an op after the failed one (rolled back)
  ZDATAINCONSISTENCY = -3,
  ZCONNECTIONLOSS = -4,       // outcome UNKNOWN: the request may have been applied
  ZMARSHALLINGERROR = -5,
  ZUNIMPLEMENTED = -6,
  ZOPERATIONTIMEOUT = -7,
  ZBADARGUMENTS = -8,         // malformed path, delete of "/", ...
  ZINVALIDSTATE = -9,         // the client's handle is expired or closed
  ZAPIERROR = -100,
  ZNONODE = -101,
  ZNOAUTH = -102,
  ZBADVERSION = -103,
  ZNOCHILDRENFOREPHEMERALS = -108,
  ZNODEEXISTS = -110,
  ZNOTEMPTY = -111,
  ZSESSIONEXPIRED = -112,
  ZINVALIDCALLBACK = -113,
  ZINVALIDACL = -114,
  ZAUTHFAILED = -115,
  ZCLOSING = -116,
  ZNOTHING = -117,
  ZSESSIONMOVED = -118,
  ZNOTREADONLY = -119,
  ZEPHEMERALONLOCALSESSION = -120,
  ZNOWATCHER = -121,
  ZRECONFIGDISABLED = -123,
  ZTHROTTLEDOP = -127,
};

/// ZooKeeper's name, e.g. "ZBADVERSION"; "ZUNKNOWN(<n>)" for other numbers.
std::string to_string(zrc rc);

/// Create flags as in zookeeper.h (ZOO_EPHEMERAL = 1, ZOO_SEQUENCE = 2);
/// 0 is a persistent znode. Other bits are ZBADARGUMENTS.
constexpr int32_t znode_persistent = 0;
constexpr int32_t znode_ephemeral = 1;
constexpr int32_t znode_sequential = 2;

/// ZooKeeper's Stat (zookeeper.jute.h `struct Stat`). Zxids are the
/// transaction ids of the store (one per successful write or multi);
/// times in milliseconds since the epoch; versions count changes since
/// the znode's creation.
struct znode_stat {
  int64_t czxid = 0;           // zxid of the create (a usable znode epoch)
  int64_t mzxid = 0;           // zxid of the last set (or the create)
  int64_t pzxid = 0;           // zxid of the last child create or delete
  int64_t ctime = 0;
  int64_t mtime = 0;
  int32_t version = 0;         // data version: +1 per set
  int32_t cversion = 0;        // child changes: creates + deletes (as ZooKeeper reports it)
  int32_t aversion = 0;        // ACL version (always 0: no ACLs here)
  int64_t ephemeral_owner = 0; // owning session id; 0 for a persistent znode
  int32_t data_length = 0;
  int32_t num_children = 0;
  friend bool operator==(const znode_stat& a, const znode_stat& b) {
    return a.czxid == b.czxid && a.mzxid == b.mzxid && a.pzxid == b.pzxid && a.ctime == b.ctime
           && a.mtime == b.mtime && a.version == b.version && a.cversion == b.cversion
           && a.aversion == b.aversion && a.ephemeral_owner == b.ephemeral_owner
           && a.data_length == b.data_length && a.num_children == b.num_children;
  }
};

/// One operation of a multi (zoo_check_op_init, zoo_create_op_init,
/// zoo_set_op_init, zoo_delete_op_init). `version` -1 means any version
/// (for check too, as ZooKeeper's server treats it).
struct coord_op {
  enum kind_t : int8_t { check = 0, create = 1, set = 2, remove = 3 };
  int8_t kind = check;
  std::string path;
  std::string data;        // create, set
  int32_t flags = 0;       // create: znode_ephemeral | znode_sequential
  int32_t version = -1;    // check, set, remove

  static coord_op check_version(std::string path, int32_t version) {
    return {check, std::move(path), {}, 0, version};
  }
  static coord_op create_node(std::string path, std::string data, int32_t flags = 0) {
    return {create, std::move(path), std::move(data), flags, -1};
  }
  static coord_op set_data(std::string path, std::string data, int32_t version = -1) {
    return {set, std::move(path), std::move(data), 0, version};
  }
  static coord_op remove_node(std::string path, int32_t version = -1) {
    return {remove, std::move(path), {}, 0, version};
  }
};

/// The result of one op of a multi, as ZooKeeper reports it: ops before
/// the failed one ZOK, the failed one its code, those after it
/// ZRUNTIMEINCONSISTENCY; nothing applied unless all are ZOK. `path` is the
/// created name (create), `stat` the new stat (set).
struct coord_op_result {
  zrc rc = zrc::ZOK;
  std::string path;
  znode_stat stat;
};

/// Watch event types (zookeeper.h ZOO_*_EVENT, Watcher.Event.EventType).
enum class watch_event_type : int32_t {
  created = 1,  // exists-watch on an absent path: it was created
  deleted = 2,  // data or child watch: the znode was deleted
  changed = 3,  // data watch: set
  child = 4,    // child watch: a child was created or deleted
};

/// Session states (zookeeper.h ZOO_*_STATE, Watcher.Event.KeeperState).
enum class session_state : int32_t {
  connecting = 1,  // connection lost, the client reconnects; the session may live on
  connected = 3,
  expired = -112,  // the session is gone: its ephemerals and watches with it
  closed = 999,    // closed by the store's owner
};

const char* to_string(watch_event_type t);
const char* to_string(session_state s);

/// ZooKeeper's path rules (PathUtils.validatePath) for a path without a
/// sequential suffix: starts with '/', no empty component, no trailing
/// '/' except the root, no "." or ".." components, no NUL.
bool valid_znode_path(const std::string& path);

/// The parent of a valid path ("/" for "/a"); "" for "/".
std::string znode_parent(const std::string& path);

} // namespace caftx
