// The drill hook of a node (caftx.drills.enable, docs/node.md §Drill hook):
// cut the node off from named peer nodes and from ZooKeeper while it goes
// on serving its clients, then heal, as a network partition would. Off by
// default; a node without it has no gate in any message's way.
//
// A cut is made where messages arrive: every handle the node publishes
// (its partitions, coordinators and broker) is a gate that drops what a
// cut peer's process sends, unanswered, as lost packets would be; the
// peer's requests time out. A two-way cut asks the peer to drop this
// node's messages too. ZooKeeper is cut by pointing the node's client at
// an address where nothing listens: the connection drops, the session
// expires on the ensemble after zookeeper.session.timeout.ms, and after
// the heal the client learns it expired (Kafka's broker sees the same on a
// real partition).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/node_id.hpp>

#include "runtime/broker_messages.hpp"
#include "runtime/fault_point.hpp"

namespace caftx {

/// What one node is cut off from now. Thread-safe: gates read it on every
/// message, the broker changes it.
class network_cuts {
public:
  /// Drops messages from node `peer` (a caftx node id) from now on.
  void cut(int32_t peer);
  void heal(int32_t peer);
  std::vector<int32_t> cut_peers() const;
  bool is_cut(int32_t peer) const;

  /// `process` (a CAF node: one run of a caftx-node process) is node
  /// `peer`: learned from its hello and from connecting to it, so that a
  /// peer restarted while cut is cut too.
  void learn(const caf::node_id& process, int32_t peer);
  /// Whether a message from `process` is dropped: it belongs to a cut peer.
  bool drops(const caf::node_id& process) const;

  /// The ZooKeeper store now in use (each new controller session spawns
  /// one); it is cut at once if ZooKeeper is cut.
  void set_store(caf::actor store);
  /// Cuts (true) or heals (false) the node's ZooKeeper connection.
  void cut_zookeeper(bool cut);
  bool zookeeper_cut() const;

private:
  mutable std::mutex mtx_;
  std::set<int32_t> cut_;
  std::map<caf::node_id, int32_t> peer_of_;
  caf::actor store_;
  bool zookeeper_cut_ = false;
};

/// The fault points armed by drill requests (drill_fault_request):
/// `caftx-node` with caftx.drills.enable installs one as its process's
/// fault handler. Thread-safe: points are hit on actor threads.
class fault_drills {
public:
  /// Arms `req` (its point checked by the caller), replacing a drill of
  /// the same point armed before.
  void arm(const drill_fault_request& req);
  /// Takes back the drill armed at `point`, if it has not fired yet.
  void disarm(const std::string& point);
  /// The fault handler: the drill armed at `point` whose filter `detail`
  /// matches is disarmed and acts — the process dies (SIGKILL to itself:
  /// this does not return), or crash_here; anything else proceeds.
  fault::action on_hit(const char* point, const void* detail);

private:
  std::mutex mtx_;
  std::map<std::string, drill_fault_request> armed_;
};

/// Installs `drills` as the process's fault handler (fault::set_handler):
/// before any actor runs.
void install_fault_drills(std::shared_ptr<fault_drills> drills);

/// A gate in front of `target` (same node): passes every message on
/// (requests keep their sender, so replies go straight back) unless its
/// sender's process belongs to a cut peer; then it is dropped unanswered.
/// Drill requests always pass: they are the drill's control, not traffic.
/// The gate stops when `target` does, with its exit reason, so monitors of
/// the gate see what monitors of the target would.
caf::actor spawn_drill_gate(caf::actor_system& sys, std::shared_ptr<const network_cuts> cuts,
                            caf::actor target);

} // namespace caftx
