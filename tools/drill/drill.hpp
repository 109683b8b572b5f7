// caftx-drill: a failure drill against a running cluster (docs/drills.md).
// A workload runs with real clients while named faults are injected; at the
// end the run's history — what every client was told, what readers saw,
// and the final logs — is judged by the simulator's history checker
// (tools/sim/history_checker.hpp) plus the workload's own invariants, and
// the report names every anomaly found. Blocking; run one drill at a time
// per process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.hpp"

namespace caftx::drill {

/// The workloads: the Northwind consume-transform-produce pipeline; bank
/// transfers between accounts on different partitions in transactions
/// (read_committed readers check money is neither made nor lost); and
/// idempotent producers with retries (no duplicate, no loss).
enum class workload_kind { northwind, bank, idempotent };

/// The faults, each by name (fault_name):
/// - kill: SIGKILL a node, restart it after the hold time;
/// - shutdown: SIGTERM (a controlled shutdown), restart after the hold;
/// - pause: SIGSTOP a node for its zookeeper.session.timeout.ms plus the
///   hold, then SIGCONT (it comes back as a zombie and must be fenced);
/// - cut-peer: cut a node off from one peer (the drill hook), heal later;
/// - cut-zookeeper: cut a node off from ZooKeeper past its session timeout;
/// - kill-coordinator / kill-leader / kill-group-coordinator: kill the
///   transaction coordinator shard of a workload transactional id, the
///   leader of a workload partition, or the group coordinator of a
///   workload group at a named fault point; its supervisor restarts it;
/// - producer-pause: a workload producer stops inside an open transaction
///   for longer than its transaction.timeout.ms (the coordinator must
///   abort it and fence the producer).
/// The first three need the node processes (--local or --cluster-dir); the
/// drill-hook faults need caftx.drills.enable=true on the nodes.
enum class fault_kind {
  kill,
  shutdown,
  pause,
  cut_peer,
  cut_zookeeper,
  kill_coordinator,
  kill_leader,
  kill_group_coordinator,
  producer_pause,
};

const char* fault_name(fault_kind k);
/// The kind named `name`; nullopt for an unknown name.
std::optional<fault_kind> parse_fault(const std::string& name);
/// Every fault name, comma-separated, in enum order.
std::string fault_names();
/// True for the faults that signal node processes.
bool needs_processes(fault_kind k);
const char* workload_name(workload_kind k);
std::optional<workload_kind> parse_workload(const std::string& name);

/// One scheduled fault: injected `at_ms` after the workload started, on
/// node `node` (-1: the drill picks one from the seed), healed or undone
/// after `hold_ms` (-1: the kind's default, see drill_options::hold_ms).
/// `peer` is cut-peer's other node (-1: picked).
struct fault_step {
  fault_kind kind = fault_kind::kill;
  int64_t at_ms = 0;
  int32_t node = -1;
  int32_t peer = -1;
  int64_t hold_ms = -1;
};

struct drill_options {
  /// Where the cluster is: bootstrap servers ("host:port,..."), and the
  /// directory of tools/local-cluster.sh when the drill may signal the
  /// node processes; or `local_nodes` > 0 to start a cluster of that many
  /// nodes in a temporary directory (removed at the end).
  std::string bootstrap_servers;
  std::string cluster_dir;
  int32_t local_nodes = 0;
  /// caftx-node binary for --local and for restarts.
  std::string node_binary;
  workload_kind workload = workload_kind::bank;
  /// The schedule; when empty, `faults` are spread over the run in order
  /// (each one after the cluster recovered from the previous one).
  std::vector<fault_step> schedule;
  std::vector<fault_kind> faults;
  uint64_t seed = 1;
  /// How long the workload runs (it runs on until the last fault healed
  /// plus `cooldown`).
  std::chrono::milliseconds duration{60000};
  /// Default hold of a fault (kill, shutdown, cut-peer, producer pause
  /// beyond the transaction timeout, pause beyond the session timeout).
  std::chrono::milliseconds hold{5000};
  /// After the last fault healed: the workload runs on this long, and must
  /// commit (or, idempotent, be acknowledged) within it.
  std::chrono::milliseconds cooldown{15000};
  /// After the workload stopped: how long the last stable offsets may take
  /// to reach the high watermarks and the coordinators to close every
  /// transaction (the liveness bound).
  std::chrono::milliseconds settle{60000};
  /// Workload size: producers (threads), partitions of the workload topic,
  /// bank accounts.
  int32_t producers = 2;
  int32_t partitions = 6;
  int32_t accounts = 24;
  /// The producers' transaction.timeout.ms (producer-pause outlasts it).
  int32_t transaction_timeout_ms = 10000;
  /// Northwind: the directory of its CSVs.
  std::string northwind_dir;
  /// Set (by a signal handler, say) to end the drill early: the fault held
  /// now is healed, the workload stopped and, with --local, the cluster
  /// removed; run_drill then returns an error without judging. May be null.
  const std::atomic<bool>* cancel = nullptr;
};

/// A fault as it happened. Times are milliseconds since the workload
/// started; `recovered_ms` is the first commit (bank, northwind) or
/// acknowledged write (idempotent) after `healed_ms`, -1 if none came;
/// `error` is why the fault could not be injected (empty if it was).
struct fault_record {
  fault_kind kind = fault_kind::kill;
  int32_t node = -1;
  int32_t peer = -1;
  std::string what;
  int64_t injected_ms = -1;
  int64_t healed_ms = -1;
  int64_t recovered_ms = -1;
  /// The longest time without a commit (idempotent: an acknowledgement)
  /// from `injected_ms` to `recovered_ms`: how long the fault stopped
  /// the workload; -1 when it did not recover.
  int64_t stall_ms = -1;
  std::string error;
  /// recovered_ms - healed_ms, or -1.
  int64_t recovery_ms() const {
    return recovered_ms >= 0 && healed_ms >= 0 ? recovered_ms - healed_ms : -1;
  }
};

/// One broken rule: its stable name (a history checker rule such as
/// lost_write, or a workload invariant such as bank_total_changed) and
/// what happened.
struct anomaly {
  std::string name;
  std::string message;
};

struct drill_report {
  std::string workload;
  std::string bootstrap_servers;
  /// The cluster directory (--local: the temporary one, removed at the
  /// end; --cluster-dir: the one given); empty without one.
  std::string cluster_dir;
  uint64_t seed = 0;
  int64_t elapsed_ms = 0;
  int64_t transactions_committed = 0;
  int64_t transactions_aborted = 0;
  /// Calls whose outcome the application was not told (errors of commit
  /// or abort), and producers fenced and made anew.
  int64_t transactions_failed = 0;
  int64_t producers_fenced = 0;
  int64_t records_sent = 0;
  int64_t records_acknowledged = 0;
  int64_t records_read = 0;
  std::vector<fault_record> faults;
  std::vector<anomaly> anomalies;
  /// Invariant checks that ran (their names), so that an empty anomaly
  /// list says which rules held.
  std::vector<std::string> checks;
  bool clean() const { return anomalies.empty(); }
};

/// Progress while the drill runs (called about once a second from the
/// drill's thread).
struct drill_progress {
  int64_t elapsed_ms = 0;
  int64_t committed = 0;
  int64_t aborted = 0;
  int64_t acknowledged = 0;
  int faults_injected = 0;
  int faults_planned = 0;
  std::string phase; // "running", "settling", "checking"
};

/// Runs the drill. Errors (the drill could not run, nothing judged):
/// INVALID_CONFIG (bad options: a process fault without processes, an
/// unknown node), REQUEST_TIMED_OUT / the cluster's error (could not set
/// up the workload or collect the final state).
status_or<drill_report> run_drill(const drill_options& opts,
                                  const std::function<void(const drill_progress&)>& progress = {});

/// The report as one JSON object (docs/drills.md §Report): workload,
/// seed, counts, `faults` (each with name, node, times and recovery_ms),
/// `anomalies` (name, message; empty when every rule held), `checks`.
std::string to_json(const drill_report& r);
/// The report as text lines for a terminal.
std::string to_text(const drill_report& r);

/// Reads a drill file (JSON, docs/drills.md §Drill files) into `opts`:
/// workload, seed, duration_s, hold_s, cooldown_s, settle_s, producers,
/// partitions, accounts, and `faults`: a list of {"fault", "at_s",
/// "node", "peer", "hold_s"}. Errors: INVALID_CONFIG naming the file and
/// line (a JSON syntax error) or the key (an unknown key, a bad value).
status read_drill_file(const std::string& path, drill_options& opts);

} // namespace caftx::drill
