// The ZooKeeper coordination store (docs/coordination-store.md): the
// requests of runtime/coordination_messages.hpp served by a ZooKeeper
// ensemble through the C client (libzookeeper_mt, asynchronous API only),
// as Kafka's ZooKeeper mode uses it (kafka.zookeeper.ZooKeeperClient).
//
// Threads: ZooKeeper's completion thread runs every completion and watcher;
// they only forward a message to this actor (caf::anon_send) and return.
// No scheduler thread blocks on ZooKeeper: zookeeper_init (it resolves
// host names), the creation of the chroot and zookeeper_close (it joins the
// client's threads) run on a blocking actor of their own.
//
// Session (ZooKeeperClient's): the owner gets coord_session_event
// connected(id) once the session is established; connecting(id) when the
// connection is lost (the client reconnects by itself and keeps the
// session if it is back within the session timeout); expired(old id) when
// the ensemble expired it, after which the store closes that handle and
// opens a new session by itself: connected(new id). Requests made while
// not connected answer at once: ZCONNECTIONLOSS while connecting (and
// before the first connect), ZSESSIONEXPIRED between expiry and the new
// session, ZCLOSING once closing. In-flight requests of a lost connection
// answer ZCONNECTIONLOSS (outcome unknown) within the session timeout.
#pragma once

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

namespace caftx {

struct zookeeper_store_options {
  /// zookeeper.connect: "host:port,host:port/chroot". The chroot (if any)
  /// is created first (with its parents, as persistent empty znodes) over
  /// a short-lived session without chroot; paths of requests and events
  /// are relative to it.
  std::string connect;
  /// zookeeper.session.timeout.ms (Kafka's default 18000); the server
  /// clamps it to [2, 20] x its tickTime.
  int32_t session_timeout_ms = 18000;
  /// Receives coord_watch_event and coord_session_event.
  caf::actor owner;
};

/// Spawns the ZooKeeper store; it connects in the background (a connect
/// string the client cannot parse leaves it unconnected: requests answer
/// ZCONNECTIONLOSS, and stderr names the string). An exit
/// message (other than kill) answers in-flight requests ZCONNECTIONLOSS and
/// closes the handle in the background; coord_close_request waits for them
/// (at most one session timeout) and replies once the session is closed.
/// Every request is answered: one still unanswered after twice the session
/// timeout gets ZCONNECTIONLOSS (outcome unknown), whatever the client
/// does with it later.
caf::actor spawn_zookeeper_store(caf::actor_system& sys, zookeeper_store_options opts);

/// Splits "h:p,h:p/chroot" into hosts and chroot ("" if none or "/").
std::pair<std::string, std::string> split_zookeeper_connect(const std::string& connect);

} // namespace caftx
