#include "tools/drill/drill.hpp"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "actors/client/admin.hpp"
#include "actors/client/client.hpp"
#include "runtime/partitioner.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "tools/drill/cluster_processes.hpp"
#include "tools/drill/workload.hpp"
#include "tools/sim/history_checker.hpp"

namespace caftx::drill {

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms.
constexpr int64_t abort_scan_interval_ms = 10000;

constexpr std::pair<fault_kind, const char*> fault_table[] = {
  {fault_kind::kill, "kill"},
  {fault_kind::shutdown, "shutdown"},
  {fault_kind::pause, "pause"},
  {fault_kind::cut_peer, "cut-peer"},
  {fault_kind::cut_zookeeper, "cut-zookeeper"},
  {fault_kind::kill_coordinator, "kill-coordinator"},
  {fault_kind::kill_leader, "kill-leader"},
  {fault_kind::kill_group_coordinator, "kill-group-coordinator"},
  {fault_kind::producer_pause, "producer-pause"},
};

constexpr std::pair<workload_kind, const char*> workload_table[] = {
  {workload_kind::northwind, "northwind"},
  {workload_kind::bank, "bank"},
  {workload_kind::idempotent, "idempotent"},
};

// The name of `k` in a table of (kind, name) pairs, and back.
template <class Kind, size_t N>
const char* name_in(const std::pair<Kind, const char*> (&table)[N], Kind k) {
  for (auto& [kind, name] : table)
    if (kind == k)
      return name;
  return "?";
}

template <class Kind, size_t N>
std::optional<Kind> kind_in(const std::pair<Kind, const char*> (&table)[N],
                            const std::string& name) {
  for (auto& [kind, n] : table)
    if (name == n)
      return kind;
  return std::nullopt;
}

// Retries `call` (returning status_or or status) on retriable errors for up
// to `deadline`: a lookup right after a fault may meet a leader election.
template <class F>
auto retry(F call, milliseconds deadline = 30s) {
  auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    auto r = call();
    if (r.ok() || std::chrono::steady_clock::now() >= end)
      return r;
    std::this_thread::sleep_for(200ms);
  }
}

std::string error_of(const status& st) {
  return st.to_string();
}
template <class T>
std::string error_of(const status_or<T>& st) {
  return st.error().to_string();
}

// The node ids of the cluster and the endpoint each one listens on.
struct cluster_view {
  std::map<int32_t, std::string> endpoints;
  std::vector<int32_t> ids() const {
    std::vector<int32_t> out;
    for (auto& [id, _] : endpoints)
      out.push_back(id);
    return out;
  }
};

properties admin_props(const std::string& bootstrap, const char* timeout_ms = "10000") {
  return {{"bootstrap.servers", bootstrap}, {"request.timeout.ms", timeout_ms}};
}

// Which node each bootstrap server is (asked of the node itself).
status_or<cluster_view> discover(const std::string& bootstrap) {
  cluster_view v;
  std::stringstream list{bootstrap};
  std::string server;
  while (std::getline(list, server, ',')) {
    if (server.empty())
      continue;
    try {
      admin_client admin{admin_props(server)};
      auto id = retry([&] { return admin.node_id(); }, 20s);
      if (!id.ok())
        return status{error_code::request_timed_out,
                      "bootstrap server " + server + " did not answer: " + error_of(id)};
      v.endpoints[*id] = server;
    } catch (const kafka_exception& e) {
      return status{error_code::invalid_config, e.what()};
    }
  }
  if (v.endpoints.empty())
    return status{error_code::invalid_config, "no bootstrap server given"};
  return v;
}

// -- faults --------------------------------------------------------------------

class fault_injector {
public:
  fault_injector(const drill_options& opts, cluster_processes* procs, const cluster_view& view,
                 workload& w, recorder& rec)
    : opts_(opts), procs_(procs), view_(view), w_(w), rec_(rec), rng_(opts.seed) {}

  // Injects `s` (the `index`th fault of the run); fills r's node, what
  // and injected_ms, or r.error.
  void inject(const fault_step& s, size_t index, fault_record& r) {
    index_ = index;
    r.kind = s.kind;
    hold_ms_ = s.hold_ms >= 0 ? s.hold_ms : opts_.hold.count();
    auto ids = view_.ids();
    r.node = s.node >= 0 ? s.node : ids[rng_() % ids.size()];
    if (!view_.endpoints.count(r.node)) {
      r.error = "no node " + std::to_string(r.node);
      return;
    }
    auto node = std::to_string(r.node);
    switch (s.kind) {
      case fault_kind::kill:
        r.what = "SIGKILL node " + node + ", restarted after " + std::to_string(hold_ms_) + " ms";
        signal_node(r, SIGKILL);
        break;
      case fault_kind::shutdown:
        r.what = "SIGTERM (controlled shutdown) of node " + node + ", restarted after "
                 + std::to_string(hold_ms_) + " ms";
        signal_node(r, SIGTERM);
        break;
      case fault_kind::pause: {
        hold_ms_ += procs_ ? procs_->node(r.node).session_timeout_ms : 0;
        r.what = "SIGSTOP node " + node + " for " + std::to_string(hold_ms_)
                 + " ms (past its ZooKeeper session timeout), then SIGCONT";
        signal_node(r, SIGSTOP);
        break;
      }
      case fault_kind::cut_peer: {
        r.peer = s.peer;
        if (r.peer < 0) {
          std::vector<int32_t> others;
          for (auto id : ids)
            if (id != r.node)
              others.push_back(id);
          if (others.empty()) {
            r.error = "cut-peer needs two nodes";
            return;
          }
          r.peer = others[rng_() % others.size()];
        }
        r.what = "node " + node + " cut off from node " + std::to_string(r.peer) + " for "
                 + std::to_string(hold_ms_) + " ms";
        network(r, drill_network_request{false, {r.peer}, false, false});
        break;
      }
      case fault_kind::cut_zookeeper:
        hold_ms_ += procs_ ? procs_->node(r.node).session_timeout_ms : 18000;
        r.what = "node " + node + " cut off from ZooKeeper for " + std::to_string(hold_ms_)
                 + " ms (past its session timeout)";
        network(r, drill_network_request{false, {}, true, false});
        break;
      case fault_kind::kill_coordinator:
        arm(r, "txn_coordinator.card_durable", "", -1, coordinator_node(1, r));
        break;
      case fault_kind::kill_leader:
        arm(r, "partition.append_durable", w_.topic(), 0, leader_node({w_.topic(), 0}, r));
        break;
      case fault_kind::kill_group_coordinator:
        arm(r, "group_coordinator.write_durable", "", -1, coordinator_node(0, r));
        break;
      case fault_kind::producer_pause:
        // Past the timeout and the coordinators' scan for timed-out
        // transactions (Kafka's default
        // transaction.abort.timed.out.transaction.cleanup.interval.ms).
        hold_ms_ = opts_.transaction_timeout_ms + abort_scan_interval_ms + hold_ms_;
        r.node = -1;
        r.what = "a producer stops inside its transaction for " + std::to_string(hold_ms_)
                 + " ms (its transaction.timeout.ms is "
                 + std::to_string(opts_.transaction_timeout_ms) + ")";
        w_.pause_producer(hold_ms_);
        break;
    }
    if (r.error.empty())
      r.injected_ms = rec_.now_ms();
  }

  // How long after injection the fault is undone.
  int64_t hold_ms(const fault_record& r) const {
    switch (r.kind) {
      case fault_kind::kill_coordinator:
      case fault_kind::kill_leader:
      case fault_kind::kill_group_coordinator:
        return 0; // the supervisor restarts the component
      default:
        return hold_ms_;
    }
  }

  // Undoes the fault; sets healed_ms (or r.error).
  void heal(fault_record& r) {
    switch (r.kind) {
      case fault_kind::kill:
      case fault_kind::shutdown:
        if (auto st = procs_->restart(r.node); !st.ok())
          r.error = "restart: " + error_of(st);
        break;
      case fault_kind::pause:
        procs_->signal(r.node, SIGCONT);
        break;
      case fault_kind::cut_peer:
        network(r, drill_network_request{true, {r.peer}, false, false});
        break;
      case fault_kind::cut_zookeeper:
        network(r, drill_network_request{true, {}, true, false});
        break;
      case fault_kind::producer_pause: {
        // The paused transaction must end in the producer's fencing.
        auto end = std::chrono::steady_clock::now() + 60s;
        while (w_.paused_outcome() == workload::pause_pending
               && std::chrono::steady_clock::now() < end)
          std::this_thread::sleep_for(50ms);
        if (w_.paused_outcome() == workload::pause_no_effect)
          r.error = "no effect: the paused transaction committed (the coordinator had not "
                    "aborted it yet)";
        else if (w_.paused_outcome() == workload::pause_pending)
          r.error = "the paused transaction did not end within 60 s";
        break;
      }
      default:
        break;
    }
    r.healed_ms = rec_.now_ms();
  }

  // Takes back every fault point armed by this drill; one never hit marks
  // its fault as not injected.
  void disarm_all(std::vector<fault_record>& faults) {
    for (auto& [index, armed] : armed_) {
      try {
        admin_client admin{admin_props(view_.endpoints.at(armed.first))};
        auto still = retry([&] { return admin.disarm_fault(armed.second); }, 20s);
        if (!still.ok())
          faults[index].error = "could not disarm " + armed.second + ": " + error_of(still);
        else if (*still)
          faults[index].error = "never hit: " + armed.second
                                + " was still armed at the end (now disarmed)";
      } catch (const kafka_exception& e) {
        faults[index].error = e.what();
      }
    }
    armed_.clear();
  }

private:
  void signal_node(fault_record& r, int sig) {
    if (sig == SIGKILL || sig == SIGSTOP) {
      if (!procs_->signal(r.node, sig))
        r.error = "node " + std::to_string(r.node) + " does not run";
      return;
    }
    if (!procs_->stop(r.node, sig, 60s))
      r.error = "node " + std::to_string(r.node) + " did not stop within 60 s of SIGTERM";
  }

  void network(fault_record& r, const drill_network_request& req) {
    try {
      admin_client admin{admin_props(view_.endpoints.at(r.node))};
      auto resp = retry([&] { return admin.drill_network(req); }, 20s);
      if (!resp.ok())
        r.error = "drill hook of node " + std::to_string(r.node) + ": " + error_of(resp);
    } catch (const kafka_exception& e) {
      r.error = e.what();
    }
  }

  // The node leading `tp` now (or r.node when unknown).
  int32_t leader_node(const topic_partition& tp, fault_record& r) {
    try {
      admin_client admin{admin_props(view_.endpoints.begin()->second)};
      auto d = admin.describe_topics({tp.topic});
      if (d.ok() && !d->empty())
        for (auto& p : (*d)[0].partitions)
          if (p.partition == tp.partition && p.leader >= 0)
            return p.leader;
    } catch (const kafka_exception&) {
    }
    return r.node;
  }

  // The node of the coordinator of the workload's first transactional id
  // (key_type 1) or group (0): the leader of its internal partition.
  int32_t coordinator_node(int8_t key_type, fault_record& r) {
    auto keys = key_type == 1 ? w_.transactional_ids() : w_.groups();
    if (keys.empty())
      return r.node;
    auto topic = key_type == 1 ? "__transaction_state" : "__consumer_offsets";
    try {
      admin_client admin{admin_props(view_.endpoints.begin()->second)};
      auto d = admin.describe_topics({topic});
      if (!d.ok() || d->empty() || (*d)[0].partitions.empty())
        return r.node;
      auto p = partition_for(keys[0], static_cast<int32_t>((*d)[0].partitions.size()));
      for (auto& pd : (*d)[0].partitions)
        if (pd.partition == p && pd.leader >= 0)
          return pd.leader;
    } catch (const kafka_exception&) {
    }
    return r.node;
  }

  void arm(fault_record& r, const char* point, const std::string& topic, int32_t partition,
           int32_t node) {
    r.node = node;
    r.what = std::string("the ") + point + " fault point armed on node " + std::to_string(node)
             + (topic.empty() ? "" : " for " + topic + "-" + std::to_string(partition))
             + ": the component hitting it dies there and its supervisor restarts it";
    try {
      admin_client admin{admin_props(view_.endpoints.at(node))};
      drill_fault_request req{point, topic, partition, false, false, false};
      auto st = retry([&] { return admin.drill_fault(req); }, 20s);
      if (!st.ok())
        r.error = "fault drill of node " + std::to_string(node) + ": " + error_of(st);
      else
        armed_[index_] = {node, point};
    } catch (const kafka_exception& e) {
      r.error = e.what();
    }
  }

  const drill_options& opts_;
  cluster_processes* procs_;
  const cluster_view& view_;
  workload& w_;
  recorder& rec_;
  std::mt19937_64 rng_;
  int64_t hold_ms_ = 0;
  size_t index_ = 0;
  std::map<size_t, std::pair<int32_t, std::string>> armed_; // fault -> node, point
};

// -- final state ---------------------------------------------------------------

// The checker's value id of the record at `offset` of `tp`: its value,
// or for the pipeline's own records (no value ids) one unique per
// partition and offset, so that only density, stuck transactions and
// replicas are judged.
sim::value_id value_id_of(const topic_partition& tp, const record& r, int64_t offset,
                          bool values_are_ids) {
  if (values_are_ids)
    return std::stoull(r.value);
  return (static_cast<uint64_t>(java_string_hash(to_string(tp)) & 0xffffff) << 40)
         | static_cast<uint64_t>(offset);
}

// The final log, high watermark, last stable offset and open producers of
// one partition, read from its leader.
status_or<sim::partition_final_state> final_partition(admin_client& admin,
                                                      const topic_partition& tp,
                                                      bool values_are_ids) {
  sim::partition_final_state ps;
  ps.tp = tp;
  auto value_of = [&](const record& r, int64_t offset) {
    return value_id_of(tp, r, offset, values_are_ids);
  };
  int64_t pos = 0;
  for (;;) {
    auto r = retry([&] { return admin.fetch(tp, pos, isolation_level::read_uncommitted, 1 << 24); });
    if (!r.ok())
      return status{r.error().code(), "final fetch of " + to_string(tp) + ": " + error_of(r)};
    ps.high_watermark = r->high_watermark;
    auto batches = v2::decode_all(r->records);
    if (!batches.ok())
      return batches.error();
    auto before = pos;
    for (auto& b : *batches) {
      if (b.last_offset() < pos)
        continue;
      append_log_entries(b, ps.log, value_of);
      pos = b.last_offset() + 1;
    }
    if (pos >= r->high_watermark || pos == before)
      break;
  }
  auto lso = retry([&] { return admin.fetch(tp, ps.high_watermark, isolation_level::read_committed, 1); });
  ps.last_stable_offset = lso.ok() ? lso->last_stable_offset : -1;
  auto producers = retry([&] { return admin.describe_producers(tp); });
  if (producers.ok())
    for (auto& a : *producers)
      if (a.current_txn_start_offset >= 0)
        ps.open_transactions.push_back(a.pid);
  return ps;
}

const std::vector<std::string> open_states{"Ongoing", "PrepareCommit", "PrepareAbort"};

// The workload's transactions a coordinator still holds open.
std::vector<sim::coordinator_open_txn> open_coordinator_transactions(admin_client& admin,
                                                                    const workload& w) {
  std::vector<sim::coordinator_open_txn> out;
  auto ids = w.transactional_ids();
  list_transactions_filter filter;
  filter.states = open_states;
  auto listed = retry([&] { return admin.list_transactions(filter); });
  if (!listed.ok())
    return out;
  for (auto& t : listed->transactions) {
    if (std::find(ids.begin(), ids.end(), t.transactional_id) == ids.end())
      continue;
    sim::coordinator_open_txn o{t.transactional_id, t.pid, no_producer_epoch, {}};
    auto d = admin.describe_transaction(t.transactional_id);
    if (d.ok()) {
      o.epoch = d->epoch;
      o.partitions = d->partitions;
    }
    out.push_back(std::move(o));
  }
  return out;
}

// True once every partition's last stable offset reached its high
// watermark and no coordinator holds one of the workload's transactions.
bool quiescent(admin_client& admin, const workload& w) {
  for (auto& tp : w.partitions()) {
    auto r = admin.fetch(tp, 0, isolation_level::read_committed, 1);
    if (!r.ok() || r->last_stable_offset != r->high_watermark)
      return false;
  }
  return open_coordinator_transactions(admin, w).empty();
}

// Every replica's log of the judged partitions, read from the stopped
// nodes' data directories as a restart would read them.
status read_replicas(const cluster_processes& procs, sim::final_state& f, bool values_are_ids) {
  for (auto& n : procs.nodes()) {
    node_store_options so;
    so.background_writer = false;
    so.node_id = n.id;
    auto store = node_store::open(procs.dir() + "/data" + std::to_string(n.id), so);
    if (!store.ok())
      return status{store.error().code(),
                    "node " + std::to_string(n.id) + "'s storage: " + error_of(store)};
    for (auto& p : f.partitions) {
      sim::replica_log r{n.id, {}};
      bool any = false;
      status bad;
      (*store)->scan(keys::log_prefix(p.tp), [&](const std::string&, const std::string& value) {
        any = true;
        auto batches = v2::decode_all(value);
        if (!batches.ok()) {
          bad = batches.error();
          return false;
        }
        for (auto& b : *batches)
          append_log_entries(b, r.log, [&](const record& rec, int64_t offset) {
            return value_id_of(p.tp, rec, offset, values_are_ids);
          });
        return true;
      });
      if (!bad.ok())
        return bad;
      if (any)
        p.replicas.push_back(std::move(r));
    }
  }
  return {};
}

bool needs_transactions(fault_kind k) {
  return k == fault_kind::kill_coordinator || k == fault_kind::kill_group_coordinator
         || k == fault_kind::producer_pause;
}

// The default faults: every kind the cluster and the workload allow.
std::vector<fault_kind> default_faults(bool with_processes, bool transactional) {
  std::vector<fault_kind> out;
  for (auto& [k, _] : fault_table)
    if ((with_processes || !needs_processes(k)) && (transactional || !needs_transactions(k)))
      out.push_back(k);
  return out;
}

// Every node the plan's drill-hook faults may hit takes drill requests:
// else the drill stops before it starts (caftx.drills.enable off, no
// fault points in the build).
status probe_drill_hooks(const std::vector<fault_step>& plan, const cluster_view& view) {
  bool cuts = false;
  bool points = false;
  for (auto& s : plan) {
    cuts = cuts || s.kind == fault_kind::cut_peer || s.kind == fault_kind::cut_zookeeper;
    points = points || s.kind == fault_kind::kill_coordinator || s.kind == fault_kind::kill_leader
             || s.kind == fault_kind::kill_group_coordinator;
  }
  for (auto& [id, endpoint] : view.endpoints) {
    if (!cuts && !points)
      break;
    try {
      admin_client admin{admin_props(endpoint)};
      status st;
      if (cuts) {
        auto r = retry([&] { return admin.drill_network({true, {}, false, false}); }, 10s);
        st = r.ok() ? status{} : r.error();
      }
      if (st.ok() && points) {
        // A disarm of a point nothing armed: refused exactly when arming is.
        auto r = retry([&] { return admin.disarm_fault("partition.append_durable"); }, 10s);
        st = r.ok() ? status{} : r.error();
      }
      if (st.code() == error_code::invalid_request)
        return status{error_code::invalid_config,
                      "node " + std::to_string(id) + " refuses drills: " + st.message()};
      if (!st.ok())
        return status{st.code(), "node " + std::to_string(id) + " at " + endpoint
                                   + " did not answer a drill request: " + st.to_string()};
    } catch (const kafka_exception& e) {
      return status{error_code::invalid_config, e.what()};
    }
  }
  return {};
}

std::string temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "caftx-drill-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return {};
  return pattern;
}

} // namespace

const char* fault_name(fault_kind k) {
  return name_in(fault_table, k);
}

std::optional<fault_kind> parse_fault(const std::string& name) {
  return kind_in(fault_table, name);
}

std::string fault_names() {
  std::string out;
  for (auto& [_, n] : fault_table)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

bool needs_processes(fault_kind k) {
  return k == fault_kind::kill || k == fault_kind::shutdown || k == fault_kind::pause;
}

const char* workload_name(workload_kind k) {
  return name_in(workload_table, k);
}

std::optional<workload_kind> parse_workload(const std::string& name) {
  return kind_in(workload_table, name);
}

status_or<drill_report> run_drill(const drill_options& opts,
                                  const std::function<void(const drill_progress&)>& progress) {
  bool with_processes = opts.local_nodes > 0 || !opts.cluster_dir.empty();
  bool transactional = opts.workload != workload_kind::idempotent;

  // The plan, checked before anything is started.
  std::vector<fault_step> plan = opts.schedule;
  bool sequential = !opts.schedule_given && plan.empty();
  if (sequential)
    for (auto k : opts.faults.empty() ? default_faults(with_processes, transactional) : opts.faults)
      plan.push_back(fault_step{k, 0, -1, -1, -1});
  for (auto& s : plan) {
    auto name = std::string("fault ") + fault_name(s.kind);
    if (needs_processes(s.kind) && !with_processes)
      return status{error_code::invalid_config,
                    name + " signals node processes: give --local N, or --cluster-dir with the "
                           "directory of tools/local-cluster.sh"};
    if (needs_transactions(s.kind) && !transactional)
      return status{error_code::invalid_config,
                    name + " needs a workload with transactions (bank or northwind)"};
    if (s.kind == fault_kind::cut_peer && s.node >= 0 && s.node == s.peer)
      return status{error_code::invalid_config,
                    name + " cuts node " + std::to_string(s.node) + " off from itself"};
  }

  // The cluster and the processes the drill may signal.
  cluster_processes procs;
  std::string bootstrap = opts.bootstrap_servers;
  if (opts.local_nodes > 0) {
    local_cluster_options lo;
    lo.nodes = opts.local_nodes;
    lo.dir = temp_dir();
    if (lo.dir.empty())
      return status{error_code::invalid_config, "cannot create a temporary directory"};
    lo.node_binary = opts.node_binary;
    auto rf = std::to_string(std::min(opts.local_nodes, 3));
    lo.node_properties = {
      {"caftx.drills.enable", "true"},
      {"zookeeper.session.timeout.ms", "6000"},
      {"default.replication.factor", rf},
      {"min.insync.replicas", opts.local_nodes >= 2 ? "2" : "1"},
      {"replica.lag.time.max.ms", "3000"},
      {"request.timeout.ms", "5000"},
      {"transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000"},
      {"transaction.state.log.num.partitions", "6"},
      {"offsets.topic.num.partitions", "6"},
      {"caftx.middleman.heartbeat.interval.ms", "200"},
      {"caftx.middleman.connection.timeout.ms", "2000"},
    };
    auto started = cluster_processes::start_local(lo);
    if (!started.ok()) {
      std::error_code ec;
      std::filesystem::remove_all(lo.dir, ec);
      return started.error();
    }
    procs = std::move(*started);
    bootstrap = procs.bootstrap_servers();
  } else if (!opts.cluster_dir.empty()) {
    auto attached = cluster_processes::attach(opts.cluster_dir, opts.node_binary);
    if (!attached.ok())
      return attached.error();
    procs = std::move(*attached);
    bootstrap = procs.bootstrap_servers();
  }
  if (bootstrap.empty())
    return status{error_code::invalid_config, "give --bootstrap-servers, --cluster-dir or --local"};

  // Which node is which: from the cluster directory, else asked of each
  // bootstrap server.
  cluster_view view;
  if (with_processes) {
    for (auto& n : procs.nodes())
      view.endpoints[n.id] = n.endpoint();
  } else {
    auto found = discover(bootstrap);
    if (!found.ok())
      return found.error();
    view = std::move(*found);
  }
  for (auto& s : plan)
    for (auto id : {s.node, s.peer})
      if (id >= 0 && !view.endpoints.count(id))
        return status{error_code::invalid_config, std::string("fault ") + fault_name(s.kind)
                                                    + " names node " + std::to_string(id)
                                                    + ", which is not in the cluster"};
  if (auto st = probe_drill_hooks(plan, view); !st.ok())
    return st;

  // The workload.
  recorder rec;
  workload_context ctx;
  ctx.bootstrap_servers = bootstrap;
  ctx.run_id = std::to_string(opts.seed) + "-" + std::to_string(::time(nullptr));
  ctx.opts = &opts;
  ctx.replication_factor = std::min<int32_t>(3, static_cast<int32_t>(view.endpoints.size()));
  ctx.rec = &rec;
  std::unique_ptr<workload> w;
  switch (opts.workload) {
    case workload_kind::bank: w = make_bank(ctx); break;
    case workload_kind::idempotent: w = make_idempotent(ctx); break;
    case workload_kind::northwind: w = make_northwind(ctx); break;
  }
  std::unique_ptr<admin_client> admin_ptr;
  try {
    admin_ptr = std::make_unique<admin_client>(admin_props(bootstrap));
  } catch (const kafka_exception& e) {
    return status{error_code::invalid_config, e.what()};
  }
  auto& admin = *admin_ptr;
  if (auto st = w->setup(admin); !st.ok())
    return st;

  drill_report report;
  report.workload = workload_name(opts.workload);
  report.bootstrap_servers = bootstrap;
  report.cluster_dir = procs.dir();
  report.seed = opts.seed;
  fault_injector injector{opts, with_processes ? &procs : nullptr, view, *w, rec};
  auto& c = w->counters;
  auto last_progress = std::chrono::steady_clock::now();
  auto tell = [&](const char* phase, bool now) {
    if (!progress || (!now && std::chrono::steady_clock::now() - last_progress < 1s))
      return;
    last_progress = std::chrono::steady_clock::now();
    progress({rec.now_ms(), c.committed, c.aborted, c.acknowledged,
              static_cast<int>(report.faults.size()), static_cast<int>(plan.size()), phase});
  };
  auto progressed_since = [&](int64_t t) {
    return (w->transactional() ? c.last_commit_ms.load() : c.last_ack_ms.load()) > t;
  };
  auto cancelled = [&] { return opts.cancel != nullptr && opts.cancel->load(); };
  auto wait = [&](auto until) {
    while (!until() && !cancelled()) {
      tell("running", false);
      std::this_thread::sleep_for(50ms);
    }
  };

  // Run: faults one at a time, each after the cluster recovered from the
  // one before (sequential), or at its scheduled time.
  w->start();
  int64_t last_heal = 0;
  for (size_t i = 0; i < plan.size() && !cancelled(); ++i) {
    auto& s = plan[i];
    auto at = sequential ? std::max<int64_t>(5000, last_heal + 2000) : s.at_ms;
    auto previous_healed = last_heal;
    wait([&] {
      auto now = rec.now_ms();
      if (now < at)
        return false;
      // Sequential: after the previous fault's recovery (or 30 s).
      return !sequential || i == 0 || progressed_since(previous_healed)
             || now >= previous_healed + 30000;
    });
    if (cancelled())
      break;
    if (w->finished()) {
      for (; i < plan.size(); ++i)
        report.warnings.push_back(std::string("fault ") + fault_name(plan[i].kind)
                                  + " skipped: the workload had finished its work");
      break;
    }
    fault_record r;
    injector.inject(s, report.faults.size(), r);
    tell("running", true);
    if (r.error.empty()) {
      auto until = rec.now_ms() + injector.hold_ms(r);
      wait([&] { return rec.now_ms() >= until; });
      injector.heal(r);
      last_heal = r.healed_ms;
    }
    report.faults.push_back(std::move(r));
  }
  // The rest of the duration, then the cooldown: the workload must make
  // progress after the last fault healed.
  auto stop_at = std::max<int64_t>(opts.duration.count(), last_heal + opts.cooldown.count());
  wait([&] {
    return rec.now_ms() >= stop_at || (w->finished() && rec.now_ms() >= last_heal + 2000);
  });
  auto progress_since = last_heal;
  auto progress_bound = rec.now_ms() - last_heal;
  injector.disarm_all(report.faults);
  tell("settling", true);
  w->stop();
  auto stopped_ms = rec.now_ms();
  if (cancelled())
    return status{error_code::unknown_server_error, "interrupted: the run was not judged"};

  // Settle: the liveness bound for the last stable offsets and the
  // coordinators' open transactions.
  auto settle_end = std::chrono::steady_clock::now() + opts.settle;
  while (std::chrono::steady_clock::now() < settle_end && !quiescent(admin, *w)) {
    tell("settling", false);
    std::this_thread::sleep_for(500ms);
  }
  tell("checking", true);
  auto h = rec.take();
  auto& f = h.final;
  for (auto& tp : w->partitions()) {
    auto ps = final_partition(admin, tp, w->values_are_ids());
    if (!ps.ok())
      return ps.error();
    f.partitions.push_back(std::move(*ps));
  }
  f.coordinator_open_transactions = open_coordinator_transactions(admin, *w);
  for (auto& g : w->groups()) {
    auto offsets = retry([&] { return admin.list_group_offsets(g); });
    if (offsets.ok())
      for (auto& [tp, offset] : *offsets)
        h.record(rec.now_ms(), sim::offset_fetch_event{g, tp, offset});
  }
  f.seq = (h.events.empty() ? 0 : h.events.back().seq) + 1;
  f.time_ms = rec.now_ms();
  f.quiescent_since_ms = stopped_ms;
  f.liveness_bound_ms = std::min<int64_t>(opts.settle.count(), f.time_ms - stopped_ms);
  if (w->transactional() && w->values_are_ids()) {
    f.progress_since_ms = progress_since;
    f.progress_bound_ms = progress_bound;
  }
  std::vector<anomaly> own;
  try {
    own = w->final_checks(admin, report.checks);
  } catch (const std::exception& e) {
    return status{error_code::request_timed_out,
                  std::string("reading the final state as a consumer: ") + e.what()};
  }
  if (procs.owned()) {
    procs.stop_all();
    if (auto st = read_replicas(procs, f, w->values_are_ids()); !st.ok())
      return st;
  }
  for (auto& v : sim::check_history(h))
    report.anomalies.push_back({sim::to_string(v.kind), v.message});
  for (auto& a : own)
    report.anomalies.push_back(std::move(a));
  if (!w->transactional() && c.last_ack_ms <= progress_since)
    report.anomalies.push_back({"no_progress", "no record was acknowledged in the "
                                                 + std::to_string(progress_bound)
                                                 + " ms after the last fault healed"});

  // Recovery: the first commit (or acknowledgement) after each heal, and
  // the longest stall since the injection, from the history.
  std::vector<int64_t> progress_times;
  for (auto& e : h.events) {
    if (auto* end = std::get_if<sim::end_txn_event>(&e.body); end && end->commit_ok())
      progress_times.push_back(e.time_ms);
    else if (!w->transactional() && std::holds_alternative<sim::ack_event>(e.body))
      progress_times.push_back(e.time_ms);
  }
  std::sort(progress_times.begin(), progress_times.end());
  for (auto& r : report.faults) {
    if (r.healed_ms < 0)
      continue;
    auto after = std::lower_bound(progress_times.begin(), progress_times.end(), r.healed_ms);
    if (after != progress_times.end())
      r.recovered_ms = *after;
    else if (!w->values_are_ids() && c.last_commit_ms > r.healed_ms)
      r.recovered_ms = c.last_commit_ms; // northwind: the watched LSOs (last rise only)
    if (r.recovered_ms < 0)
      continue;
    int64_t last = r.injected_ms;
    r.stall_ms = 0;
    for (auto i = std::upper_bound(progress_times.begin(), progress_times.end(), r.injected_ms);
         i != progress_times.end() && *i <= r.recovered_ms; ++i) {
      r.stall_ms = std::max(r.stall_ms, *i - last);
      last = *i;
    }
    r.stall_ms = std::max(r.stall_ms, r.recovered_ms - last);
  }
  // The checker's rules that can fail on this run: zombie_write needs the
  // leaders' own records of accepted writes (the simulator's only), and
  // the pipeline's records carry no value ids.
  using vk = sim::violation_kind;
  for (int k = 0; k <= static_cast<int>(vk::no_progress); ++k) {
    auto kind = static_cast<vk>(k);
    bool applies = kind != vk::zombie_write;
    if (!w->values_are_ids())
      applies = kind == vk::non_dense_offsets || kind == vk::stuck_lso
                || kind == vk::open_state_disagreement || kind == vk::replica_divergence;
    if (kind == vk::no_progress && !w->transactional())
      applies = true; // judged above from the acknowledgements
    if (kind == vk::replica_divergence && !procs.owned())
      applies = false; // the replicas' stores are read only from a cluster the drill stopped
    if (applies)
      report.checks.push_back(sim::to_string(kind));
  }
  std::sort(report.checks.begin(), report.checks.end());
  report.elapsed_ms = rec.now_ms();
  report.transactions_committed = c.committed;
  report.transactions_aborted = c.aborted;
  report.transactions_failed = c.failed;
  report.producers_fenced = c.fenced;
  report.records_sent = c.sent;
  report.records_acknowledged = c.acknowledged;
  report.records_read = c.read;
  return report;
}

std::string to_json(const drill_report& r) {
  nlohmann::ordered_json j;
  j["workload"] = r.workload;
  j["bootstrap_servers"] = r.bootstrap_servers;
  if (!r.cluster_dir.empty())
    j["cluster_dir"] = r.cluster_dir;
  j["seed"] = r.seed;
  j["elapsed_ms"] = r.elapsed_ms;
  j["verdict"] = r.verdict();
  j["transactions"] = {{"committed", r.transactions_committed},
                       {"aborted", r.transactions_aborted},
                       {"failed", r.transactions_failed},
                       {"producers_fenced", r.producers_fenced}};
  j["records"] = {{"sent", r.records_sent},
                  {"acknowledged", r.records_acknowledged},
                  {"read", r.records_read}};
  j["faults"] = nlohmann::ordered_json::array();
  for (auto& f : r.faults) {
    nlohmann::ordered_json o;
    o["fault"] = fault_name(f.kind);
    if (f.node >= 0)
      o["node"] = f.node;
    if (f.peer >= 0)
      o["peer"] = f.peer;
    o["what"] = f.what;
    o["injected_ms"] = f.injected_ms;
    o["healed_ms"] = f.healed_ms;
    o["recovered_ms"] = f.recovered_ms;
    o["recovery_ms"] = f.recovery_ms();
    o["stall_ms"] = f.stall_ms;
    if (!f.error.empty())
      o["error"] = f.error;
    j["faults"].push_back(std::move(o));
  }
  j["anomalies"] = nlohmann::ordered_json::array();
  for (auto& a : r.anomalies)
    j["anomalies"].push_back({{"name", a.name}, {"message", a.message}});
  j["checks"] = r.checks;
  j["warnings"] = r.warnings;
  return j.dump(2) + "\n";
}

std::string to_text(const drill_report& r) {
  std::ostringstream out;
  out << "workload " << r.workload << " on " << r.bootstrap_servers << ", seed " << r.seed
      << ", " << r.elapsed_ms / 1000.0 << " s\n";
  out << "transactions: " << r.transactions_committed << " committed, "
      << r.transactions_aborted << " aborted, failed calls: " << r.transactions_failed
      << ", producers fenced: " << r.producers_fenced << "\n";
  out << "records: " << r.records_sent << " sent, " << r.records_acknowledged
      << " acknowledged, " << r.records_read << " read\n";
  out << "faults (" << r.faults.size() << "):\n";
  for (auto& f : r.faults) {
    out << "  " << fault_name(f.kind) << ": " << f.what;
    if (!f.error.empty())
      out << " -- FAILED: " << f.error;
    else if (f.recovery_ms() >= 0)
      out << "; progress " << f.recovery_ms() << " ms after it ended, longest stall "
          << f.stall_ms << " ms";
    else
      out << "; no progress seen after it";
    out << "\n";
  }
  for (auto& w : r.warnings)
    out << "warning: " << w << "\n";
  if (r.clean()) {
    out << "verdict: clean (" << r.checks.size() << " rules held)\n";
  } else if (r.anomalies.empty()) {
    out << "verdict: incomplete: every rule held, but a fault above FAILED\n";
  } else {
    out << "verdict: " << r.anomalies.size() << " anomalies\n";
    for (auto& a : r.anomalies)
      out << "  " << a.name << ": " << a.message << "\n";
  }
  return out.str();
}

status read_drill_file(const std::string& path, drill_options& opts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return {error_code::invalid_config, path + ": a directory, not a drill file"};
  std::ifstream in{path};
  if (!in)
    return {error_code::invalid_config, path + ": cannot read"};
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto upto = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(upto), '\n');
    return {error_code::invalid_config,
            path + ":" + std::to_string(line) + ": not JSON (" + e.what() + ")"};
  }
  if (!j.is_object())
    return {error_code::invalid_config, path + ": a drill file is one JSON object"};
  auto bad = [&](const std::string& key, const std::string& why) {
    return status{error_code::invalid_config, path + ": " + key + ": " + why};
  };
  auto seconds = [&](const nlohmann::json& v, const std::string& key, double max,
                     milliseconds& out) -> status {
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > max)
      return bad(key, "a number of seconds in [0, " + std::to_string(static_cast<int>(max)) + "]");
    out = milliseconds(static_cast<int64_t>(v.get<double>() * 1000));
    return {};
  };
  auto count = [&](const nlohmann::json& v, const std::string& key, int32_t lo, int32_t hi,
                   int32_t& out) -> status {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      return bad(key, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    out = v.get<int32_t>();
    return {};
  };
  for (auto& [key, v] : j.items()) {
    status st;
    if (key == "workload") {
      auto k = v.is_string() ? parse_workload(v.get<std::string>()) : std::nullopt;
      if (!k)
        return bad(key, "one of northwind, bank, idempotent");
      opts.workload = *k;
    } else if (key == "seed") {
      if (!v.is_number_unsigned())
        return bad(key, "a non-negative integer");
      opts.seed = v.get<uint64_t>();
    } else if (key == "duration_s") {
      st = seconds(v, key, 86400, opts.duration);
      if (st.ok() && opts.duration < 1s)
        st = bad(key, "a number of seconds in [1, 86400]");
    } else if (key == "hold_s") {
      st = seconds(v, key, 3600, opts.hold);
    } else if (key == "cooldown_s") {
      st = seconds(v, key, 3600, opts.cooldown);
    } else if (key == "settle_s") {
      st = seconds(v, key, 3600, opts.settle);
    } else if (key == "producers") {
      st = count(v, key, 1, 64, opts.producers);
    } else if (key == "partitions") {
      st = count(v, key, 1, 1000, opts.partitions);
    } else if (key == "accounts") {
      st = count(v, key, 2, 1000000, opts.accounts);
    } else if (key == "faults") {
      if (!v.is_array())
        return bad(key, "a list of {\"fault\", \"at_s\", \"node\", \"peer\", \"hold_s\"}");
      opts.schedule.clear();
      opts.schedule_given = true;
      for (size_t i = 0; i < v.size(); ++i) {
        auto& e = v[i];
        auto where = "faults[" + std::to_string(i) + "]";
        if (!e.is_object() || !e.contains("fault") || !e["fault"].is_string())
          return bad(where, "an object with a \"fault\" name");
        fault_step s;
        auto kind = parse_fault(e["fault"].get<std::string>());
        if (!kind)
          return bad(where + ".fault", "'" + e["fault"].get<std::string>() + "' is not one of "
                                         + fault_names());
        s.kind = *kind;
        for (auto& [fk, fv] : e.items()) {
          milliseconds ms{0};
          int32_t id = -1;
          if (fk == "fault") {
            continue;
          } else if (fk == "at_s") {
            st = seconds(fv, where + ".at_s", 86400, ms);
            s.at_ms = ms.count();
          } else if (fk == "hold_s") {
            st = seconds(fv, where + ".hold_s", 3600, ms);
            s.hold_ms = ms.count();
          } else if (fk == "node" || fk == "peer") {
            st = count(fv, where + "." + fk, 0, 2147483647, id);
            (fk == "node" ? s.node : s.peer) = id;
          } else {
            return bad(where + "." + fk, "unknown key (fault, at_s, node, peer, hold_s)");
          }
          if (!st.ok())
            return st;
        }
        opts.schedule.push_back(s);
      }
      std::stable_sort(opts.schedule.begin(), opts.schedule.end(),
                       [](const fault_step& a, const fault_step& b) { return a.at_ms < b.at_ms; });
    } else {
      return bad(key, "unknown key (workload, seed, duration_s, hold_s, cooldown_s, settle_s, "
                      "producers, partitions, accounts, faults)");
    }
    if (!st.ok())
      return st;
  }
  return {};
}

} // namespace caftx::drill
