// caftx::node — one broker node embedded in a C++ application: the broker
// actor, the controller actor (over ZooKeeper in a cluster, over the local
// store in the node's database otherwise: a cluster of one), a partition
// leader per topic-partition it leads, a supervised transaction
// coordinator shard per `__transaction_state` partition and a group
// coordinator per `__consumer_offsets` partition it leads, all over one
// LevelDB database in config.data_dir. Starting a node on a directory
// recovers everything an earlier node acknowledged there, whether that
// node stopped cleanly or was killed.
//
// Thread-safety: start/stop/create_topic may be called from any one thread
// at a time; the actor handles may be used from anywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/broker/node_events.hpp"
#include "config/config.hpp"
#include "runtime/status.hpp"

namespace leveldb {
class Env;
}

namespace caftx {

namespace metrics {
class registry;
}
struct node_context;
class actor_directory;
class fault_drills;

/// Options for embedding and tests.
struct node_options {
  /// Durable writes on a background writer thread (default). Set false
  /// under CAF's deterministic test scheduler.
  bool background_writer = true;
  /// Wall-clock milliseconds; nullptr means std::chrono::system_clock.
  std::function<int64_t()> clock_ms;
  /// stop() blocks until every actor of the node has terminated. Set false
  /// under the deterministic scheduler (run it, then destroy the node).
  bool wait_on_stop = true;
  /// LevelDB environment of the node's store; nullptr means the real disk.
  /// Tests pass one that fails writes on demand.
  leveldb::Env* env = nullptr;
  /// After a failed write, the store reopens its database at most this
  /// often (node_store_options::reopen_backoff_ms).
  int64_t storage_reopen_backoff_ms = 1000;
  /// A network between the node's components and their peers, for the
  /// simulator: called with a stable address ("partition:orders-0",
  /// "txn_coordinator:3", "group_coordinator:7") and the actor behind it
  /// (the component's supervisor); the handle it returns is what the node
  /// hands to clients and what its components use to reach each other. The
  /// same address is published again, with the new actor, after a restart
  /// of the node. Empty: the actors themselves.
  std::function<caf::actor(const std::string& address, const caf::actor& actor)> network;
  /// Receives the node's operator events (see node_events.hpp); empty:
  /// dropped. Component failures then still go to stderr.
  node_event_sink events;
  /// The lowest level `events` takes (caftx-node: its log.level): events
  /// on hot paths (a follower's fetch) are not even built below it.
  node_event_level events_from = node_event_level::trace;
  /// Who the node is (Kafka's node.id, its cluster, its advertised
  /// listener): answered to caftx's handshake (cluster_hello_request) and
  /// named in events. Defaults fit an embedded node.
  int32_t node_id = 0;
  std::string cluster_id = "caftx";
  std::string advertised_listener;

  // -- cluster mode (docs/node.md §Cluster mode) ------------------------------
  /// Set: the node runs in a cluster. It spawns its coordination store
  /// through this (spawn_zookeeper_store for zookeeper.connect) with the
  /// node's controller actor as `owner`, registers /nodes/<node_id> with
  /// the advertised endpoint below, takes part in the controller election,
  /// and leads the partitions and coordinator shards the controller gives
  /// it, at the controller's leader epochs; topics live in the store, not
  /// in the node's data directory. Empty: the embedded single node, whose
  /// controller runs over the local store (spawn_local_store) in the
  /// node's own database; start() then returns once the node leads every
  /// partition and coordinator shard (unless wait_on_stop is false).
  std::function<caf::actor(caf::actor owner)> spawn_store;
  /// Where other nodes and clients connect (advertised.listeners).
  std::string advertised_host;
  uint16_t advertised_port = 0;
  /// Where Kafka clients connect (the PLAINTEXT:// entry of
  /// advertised.listeners), registered with the node so that every node's
  /// Metadata answer lists it; port 0: the node serves no Kafka listener.
  std::string kafka_advertised_host;
  uint16_t kafka_advertised_port = 0;
  std::string rack;
  /// Cluster mode: how long a /nodes/<node_id> of another session is
  /// waited for before the node counts as a duplicate (its session
  /// timeout plus a margin: a SIGKILLed predecessor's znode goes with its
  /// session).
  int64_t duplicate_wait_ms = 0;
  /// Cluster mode, for the simulator: how the broker reaches the broker
  /// of another node at its advertised host and port instead of connecting
  /// through the CAF middleman. Returns that broker's handle, or a null
  /// handle while it cannot be reached (the broker retries, as after a
  /// failed connect). Empty: the middleman.
  std::function<caf::actor(const std::string& host, uint16_t port)> connect_peer;
  /// Cluster mode: the controller's draws in [0, bound) for a new topic's
  /// replica assignment (Kafka's AdminUtils random start index and
  /// replica shift). Empty: random; the simulator draws them from its seed.
  std::function<int32_t(int32_t bound)> random;
  /// Cluster mode: the node cannot go on (another live node registered
  /// this node.id). Called once, on an actor thread; must not block.
  std::function<void(const status& why)> on_fatal;
  /// The process's fault drills (drill_fault_request), installed as its
  /// fault handler by caftx-node when caftx.drills.enable is set; null:
  /// the node refuses fault drills (an embedding application's own fault
  /// handler, the simulator's say, stays untouched).
  std::shared_ptr<fault_drills> faults;
  /// Where the node's actors report their metrics (docs/metrics.md; caftx-node
  /// serves it on metrics.listeners). Null: the node keeps none.
  std::shared_ptr<metrics::registry> metrics;
};

class node {
public:
  /// Opens config.data_dir and spawns the node's actors on `sys`, whose
  /// config must have had register_message_types() called. Errors:
  /// INVALID_CONFIG for an empty data_dir, KAFKA_STORAGE_ERROR if the
  /// database cannot be opened (another node holds it, corrupt metadata,
  /// another storage format), REQUEST_TIMED_OUT if the embedded node's
  /// controller did not hand it every partition within request.timeout.ms.
  static status_or<std::unique_ptr<node>> start(caf::actor_system& sys, node_config config,
                                                node_options opts = {});

  /// Stops the node (see stop()).
  ~node();
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  /// The broker: send it metadata_request, find_coordinator_request,
  /// create_topic_request. Clients (producer, consumer) bootstrap from it.
  const caf::actor& broker() const { return broker_; }
  /// What to publish on the node's listener for peers and remote clients:
  /// the broker, or with caftx.drills.enable the gate in front of it that
  /// can drop a cut peer's messages (docs/node.md §Drill hook).
  const caf::actor& published_broker() const { return published_broker_; }
  /// Which partitions this node leads, and their leaders' handles (the
  /// Kafka listener sends Produce, Fetch and ListOffsets to them).
  std::shared_ptr<const actor_directory> directory() const;

  /// CreateTopics, blocking up to 30 s, with topic configs (Kafka's
  /// `retention.ms`, `retention.bytes`; config/config.hpp topic_config).
  /// Errors: TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REQUEST
  /// (name), INVALID_CONFIG (naming the key and range), REQUEST_TIMED_OUT.
  status create_topic(const std::string& name, int32_t partitions,
                      const properties& configs = {});

  /// DeleteTopics, blocking up to 30 s: returns once the topic is gone
  /// (admin_client::delete_topic for the errors).
  status delete_topic(const std::string& name);

  /// The supervisor of transaction coordinator shard `shard` (drills).
  caf::actor coordinator_supervisor(int32_t shard) const;
  /// Components whose supervisor gave up after exceeding
  /// caftx.supervisor.max.restarts within caftx.supervisor.restart.window.ms
  /// ("txn-coordinator-7: gave up after 5 restarts"), and those stopped for
  /// good by a corrupt read ("partition orders-0: KAFKA_STORAGE_ERROR:
  /// reading keys ...: Corruption: ..."); empty when healthy.
  std::vector<std::string> failed_components() const;

  /// Terminates every actor of the node and closes its database. Writes
  /// that were acknowledged are on disk; nothing else is flushed. Idempotent.
  void stop();

  const node_config& config() const;
  caf::actor_system& system() const { return *sys_; }

private:
  node(caf::actor_system& sys, std::shared_ptr<node_context> ctx, node_options opts);
  static status_or<std::unique_ptr<node>> start_cluster_mode(caf::actor_system& sys,
                                                             std::shared_ptr<node_context> ctx,
                                                             node_options opts);

  caf::actor_system* sys_;
  std::shared_ptr<node_context> ctx_;
  node_options opts_;
  caf::actor broker_;
  caf::actor published_broker_;
  caf::actor controller_;
  bool stopped_ = false;
};

} // namespace caftx
