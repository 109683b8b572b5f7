// The messages of the coordination store (docs/coordination-store.md): one
// interface with ZooKeeper's semantics, served by the ZooKeeper adapter
// (actors/coordination/zookeeper_store.hpp) and by the local store on the
// node's LevelDB (actors/coordination/local_store.hpp). Each request is one
// message and gets exactly one reply message; results carry ZooKeeper's
// return code (zrc). Watch and session events go, as messages, to the
// store's owner (the actor given at spawn), never as replies.
//
// Rules every caller follows (ZooKeeper's, as Kafka's KafkaZkClient):
// - ZCONNECTIONLOSS means the outcome is UNKNOWN: the write may have been
//   applied. Re-read and compare (or make the write idempotent).
// - ZSESSIONEXPIRED: the session and its ephemerals and watches are gone;
//   wait for the next coord_session_event{connected} (a new session id),
//   re-create ephemerals, re-read everything and re-arm watches.
// - Watches are one-shot: an event fires once; read again with watch = true
//   to re-arm. Events of one store arrive in the order of its writes.
// All types are registered by register_message_types() (runtime/messages.hpp).
#pragma once

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/coordination_types.hpp"

namespace caftx {

/// The drill hook (caftx.drills.enable; actors/broker/network_drill.hpp),
/// to a ZooKeeper store, with a bool: true = from now on the client
/// connects to nowhere (the connection drops, the session expires on the
/// ensemble after its timeout), false = to the configured ensemble again.
/// Local only (never sent between processes); only the ZooKeeper store
/// takes it.
using zookeeper_drill_cut_atom = caf::atom_constant<caf::atom("zkdrillcut")>;

/// create(path, data, flags) (zoo_acreate2). With znode_sequential the
/// name gets a 10-digit suffix: how many children the parent ever had
/// created ("/a/n-0000000003"; deletes do not count).
/// Reply coord_create_response; rc: ZOK, ZNONODE (no parent), ZNODEEXISTS,
/// ZNOCHILDRENFOREPHEMERALS (parent is ephemeral), ZBADARGUMENTS (bad path
/// or flags), ZCONNECTIONLOSS (unknown outcome), ZSESSIONEXPIRED.
struct coord_create_request {
  std::string path;
  std::string data;
  int32_t flags = znode_persistent;
};

/// `path` is the created name (differs from the request's for sequential
/// znodes), `stat` the new znode's stat.
struct coord_create_response {
  zrc rc = zrc::ZOK;
  std::string path;
  znode_stat stat;
};

/// get(path) (zoo_aget). With watch = true and the znode present, a one-shot
/// data watch fires `changed` or `deleted` once. Reply coord_get_response;
/// rc: ZOK, ZNONODE (no watch set), ZCONNECTIONLOSS, ZSESSIONEXPIRED.
struct coord_get_request {
  std::string path;
  bool watch = false;
};

struct coord_get_response {
  zrc rc = zrc::ZOK;
  std::string data;
  znode_stat stat;
};

/// exists(path) (zoo_aexists). With watch = true a one-shot watch is set in
/// both cases: `created` if absent, `changed`/`deleted` if present. Reply
/// coord_stat_response; rc: ZOK, ZNONODE, ZCONNECTIONLOSS, ZSESSIONEXPIRED.
struct coord_exists_request {
  std::string path;
  bool watch = false;
};

/// set(path, data, version) (zoo_aset); version -1 means any. Reply
/// coord_stat_response with the new stat; rc: ZOK, ZNONODE, ZBADVERSION,
/// ZCONNECTIONLOSS (unknown outcome), ZSESSIONEXPIRED.
struct coord_set_request {
  std::string path;
  std::string data;
  int32_t version = -1;
};

struct coord_stat_response {
  zrc rc = zrc::ZOK;
  znode_stat stat;
};

/// delete(path, version) (zoo_adelete); version -1 means any. Reply
/// coord_rc_response; rc: ZOK, ZNONODE, ZBADVERSION, ZNOTEMPTY,
/// ZBADARGUMENTS ("/"), ZCONNECTIONLOSS (unknown outcome), ZSESSIONEXPIRED.
struct coord_delete_request {
  std::string path;
  int32_t version = -1;
};

/// get_children(path) (zoo_aget_children2). With watch = true and the znode
/// present, a one-shot child watch fires `child` once when a child is
/// created or deleted, or `deleted` when the znode itself is. Reply
/// coord_children_response: child names (not paths), sorted; rc: ZOK,
/// ZNONODE, ZCONNECTIONLOSS, ZSESSIONEXPIRED.
struct coord_get_children_request {
  std::string path;
  bool watch = false;
};

struct coord_children_response {
  zrc rc = zrc::ZOK;
  std::vector<std::string> children;
  znode_stat stat;
};

/// multi(ops) (zoo_amulti): all ops or none, under one zxid. Reply
/// coord_multi_response: rc is the failed op's code (ZOK if all passed),
/// results one per op as ZooKeeper reports them (coord_op_result): e.g.
/// [ZBADVERSION, ZRUNTIMEINCONSISTENCY] for a failed check before a set,
/// Kafka's controller fence. With ZCONNECTIONLOSS/ZSESSIONEXPIRED the
/// results are empty (unknown outcome).
struct coord_multi_request {
  std::vector<coord_op> ops;
};

struct coord_multi_response {
  zrc rc = zrc::ZOK;
  std::vector<coord_op_result> results;
};

/// sync(path) (zoo_async): later reads of this store see every write the
/// service committed before. Reply coord_rc_response; rc: ZOK,
/// ZCONNECTIONLOSS, ZSESSIONEXPIRED.
struct coord_sync_request {
  std::string path = "/";
};

struct coord_rc_response {
  zrc rc = zrc::ZOK;
};

/// The store's current session (for logs and for tests that expire it).
/// Reply coord_session_response: state, the session id (0 while none is
/// established) and its password (zoo_client_id; empty for the local store).
struct coord_session_request {};

struct coord_session_response {
  session_state state = session_state::connecting;
  int64_t session_id = 0;
  std::string password;
};

/// Ends the session (zookeeper_close: its ephemerals are deleted) and stops
/// the store. Requests still in flight are answered first (ZCONNECTIONLOSS
/// if their completion did not come). Reply coord_rc_response{ZOK}, then the
/// store exits with exit_reason::normal.
struct coord_close_request {};

/// To the owner: a one-shot watch fired. `path` as the owner named it
/// (relative to the chroot).
struct coord_watch_event {
  watch_event_type type = watch_event_type::changed;
  std::string path;
};

/// To the owner: the session's state changed. In order: connected (id) at
/// start; connecting while the connection is lost (the session may live
/// on: back to connected with the SAME id); expired (the old id) when the
/// service dropped the session, then connected with a NEW id once the store
/// has opened a fresh session by itself.
struct coord_session_event {
  session_state state = session_state::connecting;
  int64_t session_id = 0;
};

// -- inspectors ------------------------------------------------------------

#define CAFTX_COORD_INSPECT(type, ...)                                                             \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type& x) {                                 \
    return f(caf::meta::type_name("caftx::" #type), __VA_ARGS__);                                  \
  }

CAFTX_COORD_INSPECT(znode_stat, x.czxid, x.mzxid, x.pzxid, x.ctime, x.mtime, x.version,
                    x.cversion, x.aversion, x.ephemeral_owner, x.data_length, x.num_children)
CAFTX_COORD_INSPECT(coord_op, x.kind, x.path, x.data, x.flags, x.version)
CAFTX_COORD_INSPECT(coord_op_result, x.rc, x.path, x.stat)
CAFTX_COORD_INSPECT(coord_create_request, x.path, x.data, x.flags)
CAFTX_COORD_INSPECT(coord_create_response, x.rc, x.path, x.stat)
CAFTX_COORD_INSPECT(coord_get_request, x.path, x.watch)
CAFTX_COORD_INSPECT(coord_get_response, x.rc, x.data, x.stat)
CAFTX_COORD_INSPECT(coord_exists_request, x.path, x.watch)
CAFTX_COORD_INSPECT(coord_set_request, x.path, x.data, x.version)
CAFTX_COORD_INSPECT(coord_stat_response, x.rc, x.stat)
CAFTX_COORD_INSPECT(coord_delete_request, x.path, x.version)
CAFTX_COORD_INSPECT(coord_get_children_request, x.path, x.watch)
CAFTX_COORD_INSPECT(coord_children_response, x.rc, x.children, x.stat)
CAFTX_COORD_INSPECT(coord_multi_request, x.ops)
CAFTX_COORD_INSPECT(coord_multi_response, x.rc, x.results)
CAFTX_COORD_INSPECT(coord_sync_request, x.path)
CAFTX_COORD_INSPECT(coord_rc_response, x.rc)
CAFTX_COORD_INSPECT(coord_session_response, x.state, x.session_id, x.password)
CAFTX_COORD_INSPECT(coord_watch_event, x.type, x.path)
CAFTX_COORD_INSPECT(coord_session_event, x.state, x.session_id)

#undef CAFTX_COORD_INSPECT

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coord_session_request&) {
  return f(caf::meta::type_name("caftx::coord_session_request"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coord_close_request&) {
  return f(caf::meta::type_name("caftx::coord_close_request"));
}

/// Every coordination message type, for register_message_types().
#define CAFTX_COORDINATION_MESSAGE_TYPES(X)                                                        \
  X(znode_stat)                                                                                    \
  X(coord_op)                                                                                      \
  X(coord_op_result)                                                                               \
  X(coord_create_request)                                                                          \
  X(coord_create_response)                                                                         \
  X(coord_get_request)                                                                             \
  X(coord_get_response)                                                                            \
  X(coord_exists_request)                                                                          \
  X(coord_set_request)                                                                             \
  X(coord_stat_response)                                                                           \
  X(coord_delete_request)                                                                          \
  X(coord_get_children_request)                                                                    \
  X(coord_children_response)                                                                       \
  X(coord_multi_request)                                                                           \
  X(coord_multi_response)                                                                          \
  X(coord_sync_request)                                                                            \
  X(coord_rc_response)                                                                             \
  X(coord_session_request)                                                                         \
  X(coord_session_response)                                                                        \
  X(coord_close_request)                                                                           \
  X(coord_watch_event)                                                                             \
  X(coord_session_event)

} // namespace caftx
