#include "actors/broker/broker_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "actors/broker/metadata_cache_core.hpp"
#include "actors/broker/node_context.hpp"
#include "actors/broker/node_fetch.hpp"
#include "actors/common/durable_queue.hpp"
#include "actors/common/lost_connection.hpp"
#include "actors/common/node_metrics.hpp"
#include "actors/controller/controller_core.hpp"
#include "actors/coordinator/txn_coordinator_actor.hpp"
#include "actors/group/group_coordinator_actor.hpp"
#include "actors/partition/partition_actor.hpp"
#include "actors/partition/replica_fetcher.hpp"
#include "runtime/controller_messages.hpp"
#include "runtime/broker_messages.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/txn_coordinator_messages.hpp"
#include "runtime/partitioner.hpp"
#include "storage/codec.hpp"
#include "storage/partition_removal.hpp"

namespace caftx {

status validate_topic_name(const std::string& name) {
  if (name.empty() || name.size() > 249)
    return {error_code::invalid_request, "topic name must have 1 to 249 characters"};
  if (name == "." || name == "..")
    return {error_code::invalid_request, "topic name cannot be '.' or '..'"};
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return {error_code::invalid_request,
              "topic name '" + name + "' may only contain [a-zA-Z0-9._-]"};
  if (name.rfind("__", 0) == 0)
    return {error_code::invalid_request, "topic names starting with '__' are internal"};
  return {};
}

namespace {

using controller::node_id;

// Cluster mode (docs/node.md §Cluster mode): another node as this broker
// knows it.
struct peer_node {
  controller::endpoint ep;
  broker_actor broker;   // its broker, once connected (a proxy)
  bool connecting = false;
  // The first failed attempt since the last connection was logged as a
  // warning (a wrong advertised.listeners host shows at the default level);
  // the retries after it log at debug.
  bool unreachable_warned = false;
  // Controller requests for this node, oldest first: sent one at a time and
  // each kept until the node's broker acknowledged it, as Kafka's
  // ControllerChannelManager (RequestSendThread) sends and retries, so that
  // a request lost with a connection is sent again and none overtakes an
  // older one (an UpdateMetadata carries no version of its own).
  std::deque<caf::message> outbox;
  bool sending = false; // outbox.front() is on its way
  bool reconnect_armed = false; // a reconnect_atom is on its way
};

// A replica of a partition on this node by the controller's LeaderAndIsr:
// its leader, or a follower (its replica fetcher knows of which node).
struct local_replica {
  int32_t leader_epoch = -1;
  partition_actor leader; // the partition's supervisor
  caf::actor coordinator; // internal topics, when leading: the coordinator's supervisor
  bool leading = true;
};

// A partition another node leads: the leader and epoch its handle is for.
struct remote_leader {
  node_id node = -1;
  int32_t leader_epoch = -1;
  friend bool operator==(const remote_leader& a, const remote_leader& b) {
    return a.node == b.node && a.leader_epoch == b.leader_epoch;
  }
};

// A request waiting until every partition of a topic has a leader here
// (whole_node: of every topic, the internal ones included).
struct topic_waiter {
  std::string topic;
  bool whole_node = false;
  int64_t deadline_ms = 0;
  std::function<void(bool ready)> then;
  /// Ready only with at least this many partitions (CreatePartitions).
  int32_t partitions = 0;
};

struct cluster_part {
  controller_actor controller;
  std::optional<metadata_cache_core> cache;
  std::vector<caf::message> early; // controller requests before our registration
  node_id controller_id = -1;
  std::map<node_id, peer_node> peers;
  std::map<topic_partition, local_replica> local;
  std::map<node_id, replica_fetcher_actor> fetchers; // by leader node
  std::set<topic_partition> spawning;
  std::map<topic_partition, remote_leader> wanted;   // handle to learn
  std::map<topic_partition, remote_leader> resolved; // handle in the directory
  std::vector<topic_waiter> waiters;
  std::set<std::string> creating_internal;
  // Why an internal topic is not created yet (too few live nodes for its
  // replication factor), and at which live node count that was logged.
  std::map<std::string, std::pair<size_t, std::string>> internal_refused;
  std::set<node_id> resolving; // a node_handles_request to it is in flight
  bool resolve_timer = false;
  bool waiter_timer = false;
};

struct broker_state {
  durable_queue dq;
  std::shared_ptr<const node_context> ctx;
  cluster_part cluster;
  static inline const char* name = "caftx.broker";
};

using broker_ptr = broker_impl_actor::stateful_pointer<broker_state>;


// ListTransactions goes to every broker in Kafka, which answers for the
// `__transaction_state` partitions it leads: here, every shard of the node.
// A shard that is loading or down makes the whole answer its error.
caf::result<list_transactions_response> list_transactions(broker_ptr self,
                                                          const list_transactions_request& req) {
  auto& ctx = *self->state.ctx;
  auto shards = ctx.config.transaction_state_log_num_partitions;
  auto rp = self->make_response_promise<list_transactions_response>();
  auto merged = std::make_shared<list_transactions_response>();
  auto remaining = std::make_shared<int32_t>(shards);
  auto add = [rp, merged, remaining](list_transactions_response r) mutable {
    if (r.error != error_code::none && merged->error == error_code::none) {
      merged->error = r.error;
      merged->message = std::move(r.message);
    }
    if (r.error == error_code::none) {
      merged->unknown_state_filters = std::move(r.unknown_state_filters);
      for (auto& t : r.transactions)
        merged->transactions.push_back(std::move(t));
    }
    if (--*remaining > 0)
      return;
    if (merged->error != error_code::none)
      merged->transactions.clear();
    std::sort(merged->transactions.begin(), merged->transactions.end(),
              [](const transaction_listing& a, const transaction_listing& b) {
                return a.transactional_id < b.transactional_id;
              });
    rp.deliver(std::move(*merged));
  };
  if (!ctx.directory->topic(transaction_state_topic))
    return list_transactions_response{}; // no transaction yet
  for (int32_t s = 0; s < shards; ++s) {
    auto shard = ctx.directory->txn_coordinator(s);
    if (!shard) {
      add({error_code::coordinator_not_available,
           "shard " + std::to_string(s) + " has no leader now", {}, {}});
      continue;
    }
    auto h = self->request(shard, std::chrono::milliseconds(ctx.config.request_timeout_ms), req);
    h.then([add, w = watch_connection(self, h.id(), shard)](
             list_transactions_response& r) mutable { add(std::move(r)); },
            [add, s](caf::error&) mutable {
              add({error_code::coordinator_not_available,
                   "shard " + std::to_string(s) + " did not answer", {}, {}});
            });
  }
  return rp;
}

// -- cluster mode (docs/node.md §Cluster mode) -------------------------------------

using forward_atom = broker_forward_atom;
using set_controller_atom = broker_set_controller_atom;
using registered_atom = broker_registered_atom;
using resolve_atom = broker_resolve_atom;
using reconnect_atom = broker_reconnect_atom;
using waiters_atom = broker_waiters_atom;
using spawn_retry_atom = broker_spawn_retry_atom;

constexpr auto peer_retry = std::chrono::milliseconds(500);
// The connect and hello of a peer connection give up after this (at most
// request.timeout.ms), as Kafka's socket.connection.setup.timeout.ms
// (10000) bounds a connection attempt: when two nodes connect to each
// other at the same moment CAF may drop the hello sent over the
// connection it closes, and the attempt is then made again this soon.
constexpr int64_t peer_setup_timeout_ms = 10000;
constexpr auto resolve_retry = std::chrono::milliseconds(100);

// Replicas of an internal topic (transaction.state.log.replication.factor,
// offsets.topic.replication.factor); the embedded single node has one.
int32_t internal_replication_factor(const node_context& ctx, const std::string& topic) {
  if (ctx.embedded)
    return 1;
  return topic == transaction_state_topic ? ctx.config.transaction_state_log_replication_factor
                                          : ctx.config.offsets_topic_replication_factor;
}

topic_config internal_topic_config(const node_context& ctx, const std::string& topic) {
  // Kafka creates its internal topics compacted and never trimmed by time
  // or size: a coordinator's load then reads about one record per key.
  auto& config = ctx.config;
  auto internal = *topic_config::parse({}, config);
  // transaction.state.log.min.isr for __transaction_state, the node's
  // min.insync.replicas for __consumer_offsets (as Kafka); never above
  // the topic's replicas, so the embedded node's one replica takes writes.
  internal.min_insync_replicas = std::min(
    topic == transaction_state_topic ? config.transaction_state_log_min_isr
                                     : config.min_insync_replicas,
    internal_replication_factor(ctx, topic));
  internal.retention_ms = -1;
  internal.retention_bytes = -1;
  internal.cleanup_delete = false;
  internal.cleanup_compact = true;
  return internal;
}

// The overrides DescribeConfigs reports for `topic`: its stored configs;
// for an internal topic what the node runs it with (internal_topic_config),
// as Kafka creates them with these overrides.
properties described_overrides(const node_context& ctx, const std::string& topic,
                               const std::map<std::string, std::string>& stored) {
  properties out(stored.begin(), stored.end());
  if (!is_internal_topic(topic))
    return out;
  auto internal = internal_topic_config(ctx, topic);
  out["cleanup.policy"] = "compact";
  out["min.insync.replicas"] = std::to_string(internal.min_insync_replicas);
  out["retention.ms"] = std::to_string(internal.retention_ms);
  out["retention.bytes"] = std::to_string(internal.retention_bytes);
  return out;
}

// Every partition of a topic has a leader handle.
bool all_led(const std::vector<partition_actor>& partitions) {
  return !partitions.empty()
         && std::all_of(partitions.begin(), partitions.end(),
                        [](const partition_actor& a) { return static_cast<bool>(a); });
}

bool topic_ready(broker_ptr self, const std::string& topic, int32_t partitions = 0) {
  if (topic.empty())
    return false;
  auto t = self->state.ctx->directory->topic(topic);
  return t && static_cast<int32_t>(t->size()) >= partitions && all_led(*t);
}

// The embedded node leads everything: a controller has sent its metadata,
// and every topic it named, and both internal topics, have a leader here.
bool node_ready(broker_ptr self) {
  auto& c = self->state.cluster;
  if (!c.cache || c.controller_id < 0)
    return false;
  if (!topic_ready(self, transaction_state_topic) || !topic_ready(self, consumer_offsets_topic))
    return false;
  for (auto& name : self->state.ctx->directory->topic_names())
    if (!topic_ready(self, name))
      return false;
  return true;
}

// Answers the waiters whose topic is ready or whose time is up.
void check_waiters(broker_ptr self) {
  auto& c = self->state.cluster;
  auto now = self->state.ctx->clock_ms();
  std::vector<topic_waiter> keep;
  std::vector<std::pair<std::function<void(bool)>, bool>> done;
  for (auto& w : c.waiters) {
    bool ready = w.whole_node ? node_ready(self) : topic_ready(self, w.topic, w.partitions);
    if (ready || now >= w.deadline_ms)
      done.emplace_back(std::move(w.then), ready);
    else
      keep.push_back(std::move(w));
  }
  c.waiters = std::move(keep);
  for (auto& [f, ready] : done)
    f(ready);
}

// Sends `tick` to the broker after resolve_retry, unless one is on its way
// (`armed`) or nothing waits for it.
template <class Atom>
void arm_timer(broker_ptr self, bool& armed, bool needed, Atom tick) {
  if (armed || !needed)
    return;
  armed = true;
  self->delayed_send(self, resolve_retry, tick);
}

void arm_waiter_timer(broker_ptr self) {
  auto& c = self->state.cluster;
  arm_timer(self, c.waiter_timer, !c.waiters.empty(), waiters_atom::value);
}

void waiter_tick(broker_ptr self) {
  self->state.cluster.waiter_timer = false;
  check_waiters(self);
  arm_waiter_timer(self);
}

void add_waiter(broker_ptr self, topic_waiter w) {
  self->state.cluster.waiters.push_back(std::move(w));
  arm_waiter_timer(self);
}

// `then(true)` once `topic` has at least `partitions` partitions here and
// each has a leader handle, `then(false)` after `timeout_ms` (-1: the
// request timeout).
void wait_for_topic(broker_ptr self, const std::string& topic, std::function<void(bool)> then,
                    int32_t partitions = 0, int64_t timeout_ms = -1) {
  auto& ctx = *self->state.ctx;
  if (topic_ready(self, topic, partitions)) {
    then(true);
    return;
  }
  auto wait = timeout_ms < 0 ? ctx.config.request_timeout_ms : timeout_ms;
  add_waiter(self, {topic, false, ctx.clock_ms() + wait, std::move(then), partitions});
}

// `f` after `delay_ms` (a waiter for no topic).
void after(broker_ptr self, int64_t delay_ms, std::function<void()> f) {
  add_waiter(self, {"", false, self->state.ctx->clock_ms() + delay_ms, [f](bool) { f(); }});
}

void resolve(broker_ptr self);
void connect_peer(broker_ptr self, node_id id);
void ensure_internal_topic(broker_ptr self, const std::string& topic);

// The directory's handles of a partition another node leads: its leader
// and, for an internal topic, the coordinator on it (null: none known).
void set_handle(broker_ptr self, const topic_partition& tp, partition_actor leader,
                caf::actor coordinator) {
  auto& dir = *self->state.ctx->directory;
  dir.set_partition(tp, std::move(leader), false);
  // The coordinator's kind follows from the topic.
  if (tp.topic == transaction_state_topic)
    dir.set_txn_coordinator(tp.partition, caf::actor_cast<txn_coordinator_actor>(coordinator),
                            false);
  else if (tp.topic == consumer_offsets_topic)
    dir.set_group_coordinator(tp.partition,
                              caf::actor_cast<group_coordinator_actor>(coordinator), false);
}

void schedule_resolve(broker_ptr self) {
  auto& c = self->state.cluster;
  arm_timer(self, c.resolve_timer, !c.wanted.empty(), resolve_atom::value);
}

// Asks the leaders' brokers for the handles of the partitions they lead
// (node_handles_request), one request per node.
void resolve(broker_ptr self) {
  auto& c = self->state.cluster;
  std::map<node_id, std::vector<topic_partition>> by_node;
  for (auto& [tp, want] : c.wanted)
    by_node[want.node].push_back(tp);
  for (auto& [id, tps] : by_node) {
    auto p = c.peers.find(id);
    if (p == c.peers.end() || !p->second.broker) {
      connect_peer(self, id);
      continue;
    }
    if (!c.resolving.insert(id).second)
      continue; // its answer comes first; the retry timer asks again
    auto peer = p->second.broker;
    auto h = self->request(peer, std::chrono::milliseconds(self->state.ctx->config.request_timeout_ms),
                           node_handles_request{tps});
    h.then(
        [self, id, w = watch_connection(self, h.id(), peer)](node_handles_response& r) {
          auto& c = self->state.cluster;
          c.resolving.erase(id);
          for (auto& h : r.handles) {
            auto w = c.wanted.find(h.tp);
            if (w == c.wanted.end() || !(w->second == remote_leader{id, h.leader_epoch}))
              continue; // another leader or epoch by now
            set_handle(self, h.tp, h.leader, h.coordinator);
            c.resolved[h.tp] = w->second;
            c.wanted.erase(w);
          }
          schedule_resolve(self);
          check_waiters(self);
        },
        [self, id](caf::error&) {
          self->state.cluster.resolving.erase(id);
          schedule_resolve(self);
        });
  }
  schedule_resolve(self);
}

// Drops the directory's handle of `tp` (no leader known now).
void forget_handle(broker_ptr self, const topic_partition& tp) {
  set_handle(self, tp, {}, {});
}

// One reconnect_atom for node `id` after peer_retry, unless one is on its
// way: every failed attempt, lost connection and unacknowledged request
// asks for one, and a node that stays down must not collect a timer chain
// for each of them.
void schedule_reconnect(broker_ptr self, node_id id) {
  auto& p = self->state.cluster.peers[id];
  if (p.reconnect_armed)
    return;
  p.reconnect_armed = true;
  self->delayed_send(self, peer_retry, reconnect_atom::value, id);
}

// Sends the oldest controller request queued for node `id` once connected,
// and the next once its broker acknowledged it (its handler ran: the
// empty reply of a request without a result). A request that got no
// acknowledgement (lost with the connection, timed out) is sent again
// after peer_retry; the receiver fences a repeated one by its epochs.
void send_controller_requests(broker_ptr self, node_id id) {
  auto& c = self->state.cluster;
  auto i = c.peers.find(id);
  if (i == c.peers.end() || i->second.sending || i->second.outbox.empty())
    return;
  auto& p = i->second;
  if (!p.broker) {
    connect_peer(self, id);
    return;
  }
  p.sending = true;
  auto peer = caf::actor_cast<caf::actor>(p.broker);
  auto h = self->request(peer, std::chrono::milliseconds(self->state.ctx->config.request_timeout_ms),
                         p.outbox.front());
  h.then(
    [self, id, w = watch_connection(self, h.id(), peer)]() {
      auto& p = self->state.cluster.peers[id];
      p.sending = false;
      if (!p.outbox.empty())
        p.outbox.pop_front();
      send_controller_requests(self, id);
    },
    [self, id](caf::error&) {
      self->state.cluster.peers[id].sending = false;
      schedule_reconnect(self, id);
    });
}

void peer_connected(broker_ptr self, node_id id, caf::actor dynamic) {
  auto& c = self->state.cluster;
  auto& p = c.peers[id];
  p.connecting = false;
  auto broker = caf::actor_cast<broker_actor>(dynamic);
  p.broker = broker;
  if (auto& cuts = self->state.ctx->cuts)
    cuts->learn(broker.node(), id);
  self->monitor(broker);
  p.unreachable_warned = false;
  self->state.ctx->emit(node_event_level::info, "peer_connected",
                        "[Broker id=" + std::to_string(self->state.ctx->node_id)
                          + "] connected to node " + std::to_string(id) + " at "
                          + p.ep.host + ":" + std::to_string(p.ep.port));
  send_controller_requests(self, id);
  resolve(self);
}

// Connects to a live node's broker over the middleman, then caftx's hello
// as a node of this cluster (role 1).
void connect_peer(broker_ptr self, node_id id) {
  auto& c = self->state.cluster;
  auto i = c.peers.find(id);
  if (i == c.peers.end() || i->second.broker || i->second.connecting || i->second.ep.port == 0)
    return;
  i->second.connecting = true;
  auto ep = i->second.ep;
  auto& ctx = *self->state.ctx;
  auto timeout = std::chrono::milliseconds(
    std::min<int64_t>(ctx.config.request_timeout_ms, peer_setup_timeout_ms));
  auto failed = [self, id](const std::string& why) {
    auto& c = self->state.cluster;
    auto i = c.peers.find(id);
    if (i == c.peers.end())
      return;
    i->second.connecting = false;
    auto level = i->second.unreachable_warned ? node_event_level::debug : node_event_level::warn;
    i->second.unreachable_warned = true;
    self->state.ctx->emit(level, "peer_unreachable",
                          "[Broker id=" + std::to_string(self->state.ctx->node_id)
                            + "] cannot reach node " + std::to_string(id) + " at "
                            + i->second.ep.host + ":" + std::to_string(i->second.ep.port)
                            + " (its advertised listener), retrying: " + why);
    schedule_reconnect(self, id);
  };
  auto hello = [self, id, timeout, failed](caf::actor broker) {
    if (!broker)
      return failed("no broker published there");
    auto& ctx = *self->state.ctx;
    cluster_hello_request hello{1, ctx.cluster_id, ctx.node_id, wire_build_id()};
    self->request(broker, timeout, hello)
      .then(
        [self, id, broker, failed](const cluster_hello_response& r) {
          if (r.error != error_code::none)
            return failed(std::string(to_string(r.error)) + ": " + r.message);
          if (r.node_id != id)
            return failed("the node there is node " + std::to_string(r.node_id));
          peer_connected(self, id, broker);
        },
        [self, failed](const caf::error& e) { failed(self->system().render(e)); });
  };
  if (ctx.connect_peer) {
    hello(ctx.connect_peer(ep.host, ep.port));
    return;
  }
  self->request(self->system().middleman().actor_handle(), timeout, caf::connect_atom::value,
                ep.host, ep.port)
    .then(
      [hello](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
        hello(caf::actor_cast<caf::actor>(ptr));
      },
      [self, failed](const caf::error& e) { failed(self->system().render(e)); });
}

// A request of the controller to a node: ours is handled here, another
// node's goes to its broker (once connected).
void forward_to_node(broker_ptr self, node_id target, controller::endpoint ep, caf::message m) {
  auto& ctx = *self->state.ctx;
  if (target == ctx.node_id) {
    // A controller request, as a dynamic message: the broker's own
    // handlers take it (its type is one of the broker_actor requests).
    caf::anon_send(caf::actor_cast<caf::actor>(self), std::move(m));
    return;
  }
  auto& p = self->state.cluster.peers[target];
  if (ep.port != 0)
    p.ep = ep;
  p.outbox.push_back(std::move(m));
  send_controller_requests(self, target);
}

void emit_role(broker_ptr self, const topic_partition& tp, const std::string& what) {
  auto& ctx = *self->state.ctx;
  ctx.emit(is_internal_topic(tp.topic) ? node_event_level::debug : node_event_level::info,
           "replica_role", "[ReplicaManager broker=" + std::to_string(ctx.node_id) + "] " + what);
}

// The coordinator of an internal partition led here (its supervisor),
// registered in the directory.
caf::actor spawn_coordinator(broker_ptr self, const topic_partition& tp) {
  auto ctx = self->state.ctx;
  auto& dir = *ctx->directory;
  auto& sys = self->system();
  caf::actor a;
  if (tp.topic == transaction_state_topic) {
    auto coordinator = spawn_coordinator_supervisor(sys, ctx, tp.partition);
    a = caf::actor_cast<caf::actor>(coordinator);
    dir.add(a);
    dir.set_txn_coordinator(tp.partition, coordinator, true);
  } else if (tp.topic == consumer_offsets_topic) {
    auto coordinator = spawn_supervised_group_coordinator(sys, ctx, tp.partition);
    a = caf::actor_cast<caf::actor>(coordinator);
    dir.add(a);
    dir.set_group_coordinator(tp.partition, coordinator, true);
  }
  return a;
}

void follow(broker_ptr self, const topic_partition& tp, node_id leader, int32_t epoch);

// The fetcher of this node for partitions `leader` leads.
replica_fetcher_actor& fetcher_for(broker_ptr self, node_id leader) {
  auto& c = self->state.cluster;
  auto& f = c.fetchers[leader];
  if (!f) {
    f = spawn_replica_fetcher(self->system(), self->state.ctx, leader);
    self->state.ctx->directory->add(caf::actor_cast<caf::actor>(f));
  }
  return f;
}

void stop_fetching(broker_ptr self, const topic_partition& tp) {
  for (auto& [id, f] : self->state.cluster.fetchers)
    caf::anon_send(f, fetcher_remove{tp});
}

// Spawns the replica of `tp` at the controller's leader epoch `epoch`: the
// leader (and its coordinator, for an internal topic) when `leader` is
// this node, else a follower of `leader`.
void spawn_local(broker_ptr self, const topic_partition& tp, int32_t epoch, const topic_config& tc,
                 node_id leader) {
  auto& c = self->state.cluster;
  auto ctx = self->state.ctx;
  auto& dir = *ctx->directory;
  local_replica r;
  r.leader_epoch = epoch;
  r.leader = spawn_supervised_partition(self->system(), ctx, tp, tc);
  dir.add(caf::actor_cast<caf::actor>(r.leader));
  if (leader != ctx->node_id) {
    r.leading = false;
    c.local[tp] = r;
    follow(self, tp, leader, epoch);
    return;
  }
  dir.set_partition(tp, r.leader, true);
  r.coordinator = spawn_coordinator(self, tp);
  c.local[tp] = r;
  c.wanted.erase(tp);
  c.resolved.erase(tp);
  emit_role(self, tp, "became leader of " + to_string(tp) + " at leader epoch "
                        + std::to_string(epoch));
  check_waiters(self);
}

// Spawns the replica of `tp` with its topic's configs (read from the
// controller for a user topic), unless it is being spawned already.
void spawn_replica(broker_ptr self, const topic_partition& tp, int32_t epoch, node_id leader) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  if (!c.spawning.insert(tp).second)
    return; // its configs are being read; it starts as assigned by then
  if (is_internal_topic(tp.topic)) {
    c.spawning.erase(tp);
    spawn_local(self, tp, epoch, internal_topic_config(ctx, tp.topic), leader);
    return;
  }
  auto h = self->request(c.controller, std::chrono::milliseconds(ctx.config.request_timeout_ms),
                         controller_topic_request{tp.topic});
  h.then(
      [self, tp, w = watch_connection(self, h.id(), c.controller)](controller_topic_response& r) {
        auto& c = self->state.cluster;
        auto& ctx = *self->state.ctx;
        c.spawning.erase(tp);
        auto a = ctx.directory->assigned_replica(tp);
        if (!a || c.local.count(tp))
          return;
        auto tc = topic_config::parse(r.configs, ctx.config);
        if (r.error != error_code::none || !tc.ok()) {
          // The store out of reach (a connection loss, the controller
          // moving) is waited out: the replica is still assigned here and
          // the controller sends no second LeaderAndIsr at this epoch.
          bool retry = r.error != error_code::none && r.error != error_code::unknown_topic_or_partition;
          ctx.emit(retry ? node_event_level::warn : node_event_level::error, "leader_refused",
                   "[ReplicaManager broker=" + std::to_string(ctx.node_id) + "] cannot host "
                     + to_string(tp) + ": "
                     + (r.error != error_code::none ? std::string(to_string(r.error)) + ": " + r.message
                                                    : tc.error().message())
                     + (retry ? " (trying again)" : ""));
          if (retry)
            self->delayed_send(self, peer_retry, spawn_retry_atom::value, tp);
          return;
        }
        spawn_local(self, tp, a->leader_epoch, *tc, a->leader);
      },
      [self, tp](caf::error& e) {
        self->state.cluster.spawning.erase(tp);
        self->state.ctx->emit(node_event_level::warn, "leader_refused",
                              "cannot read the configs of " + to_string(tp) + ": "
                                + self->system().render(e) + " (trying again)");
        self->delayed_send(self, peer_retry, spawn_retry_atom::value, tp);
      });
}

// Partition.makeLeader: a new leader epoch for a partition led here already
// re-elects it (ordered after its queued writes); its coordinator restarts
// and loads at the new epoch. A new partition is spawned, with its topic's
// configs read from the store.
void become_leader(broker_ptr self, const topic_partition& tp, int32_t epoch) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  ctx.directory->assign_leader_epoch(tp, epoch);
  if (auto i = c.local.find(tp); i != c.local.end()) {
    auto& r = i->second;
    r.leader_epoch = epoch;
    if (!r.leading) {
      // A follower promoted (Kafka's makeLeader on a follower): its
      // fetching stops, it leads at the new epoch, its coordinator loads.
      stop_fetching(self, tp);
      r.leading = true;
      ctx.directory->set_partition(tp, r.leader, true);
      c.wanted.erase(tp);
      c.resolved.erase(tp);
      if (is_internal_topic(tp.topic))
        r.coordinator = spawn_coordinator(self, tp);
      else
        self->request(r.leader, std::chrono::milliseconds(ctx.config.request_timeout_ms),
                      become_leader_request{})
          .then([](const become_leader_response&) {}, [](const caf::error&) {});
      emit_role(self, tp, "became leader of " + to_string(tp) + " at leader epoch "
                            + std::to_string(epoch));
      check_waiters(self);
      return;
    }
    if (r.coordinator)
      caf::anon_send(r.coordinator, kill_child_request{});
    else
      self->request(r.leader, std::chrono::milliseconds(ctx.config.request_timeout_ms),
                    become_leader_request{})
        .then([](const become_leader_response&) {}, [](const caf::error&) {});
    emit_role(self, tp, "leads " + to_string(tp) + " on at leader epoch " + std::to_string(epoch));
    return;
  }
  spawn_replica(self, tp, epoch, ctx.node_id);
}

// Partition.makeFollower: the replica (spawned if new) follows `leader`
// at `epoch`; a coordinator it ran stops (NOT_COORDINATOR until clients
// find the new one); the directory learns the leader's handles.
void become_follower(broker_ptr self, const topic_partition& tp, node_id leader, int32_t epoch) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  auto i = c.local.find(tp);
  if (i == c.local.end()) {
    spawn_replica(self, tp, epoch, leader);
    return;
  }
  auto& r = i->second;
  if (r.coordinator) {
    caf::anon_send_exit(r.coordinator, caf::exit_reason::user_shutdown);
    ctx.directory->remove(r.coordinator);
    r.coordinator = {};
  }
  bool was_leading = r.leading;
  r.leading = false;
  r.leader_epoch = epoch;
  if (was_leading)
    forget_handle(self, tp);
  follow(self, tp, leader, epoch);
}

void follow(broker_ptr self, const topic_partition& tp, node_id leader, int32_t epoch) {
  auto& c = self->state.cluster;
  auto& r = c.local.at(tp);
  stop_fetching(self, tp);
  remote_leader want{leader, epoch};
  bool resolving = false;
  if (auto w = c.resolved.find(tp); w == c.resolved.end() || !(w->second == want)) {
    // The previous leader's handle goes first: the fetcher waits for the
    // new one (a short retry) instead of fetching from the old leader and
    // backing off replica.fetch.backoff.ms after its refusal.
    c.resolved.erase(tp);
    forget_handle(self, tp);
    c.wanted[tp] = want;
    resolving = true;
  }
  caf::anon_send(fetcher_for(self, leader), fetcher_assign{tp, r.leader, epoch});
  if (resolving)
    resolve(self);
  emit_role(self, tp, "follows node " + std::to_string(leader) + " for " + to_string(tp)
                        + " at leader epoch " + std::to_string(epoch));
}

// StopReplica, or leadership moved elsewhere: the replica's actors stop.
void stop_local(broker_ptr self, const topic_partition& tp, const std::string& why) {
  auto& c = self->state.cluster;
  auto i = c.local.find(tp);
  if (i == c.local.end())
    return;
  auto& dir = *self->state.ctx->directory;
  for (auto& a : {i->second.coordinator, caf::actor_cast<caf::actor>(i->second.leader)})
    if (a) {
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      dir.remove(a);
    }
  bool was_leading = i->second.leading;
  c.local.erase(i);
  stop_fetching(self, tp);
  if (was_leading)
    forget_handle(self, tp);
  emit_role(self, tp, "stopped " + to_string(tp) + " (" + why + ")");
}

void apply_leader_and_isr(broker_ptr self, const controller::leader_and_isr_request& req) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  auto v = c.cache->on_leader_and_isr(req);
  if (v.error != error_code::none) {
    ctx.emit(node_event_level::warn, "request_refused",
             "[Broker id=" + std::to_string(ctx.node_id) + "] LeaderAndIsr of controller "
               + std::to_string(req.controller_id) + " refused: " + to_string(v.error) + ": "
               + v.message);
    return;
  }
  for (auto& d : v.partitions) {
    ctx.directory->ensure_topic(d.tp.topic, d.tp.partition + 1);
    if (auto* p = c.cache->replica(d.tp))
      ctx.directory->assign_replica(
        d.tp, replica_assignment{p->leader, p->leader_epoch, p->isr, p->replicas, p->partition_epoch});
    switch (d.action) {
      case replica_action::become_leader:
        become_leader(self, d.tp, d.leader_epoch);
        break;
      case replica_action::become_follower:
        if (auto* p = c.cache->replica(d.tp))
          become_follower(self, d.tp, p->leader, d.leader_epoch);
        break;
      default:
        break;
    }
  }
}

// StopReplica with delete (a topic deletion): once the replica's actors
// have terminated (so no write of theirs can land after the deletes), its
// data is deleted from the store, then the controller is told
// (replicas_deleted, Kafka's StopReplicaResponse).
void delete_replica(broker_ptr self, const topic_partition& tp) {
  auto& c = self->state.cluster;
  auto ctx = self->state.ctx;
  std::vector<caf::actor> running;
  if (auto i = c.local.find(tp); i != c.local.end())
    for (auto& a : {i->second.coordinator, caf::actor_cast<caf::actor>(i->second.leader)})
      if (a)
        running.push_back(a);
  stop_local(self, tp, "StopReplica with delete");
  ctx->directory->remove_topic(tp.topic);
  auto broker = caf::actor_cast<caf::actor>(self);
  auto remove = [ctx, broker, tp] {
    remove_partition_data(*ctx->store, tp, [ctx, broker, tp](const status& st) {
      if (!st.ok()) {
        // Not confirmed: the controller sends StopReplica again.
        ctx->emit(node_event_level::error, "replica_delete_failed",
                  "[ReplicaManager broker=" + std::to_string(ctx->node_id)
                    + "] deleting the data of " + to_string(tp) + " failed: " + st.to_string());
        return;
      }
      ctx->emit(node_event_level::info, "replica_deleted",
                "[ReplicaManager broker=" + std::to_string(ctx->node_id) + "] deleted the log of "
                  + to_string(tp));
      caf::anon_send(broker, replicas_deleted{ctx->node_id, {tp}, false});
    });
  };
  if (running.empty()) {
    remove();
    return;
  }
  auto left = std::make_shared<std::atomic<size_t>>(running.size());
  for (auto& a : running)
    a->attach_functor([left, remove] {
      if (--*left == 0)
        remove();
    });
}

void apply_stop_replica(broker_ptr self, const controller::stop_replica_request& req) {
  auto& c = self->state.cluster;
  auto v = c.cache->on_stop_replica(req);
  if (v.error != error_code::none)
    return;
  for (auto& d : v.partitions) {
    if (d.action != replica_action::stop)
      continue;
    if (d.delete_partition)
      delete_replica(self, d.tp);
    else
      stop_local(self, d.tp, "StopReplica");
  }
}

void apply_update_metadata(broker_ptr self, const controller::update_metadata_request& req) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  if (auto st = c.cache->on_update_metadata(req); !st.ok()) {
    ctx.emit(node_event_level::warn, "request_refused",
             "[Broker id=" + std::to_string(ctx.node_id) + "] UpdateMetadata of controller "
               + std::to_string(req.controller_id) + " refused: " + st.to_string());
    return;
  }
  c.controller_id = req.controller_id;
  // Every node keeps a connection to every other live node, so that
  // handles it passes on are routed directly.
  for (auto& n : req.live_nodes)
    if (n.id != ctx.node_id) {
      c.peers[n.id].ep = n.ep;
      connect_peer(self, n.id);
    }
  std::vector<std::string> deleting;
  for (auto& p : req.partitions) {
    if (p.leader == controller::leader_during_delete) {
      // The topic is being deleted: clients no longer find it here; its
      // replicas here get StopReplica with delete.
      if (!ctx.directory->topic_deleted(p.tp.topic)) {
        ctx.emit(node_event_level::info, "topic_deleting",
                 "[Broker id=" + std::to_string(ctx.node_id) + "] topic " + p.tp.topic
                   + " is being deleted");
        deleting.push_back(p.tp.topic);
      }
      c.wanted.erase(p.tp);
      c.resolved.erase(p.tp);
      ctx.directory->remove_topic(p.tp.topic);
      continue;
    }
    ctx.directory->ensure_topic(p.tp.topic, p.tp.partition + 1);
    // An ISR change at the same leader epoch (AlterIsr) reaches the
    // replicas here only.
    if (auto a = ctx.directory->assigned_replica(p.tp);
        a && a->leader_epoch == p.leader_epoch && a->partition_epoch < p.partition_epoch) {
      a->isr = p.isr;
      a->partition_epoch = p.partition_epoch;
      ctx.directory->assign_replica(p.tp, *a);
    }
    if (p.leader == ctx.node_id)
      continue; // LeaderAndIsr makes it ours
    if (auto l = c.local.find(p.tp); l != c.local.end() && l->second.leading
        && std::find(p.replicas.begin(), p.replicas.end(), ctx.node_id) == p.replicas.end())
      stop_local(self, p.tp, "led by node " + std::to_string(p.leader) + " now");
    if (auto l = c.local.find(p.tp); l != c.local.end() && l->second.leading)
      continue; // LeaderAndIsr makes it a follower first
    bool live = c.cache->live_nodes().count(p.leader) > 0;
    if (p.leader == controller::no_leader || !live) {
      c.wanted.erase(p.tp);
      c.resolved.erase(p.tp);
      forget_handle(self, p.tp);
      continue;
    }
    remote_leader want{p.leader, p.leader_epoch};
    if (auto r = c.resolved.find(p.tp); r != c.resolved.end() && r->second == want)
      continue;
    c.resolved.erase(p.tp);
    forget_handle(self, p.tp);
    c.wanted[p.tp] = want;
  }
  // The group coordinators led here drop the deleted topics' committed
  // offsets (Kafka's GroupCoordinator.onPartitionsDeleted).
  if (!deleting.empty())
    for (auto& [tp, r] : c.local)
      if (tp.topic == consumer_offsets_topic && r.leading && r.coordinator)
        caf::anon_send(r.coordinator, offsets_topics_deleted{deleting});
  if (ctx.embedded) {
    // The embedded node's coordinators exist from its start, as they did
    // before it ran a controller (Kafka creates them at the first
    // FindCoordinator instead).
    ensure_internal_topic(self, transaction_state_topic);
    ensure_internal_topic(self, consumer_offsets_topic);
  }
  resolve(self);
  check_waiters(self);
}

// Controller requests are handled in arrival order once the node knows its
// own node epoch.
template <class Request>
void on_controller_request(broker_ptr self, const Request& req) {
  auto& c = self->state.cluster;
  if (!c.cache) {
    c.early.push_back(caf::make_message(req));
    return;
  }
  if constexpr (std::is_same_v<Request, controller::leader_and_isr_request>)
    apply_leader_and_isr(self, req);
  else if constexpr (std::is_same_v<Request, controller::update_metadata_request>)
    apply_update_metadata(self, req);
  else
    apply_stop_replica(self, req);
}

// Where a request for the controller goes: this node's controller actor
// when it is the controller, else the controller's node's broker (which
// hands it on); null while no controller is known or reachable.
caf::actor controller_destination(broker_ptr self) {
  auto& c = self->state.cluster;
  if (c.controller_id == self->state.ctx->node_id)
    return caf::actor_cast<caf::actor>(c.controller);
  if (auto p = c.peers.find(c.controller_id); p != c.peers.end())
    return caf::actor_cast<caf::actor>(p->second.broker);
  return {};
}

// The node's ControlledShutdown (Kafka's KafkaServer.controlledShutdown):
// up to controlled.shutdown.max.retries + 1 attempts, each to the
// controller known now (this node's own controller actor when it is the
// controller), controlled.shutdown.retry.backoff.ms apart, until the
// controller answers NONE with nothing left to move. `done` gets the last
// answer; the node stops either way ("unclean" when the attempts ran out).
void controlled_shutdown(broker_ptr self, int32_t attempts_left, int64_t started_ms,
                         std::function<void(const controlled_shutdown_response&)> done) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  auto prefix = "[KafkaServer id=" + std::to_string(ctx.node_id) + "] ";
  auto retry = [self, attempts_left, started_ms, done, prefix](controlled_shutdown_response why) {
    auto& ctx = *self->state.ctx;
    // The controller answered, but could not move every leadership (no
    // other live in-sync replica), or the request failed.
    auto reason = why.error == error_code::none
                    ? std::to_string(why.remaining.size())
                        + " partitions still led here (no other in-sync replica is live)"
                    : status{why.error, why.message}.to_string()
                        + (why.remaining.empty()
                             ? std::string()
                             : " (" + std::to_string(why.remaining.size())
                                 + " partitions still led)");
    if (attempts_left <= 1) {
      ctx.emit(node_event_level::warn, "controlled_shutdown_failed",
               prefix + "Proceeding to do an unclean shutdown as all the controlled shutdown "
                        "attempts failed (last: "
                 + reason + ")");
      done(why);
      return;
    }
    ctx.emit(node_event_level::warn, "controlled_shutdown_retry",
             prefix + "Retrying controlled shutdown after the previous attempt failed: " + reason);
    after(self, ctx.config.controlled_shutdown_retry_backoff_ms,
          [self, attempts_left, started_ms, done] {
            controlled_shutdown(self, attempts_left - 1, started_ms, done);
          });
  };
  if (!c.cache) {
    // Never registered (ZooKeeper unreachable, a duplicate node.id): no
    // controller has given this node anything to lead.
    ctx.emit(node_event_level::info, "controlled_shutdown",
             prefix + "Skipping controlled shutdown: the node never registered, it leads nothing");
    done({error_code::none, {}, {}});
    return;
  }
  auto dest = controller_destination(self);
  if (!dest) {
    retry({error_code::not_controller, "no controller is known (or reachable) yet", {}});
    return;
  }
  controlled_shutdown_request req{ctx.node_id, c.cache->node_epoch()};
  auto h = self->request(dest, std::chrono::milliseconds(ctx.config.request_timeout_ms), req);
  h.then(
      [self, started_ms, done, retry, prefix, w = watch_connection(self, h.id(), dest)](
        const controlled_shutdown_response& r) {
        if (r.error != error_code::none || !r.remaining.empty())
          return retry(r);
        auto& ctx = *self->state.ctx;
        ctx.emit(node_event_level::info, "controlled_shutdown",
                 prefix + "Controlled shutdown request returned successfully after "
                   + std::to_string(ctx.clock_ms() - started_ms) + "ms");
        done(r);
      },
      [self, retry](const caf::error& e) {
        retry({error_code::request_timed_out, self->system().render(e), {}});
      });
}

// Sends a CreateTopics or DeleteTopics to the controller's node; retried
// while there is no controller or it moved (NOT_CONTROLLER), up to the
// request timeout.
template <class Request>
void via_controller(broker_ptr self, Request req, int64_t deadline_ms,
                    std::function<void(const txn_response&)> then) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  auto dest = controller_destination(self);
  auto retry = [self, req, deadline_ms, then](txn_response why) {
    if (self->state.ctx->clock_ms() >= deadline_ms) {
      then(why);
      return;
    }
    after(self, peer_retry.count(),
          [self, req, deadline_ms, then] { via_controller(self, req, deadline_ms, then); });
  };
  if (!dest) {
    if (c.controller_id >= 0 && c.controller_id != ctx.node_id)
      connect_peer(self, c.controller_id);
    retry({error_code::not_controller, "no controller is known yet"});
    return;
  }
  auto wait_ms = std::max<int64_t>(
    1, std::min<int64_t>(ctx.config.request_timeout_ms, deadline_ms - ctx.clock_ms()));
  auto h = self->request(dest, std::chrono::milliseconds(wait_ms), req);
  h.then(
      [then, retry, w = watch_connection(self, h.id(), dest)](const txn_response& r) {
        if (r.error == error_code::not_controller)
          retry(r);
        else
          then(r);
      },
      [self, retry](const caf::error& e) {
        retry({error_code::request_timed_out,
               "the controller did not answer: " + self->system().render(e)});
      });
}

// A topic request another node's broker handed on to this node's
// controller (via_controller); NOT_CONTROLLER when there is none here.
template <class Request>
caf::result<txn_response> to_controller(broker_ptr self, Request& req) {
  auto& c = self->state.cluster;
  if (!c.controller)
    return txn_response{error_code::not_controller, "no controller here"};
  return self->delegate(c.controller, std::move(req));
}

// Kafka creates __transaction_state and __consumer_offsets at the first
// FindCoordinator that needs them (AutoTopicCreationManager).
void ensure_internal_topic(broker_ptr self, const std::string& topic) {
  auto& c = self->state.cluster;
  auto& ctx = *self->state.ctx;
  if (ctx.directory->topic(topic) || c.creating_internal.count(topic))
    return;
  // Kafka's KafkaApis.createInternalTopic: not before enough nodes live.
  auto rf = internal_replication_factor(ctx, topic);
  auto live = c.cache ? c.cache->live_nodes().size() : 0;
  if (live < static_cast<size_t>(rf)) {
    bool txn = topic == transaction_state_topic;
    auto why = "Number of alive brokers '" + std::to_string(live)
               + "' does not meet the required replication factor '" + std::to_string(rf)
               + "' for the " + (txn ? "transactions state" : "offsets") + " topic (configured via '"
               + (txn ? "transaction.state.log.replication.factor" : "offsets.topic.replication.factor")
               + "'). This error can be ignored if the cluster is starting up and not all brokers "
                 "are up yet.";
    auto& refused = c.internal_refused[topic];
    if (refused.first != live || refused.second.empty())
      ctx.emit(node_event_level::warn, "internal_topic_refused", why);
    refused = {live, why};
    return;
  }
  c.internal_refused.erase(topic);
  c.creating_internal.insert(topic);
  auto partitions = topic == transaction_state_topic ? ctx.config.transaction_state_log_num_partitions
                                                     : ctx.config.offsets_topic_num_partitions;
  controller_create_topic_request req{topic, partitions, internal_replication_factor(ctx, topic),
                                     {{"cleanup.policy", "compact"}}};
  via_controller(self, req, ctx.clock_ms() + ctx.config.request_timeout_ms,
                        [self, topic](const txn_response&) {
                          self->state.cluster.creating_internal.erase(topic);
                        });
}

// A lost peer: the handles of what it leads are proxies of the closed
// connection; they are learned again once connected.
void peer_down(broker_ptr self, const caf::down_msg& dm) {
  auto& c = self->state.cluster;
  for (auto& [id, p] : c.peers) {
    if (!p.broker || p.broker.address() != dm.source)
      continue;
    p.broker = nullptr;
    self->state.ctx->emit(node_event_level::warn, "peer_lost",
                          "[Broker id=" + std::to_string(self->state.ctx->node_id)
                            + "] lost the connection to node " + std::to_string(id) + ": "
                            + self->system().render(dm.reason));
    for (auto r = c.resolved.begin(); r != c.resolved.end();) {
      if (r->second.node == id) {
        forget_handle(self, r->first);
        c.wanted[r->first] = r->second;
        r = c.resolved.erase(r);
      } else {
        ++r;
      }
    }
    schedule_reconnect(self, id);
  }
}

// Metadata: the topics asked for (all but the internal ones if none) with
// their leaders' handles. In cluster mode these are wherever the leaders
// are, and a partition without a leader handle here makes the topic
// LEADER_NOT_AVAILABLE (retriable). An unknown topic is created first when
// auto.create.topics.enable is on (by the controller in cluster mode), then
// the request is answered again.
caf::result<metadata_response> answer_metadata(broker_ptr self, const metadata_request& req) {
  auto& ctx = *self->state.ctx;
  std::vector<std::string> names = req.topics;
  if (names.empty())
    for (auto& n : ctx.directory->topic_names())
      if (!is_internal_topic(n))
        names.push_back(n);
  std::vector<std::string> to_create;
  metadata_response resp;
  for (auto& n : names) {
    topic_metadata tm;
    tm.name = n;
    if (auto t = ctx.directory->topic(n)) {
      tm.partitions = std::move(*t);
      if (!all_led(tm.partitions))
        tm.error = error_code::leader_not_available;
    } else if (ctx.config.auto_create_topics_enable && validate_topic_name(n).ok()) {
      to_create.push_back(n);
    } else {
      tm.error = error_code::unknown_topic_or_partition;
    }
    resp.topics.push_back(std::move(tm));
  }
  if (to_create.empty())
    return resp;
  auto rp = self->make_response_promise<metadata_response>();
  auto remaining = std::make_shared<size_t>(to_create.size());
  auto created = [self, rp, remaining, req]() mutable {
    if (--*remaining == 0)
      rp.delegate(caf::actor_cast<broker_actor>(self), req);
  };
  auto deadline = ctx.clock_ms() + ctx.config.request_timeout_ms;
  for (auto& n : to_create) {
    controller_create_topic_request c{n, ctx.config.num_partitions,
                                      ctx.config.default_replication_factor, {}};
    via_controller(self, c, deadline, [self, n, created](const txn_response&) mutable {
      wait_for_topic(self, n, [created](bool) mutable { created(); });
    });
  }
  return rp;
}


// DescribeTopics: from the metadata cache once the node has registered
// (the controller's UpdateMetadata), else from the partitions this node
// leads alone.
describe_topics_response describe_topics(broker_ptr self, const describe_topics_request& req) {
  auto& ctx = *self->state.ctx;
  auto& c = self->state.cluster;
  std::vector<std::string> names = req.topics;
  if (names.empty())
    names = c.cache ? c.cache->topic_names() : ctx.directory->topic_names();
  describe_topics_response resp;
  for (auto& n : names) {
    topic_description td;
    td.name = n;
    td.internal = is_internal_topic(n);
    if (c.cache) {
      for (auto& p : c.cache->partitions_of(n))
        td.partitions.push_back({p.tp.partition, p.leader, p.leader_epoch, p.replicas, p.isr});
    } else if (auto t = ctx.directory->topic(n)) {
      for (int32_t p = 0; p < static_cast<int32_t>(t->size()); ++p)
        td.partitions.push_back({p, (*t)[p] ? ctx.node_id : -1,
                                 ctx.directory->assigned_leader_epoch({n, p}).value_or(-1),
                                 {ctx.node_id}, {ctx.node_id}});
    }
    if (td.partitions.empty())
      td.error = error_code::unknown_topic_or_partition;
    resp.topics.push_back(std::move(td));
  }
  return resp;
}

// -- the drill hook (docs/node.md §Drill hook) ------------------------------------

drill_network_response drill_state(const node_context& ctx) {
  drill_network_response r;
  r.cut_peers = ctx.cuts->cut_peers();
  r.zookeeper_cut = ctx.cuts->zookeeper_cut();
  return r;
}

void apply_drill(broker_ptr self, const drill_network_request& req) {
  auto& ctx = *self->state.ctx;
  auto prefix = "[Broker id=" + std::to_string(ctx.node_id) + "] drill: ";
  for (auto peer : req.peers) {
    if (req.heal)
      ctx.cuts->heal(peer);
    else
      ctx.cuts->cut(peer);
    ctx.emit(node_event_level::warn, "drill_network",
             prefix + (req.heal ? "healed the cut from node " : "cut off from node ")
               + std::to_string(peer) + (req.one_way ? " (its messages to this node are dropped)" : ""));
  }
  if (req.zookeeper) {
    ctx.cuts->cut_zookeeper(!req.heal);
    ctx.emit(node_event_level::warn, "drill_network",
             prefix + (req.heal ? "healed the cut from ZooKeeper" : "cut off from ZooKeeper"));
  }
}

// A drill request: checked, then this node's half and (two-way) each
// reachable peer's half; a cut asks the peers first (while their
// messages still arrive), a heal heals here first.
caf::result<drill_network_response> drill_network(broker_ptr self, drill_network_request req) {
  auto& ctx = *self->state.ctx;
  auto refuse = [&](std::string why) {
    auto r = ctx.cuts ? drill_state(ctx) : drill_network_response{};
    r.error = error_code::invalid_request;
    r.message = std::move(why);
    return r;
  };
  if (!ctx.cuts)
    return refuse("drills are disabled on node " + std::to_string(ctx.node_id)
                  + " (caftx.drills.enable=false)");
  for (auto peer : req.peers)
    if (peer < 0 || peer == ctx.node_id)
      return refuse("node " + std::to_string(ctx.node_id) + " cannot be cut off from node "
                    + std::to_string(peer) + ": not a peer");
  if (req.zookeeper && ctx.embedded)
    return refuse("node " + std::to_string(ctx.node_id) + " has no ZooKeeper to be cut off from");
  std::vector<std::pair<int32_t, caf::actor>> asked;
  if (!req.one_way)
    for (auto peer : req.peers) {
      auto p = self->state.cluster.peers.find(peer);
      if (p != self->state.cluster.peers.end() && p->second.broker)
        asked.emplace_back(peer, caf::actor_cast<caf::actor>(p->second.broker));
    }
  if (req.heal || asked.empty())
    apply_drill(self, req);
  std::set<int32_t> unconfirmed(req.peers.begin(), req.peers.end());
  if (req.one_way)
    unconfirmed.clear();
  if (asked.empty()) {
    auto r = drill_state(ctx);
    for (auto peer : unconfirmed)
      r.message += (r.message.empty() ? "not confirmed by node " : ", node ") + std::to_string(peer);
    return r;
  }
  auto rp = self->make_response_promise<drill_network_response>();
  struct pending {
    size_t left;
    std::set<int32_t> unconfirmed;
  };
  auto state = std::make_shared<pending>(pending{asked.size(), std::move(unconfirmed)});
  auto done = [self, rp, req, state](int32_t peer, bool confirmed) mutable {
    if (confirmed)
      state->unconfirmed.erase(peer);
    if (--state->left > 0)
      return;
    if (!req.heal)
      apply_drill(self, req);
    auto r = drill_state(*self->state.ctx);
    for (auto p : state->unconfirmed)
      r.message += (r.message.empty() ? "not confirmed by node " : ", node ") + std::to_string(p);
    rp.deliver(std::move(r));
  };
  auto timeout = std::chrono::milliseconds(std::min<int64_t>(ctx.config.request_timeout_ms, 5000));
  for (auto& [peer, broker] : asked) {
    drill_network_request half{req.heal, {ctx.node_id}, false, true};
    self->request(broker, timeout, std::move(half))
      .then([done, peer = peer](const drill_network_response& r) mutable {
              done(peer, r.error == error_code::none);
            },
            [done, peer = peer](const caf::error&) mutable { done(peer, false); });
  }
  return rp;
}

// A fault drill: checked, armed in the process's fault handler.
drill_fault_response drill_fault(broker_ptr self, const drill_fault_request& req) {
  auto& ctx = *self->state.ctx;
  auto refuse = [](std::string why) {
    return drill_fault_response{error_code::invalid_request, std::move(why)};
  };
  auto node = "node " + std::to_string(ctx.node_id);
  if (!ctx.cuts)
    return refuse("drills are disabled on " + node + " (caftx.drills.enable=false)");
  if (!ctx.faults)
    return refuse(node + " has no fault drills (only caftx-node arms fault points)");
  if (!fault::enabled())
    return refuse(node + " was built without fault points (CAFTX_FAULT_POINTS off, as in Release)");
  const auto& points = fault::all_points();
  if (std::find(points.begin(), points.end(), req.point) == points.end())
    return refuse("unknown fault point '" + req.point + "'");
  if (req.disarm) {
    drill_fault_response r;
    r.still_armed = ctx.faults->disarm(req.point);
    if (r.still_armed)
      ctx.emit(node_event_level::warn, "drill_fault",
               "[Broker id=" + std::to_string(ctx.node_id) + "] drill: disarmed " + req.point
                 + " before it was hit");
    return r;
  }
  ctx.faults->arm(req);
  std::string where = req.topic.empty() ? std::string("any partition")
                                        : req.topic + (req.partition >= 0
                                                         ? "-" + std::to_string(req.partition)
                                                         : std::string(" (any partition)"));
  ctx.emit(node_event_level::warn, "drill_fault",
           "[Broker id=" + std::to_string(ctx.node_id) + "] drill: armed " + req.point + " for "
             + where + (req.control_only ? ", control batches only" : "") + ": its next hit "
             + (req.kill_node ? "kills this node's process" : "kills the actor hitting it"));
  return {};
}

broker_impl_actor::behavior_type broker_fn(broker_ptr self, std::shared_ptr<const node_context> ctx) {
  self->state.ctx = ctx;
  self->state.dq = durable_queue{ctx->store};
  self->set_down_handler([self](caf::down_msg& dm) { peer_down(self, dm); });
  return {
    [=](storage_done& done) { self->state.dq.complete(done); },
    [=](const create_topic_request& req) -> caf::result<txn_response> {
      if (auto s = validate_topic_name(req.name); !s.ok())
        return txn_response{s.code(), s.message()};
      // -1: the node's num.partitions (Kafka's CreatableTopic.numPartitions).
      auto partitions = req.partitions == -1 ? self->state.ctx->config.num_partitions
                                             : req.partitions;
      if (partitions < 1 || partitions > 10000)
        return txn_response{
          error_code::invalid_partitions,
          "partition count " + std::to_string(partitions) + " is out of range [1, 10000]"};
      if (req.replication_factor < 1 && req.replication_factor != -1)
        return txn_response{error_code::invalid_replication_factor,
                            "Replication factor must be larger than 0, or -1 to use the default "
                            "value."};
      if (self->state.ctx->directory->topic(req.name))
        return txn_response{error_code::topic_already_exists, "topic " + req.name + " already exists"};
      auto tc = topic_config::parse(req.configs, self->state.ctx->config);
      if (!tc.ok())
        return txn_response{tc.error().code(), tc.error().message()};
      // The controller creates it; answered once its leaders are known
      // here, so the caller's next Metadata finds them.
      auto rp = self->make_response_promise<txn_response>();
      auto& ctx = *self->state.ctx;
      std::map<std::string, std::string> configs(req.configs.begin(), req.configs.end());
      controller_create_topic_request c{req.name, partitions,
                                        req.replication_factor == -1
                                          ? self->state.ctx->config.default_replication_factor
                                          : req.replication_factor,
                                        std::move(configs)};
      auto name = req.name;
      via_controller(self, std::move(c), ctx.clock_ms() + ctx.config.request_timeout_ms,
                            [self, rp, name](const txn_response& r) mutable {
                              if (r.error != error_code::none) {
                                rp.deliver(r);
                                return;
                              }
                              wait_for_topic(self, name, [rp](bool) mutable {
                                rp.deliver(txn_response{});
                              });
                            });
      return rp;
    },
    // CreatePartitions: the controller grows the topic; answered once the
    // new partitions have leaders here (Kafka's DelayedCreatePartitions).
    [=](const create_partitions_request& req) -> caf::result<txn_response> {
      auto& ctx = *self->state.ctx;
      if (req.count > 10000)
        return txn_response{error_code::invalid_partitions,
                            "partition count " + std::to_string(req.count)
                              + " is out of range [1, 10000]"};
      auto rp = self->make_response_promise<txn_response>();
      auto name = req.name;
      auto count = req.count;
      auto wait = req.validate_only ? 0 : req.timeout_ms;
      controller_create_partitions_request c{req.name, req.count, req.assignments,
                                             req.validate_only};
      via_controller(self, std::move(c), ctx.clock_ms() + ctx.config.request_timeout_ms,
                     [self, rp, name, count, wait](const txn_response& r) mutable {
                       if (r.error != error_code::none || wait <= 0) {
                         rp.deliver(r);
                         return;
                       }
                       wait_for_topic(
                         self, name,
                         [rp, name, wait](bool ready) mutable {
                           if (ready)
                             rp.deliver(txn_response{});
                           else
                             rp.deliver(txn_response{
                               error_code::request_timed_out,
                               "the partitions of topic '" + name
                                 + "' were added, but not all have a leader at this node within "
                                 + std::to_string(wait) + " ms"});
                         },
                         count, wait);
                     });
      return rp;
    },
    // DescribeConfigs (Kafka's ConfigHelper.describeConfigs): a topic's
    // configs as stored with it over this node's defaults; this node's own.
    [=](const describe_configs_request& req) -> caf::result<describe_configs_response> {
      auto& ctx = *self->state.ctx;
      auto fail = [](error_code e, std::string why) {
        return describe_configs_response{e, std::move(why), {}};
      };
      if (req.resource_type == 4) { // BROKER
        // An empty name asks for the cluster's dynamic defaults: caftx has none.
        if (req.resource_name.empty())
          return describe_configs_response{};
        int32_t id = 0;
        auto [end, ec] = std::from_chars(
          req.resource_name.data(), req.resource_name.data() + req.resource_name.size(), id);
        if (ec != std::errc{} || end != req.resource_name.data() + req.resource_name.size())
          return fail(error_code::invalid_request,
                      "Broker id must be an integer, but it is: " + req.resource_name);
        if (req.resource_name != std::to_string(ctx.node_id))
          return fail(error_code::invalid_request,
                      "Unexpected broker id, expected " + std::to_string(ctx.node_id)
                        + " or empty string, but received " + req.resource_name);
        return describe_configs_response{error_code::none, "", describe_node_configs(ctx.config)};
      }
      if (req.resource_type != 2) // TOPIC
        return fail(error_code::invalid_request,
                    "Unsupported resource type: " + std::to_string(req.resource_type));
      if (auto why = controller::invalid_topic_name(req.resource_name))
        return fail(error_code::invalid_topic_exception, *why);
      auto& c = self->state.cluster;
      if (!c.controller)
        return fail(error_code::request_timed_out, "the node is starting");
      auto rp = self->make_response_promise<describe_configs_response>();
      self
        ->request(c.controller, std::chrono::milliseconds(ctx.config.request_timeout_ms),
                  controller_topic_request{req.resource_name})
        .then(
          [self, rp, name = req.resource_name](controller_topic_response& r) mutable {
            if (r.error == error_code::unknown_topic_or_partition)
              rp.deliver(describe_configs_response{
                r.error, "Topic '" + name + "' does not exist.", {}});
            else if (r.error != error_code::none)
              rp.deliver(describe_configs_response{r.error, r.message, {}});
            else
              rp.deliver(describe_configs_response{
                error_code::none, "",
                describe_topic_configs(described_overrides(*self->state.ctx, name, r.configs),
                                       self->state.ctx->config)});
          },
          [self, rp](caf::error& e) mutable {
            rp.deliver(describe_configs_response{error_code::request_timed_out,
                                                 self->system().render(e), {}});
          });
      return rp;
    },
    // The cluster for a Kafka client's Metadata: the live nodes with a
    // Kafka listener, from the controller's last UpdateMetadata.
    [=](const kafka_cluster_request&) -> kafka_cluster_response {
      auto& c = self->state.cluster;
      auto& ctx = *self->state.ctx;
      kafka_cluster_response r;
      r.cluster_id = ctx.cluster_id;
      if (!c.cache)
        return r;
      r.controller_id = c.controller_id;
      for (auto& [id, n] : c.cache->live_nodes())
        if (n.kafka.port != 0)
          r.brokers.push_back({id, n.kafka.host, n.kafka.port, n.rack});
      return r;
    },
    // Kafka's FindCoordinator for the Kafka listener: the internal
    // topic's partition for the key and its leader's Kafka address.
    [=](const kafka_coordinator_request& req) {
      auto& c = self->state.cluster;
      kafka_coordinator_response r;
      auto fail = [&r](error_code e, std::string why) {
        r.error = e;
        r.message = std::move(why);
        return r;
      };
      // Kafka's CoordinatorType.forId: only GROUP (0) and TRANSACTION (1).
      if (req.key_type != 0 && req.key_type != 1)
        return fail(error_code::invalid_request,
                    "unknown coordinator type " + std::to_string(req.key_type));
      if (req.key_type == 1 && req.key.empty())
        return fail(error_code::invalid_request, "empty transactional id");
      const std::string& topic = req.key_type == 1 ? transaction_state_topic
                                                   : consumer_offsets_topic;
      if (!c.cache)
        return fail(error_code::coordinator_not_available,
                    "node " + std::to_string(self->state.ctx->node_id)
                      + " has no metadata from the controller yet");
      auto location = c.cache->coordinator_for(req.key, topic);
      if (!location.ok()) {
        ensure_internal_topic(self, topic);
        if (auto i = c.internal_refused.find(topic); i != c.internal_refused.end())
          return fail(error_code::coordinator_not_available, i->second.second);
        return fail(error_code::coordinator_not_available, location.error().message());
      }
      r.partition = location->tp.partition;
      auto& leader = location->leader;
      if (leader.kafka.port == 0)
        return fail(error_code::coordinator_not_available,
                    "the coordinator's node " + std::to_string(leader.id)
                      + " has no PLAINTEXT:// listener");
      r.node_id = leader.id;
      r.host = leader.kafka.host;
      r.port = leader.kafka.port;
      return r;
    },
    // DeleteTopics: the controller answers once every replica deleted
    // its data (controller_core::delete_topic).
    [=](const delete_topic_request& req) -> caf::result<txn_response> {
      auto& ctx = *self->state.ctx;
      if (auto s = validate_topic_name(req.name); !s.ok())
        return txn_response{s.code(), s.message()};
      if (!ctx.config.delete_topic_enable)
        return txn_response{error_code::topic_deletion_disabled,
                            "Topic deletion is disabled (delete.topic.enable=false)."};
      auto rp = self->make_response_promise<txn_response>();
      auto timeout = req.timeout_ms > 0 ? req.timeout_ms : ctx.config.request_timeout_ms;
      via_controller(self, controller_delete_topic_request{req.name},
                     ctx.clock_ms() + timeout, [rp, timeout](const txn_response& r) mutable {
                       if (r.error != error_code::request_timed_out) {
                         rp.deliver(r);
                         return;
                       }
                       rp.deliver(txn_response{
                         r.error, "the deletion did not complete within "
                                    + std::to_string(timeout)
                                    + " ms: the topic stays marked for deletion and is deleted "
                                      "once every replica has confirmed"});
                     });
      return rp;
    },
    [=](node_fetch_request& req) -> caf::result<node_fetch_response> {
      auto& ctx = *self->state.ctx;
      auto timer = node_metrics::time_request(ctx.metrics, "Fetch");
      auto rp = self->make_response_promise<node_fetch_response>();
      // The leaders of this node's partitions, looked up once per topic.
      std::map<std::string, std::vector<partition_actor>> topics;
      auto leader_of = [&](const topic_partition& tp) -> partition_actor {
        auto i = topics.find(tp.topic);
        if (i == topics.end())
          i = topics.emplace(tp.topic, ctx.directory->topic(tp.topic).value_or(
                                         std::vector<partition_actor>{}))
                .first;
        if (tp.partition < 0 || tp.partition >= static_cast<int32_t>(i->second.size()))
          return {};
        return i->second[static_cast<size_t>(tp.partition)];
      };
      node_fetch(self, std::move(req), leader_of, ctx.config.request_timeout_ms, rp,
                 std::move(timer));
      return rp;
    },
    [=](const metadata_request& req) { return answer_metadata(self, req); },
    [=](init_producer_id_request& req) -> caf::result<init_producer_id_response> {
      // Idempotent producers may ask any broker (docs/transactions.md
      // §InitProducerId step 3). Embedded, shard 0 hands out their
      // producer ids. In a cluster every shard's ids come from blocks
      // claimed cluster-wide, so any shard will do: one this node leads
      // (Kafka's broker uses its own ProducerIdManager), else any known,
      // so that one node down does not stop idempotent producers.
      if (req.has_transactional_id)
        return init_producer_id_response{error_code::not_coordinator,
                                         "ask the transaction coordinator"};
      auto& ctx = *self->state.ctx;
      txn_coordinator_actor shard;
      auto& local = self->state.cluster.local;
      auto shards = ctx.config.transaction_state_log_num_partitions;
      for (int32_t s = 0; s < shards && !shard; ++s)
        if (local.count({transaction_state_topic, s}))
          shard = ctx.directory->txn_coordinator(s);
      for (int32_t s = 0; s < shards && !shard; ++s)
        shard = ctx.directory->txn_coordinator(s);
      if (!shard) {
        ensure_internal_topic(self, transaction_state_topic);
        return init_producer_id_response{error_code::coordinator_not_available,
                                         "no transaction coordinator is available yet"};
      }
      return self->delegate(shard, std::move(req));
    },
    [=](const list_transactions_request& req) { return list_transactions(self, req); },
    [=](const describe_topics_request& req) { return describe_topics(self, req); },
    [=](const cluster_hello_request& req) -> caf::result<cluster_hello_response> {
      auto& ctx = *self->state.ctx;
      if (ctx.cuts && req.role == 1 && req.node_id >= 0) {
        // The drill hook: a peer's process is known by its hello, so that
        // one restarted while cut off stays cut off.
        if (auto& sender = self->current_sender())
          ctx.cuts->learn(sender->node(), req.node_id);
        if (ctx.cuts->is_cut(req.node_id))
          return caf::delegated<cluster_hello_response>{}; // lost: no answer
      }
      cluster_hello_response r{error_code::none, {}, ctx.cluster_id, ctx.node_id,
                               ctx.advertised_listener, wire_build_id()};
      if (req.build != r.build) {
        r.error = error_code::invalid_request;
        r.message = "node " + std::to_string(ctx.node_id) + " runs build " + r.build + ", not "
                    + req.build + ": messages of another build may not deserialize";
      } else if (req.role == 1 && req.cluster_id != ctx.cluster_id) {
        r.error = error_code::inconsistent_cluster_id;
        r.message = "node " + std::to_string(req.node_id) + " of cluster '" + req.cluster_id
                    + "' refused: node " + std::to_string(ctx.node_id) + " belongs to cluster '"
                    + ctx.cluster_id + "'";
      }
      if (r.error != error_code::none)
        ctx.emit(node_event_level::warn, "hello_refused", r.message);
      return r;
    },
    [=](const find_coordinator_request& req) {
      auto& ctx = *self->state.ctx;
      find_coordinator_response r;
      // Kafka's CoordinatorType.forId: only GROUP (0) and TRANSACTION (1).
      if (req.key_type != 0 && req.key_type != 1) {
        r.error = error_code::invalid_request;
        r.message = "unknown coordinator type " + std::to_string(req.key_type);
        return r;
      }
      if (req.key_type == 1) {
        if (req.key.empty()) {
          r.error = error_code::invalid_request;
          r.message = "empty transactional id";
          return r;
        }
        r.partition = partition_for(req.key, ctx.config.transaction_state_log_num_partitions);
        r.coordinator = caf::actor_cast<caf::actor>(ctx.directory->txn_coordinator(r.partition));
        if (!r.coordinator)
          ensure_internal_topic(self, transaction_state_topic);
        if (auto i = self->state.cluster.internal_refused.find(transaction_state_topic);
            !r.coordinator && i != self->state.cluster.internal_refused.end())
          r.message = i->second.second;
      } else {
        r.partition = partition_for(req.key, ctx.config.offsets_topic_num_partitions);
        r.coordinator =
          caf::actor_cast<caf::actor>(ctx.directory->group_coordinator(r.partition));
        if (!r.coordinator)
          ensure_internal_topic(self, consumer_offsets_topic);
        if (auto i = self->state.cluster.internal_refused.find(consumer_offsets_topic);
            !r.coordinator && i != self->state.cluster.internal_refused.end())
          r.message = i->second.second;
      }
      if (!r.coordinator)
        r.error = error_code::coordinator_not_available;
      return r;
    },
    // -- cluster mode ---------------------------------------------------------
    [=](set_controller_atom, controller_actor controller) {
      self->state.cluster.controller = std::move(controller);
    },
    [=](registered_atom, int64_t node_epoch) {
      auto& c = self->state.cluster;
      if (c.cache) {
        c.cache->set_node_epoch(node_epoch);
        return;
      }
      c.cache.emplace(self->state.ctx->node_id, node_epoch);
      for (auto& m : std::exchange(c.early, {}))
        caf::anon_send(caf::actor_cast<caf::actor>(self), std::move(m));
    },
    [=](forward_atom, int32_t target, const std::string& host, uint16_t port, caf::message& m) {
      forward_to_node(self, target, controller::endpoint{host, port}, std::move(m));
    },
    [=](const controller::leader_and_isr_request& req) { on_controller_request(self, req); },
    [=](const controller::update_metadata_request& req) { on_controller_request(self, req); },
    [=](const controller::stop_replica_request& req) { on_controller_request(self, req); },
    [=](const cluster_nodes_request&) {
      auto& c = self->state.cluster;
      cluster_nodes_response r;
      if (c.cache)
        for (auto& [id, n] : c.cache->live_nodes())
          if (id != self->state.ctx->node_id)
            r.endpoints.push_back(n.ep.host + ":" + std::to_string(n.ep.port));
      return r;
    },
    [=](const node_handles_request& req) {
      auto& c = self->state.cluster;
      auto& dir = *self->state.ctx->directory;
      node_handles_response r;
      r.node_id = self->state.ctx->node_id;
      for (auto& tp : req.partitions) {
        auto i = c.local.find(tp);
        if (i == c.local.end() || !i->second.leading)
          continue;
        // The handles as the directory published them (through
        // node_options::network, the simulator's; the actors themselves
        // without one).
        auto leader = i->second.leader;
        if (auto t = dir.topic(tp.topic); t && tp.partition < static_cast<int32_t>(t->size())
                                          && (*t)[tp.partition])
          leader = (*t)[tp.partition];
        auto coordinator = i->second.coordinator;
        if (tp.topic == transaction_state_topic) {
          if (auto a = dir.txn_coordinator(tp.partition))
            coordinator = caf::actor_cast<caf::actor>(a);
        } else if (tp.topic == consumer_offsets_topic) {
          if (auto a = dir.group_coordinator(tp.partition))
            coordinator = caf::actor_cast<caf::actor>(a);
        }
        r.handles.push_back({tp, i->second.leader_epoch, leader, coordinator});
      }
      return r;
    },
    // AlterIsr from a leader here: to the controller (ours, or through
    // the controller's node's broker, which hands it to its own).
    [=](alter_isr_request& req) -> caf::result<alter_isr_response> {
      auto& c = self->state.cluster;
      if (!req.forwarded && req.node_id == self->state.ctx->node_id && c.cache)
        req.node_epoch = c.cache->node_epoch();
      if (req.forwarded || c.controller_id == self->state.ctx->node_id) {
        if (!c.controller)
          return alter_isr_response{error_code::not_controller, "no controller here", -1, {}, -1};
        return self->delegate(c.controller, std::move(req));
      }
      auto dest = controller_destination(self);
      if (!dest)
        return alter_isr_response{error_code::not_controller, "no controller is known yet", -1, {}, -1};
      req.forwarded = true;
      return self->delegate(caf::actor_cast<broker_actor>(dest), std::move(req));
    },
    [=](controlled_shutdown_request& req) -> caf::result<controlled_shutdown_response> {
      auto& c = self->state.cluster;
      if (!c.controller)
        return controlled_shutdown_response{error_code::not_controller, "no controller here", {}};
      return self->delegate(c.controller, std::move(req));
    },
    [=](controlled_shutdown_atom) -> caf::result<controlled_shutdown_response> {
      auto rp = self->make_response_promise<controlled_shutdown_response>();
      auto& ctx = *self->state.ctx;
      ctx.emit(node_event_level::info, "controlled_shutdown_started",
               "[KafkaServer id=" + std::to_string(ctx.node_id) + "] Starting controlled shutdown");
      controlled_shutdown(self, ctx.config.controlled_shutdown_max_retries + 1, ctx.clock_ms(),
                          [rp](const controlled_shutdown_response& r) mutable { rp.deliver(r); });
      return rp;
    },
    [=](broker_ready_atom) -> caf::result<txn_response> {
      if (node_ready(self))
        return txn_response{};
      auto rp = self->make_response_promise<txn_response>();
      auto& ctx = *self->state.ctx;
      topic_waiter w;
      w.whole_node = true;
      w.deadline_ms = ctx.clock_ms() + ctx.config.request_timeout_ms;
      w.then = [rp, timeout = ctx.config.request_timeout_ms](bool ready) mutable {
        if (ready)
          rp.deliver(txn_response{});
        else
          rp.deliver(txn_response{error_code::request_timed_out,
                                  "the controller gave this node not all of its partitions "
                                  "within request.timeout.ms ("
                                    + std::to_string(timeout) + " ms)"});
      };
      add_waiter(self, std::move(w));
      return rp;
    },
    [=](controller_create_topic_request& req) { return to_controller(self, req); },
    [=](controller_delete_topic_request& req) { return to_controller(self, req); },
    [=](controller_create_partitions_request& req) { return to_controller(self, req); },
    // A replica deleted here (or, forwarded, on another node): to the
    // controller, ours or through the controller's node's broker. Lost
    // when no controller is known; the controller asks again.
    [=](replicas_deleted& r) {
      auto& c = self->state.cluster;
      if (r.forwarded || c.controller_id == self->state.ctx->node_id) {
        if (c.controller)
          self->send(c.controller, std::move(r));
        return;
      }
      if (auto dest = controller_destination(self)) {
        r.forwarded = true;
        self->send(caf::actor_cast<broker_actor>(dest), std::move(r));
      }
    },
    [=](resolve_atom) {
      self->state.cluster.resolve_timer = false;
      resolve(self);
    },
    [=](spawn_retry_atom, const topic_partition& tp) {
      // Still assigned here and not hosted yet: read its configs again.
      auto& c = self->state.cluster;
      auto* p = c.cache ? c.cache->replica(tp) : nullptr;
      if (!p || c.local.count(tp))
        return; // stopped (StopReplica), or hosted by now
      spawn_replica(self, tp, p->leader_epoch, p->leader);
    },
    [=](reconnect_atom, int32_t id) {
      auto& c = self->state.cluster;
      c.peers[id].reconnect_armed = false;
      if (c.cache && c.cache->live_nodes().count(id))
        connect_peer(self, id);
      // The controller may have requests for it (sent again, or waiting
      // for the connection).
      send_controller_requests(self, id);
    },
    [=](waiters_atom) { waiter_tick(self); },
    [=](elect_leaders_request& req) -> caf::result<elect_leaders_response> {
      // To the controller: this node's own, or once (never back and
      // forth between two stale views) the controller's node's broker.
      auto& c = self->state.cluster;
      auto& ctx = *self->state.ctx;
      if (c.controller_id == ctx.node_id || req.forwarded)
        return self->delegate(c.controller, std::move(req));
      auto dest = controller_destination(self);
      if (!dest) {
        elect_leaders_response r;
        for (auto& tp : req.partitions)
          r.results.push_back({tp, error_code::not_controller, "no controller is known yet"});
        return r;
      }
      req.forwarded = true;
      return self->delegate(caf::actor_cast<broker_actor>(dest), std::move(req));
    },
    [=](const drill_fault_request& req) -> drill_fault_response { return drill_fault(self, req); },
    [=](drill_network_request& req) -> caf::result<drill_network_response> {
      return drill_network(self, std::move(req));
    },
  };
}

} // namespace

void broker_set_controller(const caf::actor& broker, const controller_actor& controller) {
  caf::anon_send(broker, set_controller_atom::value, controller);
}

void broker_registered(const caf::actor& broker, int64_t node_epoch) {
  caf::anon_send(broker, registered_atom::value, node_epoch);
}

void broker_forward(const caf::actor& broker, const controller::outbound_request& r,
                    const controller::endpoint& ep) {
  auto m = std::visit([](const auto& x) { return caf::make_message(x); }, r.request);
  caf::anon_send(broker, forward_atom::value, r.target, ep.host, ep.port, std::move(m));
}

caf::actor spawn_broker(caf::actor_system& sys, std::shared_ptr<const node_context> ctx) {
  return caf::actor_cast<caf::actor>(sys.spawn(broker_fn, std::move(ctx)));
}

} // namespace caftx
