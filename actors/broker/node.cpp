#include "actors/broker/node.hpp"

#include <cstdio>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <chrono>

#include "actors/broker/broker_actor.hpp"
#include "actors/broker/node_context.hpp"
#include "actors/client/admin.hpp"
#include "actors/common/node_metrics.hpp"
#include "actors/controller/controller_actor.hpp"
#include "actors/coordination/local_store.hpp"
#include "actors/coordinator/txn_coordinator_actor.hpp"
#include "actors/group/group_coordinator_actor.hpp"
#include "actors/partition/partition_actor.hpp"
#include "runtime/messages.hpp"
#include "storage/codec.hpp"

namespace caftx {

// -- actor_directory ------------------------------------------------------------

void node_health::report(const std::string& line) const {
  if (events_)
    emit_event(events_, node_event_level::error, "component_failed", line);
  else
    std::fprintf(stderr, "caftx: %s\n", line.c_str());
}

void node_health::gave_up(const std::string& component, int32_t restarts) {
  auto line = component + ": gave up after " + std::to_string(restarts) + " restarts";
  report(line + "; its requests are answered as unavailable");
  std::lock_guard<std::mutex> guard{mtx_};
  failed_.push_back(std::move(line));
}

void node_health::storage_failed(const std::string& component, const std::string& error) {
  // The error names the component first ("partition t-0: reading ...").
  auto rest = error.rfind(component + ": ", 0) == 0 ? error.substr(component.size() + 2) : error;
  auto line = component + ": KAFKA_STORAGE_ERROR: " + rest;
  report(line + "; it stays down, its requests are answered KAFKA_STORAGE_ERROR");
  std::lock_guard<std::mutex> guard{mtx_};
  failed_.push_back(std::move(line));
}

std::vector<std::string> node_health::failed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return failed_;
}

void actor_directory::set_topic(const std::string& name, std::vector<partition_actor> partitions) {
  for (size_t p = 0; p < partitions.size(); ++p)
    partitions[p] = publish("partition:" + name + "-" + std::to_string(p), partitions[p]);
  std::lock_guard<std::mutex> guard{mtx_};
  topics_[name] = std::move(partitions);
}

std::optional<std::vector<partition_actor>> actor_directory::topic(const std::string& name) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = topics_.find(name);
  if (i == topics_.end())
    return std::nullopt;
  return i->second;
}

std::vector<std::string> actor_directory::topic_names() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<std::string> names;
  for (auto& [n, _] : topics_)
    names.push_back(n);
  return names;
}

marker_target actor_directory::marker_destination(const topic_partition& tp) const {
  std::lock_guard<std::mutex> guard{mtx_};
  if (tp.topic == consumer_offsets_topic) {
    if (tp.partition < 0 || tp.partition >= static_cast<int32_t>(group_.size()))
      return {};
    // A group coordinator applies markers to its offsets before its log.
    return marker_target{group_[tp.partition]};
  }
  auto i = topics_.find(tp.topic);
  if (i == topics_.end() || tp.partition < 0
      || tp.partition >= static_cast<int32_t>(i->second.size()))
    return {};
  return marker_target{i->second[tp.partition]};
}

txn_coordinator_actor actor_directory::txn_coordinator(int32_t shard) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return shard >= 0 && shard < static_cast<int32_t>(txn_.size()) ? txn_[shard]
                                                                 : txn_coordinator_actor{};
}

group_coordinator_actor actor_directory::group_coordinator(int32_t partition) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return partition >= 0 && partition < static_cast<int32_t>(group_.size())
           ? group_[partition]
           : group_coordinator_actor{};
}

void actor_directory::add(const caf::actor& a) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!closed_) {
      all_.push_back(a);
      return;
    }
  }
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

std::vector<caf::actor> actor_directory::close() {
  std::lock_guard<std::mutex> guard{mtx_};
  closed_ = true;
  return all_;
}

void actor_directory::remove(const caf::actor& a) {
  std::lock_guard<std::mutex> guard{mtx_};
  all_.erase(std::remove(all_.begin(), all_.end(), a), all_.end());
}

void actor_directory::ensure_topic(const std::string& topic, int32_t partitions) {
  auto grow = [partitions](auto& v) {
    if (static_cast<int32_t>(v.size()) < partitions)
      v.resize(static_cast<size_t>(partitions));
  };
  std::lock_guard<std::mutex> guard{mtx_};
  grow(topics_[topic]);
  deleted_.erase(topic);
  if (topic == consumer_offsets_topic)
    grow(group_);
  if (topic == transaction_state_topic)
    grow(txn_);
}

void actor_directory::remove_topic(const std::string& topic) {
  auto erase_partitions = [&topic](auto& by_partition) {
    for (auto i = by_partition.begin(); i != by_partition.end();)
      i = i->first.topic == topic ? by_partition.erase(i) : std::next(i);
  };
  std::lock_guard<std::mutex> guard{mtx_};
  topics_.erase(topic);
  deleted_.insert(topic);
  erase_partitions(assigned_);
  erase_partitions(replicas_);
  erase_partitions(local_);
}

bool actor_directory::topic_deleted(const std::string& topic) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return deleted_.count(topic) > 0;
}

namespace {

// v[index] = a, growing v as needed; a negative index is ignored.
template <class Handle>
void put_slot(std::vector<Handle>& v, int32_t index, Handle a) {
  if (index < 0)
    return;
  if (static_cast<int32_t>(v.size()) <= index)
    v.resize(static_cast<size_t>(index) + 1);
  v[static_cast<size_t>(index)] = std::move(a);
}

} // namespace

void actor_directory::set_partition(const topic_partition& tp, partition_actor leader, bool local) {
  if (local)
    leader = publish("partition:" + tp.topic + "-" + std::to_string(tp.partition), leader);
  std::lock_guard<std::mutex> guard{mtx_};
  if (tp.partition < 0)
    return;
  if (local && leader)
    local_[tp] = leader;
  else
    local_.erase(tp);
  if (deleted_.count(tp.topic) > 0)
    return; // a late handle of a deleted topic does not bring it back
  put_slot(topics_[tp.topic], tp.partition, std::move(leader));
}

void actor_directory::set_txn_coordinator(int32_t shard, txn_coordinator_actor a, bool local) {
  if (local)
    a = publish("txn_coordinator:" + std::to_string(shard), a);
  std::lock_guard<std::mutex> guard{mtx_};
  put_slot(txn_, shard, std::move(a));
}

void actor_directory::set_group_coordinator(int32_t partition, group_coordinator_actor a,
                                           bool local) {
  if (local)
    a = publish("group_coordinator:" + std::to_string(partition), a);
  std::lock_guard<std::mutex> guard{mtx_};
  put_slot(group_, partition, std::move(a));
}

void actor_directory::assign_leader_epoch(const topic_partition& tp, int32_t leader_epoch) {
  std::lock_guard<std::mutex> guard{mtx_};
  assigned_[tp] = leader_epoch;
}

std::vector<partition_actor> actor_directory::local_partitions() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<partition_actor> out;
  for (auto& [tp, a] : local_)
    out.push_back(a);
  return out;
}

partition_actor actor_directory::local_leader(const topic_partition& tp) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = local_.find(tp);
  return i == local_.end() ? partition_actor{} : i->second;
}

std::optional<int32_t> actor_directory::assigned_leader_epoch(const topic_partition& tp) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = assigned_.find(tp);
  if (i == assigned_.end())
    return std::nullopt;
  return i->second;
}

void actor_directory::set_broker(caf::actor broker) {
  std::lock_guard<std::mutex> guard{mtx_};
  broker_ = std::move(broker);
}

caf::actor actor_directory::broker() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return broker_;
}

void actor_directory::assign_replica(const topic_partition& tp, replica_assignment a) {
  std::lock_guard<std::mutex> guard{mtx_};
  replicas_[tp] = std::move(a);
}

std::optional<replica_assignment> actor_directory::assigned_replica(const topic_partition& tp) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = replicas_.find(tp);
  if (i == replicas_.end())
    return std::nullopt;
  return i->second;
}

std::vector<caf::actor> actor_directory::all() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return all_;
}

// -- node -------------------------------------------------------------------------

namespace {

// The data directory's storage format (storage/FORMAT.md): a new database
// gets the current one; a database without it was written by an older
// caftx (record batches as Boost archives) and is refused, as is one of
// another format: there is no migration.
status check_storage_format(node_store& store) {
  auto current = std::to_string(keys::storage_format_version);
  try {
    auto format = store.get(keys::storage_format);
    if (format) {
      if (*format == current)
        return {};
      // Format 2 kept transaction state cards and committed offsets as
      // node-local keys instead of records of the internal topics.
      // Format 3: the embedded node kept its topics as `topic/` keys and
      // handed out producer ids from per-shard stripes, before it ran the
      // controller over its local store.
      auto why = *format == "2"   ? std::string(" (transaction state and offsets as node-local keys, "
                                                "not as records of __transaction_state and "
                                                "__consumer_offsets)")
                 : *format == "3" ? std::string(" (topics as node-local keys and producer ids from "
                                                "per-shard stripes, not as znodes of the "
                                                "controller's metadata store)")
                                  : std::string();
      return {error_code::kafka_storage_error,
              "data directory " + store.dir() + " has storage format " + *format + why
                + "; this caftx reads and writes format " + current
                + " and does not migrate: use a new data directory"};
    }
    bool empty = true;
    store.scan("", [&](const std::string&, const std::string&) {
      empty = false;
      return false;
    });
    if (!empty)
      return {error_code::kafka_storage_error,
              "data directory " + store.dir()
                + " was written by an older caftx (storage format 1, record batches as Boost "
                  "archives); this caftx reads and writes format "
                + current + " (Kafka's RecordBatch v2) and does not migrate: use a new "
                            "data directory"};
  } catch (const storage_read_error& e) {
    return {error_code::kafka_storage_error, "data directory " + store.dir() + ": " + e.reason()};
  } catch (const std::runtime_error& e) {
    return {error_code::kafka_storage_error, "data directory " + store.dir() + ": " + e.what()};
  }
  leveldb::WriteBatch wb;
  wb.Put(keys::storage_format, current);
  return store.write_now(wb);
}

} // namespace

status_or<std::unique_ptr<node>> node::start(caf::actor_system& sys, node_config config,
                                             node_options opts) {
  if (config.data_dir.empty())
    return status{error_code::invalid_config, "config 'data.dir' must be set"};
  node_store_options so;
  so.sync = config.storage_sync;
  so.background_writer = opts.background_writer;
  so.env = opts.env;
  so.reopen_backoff_ms = opts.storage_reopen_backoff_ms;
  // meta.properties keeps the node's id: a directory of another node is
  // refused (Kafka's InconsistentBrokerIdException).
  so.node_id = opts.node_id;
  auto store = node_store::open(config.data_dir, so);
  if (!store.ok())
    return store.error();
  if (auto st = check_storage_format(**store); !st.ok())
    return st;
  auto ctx = std::make_shared<node_context>();
  ctx->config = config;
  ctx->store = std::move(store).value();
  if (config.drills_enable && !opts.network) {
    // The drill hook: each published handle is a gate that can drop a cut
    // peer's messages (one gate per address and actor behind it).
    ctx->cuts = std::make_shared<network_cuts>();
    auto gates = std::make_shared<std::pair<std::mutex, std::map<std::string, std::pair<caf::actor, caf::actor>>>>();
    opts.network = [&sys, cuts = ctx->cuts, gates](const std::string& address,
                                                   const caf::actor& a) {
      std::lock_guard<std::mutex> guard{gates->first};
      auto& [target, gate] = gates->second[address];
      if (target != a) {
        target = a;
        gate = spawn_drill_gate(sys, cuts, a);
      }
      return gate;
    };
  }
  if (config.drills_enable)
    ctx->faults = opts.faults;
  ctx->directory = std::make_shared<actor_directory>(opts.network);
  ctx->clock_ms = opts.clock_ms;
  ctx->events = opts.events;
  ctx->events_from = opts.events_from;
  ctx->metrics = opts.metrics;
  ctx->health->set_events(opts.events);
  ctx->node_id = opts.node_id;
  ctx->cluster_id = opts.cluster_id;
  ctx->advertised_listener = opts.advertised_listener;
  ctx->connect_peer = opts.connect_peer;
  if (!ctx->clock_ms)
    ctx->clock_ms = [] {
      return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
    };
  if (!opts.spawn_store) {
    // The embedded single node: the same controller over the local store,
    // whose znodes live in this node's database (docs/coordination-store.md).
    ctx->embedded = true;
    if (auto st = check_local_store(*ctx->store); !st.ok())
      return st;
    if (opts.advertised_host.empty())
      opts.advertised_host = "localhost"; // its registration's host; port 0: no listener
    auto db = ctx->store;
    auto clock = ctx->clock_ms;
    opts.spawn_store = [&sys, db, clock](caf::actor owner) {
      return spawn_local_store(sys, {db, std::move(owner), clock});
    };
  }
  if (ctx->cuts && !ctx->embedded) {
    // ZooKeeper can be cut: each store the controller spawns is the one
    // the drill hook points elsewhere.
    auto spawn = opts.spawn_store;
    opts.spawn_store = [spawn, cuts = ctx->cuts](caf::actor owner) {
      auto store = spawn(std::move(owner));
      cuts->set_store(store);
      return store;
    };
  }
  return start_cluster_mode(sys, std::move(ctx), std::move(opts));
}

// The broker and the controller actor; partitions and coordinators start
// as the controller's LeaderAndIsr requests arrive. The embedded node
// returns once it leads every partition (unless under the deterministic
// scheduler, which its caller runs).
status_or<std::unique_ptr<node>> node::start_cluster_mode(caf::actor_system& sys,
                                                          std::shared_ptr<node_context> ctx,
                                                          node_options opts) {
  ctx->cluster_mode = true;
  std::shared_ptr<const node_context> cctx = ctx;
  std::unique_ptr<node> n{new node(sys, ctx, opts)};
  auto broker = spawn_broker(sys, cctx);
  n->broker_ = broker;
  n->published_broker_ = ctx->cuts ? spawn_drill_gate(sys, ctx->cuts, broker) : broker;
  ctx->directory->set_broker(broker);
  controller_options co;
  co.node_id = ctx->node_id;
  co.advertised = {opts.advertised_host, opts.advertised_port};
  co.kafka_advertised = {opts.kafka_advertised_host, opts.kafka_advertised_port};
  co.rack = opts.rack;
  co.build = wire_build_id();
  co.cluster_id = ctx->cluster_id;
  co.duplicate_wait_ms = opts.duplicate_wait_ms;
  co.spawn_store = opts.spawn_store;
  co.clock_ms = ctx->clock_ms;
  co.random = opts.random;
  co.auto_leader_rebalance = ctx->config.auto_leader_rebalance_enable;
  co.leader_imbalance_check_interval_ms = ctx->config.leader_imbalance_check_interval_seconds * 1000;
  co.leader_imbalance_per_broker_percentage = ctx->config.leader_imbalance_per_broker_percentage;
  co.send_to = [broker](const controller::outbound_request& r, const controller::endpoint& ep) {
    broker_forward(broker, r, ep);
  };
  auto events = ctx->events;
  auto prefix = "[KafkaServer id=" + std::to_string(ctx->node_id) + "] ";
  co.events.connected = [events, id = ctx->node_id, embedded = ctx->embedded](int64_t session) {
    if (embedded) {
      emit_event(events, node_event_level::debug, "local_store_opened",
                 "[LocalMetadataStore node=" + std::to_string(id)
                   + "] Opened the metadata store in the node's database");
      return;
    }
    emit_event(events, node_event_level::info, "zookeeper_connected",
               "[ZooKeeperClient node=" + std::to_string(id) + "] Connected (session 0x"
                 + [session] {
                     char buf[20];
                     std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(session));
                     return std::string(buf);
                   }()
                 + ").");
  };
  if (ctx->metrics && !ctx->embedded) {
    // The ZooKeeper session's state (Kafka's SessionExpireListener
    // SessionState) as one series per state, 1 for the current one.
    auto reg = ctx->metrics;
    co.events.session = [reg](session_state state) {
      for (auto s : {session_state::connecting, session_state::connected, session_state::expired,
                     session_state::closed})
        node_metrics::gauge(reg, node_metrics::zookeeper_session_state, {{"state", to_string(s)}})
          .set(s == state ? 1 : 0);
      if (state == session_state::expired)
        node_metrics::counter(reg, node_metrics::zookeeper_expires).inc();
    };
    node_metrics::counter(reg, node_metrics::zookeeper_expires);
  }
  auto active_controller = node_metrics::gauge(ctx->metrics, node_metrics::active_controller);
  co.events.registered = [broker, events, prefix](int64_t epoch) {
    broker_registered(broker, epoch);
    emit_event(events, node_event_level::info, "registered",
               prefix + "registered with node epoch " + std::to_string(epoch));
  };
  auto cprefix = "[Controller id=" + std::to_string(ctx->node_id) + "] ";
  co.events.elected = [events, cprefix, active_controller](int32_t epoch) {
    active_controller.set(1);
    emit_event(events, node_event_level::info, "controller_elected",
               cprefix + "elected controller at controller epoch " + std::to_string(epoch));
  };
  co.events.resigned = [events, cprefix, active_controller](const std::string& why) {
    active_controller.set(0);
    emit_event(events, node_event_level::warn, "controller_resigned",
               cprefix + "resigned as controller: " + why);
  };
  co.events.controlled_shutdown = [events, cprefix](controller::node_id node, const status& result,
                                                    size_t remaining) {
    if (result.ok())
      emit_event(events, node_event_level::info, "controlled_shutdown_of",
                 cprefix + "Shutting down broker " + std::to_string(node) + " ("
                   + std::to_string(remaining) + " partitions still led by it)");
    else
      emit_event(events, node_event_level::warn, "controlled_shutdown_of",
                 cprefix + "Controlled shutdown of broker " + std::to_string(node)
                   + " refused: " + result.to_string());
  };
  auto assignment = [](const controller::topic_assignment& t) {
    std::string parts;
    for (auto& [p, replicas] : t.partitions) {
      parts += (parts.empty() ? "" : ", ") + t.name + "-" + std::to_string(p) + " -> [";
      for (size_t i = 0; i < replicas.size(); ++i)
        parts += (i ? "," : "") + std::to_string(replicas[i]);
      parts += "]";
    }
    return parts;
  };
  co.events.topic_created = [events, cprefix, assignment](const controller::topic_assignment& t) {
    emit_event(events, node_event_level::info, "topic_created",
               cprefix + "New topic " + t.name + " with replica assignment " + assignment(t));
  };
  co.events.partitions_added = [events, cprefix,
                                assignment](const controller::topic_assignment& t) {
    emit_event(events, node_event_level::info, "partitions_added",
               cprefix + "Topic " + t.name + " grown to " + std::to_string(t.partitions.size())
                 + " partitions, replica assignment " + assignment(t));
  };
  auto on_fatal = opts.on_fatal;
  co.events.fatal = [events, prefix, on_fatal](const status& why) {
    emit_event(events, node_event_level::error, "fatal", prefix + why.to_string());
    if (on_fatal)
      on_fatal(why);
  };
  auto controller = spawn_controller(sys, std::move(co));
  n->controller_ = caf::actor_cast<caf::actor>(controller);
  ctx->controller = controller;
  broker_set_controller(broker, controller);
  // The controller last: stopping it closes the store's session, which
  // deletes /nodes/<id> at once (Kafka's broker deregisters at shutdown).
  ctx->directory->add(broker);
  ctx->directory->add(n->controller_);
  if (ctx->embedded && opts.wait_on_stop) {
    caf::scoped_actor self{sys};
    status ready;
    self->request(broker, std::chrono::milliseconds(ctx->config.request_timeout_ms + 5000),
                  broker_ready_atom::value)
      .receive([&](const txn_response& r) { ready = status{r.error, r.message}; },
               [&](const caf::error& e) {
                 ready = status{error_code::request_timed_out,
                                "the broker did not answer: " + sys.render(e)};
               });
    if (!ready.ok()) {
      n->stop();
      return status{ready.code(), "node did not start: " + ready.message()};
    }
  }
  return n;
}

node::node(caf::actor_system& sys, std::shared_ptr<node_context> ctx, node_options opts)
  : sys_(&sys), ctx_(std::move(ctx)), opts_(std::move(opts)) {
}

node::~node() {
  stop();
}

const node_config& node::config() const {
  return ctx_->config;
}

status node::create_topic(const std::string& name, int32_t partitions,
                          const properties& configs) {
  return caftx::create_topic(*sys_, broker_, name, partitions, configs);
}

status node::delete_topic(const std::string& name) {
  return caftx::delete_topic(*sys_, broker_, name);
}

std::shared_ptr<const actor_directory> node::directory() const {
  return ctx_->directory;
}

std::vector<std::string> node::failed_components() const {
  return ctx_ ? ctx_->health->failed() : std::vector<std::string>{};
}

caf::actor node::coordinator_supervisor(int32_t shard) const {
  return caf::actor_cast<caf::actor>(ctx_->directory->txn_coordinator(shard));
}

void node::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  const auto& cfg = ctx_->config;
  // (The embedded node is the whole cluster: there is nowhere to move to.)
  if (opts_.wait_on_stop && !ctx_->embedded && cfg.controlled_shutdown_enable) {
    // Kafka's controlled shutdown: the controller moves this node's
    // leaderships away before anything stops. The broker's loop ends by
    // itself; the bound here only guards against a broker that died.
    // (At most a day, for extreme settings.)
    int64_t attempts = std::min<int64_t>(int64_t{cfg.controlled_shutdown_max_retries} + 1, 1 << 20);
    int64_t per_attempt = int64_t{cfg.request_timeout_ms} + cfg.controlled_shutdown_retry_backoff_ms;
    auto bound = std::chrono::milliseconds(
      std::min<int64_t>(attempts * per_attempt + 5000, int64_t{24} * 3600 * 1000));
    caf::scoped_actor self{*sys_};
    self->request(broker_, bound, controlled_shutdown_atom::value)
      .receive([](const controlled_shutdown_response&) {}, [](const caf::error&) {});
  }
  if (opts_.wait_on_stop) {
    // A clean shutdown: every partition leader writes a producer-state
    // snapshot at its log end first, so the next start replays nothing
    // (Kafka's ProducerStateManager snapshot at shutdown).
    caf::scoped_actor self{*sys_};
    using handle =
      decltype(self->request(partition_actor{}, caf::infinite, write_snapshot_request{}));
    std::vector<handle> pending;
    for (auto& leader : ctx_->directory->local_partitions())
      pending.push_back(self->request(leader, std::chrono::seconds(10), write_snapshot_request{}));
    for (auto& h : pending)
      h.receive([](const txn_response&) {}, [](const caf::error&) {});
  }
  auto actors = ctx_->directory->close();
  for (auto& a : actors)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  if (opts_.wait_on_stop) {
    caf::scoped_actor self{*sys_};
    for (auto& a : actors)
      self->wait_for(a);
  }
  broker_ = nullptr;
  controller_ = nullptr;
  ctx_.reset();
}

} // namespace caftx
