#include "tools/sim/simulator.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/response_promise.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include "actors/broker/node.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "actors/client/read_committed_filter.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/messages.hpp"
#include "runtime/record_batch_v2.hpp"
#include "examples/northwind/pipeline.hpp"
#include "actors/controller/znodes.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "tools/sim/crash_env.hpp"
#include "tools/sim/sim_zookeeper.hpp"

namespace caftx::sim {

namespace {

using std::chrono::milliseconds;
using tick_atom = caf::atom_constant<caf::atom("simtick")>;

constexpr int64_t base_time_ms = 1700000000000;
constexpr uint64_t step_budget = 4000000;
constexpr int32_t partitions_per_topic = 4;
const std::vector<std::string> output_topics{"out", "out2"};
const std::string input_topic = "in";
const std::string ctp_group = "ctp";

struct sim_config : caf::actor_system_config {
  sim_config() {
    register_message_types(*this);
    set("scheduler.policy", caf::atom("testing"));
    set("logger.verbosity", caf::atom("quiet"));
  }
};

/// The run broke down (not a rule of the checker): a client waits forever,
/// the step budget is spent.
struct sim_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};


/// How often each fault happens in one run; drawn from the seed.
struct fault_rates {
  double drop = 0;        // per message through the network
  double drop_reply = 0;  // per message: delivered, its reply lost
  double duplicate = 0;   // per message: delivered twice
  double delay = 0;       // per message: held back
  int64_t max_delay_ms = 0;
  double kill = 0;        // per step: a supervised component killed
  double session_kill = 0; // per step: a producer's session actor killed
  double node_crash = 0;  // per step: the node crashes and restarts
  double point_crash = 0; // per fault point hit: the actor dies there
  double client_crash = 0; // per client operation: the client process dies
  double pause = 0;       // per client operation: paused past its timeout
  double zk_cut = 0;      // per step, several nodes: a node cut off from ZooKeeper
  // Fault model 2, several nodes:
  double node_pause = 0;  // per step: every actor of a node stops (SIGSTOP), then resumes
  double partition = 0;   // per step: two nodes cut off from each other (or one way)
  // Fault model 4, several nodes:
  double cluster_crash = 0; // per step: every node loses power, they come back one by one
};

class world;
struct sim_client;

caf::behavior proxy_fn(caf::event_based_actor* self, world* w, std::string address);

// -- the world -------------------------------------------------------------------

class world {
public:
  explicit world(const sim_options& opts)
    : opts_(opts), rng_(opts.seed),
      zk_([this] { return now_ms(); }, zk_session_timeout_ms) {
    draw_rates();
    ncfg_.data_dir = "/sim/node";
    ncfg_.transaction_state_log_num_partitions = 4;
    ncfg_.offsets_topic_num_partitions = 2;
    ncfg_.request_timeout_ms = 3000;
    // The parking time the recorded seeds (regression-seeds.txt) ran with.
    ncfg_.coordinator_park_ms = 100;
    ncfg_.transaction_abort_timed_out_transaction_cleanup_interval_ms = 1000;
    ncfg_.supervisor_max_restarts = 1000000;
    ncfg_.supervisor_restart_window_ms = 1000;
    // Storage: producer-state snapshots every few batches in most seeds (so
    // crashes restart from a snapshot and a tail), and a tail cache that is
    // off, small or large, so fetches read LevelDB and memory.
    if (!chance(0.25))
      ncfg_.log_snapshot_interval_bytes = 200 + static_cast<int32_t>(pick(4000));
    auto cache = pick(3);
    ncfg_.log_tail_cache_bytes = cache == 0 ? 0 : cache == 1 ? 1 + static_cast<int32_t>(pick(8192))
                                                             : ncfg_.log_tail_cache_bytes;
    if (multi()) {
      // Kafka's replicated layout: every partition, the internal ones too,
      // on three nodes with two in sync required for acks=all; followers
      // that lag 5 s leave the ISR (30 s in Kafka: runs are short).
      ncfg_.default_replication_factor = 3;
      ncfg_.min_insync_replicas = 2;
      ncfg_.transaction_state_log_replication_factor = 3;
      ncfg_.transaction_state_log_min_isr = 2;
      ncfg_.offsets_topic_replication_factor = 3;
      ncfg_.replica_lag_time_max_ms = 5000;
      // Fault model 3: leaderships go back to their preferred replicas
      // within runs (every 10 s instead of Kafka's 300 s).
      if (opts_.fault_model >= 3)
        ncfg_.leader_imbalance_check_interval_seconds = 10;
    }
    for (int32_t k = 0; k < std::max(1, opts_.nodes); ++k) {
      sim_node n;
      n.id = multi() ? k + 1 : 0;
      n.prefix = multi() ? "n" + std::to_string(n.id) + "/" : "";
      n.cfg = ncfg_;
      if (multi())
        n.cfg.data_dir = "/sim/node" + std::to_string(n.id);
      n.env = std::make_unique<crash_env>();
      nodes_.push_back(std::move(n));
    }
    fault::set_handler([this](const char* point, const void* detail) {
      return on_fault_point(point, detail);
    });
  }

  ~world() {
    fault::set_handler({});
    clients_.clear();
    graveyard_.clear();
    conns_.clear();
    for (auto& n : nodes_)
      if (n.n) {
        n.n->stop();
        run_all();
        n.n.reset();
      }
    run_all();
  }

  /// Three or more nodes over the simulated ZooKeeper (else the embedded
  /// single node, over its local store).
  bool multi() const { return opts_.nodes > 1; }

  sim_result run();

  // -- time and scheduling --------------------------------------------------------

  int64_t now_ms() const {
    return base_time_ms
           + std::chrono::duration_cast<milliseconds>(sched_.clock().current_time.time_since_epoch())
               .count();
  }

  /// When the earliest timer is due, in simulated milliseconds; nullopt
  /// without timers.
  std::optional<int64_t> next_timer_ms() const {
    auto& schedule = sched_.clock().schedule();
    if (schedule.empty())
      return std::nullopt;
    return base_time_ms
           + std::chrono::duration_cast<milliseconds>(schedule.begin()->first.time_since_epoch())
               .count();
  }

  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  uint64_t pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  void mix(uint64_t x) {
    hash_ ^= x;
    hash_ *= 1099511628211ull;
  }

  /// One scheduling decision: a ready actor (chosen by the seed) handles one
  /// message, or — when none is ready, or now and then to model a slow
  /// machine — time jumps to the next timer. False if nothing can happen.
  bool step() {
    if (++steps_ > step_budget)
      throw sim_failure("step budget of " + std::to_string(step_budget) + " steps spent");
    auto& jobs = sched_.jobs;
    auto ready = runnable_jobs();
    bool jump = !ready.empty() && faults_on_ && chance(0.002);
    if (!ready.empty() && !jump) {
      auto i = ready[pick(ready.size())];
      std::swap(jobs[0], jobs[i]);
      if (auto* a = dynamic_cast<caf::abstract_actor*>(jobs[0]))
        mix(a->id());
      run_front();
      after_step();
      return true;
    }
    if (auto& clock = sched_.clock(); clock.has_pending_timeout()) {
      // Every timer due at the next instant fires (a backlog of request
      // timeouts of answered requests must not hold time back).
      auto next = clock.schedule().begin()->first;
      sched_.advance_time(std::max(next - clock.current_time, caf::timespan{0}));
      mix(static_cast<uint64_t>(now_ms()));
      return true;
    }
    if (!jobs.empty() && ready.empty()) {
      // Only paused nodes have work and no timer can move time on to
      // their resumption: they resume now.
      for (auto& n : nodes_)
        n.paused_until = 0;
      return true;
    }
    return !jobs.empty() && (run_front(), after_step(), true);
  }

  /// Indices of the ready jobs whose actor is not on a paused node.
  std::vector<size_t> runnable_jobs() const {
    std::vector<size_t> ready;
    auto& jobs = sched_.jobs;
    bool any_paused = false;
    for (auto& n : nodes_)
      any_paused = any_paused || n.paused_until != 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (any_paused)
        if (auto* a = dynamic_cast<caf::abstract_actor*>(jobs[i]))
          if (auto k = owner_of(a->id()); k >= 0 && nodes_[static_cast<size_t>(k)].paused_until != 0)
            continue;
      ready.push_back(i);
    }
    return ready;
  }

  bool has_runnable_job() const { return !runnable_jobs().empty(); }

  // -- which node an actor belongs to ------------------------------------------------

  /// Runs the first ready job, noting which node the actors it spawns
  /// belong to (that of the actor that ran).
  void run_front() {
    note_spawns(-1); // what the simulator and its clients spawned
    int owner = -1;
    if (auto* a = dynamic_cast<caf::abstract_actor*>(sched_.jobs.front()))
      owner = owner_of(a->id());
    context_owner_ = owner;
    sched_.run_once();
    context_owner_ = -1;
    note_spawns(owner);
  }

  /// Runs every ready job, as the test scheduler's run(), one at a time
  /// (those of paused nodes wait).
  void run_all() {
    for (auto ready = runnable_jobs(); !ready.empty(); ready = runnable_jobs()) {
      std::swap(sched_.jobs[0], sched_.jobs[ready.front()]);
      run_front();
    }
  }

  /// Actors spawned since the last call belong to node index `owner` (-1:
  /// the simulator and its clients). Actor ids only grow.
  void note_spawns(int owner) {
    auto latest = sys_.latest_actor_id();
    if (latest > last_noted_id_) {
      if (spawned_.empty() || spawned_.rbegin()->second != owner)
        spawned_[last_noted_id_ + 1] = owner;
      last_noted_id_ = latest;
    }
  }

  /// The node index actor `id` belongs to; -1 for the simulator's own.
  int owner_of(caf::actor_id id) const {
    auto i = spawned_.upper_bound(id);
    if (i == spawned_.begin())
      return -1;
    return std::prev(i)->second;
  }

  /// The index of the node with address prefix of `address` (-1: none).
  int node_of_address(const std::string& address) const {
    if (!multi())
      return 0;
    for (size_t k = 0; k < nodes_.size(); ++k)
      if (address.compare(0, nodes_[k].prefix.size(), nodes_[k].prefix) == 0)
        return static_cast<int>(k);
    return -1;
  }

  /// A client chosen by the seed, not paused and not already inside a
  /// call, makes its next call.
  void act_some_client();
  /// `c` makes its next call (or, `finishing`, ends what it has open),
  /// unless it is inside a call already.
  void enter(sim_client& c, bool finishing = false);

  void after_step() {
    if (crash_node_after_step_ >= 0) {
      auto k = crash_node_after_step_;
      crash_node_after_step_ = -1;
      crash_node(static_cast<size_t>(k));
    }
    if (multi()) {
      heal_due();
      if (int ended = zk_.expire_idle(); ended > 0)
        count("zookeeper.session_expired");
    }
  }

  /// Runs actors (and faults) until `waiter` has mail; a client blocked in
  /// a call waits here.
  void await(caf::scoped_actor& waiter, caf::message_id reply) {
    auto start = now_ms();
    waits_.push_back({&waiter, reply, stack_.empty() ? nullptr : stack_.back(), false});
    auto index = waits_.size() - 1;
    for (;;) {
      notice_replies();
      if (waits_[index].arrived) {
        waits_.pop_back();
        return;
      }
      // While one client waits, another may make its call: application
      // processes run concurrently.
      if (stack_.size() < 3 && chance(0.05)) {
        act_some_client();
        continue;
      }
      maybe_inject();
      if (!step() || now_ms() - start > 600000) {
        waits_.pop_back();
        throw sim_failure("stuck_client: a client waited " + std::to_string(now_ms() - start)
                          + " ms for a reply");
      }
    }
  }

  /// Notes, for every client waiting (nested calls), whether its reply
  /// has arrived, dropping replies to requests that timed out before. The
  /// arrival orders what the call returned in the history.
  void notice_replies();

  /// Runs actors until `ms` of simulated time passed.
  void sleep(int64_t ms) {
    auto until = now_ms() + ms;
    while (now_ms() < until) {
      maybe_inject();
      auto next = next_timer_ms();
      if (has_runnable_job() || (next && *next <= until)) {
        step();
        continue;
      }
      sched_.advance_time(milliseconds(until - now_ms()));
    }
  }

  client_driver driver() {
    client_driver d;
    d.clock_ms = [this] { return now_ms(); };
    d.sleep_ms = [this](int64_t ms) { sleep(ms); };
    d.await = [this](caf::scoped_actor& waiter, caf::message_id reply) { await(waiter, reply); };
    return d;
  }

  // -- the network ------------------------------------------------------------------

  /// The stable handle of `address`: a proxy that passes messages on to
  /// the actor bound to the address, through the faulty network.
  caf::actor endpoint(const std::string& address) {
    auto& p = proxies_[address];
    if (!p) {
      // Proxies are the network's, whoever made the address known.
      note_spawns(context_owner_);
      p = sys_.spawn(proxy_fn, this, address);
      note_spawns(-1);
    }
    return p;
  }

  caf::actor bind(const std::string& address, const caf::actor& actor) {
    bindings_[address] = actor;
    return endpoint(address);
  }

  enum class mode : uint8_t { normal, drop_reply, duplicate };
  struct held {
    int64_t at;
    caf::response_promise rp;
    caf::message msg;
    mode how;
  };
  struct connection {
    std::deque<held> queue;
    int64_t last_at = 0;
  };

  /// A message for `address` from `sender`, taken over by the proxy `self`
  /// with `rp`. Messages of one connection (sender, address) keep their
  /// order; different connections reorder through their delays.
  void route(caf::event_based_actor* self, const std::string& address, uint64_t sender,
             caf::response_promise rp, caf::message msg) {
    auto from = multi() ? owner_of(sender) : 0;
    if (from >= 0 && nodes_[from].down) {
      // Sent while the node goes down or by one of its dying actors: lost
      // with the node, as bytes a crashed host never put on the wire.
      graveyard_.push_back(std::move(rp));
      return;
    }
    if (from >= 0 && blocked_.count({from, node_of_address(address)})) {
      // Across a network partition: lost (the connection breaks; what
      // is sent again after the heal goes through).
      graveyard_.push_back(std::move(rp));
      return;
    }
    auto now = now_ms();
    int64_t delay = 0;
    auto how = mode::normal;
    bool dup = false;
    if (faults_on_) {
      if (chance(rates_.drop)) {
        count("network.drop");
        graveyard_.push_back(std::move(rp));
        return;
      }
      if (chance(rates_.delay)) {
        count("network.delay");
        delay = 1 + static_cast<int64_t>(pick(static_cast<uint64_t>(rates_.max_delay_ms)));
      }
      if (chance(rates_.drop_reply))
        how = mode::drop_reply;
      dup = chance(rates_.duplicate);
    }
    auto& c = conns_[address][sender];
    auto at = std::max(now + delay, c.last_at);
    c.last_at = at;
    c.queue.push_back({at, std::move(rp), msg, how});
    if (dup)
      c.queue.push_back({at, {}, std::move(msg), mode::duplicate});
    if (at <= now)
      release(address);
    else
      self->delayed_send(self, milliseconds(at - now), tick_atom::value);
  }

  /// Delivers every due message for `address`, in connection order.
  void release(const std::string& address) {
    auto now = now_ms();
    for (auto& [sender, c] : conns_[address]) {
      while (!c.queue.empty() && c.queue.front().at <= now) {
        auto h = std::move(c.queue.front());
        c.queue.pop_front();
        deliver(address, std::move(h));
      }
    }
  }

  void deliver(const std::string& address, held h) {
    auto i = bindings_.find(resolve(address));
    if (i == bindings_.end() || !i->second) {
      graveyard_.push_back(std::move(h.rp));
      return;
    }
    switch (h.how) {
      case mode::normal:
        h.rp.delegate(i->second, std::move(h.msg));
        return;
      case mode::drop_reply:
        count("network.drop_reply");
        caf::anon_send(i->second, std::move(h.msg));
        graveyard_.push_back(std::move(h.rp));
        return;
      case mode::duplicate:
        if (opts_.verbose)
          std::fprintf(stderr, "  to %s: %s\n", address.c_str(), caf::to_string(h.msg).substr(0, 200).c_str());
        count("network.duplicate");
        caf::anon_send(i->second, std::move(h.msg));
        return;
    }
  }

  // -- faults ---------------------------------------------------------------------

  void count(const std::string& what) {
    ++result_.faults[what];
    if (opts_.verbose)
      std::fprintf(stderr, "[%lld ms] %s\n", static_cast<long long>(now_ms() - base_time_ms),
                   what.c_str());
  }

  fault::action on_fault_point(const char* point, const void* detail) {
    ++result_.points_hit[point];
    if (detail != nullptr && std::string_view{point} == "partition.append_durable") {
      auto& d = *static_cast<const fault::append_detail*>(detail);
      // Data writes only: the offsets a group coordinator appends to
      // __consumer_offsets are checked as offsets (the commit and fetch
      // events), and the checker keeps no view of the internal partitions.
      if (!d.control && !is_internal_topic(d.tp.topic))
        record(write_accepted_event{d.tp, d.base_offset, d.last_offset, d.pid, d.epoch,
                                    d.transactional});
    }
    // The replication points fire in fault model 2 of cluster runs only
    // (seeds found before replay as they did).
    if (fault::replication_point(point) && (!multi() || opts_.fault_model < 2))
      return fault::action::proceed;
    // Points hit a few times per run (a truncation, a load that resumes
    // markers) fire ten times as often as the others, so that each fires
    // in some runs at all.
    auto rare = std::string_view{point} == "partition.truncated"
                || std::string_view{point} == "txn_coordinator.loaded";
    if (!faults_on_ || !chance(std::min(0.5, rates_.point_crash * (rare ? 10 : 1))))
      return fault::action::proceed;
    count(std::string("point.") + point);
    if (chance(0.2)) // the whole node goes down at this place
      crash_node_after_step_ = std::max(0, context_owner_);
    return fault::action::crash_here;
  }

  void maybe_inject() {
    if (!faults_on_)
      return;
    if (chance(rates_.node_crash)) {
      crash_node(pick_node());
      return;
    }
    if (multi() && chance(rates_.cluster_crash)) {
      crash_cluster();
      return;
    }
    if (multi() && chance(rates_.zk_cut))
      cut_from_zookeeper(pick_node());
    if (chance(rates_.node_pause))
      pause_node(pick_node());
    if (chance(rates_.partition))
      partition_nodes();
    if (chance(rates_.session_kill))
      kill_some_session();
    if (chance(rates_.kill)) {
      std::vector<std::string> supervised;
      for (auto& [address, actor] : bindings_)
        if (address.substr(address.find('/') + 1) != "broker" && actor)
          supervised.push_back(address);
      if (supervised.empty())
        return;
      auto& address = supervised[pick(supervised.size())];
      auto kind = address.substr(address.find('/') + 1);
      count("kill." + kind.substr(0, kind.find(':')));
      if (opts_.verbose)
        std::fprintf(stderr, "  killed: %s\n", address.c_str());
      caf::anon_send(bindings_[address], kill_child_request{});
    }
  }

  /// A client's producer session dies (the producer replaces it).
  void kill_some_session();

  /// A node chosen by the seed.
  size_t pick_node() { return multi() ? pick(nodes_.size()) : 0; }

  /// Power loss of node index `k`: every actor of the node dies, writes
  /// not synced are lost, what it had on the wire to itself is gone (what
  /// it sent to other nodes may still arrive); it restarts from its
  /// LevelDB. Its ZooKeeper session is not closed: it times out.
  void crash_node(size_t k) {
    if (!nodes_[k].n)
      return;
    count("node.crash");
    power_off(k);
    start_node(k);
  }

  /// Power loss of the whole cluster (every node at once, as in a data
  /// centre outage): each node loses its unsynced writes, and they come
  /// back one by one, each at a time drawn from the seed within two
  /// session timeouts, so that any of them may be the first to register
  /// and lead (Kafka's "last replica standing" cases).
  void crash_cluster() {
    count("cluster.crash");
    auto now = now_ms();
    for (size_t k = 0; k < nodes_.size(); ++k) {
      if (!nodes_[k].n)
        continue;
      power_off(k);
      nodes_[k].restart_at = now + 1 + static_cast<int64_t>(pick(2 * zk_session_timeout_ms));
      if (opts_.verbose)
        std::fprintf(stderr, "  node %d restarts at %lld ms\n", nodes_[k].id,
                     static_cast<long long>(nodes_[k].restart_at - base_time_ms));
    }
  }

  /// Node index `k` loses power: crash_node() without the restart.
  void power_off(size_t k) {
    auto& n = nodes_[k];
    n.paused_until = 0; // a paused process can be killed too
    if (opts_.verbose)
      std::fprintf(stderr, "  node %d crashed\n", n.id);
    drop_messages_in_flight(k);
    // Until the restart nothing it sends reaches the network: what the
    // dying actors send while they stop (or a proxy still had in its
    // mailbox) would otherwise reach the next incarnation's actors late,
    // which no crashed process can do.
    n.down = true;
    zk_.set_crashing(n.id, true);
    for (auto i = bindings_.begin(); i != bindings_.end();)
      i = node_of_address(i->first) == static_cast<int>(k) ? bindings_.erase(i) : std::next(i);
    n.n->stop();
    run_all();
    n.n.reset();
    run_all();
    zk_.set_crashing(n.id, false);
    n.down = false;
    n.env->crash();
  }

  /// Drops the messages queued in the network for node index `k`'s
  /// addresses (a restarted process has new connections) and those its
  /// actors sent to each other; in the single-node world, every message.
  void drop_messages_in_flight(size_t k) {
    for (auto& [address, by_sender] : conns_) {
      // To another node (from node k too: on the wire) it may still arrive.
      if (multi() && node_of_address(address) != static_cast<int>(k))
        continue;
      for (auto& [sender, c] : by_sender) {
        for (auto& h : c.queue)
          graveyard_.push_back(std::move(h.rp));
        c.queue.clear();
      }
    }
  }

  /// Cuts node index `k` off from ZooKeeper for a while (its session may
  /// expire meanwhile); healed by heal_due().
  void cut_from_zookeeper(size_t k) {
    auto& n = nodes_[k];
    if (!zk_.reachable(n.id))
      return;
    count("zookeeper.cut");
    zk_.set_reachable(n.id, false);
    n.zk_cut_until = now_ms() + 1000 + static_cast<int64_t>(pick(2 * zk_session_timeout_ms));
    if (opts_.verbose)
      std::fprintf(stderr, "  node %d cut from ZooKeeper until %lld ms\n", n.id,
                   static_cast<long long>(n.zk_cut_until - base_time_ms));
  }

  /// Node index `k` stops (SIGSTOP): none of its actors runs, timers
  /// included, until it resumes (SIGCONT), often past its ZooKeeper
  /// session's timeout, so that it resumes as a zombie: it may act on
  /// leaderships the controller gave away before it notices. Messages to
  /// it wait in its mailboxes, as in socket buffers.
  void pause_node(size_t k) {
    auto& n = nodes_[k];
    if (!n.n || n.down || n.paused_until != 0)
      return;
    count("node.pause");
    n.paused_until = now_ms() + 1000 + static_cast<int64_t>(pick(3 * zk_session_timeout_ms));
    if (opts_.verbose)
      std::fprintf(stderr, "  node %d paused until %lld ms\n", n.id,
                   static_cast<long long>(n.paused_until - base_time_ms));
  }

  /// Two nodes cut off from each other, both ways or (one in three) one
  /// way, until healed: requests and one-way messages across the cut are
  /// lost (replies to requests delivered before it still arrive). Clients
  /// and ZooKeeper still reach both. One partition at a time.
  void partition_nodes() {
    if (!blocked_.empty() || nodes_.size() < 2)
      return;
    auto a = static_cast<int>(pick(nodes_.size()));
    auto b = static_cast<int>((static_cast<size_t>(a) + 1 + pick(nodes_.size() - 1)) % nodes_.size());
    bool one_way = chance(1.0 / 3);
    count(one_way ? "network.partition_one_way" : "network.partition");
    blocked_.insert({a, b});
    if (!one_way)
      blocked_.insert({b, a});
    partition_until_ = now_ms() + 1000 + static_cast<int64_t>(pick(3 * zk_session_timeout_ms));
    if (opts_.verbose)
      std::fprintf(stderr, "  nodes %d %s %d cut off until %lld ms\n", nodes_[a].id,
                   one_way ? "->" : "<->", nodes_[b].id,
                   static_cast<long long>(partition_until_ - base_time_ms));
  }

  void heal_due() {
    auto now = now_ms();
    for (size_t k = 0; k < nodes_.size(); ++k)
      if (nodes_[k].restart_at != 0 && (now >= nodes_[k].restart_at || !faults_on_)) {
        nodes_[k].restart_at = 0;
        start_node(k);
      }
    for (auto& n : nodes_) {
      if (n.zk_cut_until != 0 && (now >= n.zk_cut_until || !faults_on_)) {
        n.zk_cut_until = 0;
        zk_.set_reachable(n.id, true);
      }
      if (n.paused_until != 0 && (now >= n.paused_until || !faults_on_))
        n.paused_until = 0;
    }
    if (!blocked_.empty() && (now >= partition_until_ || !faults_on_))
      blocked_.clear();
  }

  void start_node() {
    for (size_t k = 0; k < nodes_.size(); ++k)
      start_node(k);
    if (multi())
      await_cluster();
  }

  void start_node(size_t k) {
    auto& n = nodes_[k];
    node_options o;
    o.background_writer = false;
    o.wait_on_stop = false;
    o.clock_ms = [this] { return now_ms(); };
    o.env = n.env.get();
    auto prefix = n.prefix;
    o.network = [this, prefix](const std::string& address, const caf::actor& a) {
      return bind(prefix + address, a);
    };
    if (opts_.verbose)
      o.events = [this, id = n.id](const node_event& e) {
        std::fprintf(stderr, "[%lld ms] node %d: %s\n",
                     static_cast<long long>(now_ms() - base_time_ms), id, e.text.c_str());
      };
    if (multi()) {
      o.node_id = n.id;
      o.advertised_host = "n" + std::to_string(n.id);
      o.advertised_port = 9092;
      o.advertised_listener = "caftx://" + o.advertised_host + ":9092";
      o.duplicate_wait_ms = zk_session_timeout_ms + 2000;
      o.spawn_store = [this, id = n.id](caf::actor owner) {
        return spawn_sim_zookeeper_session(sys_, zk_, id, std::move(owner));
      };
      o.random = [this](int32_t bound) { return static_cast<int32_t>(pick(bound)); };
      o.connect_peer = [this](const std::string& host, uint16_t) {
        auto address = host + "/broker";
        return bindings_.count(address) > 0 ? endpoint(address) : caf::actor{};
      };
    }
    note_spawns(-1);
    context_owner_ = static_cast<int>(k);
    auto started = node::start(sys_, n.cfg, o);
    note_spawns(static_cast<int>(k));
    context_owner_ = -1;
    if (!started.ok())
      throw sim_failure("node " + std::to_string(n.id) + " did not start: "
                        + started.error().to_string());
    n.n = std::move(started).value();
    bind(prefix + "broker", n.n->broker());
    // The node's controller hands it its partitions and coordinators.
    run_all();
  }

  /// Runs until every node is registered and a controller elected.
  void await_cluster() {
    auto deadline = now_ms() + 60000;
    while (now_ms() < deadline) {
      znode_stat st;
      std::vector<std::string> registered;
      std::string controller;
      auto& tree = zk_.tree();
      if (tree.get_children(controller::nodes_path, false, registered, st) == zrc::ZOK
          && registered.size() == nodes_.size()
          && tree.get(controller::controller_path, false, controller, st) == zrc::ZOK)
        return;
      if (!step())
        sched_.advance_time(milliseconds(10));
    }
    throw sim_failure("cluster: the nodes did not register and elect a controller in 60 s");
  }

  /// Where a message for `address` goes: "bootstrap" is a live node's
  /// broker (bootstrap.servers), "leader/X" the node leading X by the
  /// controller's latest partition state; anything else is itself.
  std::string resolve(const std::string& address) {
    if (!multi())
      return address;
    if (address == "bootstrap") {
      std::vector<std::string> live;
      for (auto& n : nodes_)
        if (bindings_.count(n.prefix + "broker") > 0)
          live.push_back(n.prefix + "broker");
      return live.empty() ? address : live[pick(live.size())];
    }
    if (address.compare(0, 7, "leader/") == 0) {
      auto what = address.substr(7);
      auto tp = what.substr(what.find(':') + 1);
      auto dash = tp.rfind('-');
      topic_partition p{tp.substr(0, dash), std::stoi(tp.substr(dash + 1))};
      if (auto leader = leader_of(p); leader >= 0)
        return "n" + std::to_string(leader) + "/" + what;
    }
    return address;
  }

  /// The leader of `tp` in the controller's latest partition state (-1:
  /// none known).
  int32_t leader_of(const topic_partition& tp) {
    std::string data;
    znode_stat st;
    auto path = controller::partition_state_path(tp);
    if (zk_.tree().get(path, false, data, st) != zrc::ZOK)
      return -1;
    auto state = controller::decode_partition_state(path, data, st.version);
    return state.ok() ? state->leader : -1;
  }

  /// The handle a client uses for partition `tp`'s leader.
  caf::actor partition_endpoint(const topic_partition& tp) {
    auto address = "partition:" + tp.topic + "-" + std::to_string(tp.partition);
    return endpoint(multi() ? "leader/" + address : address);
  }

  // -- history ----------------------------------------------------------------------

  /// Sequence numbers step by 16; the numbers between are for what a call
  /// returned (record_returned).
  void record(event_body body) { record_at(16 * next_seq_++, now_ms(), std::move(body)); }

  /// Records what a call of the current client returned, ordered where its
  /// last reply arrived: a client that waited for another one's call (they
  /// run nested here, as concurrent processes) saw its reply then.
  void record_returned(event_body body);

  void record_at(uint64_t seq, int64_t time_ms, event_body body) {
    mix(body.index());
    mix(seq);
    mix(static_cast<uint64_t>(time_ms));
    if (auto* a = std::get_if<ack_event>(&body)) {
      mix(a->value);
      mix(static_cast<uint64_t>(a->offset));
    }
    history_.events.push_back(event{seq, time_ms, std::move(body)});
  }

  value_id next_value() { return next_value_++; }
  txn_number next_txn(const std::string& tid) { return txn_counter_[tid]++; }

  /// One request from the simulator's own client actor, through the network.
  template <class Resp, class Req>
  std::optional<Resp> call(const caf::actor& dest, Req req) {
    return call<Resp>(io_, dest, std::move(req));
  }

  /// One request from `io`, through the network; nullopt without answer.
  template <class Resp, class Req>
  std::optional<Resp> call(caf::scoped_actor& io, const caf::actor& dest, Req req) {
    auto handle = io->request(dest, milliseconds(3000), std::move(req));
    await(io, handle.id());
    std::optional<Resp> out;
    handle.receive([&](Resp& r) { out = std::move(r); }, [&](caf::error&) {});
    return out;
  }

  caf::actor_system& system() { return sys_; }
  caf::actor broker() { return endpoint(multi() ? "bootstrap" : "broker"); }
  bool faults_on() const { return faults_on_; }
  const fault_rates& rates() const { return rates_; }
  const sim_options& options() const { return opts_; }
  sim_result& result() { return result_; }

private:
  void draw_rates() {
    if (!opts_.faults)
      return;
    // Each fault is off in about a quarter of the seeds, so that every
    // fault is also seen alone with few others around it.
    auto rate = [this](double typical) {
      if (chance(0.25))
        return 0.0;
      auto scale = std::uniform_real_distribution<double>(0.3, 2.0)(rng_) * opts_.fault_scale;
      return std::min(0.5, typical * scale);
    };
    rates_.drop = rate(0.01);
    rates_.drop_reply = rate(0.01);
    rates_.duplicate = rate(0.01);
    rates_.delay = rate(0.1);
    rates_.max_delay_ms = 1 + static_cast<int64_t>(pick(500));
    rates_.kill = rate(0.0002);
    rates_.node_crash = rate(0.00002);
    rates_.point_crash = rate(0.01);
    rates_.client_crash = rate(0.005);
    rates_.session_kill = rate(0.0001);
    rates_.pause = rate(0.003);
    // Drawn only with several nodes: single-node seeds keep their runs.
    if (multi())
      rates_.zk_cut = rate(0.00002);
    // Drawn last, and only in fault model 2: the seeds found before keep
    // their runs under --fault-model 1.
    if (multi() && opts_.fault_model >= 2) {
      rates_.node_pause = rate(0.00002);
      rates_.partition = rate(0.00002);
    }
    // Model 4 after them, for the same reason.
    if (multi() && opts_.fault_model >= 4)
      rates_.cluster_crash = rate(0.00001);
  }

  void setup_topics();
  void run_northwind();
  void run_mixed();
  void settle();
  void probe_progress();
  void final_reads();
  void collect_final_state();
  /// With several nodes: stops them all and reads every replica's log of
  /// the user partitions from its storage into the final state.
  void collect_replica_logs();

  sim_options opts_;
  std::mt19937_64 rng_;
  fault_rates rates_;
  sim_config cfg_;
  caf::actor_system sys_{cfg_};
  caf::scheduler::test_coordinator& sched_
    = dynamic_cast<caf::scheduler::test_coordinator&>(sys_.scheduler());
  caf::scoped_actor io_{sys_, true};
  node_config ncfg_;
  struct sim_node {
    int32_t id = 0;          // node.id (0: the embedded single node)
    std::string prefix;      // of its addresses: "n1/" ("" alone)
    node_config cfg;
    std::unique_ptr<crash_env> env;
    std::unique_ptr<node> n;
    bool down = false;        // between a crash and the restart
    int64_t zk_cut_until = 0; // cut off from ZooKeeper until then (0: not)
    int64_t paused_until = 0; // paused until then (0: running)
    int64_t restart_at = 0;   // off after a cluster crash until then (0: not)
  };
  /// Node index pairs (from, to) whose messages are lost while partitioned.
  std::set<std::pair<int, int>> blocked_;
  int64_t partition_until_ = 0;
  static constexpr int64_t zk_session_timeout_ms = 6000;
  sim_zookeeper zk_;
  std::vector<sim_node> nodes_;
  /// First actor id of each run of ids spawned by one owner (node index;
  /// -1: the simulator and its clients).
  std::map<caf::actor_id, int> spawned_;
  caf::actor_id last_noted_id_ = 0;
  /// The node index whose code runs now (an actor's step, node::start);
  /// -1: the simulator's or a client's.
  int context_owner_ = -1;
  std::map<std::string, caf::actor> proxies_;
  std::map<std::string, caf::actor> bindings_;
  /// Connections by receiving address, then by sending actor.
  std::map<std::string, std::map<uint64_t, connection>> conns_;
  std::vector<caf::response_promise> graveyard_;
  bool faults_on_ = false;
  int crash_node_after_step_ = -1; // node index to crash after this step
  bool settling_ = false;
  std::vector<sim_client*> stack_; // clients inside a call, innermost last
  struct wait {
    caf::scoped_actor* waiter;
    caf::message_id reply;
    sim_client* client;
    bool arrived;
  };
  std::vector<wait> waits_; // blocked calls, innermost last
  uint64_t next_seq_ = 1;
  uint64_t hash_ = 1469598103934665603ull;
  uint64_t steps_ = 0;
  history history_;
  value_id next_value_ = 1;
  std::map<std::string, txn_number> txn_counter_;
  sim_result result_;

public:
  std::vector<std::unique_ptr<sim_client>> clients_;
};

caf::behavior proxy_fn(caf::event_based_actor* self, world* w, std::string address) {
  self->set_default_handler(
    [w, address](caf::scheduled_actor* s, caf::message_view& x) -> caf::result<caf::message> {
      auto* e = s->current_mailbox_element();
      uint64_t sender = e && e->sender ? e->sender->id() : 0;
      auto rp = s->make_response_promise();
      w->route(static_cast<caf::event_based_actor*>(s), address, sender, std::move(rp),
               x.move_content_to_message());
      return caf::delegated<caf::message>{};
    });
  return {[w, address](tick_atom) { w->release(address); }};
}

// -- clients ----------------------------------------------------------------------

/// One application process using the client API: act() makes one call (or
/// a few that belong together), finish() ends what is open once faults stop.
struct sim_client {
  explicit sim_client(world& w, std::string name) : w(w), name(std::move(name)) {}
  virtual ~sim_client() = default;
  virtual void act() = 0;
  virtual void finish() {}
  /// Readers and monitors do not write: they may act after quiescence.
  virtual bool writes() const { return true; }
  /// The application process dies (its producer is dropped unflushed); the
  /// next act() starts a new instance.
  virtual void crash() {}
  /// The client's producer, if it has one now.
  virtual producer* current_producer() { return nullptr; }

  world& w;
  std::string name;
  int64_t paused_until = 0;
  /// Inside act() (perhaps waiting for a reply): not to be entered again.
  bool busy = false;
  /// Where the reply to its latest request arrived (0: none yet).
  uint64_t reply_seq = 0;
  int64_t reply_ms = 0;
  /// For the requests readers and monitors send themselves.
  caf::scoped_actor io{w.system(), true};
};

producer_config producer_settings(std::optional<std::string> tid) {
  producer_config c;
  c.transactional_id = std::move(tid);
  c.transaction_timeout_ms = 10000;
  c.request_timeout_ms = 2000;
  c.delivery_timeout_ms = 15000;
  c.max_block_ms = 15000;
  c.retry_backoff_ms = 100;
  c.linger_ms = 5;
  return c;
}

/// Sends a new value to `tp` with `p` (of client `client`, transactional
/// id `tid`, in transaction `txn`), recording the send and, when the
/// producer calls back, its ack or failure.
void send_recorded(world& w, producer& p, const std::string& client,
                   const std::optional<std::string>& tid, const topic_partition& tp,
                   std::optional<txn_number> txn) {
  auto v = w.next_value();
  auto id = p.producer_identity();
  w.record(send_event{client, tid, producer_id{id.first}, producer_epoch{id.second}, tp, v, txn});
  world* wp = &w;
  try {
    p.send(producer_record{tp.topic, tp.partition, {}, std::to_string(v), {}, -1},
           [wp, v](const record_metadata& m, const status& st) {
             if (st.ok())
               wp->record(ack_event{v, m.offset});
             else
               wp->record(send_failed_event{v, st.code()});
           });
  } catch (const kafka_exception& ex) {
    // The record never reached the producer's buffer: not part of any
    // later commit.
    w.record(send_failed_event{v, ex.code()});
    throw;
  }
}

/// Commits or aborts transaction `txn` of `tid` with `p`, recording what
/// the call returned; rethrows its error.
void end_recorded(world& w, producer& p, const std::string& tid, txn_number txn, bool commit) {
  end_txn_event e{tid, txn, commit ? control_type::commit : control_type::abort};
  auto before = p.producer_identity();
  try {
    if (commit)
      p.commit_transaction();
    else
      p.abort_transaction();
  } catch (const kafka_exception& ex) {
    e.error = ex.code();
    w.record_returned(e);
    throw;
  }
  // A transaction to which nothing was added ends without EndTxn: no
  // epoch is handed then.
  if (auto id = p.producer_identity(); id != before) {
    e.pid = producer_id{id.first};
    e.epoch = producer_epoch{id.second};
  }
  w.record_returned(e);
  ++(commit ? w.result().commits : w.result().aborts);
}

/// A transactional producer: begin, a few sends, commit or abort, again.
/// Two of them may share a transactional id (each fences the other).
struct txn_client : sim_client {
  txn_client(world& w, std::string name, std::string tid, int max_records)
    : sim_client(w, std::move(name)), tid(std::move(tid)), max_records(max_records) {}

  enum class phase { need_init, ready, in_txn, must_abort };
  std::string tid;
  int max_records;
  std::unique_ptr<producer> p;
  phase ph = phase::need_init;
  txn_number txn = 0;
  int to_send = 0;
  bool want_commit = true;
  bool always_commit = false; // the progress probe

  void crash() override { p.reset(); }
  producer* current_producer() override { return p.get(); }

  void make_producer() {
    p = std::make_unique<producer>(w.system(), w.broker(), producer_settings(tid));
    p->set_driver(w.driver());
    ph = phase::need_init;
  }

  void send_one(const std::string& topic) {
    topic_partition tp{topic, static_cast<int32_t>(w.pick(partitions_per_topic))};
    send_recorded(w, *p, name, tid, tp, txn);
  }

  void end(bool commit) {
    end_recorded(w, *p, tid, txn, commit);
    ph = phase::ready;
  }

  void act() override {
    if (!p)
      make_producer();
    try {
      switch (ph) {
        case phase::need_init: {
          p->init_transactions();
          auto id = p->producer_identity();
          w.record_returned(init_transactions_event{tid, producer_id{id.first}, producer_epoch{id.second}});
          ph = phase::ready;
          return;
        }
        case phase::ready:
          p->begin_transaction();
          txn = w.next_txn(tid);
          w.record(txn_begin_event{tid, txn});
          to_send = 1 + static_cast<int>(w.pick(static_cast<uint64_t>(max_records)));
          want_commit = always_commit || !w.chance(0.2);
          ph = phase::in_txn;
          return;
        case phase::in_txn:
          if (to_send > 0) {
            --to_send;
            send_one(output_topics[w.pick(output_topics.size())]);
            return;
          }
          end(want_commit);
          return;
        case phase::must_abort:
          end(false);
          return;
      }
    } catch (const kafka_exception& ex) {
      if (ex.is_fatal())
        p.reset(); // a new instance with the same transactional id takes over
      else if (ex.is_abortable())
        ph = phase::must_abort;
      // retriable: the same call again at the next act()
    }
  }

  void finish() override {
    for (int attempt = 0; p && attempt < 20 && ph != phase::ready && ph != phase::need_init;
         ++attempt) {
      if (ph == phase::in_txn)
        to_send = 0;
      act();
    }
  }
};

/// An idempotent producer writing the input topic; flushes now and then.
struct idempotent_client : sim_client {
  using sim_client::sim_client;
  std::unique_ptr<producer> p;
  int unflushed = 0;

  void crash() override { p.reset(); }
  producer* current_producer() override { return p.get(); }

  void act() override {
    if (!p) {
      p = std::make_unique<producer>(w.system(), w.broker(), producer_settings(std::nullopt));
      p->set_driver(w.driver());
    }
    try {
      if (unflushed >= 8 || (unflushed > 0 && w.chance(0.1))) {
        unflushed = 0;
        p->flush();
        return;
      }
      topic_partition tp{input_topic, static_cast<int32_t>(w.pick(partitions_per_topic))};
      send_recorded(w, *p, name, std::nullopt, tp, std::nullopt);
      ++unflushed;
    } catch (const kafka_exception& ex) {
      if (ex.is_fatal())
        p.reset();
    }
  }

  void finish() override {
    if (!p)
      return;
    try {
      p->flush();
    } catch (const kafka_exception&) {
    }
  }
};

/// Consume-transform-produce: reads the input topic read_committed, writes
/// one output record per input record and the input offsets in one
/// transaction.
struct ctp_client : sim_client {
  ctp_client(world& w, std::string name, std::string tid, std::vector<topic_partition> inputs)
    : sim_client(w, std::move(name)), tid(std::move(tid)), inputs(std::move(inputs)) {}

  std::string tid;
  std::vector<topic_partition> inputs;
  std::unique_ptr<producer> p;
  std::unique_ptr<consumer> c;
  bool must_abort = false;

  void crash() override {
    p.reset();
    c.reset();
    must_abort = false;
  }
  producer* current_producer() override { return p.get(); }

  void restart() {
    p = std::make_unique<producer>(w.system(), w.broker(), producer_settings(tid));
    p->set_driver(w.driver());
    p->init_transactions();
    auto id = p->producer_identity();
    w.record_returned(init_transactions_event{tid, producer_id{id.first}, producer_epoch{id.second}});
    rewind();
  }

  // Positions from the group's committed offsets, as after a rebalance.
  void rewind() {
    consumer_config cc;
    cc.group_id = ctp_group;
    cc.isolation = isolation_level::read_committed;
    cc.auto_offset_reset = "earliest";
    cc.request_timeout_ms = 2000;
    cc.max_poll_records = 10;
    c = std::make_unique<consumer>(w.system(), w.broker(), cc);
    c->set_driver(w.driver());
    c->assign(inputs);
  }

  void act() override {
    try {
      if (!p) {
        restart();
        return;
      }
      if (must_abort) {
        end_recorded(w, *p, tid, open_txn, false);
        must_abort = false;
        rewind();
        return;
      }
      auto recs = c->poll(milliseconds(50));
      if (recs.empty())
        return;
      p->begin_transaction();
      auto txn = w.next_txn(tid);
      open_txn = txn;
      w.record(txn_begin_event{tid, txn});
      std::map<topic_partition, int64_t> offsets;
      for (auto& r : recs) {
        send_recorded(w, *p, name, tid, {"out2", r.partition}, txn);
        offsets[{r.topic, r.partition}] = r.offset + 1;
      }
      p->send_offsets_to_transaction(offsets, ctp_group);
      for (auto& [tp, off] : offsets)
        w.record_returned(txn_offsets_event{tid, txn, ctp_group, tp, off});
      end_recorded(w, *p, tid, txn, true);
    } catch (const kafka_exception& ex) {
      if (ex.is_fatal()) {
        p.reset();
        c.reset();
      } else {
        // Abortable, or retriable (a commit whose outcome is unknown): abort
        // and start over from the committed offsets; a commit that did
        // happen moved them.
        must_abort = true;
      }
    }
  }

  void finish() override {
    for (int i = 0; i < 5 && p && must_abort; ++i)
      act();
  }

  txn_number open_txn = 0;
};

/// Reads output partitions forward with one isolation level and records
/// every poll.
struct reader_client : sim_client {
  reader_client(world& w, std::string name, isolation_level iso)
    : sim_client(w, std::move(name)), iso(iso) {}
  isolation_level iso;
  std::map<topic_partition, int64_t> positions;

  bool writes() const override { return false; }

  /// One fetch of `tp`; false if there was no answer.
  bool poll(const topic_partition& tp, int64_t* high_watermark = nullptr) {
    auto& pos = positions[tp];
    auto r = w.call<fetch_response>(io, w.partition_endpoint(tp),
                                    fetch_request{tp, pos, 1 << 20, iso});
    if (!r || r->error != error_code::none)
      return false;
    auto batches = v2::decode_all(r->records);
    if (!batches.ok())
      throw sim_failure("fetch of " + to_string(tp) + ": " + batches.error().to_string());
    auto f = filter_fetched(tp, pos, *batches, r->aborted_transactions, iso, 1000000);
    if (high_watermark)
      *high_watermark = r->high_watermark;
    if (f.records.empty() && f.next_offset == pos)
      return true;
    poll_event e{name, iso, tp, pos, {}, r->last_stable_offset, r->high_watermark};
    for (auto& rec : f.records)
      e.records.push_back({rec.offset, std::stoull(rec.value)});
    pos = f.next_offset;
    w.record(std::move(e));
    return true;
  }

  void act() override {
    auto& topic = output_topics[w.pick(output_topics.size())];
    poll({topic, static_cast<int32_t>(w.pick(partitions_per_topic))});
  }

  /// Reads every output partition up to its end.
  void finish() override {
    for (auto& topic : output_topics)
      for (int32_t p = 0; p < partitions_per_topic; ++p) {
        topic_partition tp{topic, p};
        for (int i = 0; i < 1000; ++i) {
          int64_t hw = -1;
          if (poll(tp, &hw) && positions[tp] >= hw && hw >= 0)
            break;
        }
      }
  }
};

/// Fetches the CTP group's committed offsets now and then.
struct offsets_monitor : sim_client {
  using sim_client::sim_client;
  bool writes() const override { return false; }

  void fetch(const topic_partition& tp) {
    auto coord = w.call<find_coordinator_response>(io, w.broker(),
                                                   find_coordinator_request{0, ctp_group});
    if (!coord || coord->error != error_code::none)
      return;
    auto r = w.call<offset_fetch_response>(io, coord->coordinator,
                                           offset_fetch_request{ctp_group, {tp}, false});
    if (r && r->error == error_code::none && r->offsets.size() == 1)
      w.record(offset_fetch_event{ctp_group, tp, r->offsets[0]});
  }

  void act() override { fetch({input_topic, static_cast<int32_t>(w.pick(partitions_per_topic))}); }
  void finish() override {
    for (int32_t p = 0; p < partitions_per_topic; ++p)
      fetch({input_topic, p});
  }
};

// -- the run -------------------------------------------------------------------------

void world::act_some_client() {
  if (clients_.empty())
    return;
  auto& c = clients_[pick(clients_.size())];
  if (c->paused_until > now_ms() || (settling_ && c->writes()))
    return;
  enter(*c);
}

void world::enter(sim_client& c, bool finishing) {
  if (c.busy)
    return;
  c.busy = true;
  c.reply_seq = 0;
  stack_.push_back(&c);
  try {
    if (finishing)
      c.finish();
    else
      c.act();
  } catch (...) {
    stack_.pop_back();
    c.busy = false;
    throw;
  }
  stack_.pop_back();
  c.busy = false;
}

void world::notice_replies() {
  for (auto& w : waits_) {
    if (w.arrived)
      continue;
    while (auto* e = (*w.waiter)->mailbox().peek()) {
      if (e->mid == w.reply) {
        w.arrived = true;
        if (w.client != nullptr) {
          w.client->reply_seq = 16 * next_seq_++;
          w.client->reply_ms = now_ms();
        }
        break;
      }
      (*w.waiter)->dequeue();
    }
  }
}

void world::kill_some_session() {
  if (clients_.empty())
    return;
  if (auto* p = clients_[pick(clients_.size())]->current_producer()) {
    count("kill.producer_session");
    caf::anon_send_exit(p->session_actor(), caf::exit_reason::kill);
  }
}

void world::record_returned(event_body body) {
  auto* c = stack_.empty() ? nullptr : stack_.back();
  if (c == nullptr || c->reply_seq == 0)
    record(std::move(body));
  else if (c->reply_seq % 16 == 15) // more than 15 results of one reply: none here
    throw sim_failure("too many events for one reply");
  else
    record_at(c->reply_seq++, c->reply_ms, std::move(body));
}

void world::setup_topics() {
  for (auto& t : std::vector<std::string>{input_topic, output_topics[0], output_topics[1]}) {
    auto r = call<txn_response>(broker(), create_topic_request{t, partitions_per_topic, {}});
    if (!r || (r->error != error_code::none && r->error != error_code::topic_already_exists))
      throw sim_failure("topic " + t + " was not created: "
                        + (r ? r->message : std::string("no reply")));
  }
}

// Progress: with the faults over, a fresh transactional producer begins,
// sends and commits, again and again until a commit returns ok or the
// bound passed (the checker's no_progress judges it).
void world::probe_progress() {
  const int64_t bound = 40000;
  auto since = now_ms();
  history_.final.progress_since_ms = since;
  history_.final.progress_bound_ms = bound;
  txn_client probe{*this, "probe", "probe", 2};
  probe.always_commit = true;
  auto before = result_.commits;
  while (result_.commits == before && now_ms() < since + bound) {
    enter(probe);
    // A call refused at once is tried again a little later.
    auto until = now_ms() + 50;
    while (now_ms() < until)
      if (!step())
        sched_.advance_time(milliseconds(until - now_ms()));
  }
  enter(probe, true);
}

void world::settle() {
  faults_on_ = false;
  settling_ = true;
  for (auto& c : clients_)
    c->paused_until = 0;
  for (auto& c : clients_)
    if (c->writes())
      enter(*c, true);
}

void add_entries(const record_batch& b, std::vector<log_entry>& log) {
  append_log_entries(b, log, [](const record& r, int64_t) { return std::stoull(r.value); });
}

void world::collect_replica_logs() {
  // Every node stops at once (their sessions left open: nothing moves
  // leadership meanwhile), then each one's storage is read as a restart
  // would read it.
  for (auto& n : nodes_)
    zk_.set_crashing(n.id, true);
  for (auto& n : nodes_)
    if (n.n)
      n.n->stop();
  run_all();
  for (auto& n : nodes_)
    n.n.reset();
  run_all();
  for (auto& n : nodes_) {
    node_store_options so;
    so.background_writer = false;
    so.env = n.env.get();
    so.node_id = n.id;
    auto store = node_store::open(n.cfg.data_dir, so);
    if (!store.ok())
      throw sim_failure("node " + std::to_string(n.id) + "'s storage: " + store.error().to_string());
    for (auto& p : history_.final.partitions) {
      replica_log r{n.id, {}};
      bool any = false;
      (*store)->scan(keys::log_prefix(p.tp), [&](const std::string&, const std::string& value) {
        any = true;
        auto b = v2::decode_all(value);
        if (!b.ok())
          throw sim_failure("node " + std::to_string(n.id) + ", " + to_string(p.tp) + ": "
                            + b.error().to_string());
        for (auto& batch : *b)
          add_entries(batch, r.log);
        return true;
      });
      if (any)
        p.replicas.push_back(std::move(r));
    }
  }
  for (auto& n : nodes_)
    zk_.set_crashing(n.id, false);
}

void world::collect_final_state() {
  auto& f = history_.final;
  for (auto& topic : std::vector<std::string>{input_topic, output_topics[0], output_topics[1]})
    for (int32_t p = 0; p < partitions_per_topic; ++p) {
      topic_partition tp{topic, p};
      auto dest = partition_endpoint(tp);
      partition_final_state ps;
      ps.tp = tp;
      int64_t pos = 0;
      for (int i = 0; i < 10000; ++i) {
        auto r = call<fetch_response>(dest, fetch_request{tp, pos, 1 << 24,
                                                         isolation_level::read_uncommitted});
        if (!r || r->error != error_code::none)
          throw sim_failure("final fetch of " + to_string(tp) + " got no answer");
        ps.high_watermark = r->high_watermark;
        auto batches = v2::decode_all(r->records);
        if (!batches.ok())
          throw sim_failure("final fetch of " + to_string(tp) + ": " + batches.error().to_string());
        for (auto& b : *batches) {
          if (b.last_offset() < pos)
            continue;
          add_entries(b, ps.log);
          pos = b.last_offset() + 1;
        }
        if (pos >= r->high_watermark)
          break;
      }
      auto lso = call<fetch_response>(dest, fetch_request{tp, ps.high_watermark, 1,
                                                         isolation_level::read_committed});
      ps.last_stable_offset = lso ? lso->last_stable_offset : -1;
      auto producers = call<describe_producers_response>(dest, describe_producers_request{tp});
      if (producers)
        for (auto& a : producers->active_producers)
          if (a.current_txn_start_offset >= 0)
            ps.open_transactions.push_back(a.pid);
      f.partitions.push_back(std::move(ps));
    }
  list_transactions_request lreq;
  lreq.filter.states = {"Ongoing", "PrepareCommit", "PrepareAbort"};
  // Right after the quiet period a node may still be learning where the
  // shards of another one are: asked again for a while, as a client would.
  auto listed = call<list_transactions_response>(broker(), lreq);
  for (int attempt = 0; attempt < 20 && (!listed || listed->error != error_code::none); ++attempt) {
    sleep(500);
    listed = call<list_transactions_response>(broker(), lreq);
  }
  if (!listed || listed->error != error_code::none)
    throw sim_failure("ListTransactions got no answer at the end: "
                      + (listed ? std::string(to_string(listed->error)) + ": " + listed->message
                                : std::string("no reply")));
  for (auto& t : listed->transactions) {
    auto coord = call<find_coordinator_response>(broker(),
                                                 find_coordinator_request{1, t.transactional_id});
    if (!coord || coord->error != error_code::none)
      continue;
    auto d = call<describe_transaction_response>(coord->coordinator,
                                                 describe_transaction_request{t.transactional_id});
    coordinator_open_txn o{t.transactional_id, t.pid, no_producer_epoch, {}};
    if (d && d->error == error_code::none) {
      o.epoch = d->epoch;
      o.partitions = d->partitions;
    }
    f.coordinator_open_transactions.push_back(std::move(o));
  }
  std::stable_sort(history_.events.begin(), history_.events.end(),
                   [](const event& a, const event& b) { return a.seq < b.seq; });
  f.seq = 16 * next_seq_++;
  f.time_ms = now_ms();
  if (multi())
    collect_replica_logs();
}

// The Northwind pipeline under faults: the load (retried until it is
// committed once), the processor (restarted after every crash or error, as
// its operator would), then the committed output against the sequential
// result.
void world::run_northwind() {
  start_node();
  const std::vector<std::pair<std::string, int32_t>> topics{{northwind::orders_topic, 1},
                                                            {northwind::confirmed_topic, 3},
                                                            {northwind::rejected_topic, 1},
                                                            {northwind::stock_topic, 4}};
  for (auto& [name, count] : topics) {
    auto r = call<txn_response>(broker(), create_topic_request{name, count, {}});
    if (!r || r->error != error_code::none)
      throw sim_failure("topic " + name + " was not created");
  }
  faults_on_ = opts_.faults;
  auto d = driver();
  auto& dir = opts_.northwind_dir;
  for (int attempt = 0;; ++attempt) {
    try {
      northwind::load_orders(sys_, broker(), dir, d);
      break;
    } catch (const kafka_exception&) {
      if (attempt >= 100)
        throw sim_failure("northwind: the load was never committed");
    }
  }
  northwind::crash_hook hook = [this](const std::string& point, int, int) {
    if (faults_on_ && chance(std::max(0.01, rates_.client_crash * 4))) {
      count("client.crash");
      throw northwind::simulated_crash(point);
    }
  };
  int committed = 0;
  for (int attempt = 0;; ++attempt) {
    try {
      northwind::run_processor(sys_, broker(), dir, 10, hook, committed, d);
      break;
    } catch (const northwind::simulated_crash&) {
    } catch (const kafka_exception&) {
    }
    if (attempt >= 1000)
      throw sim_failure("northwind: the processor never finished");
  }
  result_.commits = static_cast<uint64_t>(committed);
  faults_on_ = false;
  auto quiet_since = now_ms();
  while (now_ms() < quiet_since + 40000)
    if (!step())
      sched_.advance_time(milliseconds(quiet_since + 40000 - now_ms()));
  northwind::result actual;
  try {
    actual = northwind::read_result(sys_, broker(), dir, d);
  } catch (const kafka_exception& e) {
    throw sim_failure(std::string("northwind: reading the result failed: ") + e.what());
  } catch (const std::runtime_error& e) {
    throw sim_failure(std::string("northwind_duplicate_output: ") + e.what());
  }
  auto expected = northwind::sequential_result(dir);
  if (!(actual == expected))
    throw sim_failure("northwind_result_mismatch: " + std::to_string(actual.confirmed.size())
                      + " confirmed, " + std::to_string(actual.rejected.size())
                      + " rejected; the sequential run gives "
                      + std::to_string(expected.confirmed.size()) + " and "
                      + std::to_string(expected.rejected.size()));
}

// The mixed workload, judged by the history checker.
void world::run_mixed() {
  start_node();
  setup_topics();
  clients_.push_back(std::make_unique<idempotent_client>(*this, "source-0"));
  clients_.push_back(std::make_unique<idempotent_client>(*this, "source-1"));
  clients_.push_back(std::make_unique<txn_client>(*this, "short-0", "short-0", 3));
  clients_.push_back(std::make_unique<txn_client>(*this, "short-1", "short-1", 3));
  clients_.push_back(std::make_unique<txn_client>(*this, "long-0", "long-0", 30));
  clients_.push_back(std::make_unique<txn_client>(*this, "shared-a", "shared", 4));
  clients_.push_back(std::make_unique<txn_client>(*this, "shared-b", "shared", 4));
  clients_.push_back(std::make_unique<ctp_client>(
    *this, "ctp-0", "ctp-0",
    std::vector<topic_partition>{{input_topic, 0}, {input_topic, 2}}));
  clients_.push_back(std::make_unique<ctp_client>(
    *this, "ctp-1", "ctp-1",
    std::vector<topic_partition>{{input_topic, 1}, {input_topic, 3}}));
  clients_.push_back(std::make_unique<reader_client>(*this, "rc-0", isolation_level::read_committed));
  clients_.push_back(std::make_unique<reader_client>(*this, "ru-0", isolation_level::read_uncommitted));
  clients_.push_back(std::make_unique<offsets_monitor>(*this, "offsets-0"));

  faults_on_ = opts_.faults;
  auto end = now_ms() + opts_.active_ms;
  while (now_ms() < end) {
    maybe_inject();
    // Clients act often while actors are idle, so that time moves on
    // mostly while requests are in flight.
    if (chance(has_runnable_job() ? 0.1 : 0.9)) {
      auto& c = clients_[pick(clients_.size())];
      if (c->paused_until > now_ms())
        continue;
      if (c->writes() && faults_on_) {
        if (chance(rates_.pause)) {
          count("client.pause");
          c->paused_until = now_ms() + 11000 + static_cast<int64_t>(pick(5000));
          continue;
        }
        if (chance(rates_.client_crash)) {
          count("client.crash");
          c->crash();
          continue;
        }
      }
      enter(*c);
      continue;
    }
    if (!step())
      sched_.advance_time(milliseconds(1));
  }
  result_.commits_under_faults = result_.commits;
  settle();
  probe_progress();
  auto quiet_since = now_ms();
  const int64_t bound = 40000;
  while (now_ms() < quiet_since + bound)
    if (!step())
      sched_.advance_time(milliseconds(quiet_since + bound - now_ms()));
  for (auto& c : clients_)
    if (!c->writes())
      enter(*c, true);
  collect_final_state();
  history_.final.quiescent_since_ms = quiet_since;
  history_.final.liveness_bound_ms = bound;
  result_.violations = check_history(history_);
}

sim_result world::run() {
  result_.seed = opts_.seed;
  try {
    if (opts_.load == workload::northwind)
      run_northwind();
    else
      run_mixed();
  } catch (const sim_failure& e) {
    result_.failure = e.what();
  }
  if (opts_.dump_history) {
    for (auto& e : history_.events)
      std::fprintf(stderr, "%s\n", describe(e).c_str());
    for (auto& p : history_.final.partitions) {
      std::string line = "final " + to_string(p.tp) + " hw " + std::to_string(p.high_watermark)
                         + " lso " + std::to_string(p.last_stable_offset) + ":";
      for (auto& l : p.log)
        line += " " + std::to_string(l.offset) + "="
                + (l.is_control ? (l.marker == control_type::commit ? "C" : "A")
                                : "v" + std::to_string(l.value))
                + "(" + std::to_string(l.pid.value) + "," + std::to_string(l.epoch.value) + ")";
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  for (auto& v : result_.violations) {
    mix(static_cast<uint64_t>(v.kind));
    mix(v.seq);
  }
  result_.trace_hash = hash_;
  result_.events = history_.events.size();
  result_.steps = steps_;
  result_.simulated_ms = now_ms() - base_time_ms;
  return result_;
}

} // namespace

std::string describe(const event& e) {
  std::string out = std::to_string(e.seq) + " @" + std::to_string(e.time_ms - base_time_ms) + " ";
  auto id = [](producer_id p, producer_epoch ep) {
    return "(" + std::to_string(p.value) + "," + std::to_string(ep.value) + ")";
  };
  std::visit(
    [&](auto& b) {
      using T = std::decay_t<decltype(b)>;
      if constexpr (std::is_same_v<T, send_event>)
        out += "send " + b.client_id + " " + b.transactional_id.value_or("-") + id(b.pid, b.epoch)
               + " " + to_string(b.tp) + " v" + std::to_string(b.value)
               + (b.txn ? " txn" + std::to_string(*b.txn) : "");
      else if constexpr (std::is_same_v<T, ack_event>)
        out += "ack v" + std::to_string(b.value) + " @" + std::to_string(b.offset);
      else if constexpr (std::is_same_v<T, send_failed_event>)
        out += "send_failed v" + std::to_string(b.value) + " " + to_string(b.error);
      else if constexpr (std::is_same_v<T, init_transactions_event>)
        out += "init " + b.transactional_id + id(b.pid, b.epoch);
      else if constexpr (std::is_same_v<T, txn_begin_event>)
        out += "begin " + b.transactional_id + " txn" + std::to_string(b.txn);
      else if constexpr (std::is_same_v<T, txn_offsets_event>)
        out += "txn_offsets " + b.transactional_id + " txn" + std::to_string(b.txn) + " " + b.group
               + " " + to_string(b.tp) + "=" + std::to_string(b.offset);
      else if constexpr (std::is_same_v<T, end_txn_event>)
        out += std::string(b.result == control_type::commit ? "commit " : "abort ") + b.transactional_id
               + " txn" + std::to_string(b.txn) + " " + to_string(b.error) + id(b.pid, b.epoch);
      else if constexpr (std::is_same_v<T, write_accepted_event>)
        out += "write_accepted " + to_string(b.tp) + " [" + std::to_string(b.base_offset) + ","
               + std::to_string(b.last_offset) + "] " + id(b.pid, b.epoch)
               + (b.transactional ? " txn" : "");
      else if constexpr (std::is_same_v<T, poll_event>) {
        out += "poll " + b.reader_id + " " + to_string(b.tp) + " from " + std::to_string(b.fetch_offset)
               + " lso " + std::to_string(b.last_stable_offset) + " hw "
               + std::to_string(b.high_watermark) + ":";
        for (auto& r : b.records)
          out += " " + std::to_string(r.offset) + "=v" + std::to_string(r.value);
      } else if constexpr (std::is_same_v<T, offset_fetch_event>)
        out += "offset_fetch " + b.group + " " + to_string(b.tp) + "=" + std::to_string(b.committed_offset);
    },
    e.body);
  return out;
}

sim_result run_simulation(const sim_options& opts) {
  world w{opts};
  return w.run();
}

} // namespace caftx::sim
