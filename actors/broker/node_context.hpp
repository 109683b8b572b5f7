// What every actor of one node shares: its settings, its store, its clock
// and the directory of the node's actors (who leads which partition).
// The directory is internally synchronized; everything else is immutable
// after start.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "actors/broker/network_drill.hpp"
#include "actors/broker/node_events.hpp"
#include "config/config.hpp"
#include "runtime/ids.hpp"
#include "runtime/actor_interfaces.hpp"
#include "runtime/metrics.hpp"
#include "storage/node_store.hpp"

namespace caftx {

/// A replica's part in its partition as the controller's last LeaderAndIsr
/// for it stated (Kafka's LeaderAndIsrPartitionState): node ids, the
/// leader epoch, the ISR at the partition epoch (the state znode's version)
/// and the assignment (the first replica is the preferred leader).
struct replica_assignment {
  int32_t leader = -1;
  int32_t leader_epoch = -1;
  std::vector<int32_t> isr;
  std::vector<int32_t> replicas;
  int32_t partition_epoch = 0;
};

/// Handles of the node's actors. Thread-safe.
class actor_directory {
public:
  /// The address a handle is published under and what publishing does.
  using network_fn = std::function<caf::actor(const std::string& address, const caf::actor& actor)>;

  actor_directory() = default;
  /// Every handle set below is published through `network` (see
  /// node_options::network) before it is stored.
  explicit actor_directory(network_fn network) : network_(std::move(network)) {}

  void set_topic(const std::string& name, std::vector<partition_actor> partitions);
  /// Partition leaders of a user topic; nullopt if the topic is unknown.
  std::optional<std::vector<partition_actor>> topic(const std::string& name) const;
  std::vector<std::string> topic_names() const;
  /// Where WriteTxnMarkers for `tp` go: its partition leader, or the group
  /// coordinator of a `__consumer_offsets` partition; a null handle when
  /// none is known here now: the partition has no leader, or this node
  /// has not learned of its topic yet (its controller's requests did not
  /// reach it). Markers then wait and retry. Kafka drops the markers of a
  /// partition missing from the coordinator's metadata cache, taking it
  /// for deleted; caftx drops them only for a topic the controller said is
  /// being deleted (topic_deleted): a node with a stale view would
  /// otherwise commit a transaction without that partition (its offsets
  /// lost, its records never stable).
  marker_target marker_destination(const topic_partition& tp) const;
  /// The controller's UpdateMetadata said `topic` is being deleted
  /// (leader_during_delete): its handles are forgotten and it is known as
  /// deleted until a topic of that name is made known again (ensure_topic).
  void remove_topic(const std::string& topic);
  bool topic_deleted(const std::string& topic) const;

  txn_coordinator_actor txn_coordinator(int32_t shard) const;
  group_coordinator_actor group_coordinator(int32_t partition) const;

  /// Every actor of the node, for shutdown. One added after close() is
  /// stopped at once (spawned by an actor that had not stopped yet).
  void add(const caf::actor& a);
  /// The node stops: every actor added so far; later ones stop as added.
  std::vector<caf::actor> close();
  /// Forgets `a` (a replica stopped by the controller).
  void remove(const caf::actor& a);
  std::vector<caf::actor> all() const;

  // -- cluster mode (docs/node.md §Cluster mode) ------------------------------
  // The directory is then the node's view of the whole cluster: handles of
  // the partitions and coordinators it leads, and proxies of those other
  // nodes lead, learned from their brokers (a null handle: no leader known
  // now). The broker keeps it in step with the controller's requests.

  /// Makes `topic` known with at least `partitions` partitions (new ones
  /// without a leader).
  void ensure_topic(const std::string& topic, int32_t partitions);
  /// The leader of one partition (null: none known now). `local` handles
  /// are published through the network function, proxies are stored as
  /// they are.
  void set_partition(const topic_partition& tp, partition_actor leader, bool local);
  void set_txn_coordinator(int32_t shard, txn_coordinator_actor a, bool local);
  void set_group_coordinator(int32_t partition, group_coordinator_actor a, bool local);
  /// The leader epoch the controller gave this node for `tp` (Kafka's
  /// LeaderAndIsr leaderEpoch); nullopt when the node does not lead it.
  void assign_leader_epoch(const topic_partition& tp, int32_t leader_epoch);
  /// The partitions set with `local` (led by this node), for shutdown.
  std::vector<partition_actor> local_partitions() const;
  /// The leader of `tp` if this node leads it (set with `local`), else a
  /// null handle: Kafka's clients send Produce, Fetch and ListOffsets only
  /// to a partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere).
  partition_actor local_leader(const topic_partition& tp) const;
  std::optional<int32_t> assigned_leader_epoch(const topic_partition& tp) const;
  /// The controller's last LeaderAndIsr for a replica of `tp` here
  /// (leader or follower); nullopt before the first one.
  void assign_replica(const topic_partition& tp, replica_assignment a);
  /// The node's broker (a partition leader's AlterIsr goes through it).
  void set_broker(caf::actor broker);
  caf::actor broker() const;
  std::optional<replica_assignment> assigned_replica(const topic_partition& tp) const;

private:
  mutable std::mutex mtx_;
  std::map<std::string, std::vector<partition_actor>> topics_;
  std::vector<txn_coordinator_actor> txn_;
  std::vector<group_coordinator_actor> group_;
  std::vector<caf::actor> all_;
  bool closed_ = false;
  std::map<topic_partition, int32_t> assigned_;
  std::map<topic_partition, replica_assignment> replicas_;
  caf::actor broker_;
  std::map<topic_partition, partition_actor> local_;
  std::set<std::string> deleted_;
  network_fn network_;

  template <class Handle>
  Handle publish(const std::string& address, const Handle& a) const {
    if (!network_ || !a)
      return a;
    return caf::actor_cast<Handle>(network_(address, caf::actor_cast<caf::actor>(a)));
  }
};

/// Where the node's supervisors escalate (the node is their parent): a
/// supervisor whose child exceeded its restart intensity stops restarting
/// it, answers its requests as unavailable, and reports here; the node
/// lists the failed components (node::failed_components()) and writes one
/// line to stderr. Thread-safe.
class node_health {
public:
  void gave_up(const std::string& component, int32_t restarts);
  /// A component stopped for good by a corrupt read (actors/common/
  /// storage_fault.hpp): listed as "component: KAFKA_STORAGE_ERROR: ...".
  void storage_failed(const std::string& component, const std::string& error);
  /// "component: gave up after N restarts" or "component: <storage
  /// error>", in the order they failed.
  std::vector<std::string> failed() const;
  /// Where failures are reported besides failed(): set before the node's
  /// actors start; empty = one line on stderr.
  void set_events(node_event_sink sink) { events_ = std::move(sink); }

private:
  void report(const std::string& line) const;
  node_event_sink events_;
  mutable std::mutex mtx_;
  std::vector<std::string> failed_;
};

struct node_context {
  node_config config;
  std::shared_ptr<node_store> store;
  std::shared_ptr<actor_directory> directory;
  std::shared_ptr<node_health> health = std::make_shared<node_health>();
  /// Milliseconds of wall-clock time for persisted timestamps and
  /// transaction timeouts; tests replace it with simulated time.
  std::function<int64_t()> clock_ms;
  /// Operator events (node_options::events); empty = dropped.
  node_event_sink events;
  /// node_options::node_id, cluster_id, advertised_listener.
  int32_t node_id = 0;
  std::string cluster_id = "caftx";
  std::string advertised_listener;
  /// Leaders and coordinators exist where the controller's LeaderAndIsr
  /// put them, at its leader epochs (docs/node.md §Cluster mode); every
  /// node started by node::start runs so, the embedded one included.
  bool cluster_mode = false;
  /// The embedded single node: the controller runs over the local store
  /// in the node's own database, and the broker creates the internal
  /// topics as soon as the controller has spoken, so that node::start can
  /// return with every leader and coordinator in place.
  bool embedded = false;
  /// Cluster mode: the node's controller actor (producer id blocks); set
  /// before any coordinator starts.
  controller_actor controller;
  /// node_options::connect_peer; empty: the CAF middleman.
  std::function<caf::actor(const std::string& host, uint16_t port)> connect_peer;
  /// The drill hook's cuts (caftx.drills.enable); null when drills are off.
  std::shared_ptr<network_cuts> cuts;
  /// The fault drills (caftx.drills.enable in caftx-node); null otherwise.
  std::shared_ptr<fault_drills> faults;
  /// node_options::events_from.
  node_event_level events_from = node_event_level::trace;
  /// node_options::metrics: where the node's actors report (docs/metrics.md);
  /// null: no metrics.
  std::shared_ptr<metrics::registry> metrics;
  /// emit_event(events, ...).
  void emit(node_event_level level, const char* kind, std::string text) const {
    emit_event(events, level, kind, std::move(text));
  }
  /// Whether an event of `level` is taken: frequent ones check this before
  /// their text is built.
  bool wants(node_event_level level) const { return events && level >= events_from; }
};

} // namespace caftx
