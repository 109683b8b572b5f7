// The Northwind orders pipeline on caftx: a transactional loader, an
// exactly-once consume-transform-produce processor, a read_committed
// verifier, and the job that runs them while crashing the processor and
// restarting the node. Every function that talks to the cluster takes an
// optional client_driver: the simulator runs them on CAF's deterministic
// scheduler (tools/sim/); the default is real time.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/client/client.hpp"
#include "config/config.hpp"
#include "northwind.hpp"
#include "runtime/status.hpp"

namespace caftx {
class producer;
class consumer;
} // namespace caftx

namespace northwind {

/// How the pipeline's clients reach caftx: through an actor system and a
/// broker handle (an embedded node; the simulator drives them with
/// `driver`), or by bootstrap servers alone (a cluster in other
/// processes: each client then owns its connection, as a Kafka client
/// does, follows leaders to any node and survives losing a node).
struct cluster_access {
  caf::actor_system* sys = nullptr;
  caf::actor broker;
  caftx::client_driver driver;
  std::string bootstrap_servers; // non-empty: clients from properties alone

  static cluster_access embedded(caf::actor_system& sys, caf::actor broker,
                                 caftx::client_driver driver = {}) {
    return {&sys, std::move(broker), std::move(driver), {}};
  }
  static cluster_access remote(std::string bootstrap_servers) {
    return {nullptr, {}, {}, std::move(bootstrap_servers)};
  }

  std::unique_ptr<caftx::producer> producer(caftx::properties props) const;
  std::unique_ptr<caftx::consumer> consumer(caftx::properties props) const;
  /// CreateTopics (TOPIC_ALREADY_EXISTS is returned, not thrown).
  caftx::status create_topic(const std::string& name, int32_t partitions) const;
  /// The transaction's state name (Kafka's TransactionState), or the error.
  caftx::status_or<std::string> transaction_state(const std::string& transactional_id) const;
};

/// Topics of the pipeline and their partition counts.
inline const char* orders_topic = "orders";                     // 1 partition
inline const char* confirmed_topic = "orders-confirmed";        // 3, keyed by customer
inline const char* rejected_topic = "orders-rejected";          // 1
inline const char* stock_topic = "stock-reduced";               // 4, keyed by product
inline const char* processor_id = "order-processor";            // transactional.id and group.id

/// Creates the four topics (TOPIC_ALREADY_EXISTS is fine).
void create_topics(const cluster_access& at);
void create_topics(caf::actor_system& sys, const caf::actor& broker);

/// Loads orders.csv (with order_details.csv) from `dir` into `orders` as
/// one transaction (transactional.id "order-loader"). A malformed row
/// aborts the transaction and throws std::runtime_error naming the file
/// and line: nothing of the load becomes visible. Returns the number of
/// orders loaded, or 0 if `orders` already holds a committed load (a rerun
/// on the same data directory resumes instead of loading twice).
int64_t load_orders(const cluster_access& at, const std::string& dir);
int64_t load_orders(caf::actor_system& sys, const caf::actor& broker, const std::string& dir,
                    const caftx::client_driver& driver = {});

/// Thrown by a fault hook to simulate the processor process dying.
struct simulated_crash : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Called by the processor at its crash points: "between_sends" (with the
/// send index of the current transaction), "after_send_offsets",
/// "after_end_txn_sent"; may throw simulated_crash.
using crash_hook = std::function<void(const std::string& point, int transaction, int send)>;

/// Runs the processor until every committed order is handled: rebuilds
/// the stock from the committed `stock-reduced` records, resumes from the
/// group's committed offset, handles `orders_per_transaction` orders per
/// transaction with the input offset committed in it. Adds each committed
/// transaction to `committed`. Throws simulated_crash from `hook`, which
/// is also called with "begin_transaction" at the start of each attempt.
void run_processor(const cluster_access& at, const std::string& dir, int orders_per_transaction,
                   const crash_hook& hook, int& committed);
void run_processor(caf::actor_system& sys, const caf::actor& broker, const std::string& dir,
                   int orders_per_transaction, const crash_hook& hook, int& committed,
                   const caftx::client_driver& driver = {});

/// Waits (up to 60 s) until `transactional_id`'s last transaction is
/// complete, i.e. its markers are written everywhere. Throws on timeout.
void await_transaction_completion(const cluster_access& at, const std::string& transactional_id);
void await_transaction_completion(caf::actor_system& sys, const caf::actor& broker,
                                  const std::string& transactional_id);

/// Reads every output topic with read_committed and builds the result.
/// Throws std::runtime_error on a duplicate or unknown order.
result read_result(const cluster_access& at, const std::string& dir);
result read_result(caf::actor_system& sys, const caf::actor& broker, const std::string& dir,
                   const caftx::client_driver& driver = {});

/// Options of the whole job.
struct job_options {
  std::string input_dir;       // the Northwind CSVs
  std::string data_dir;        // the node's data directory
  uint64_t seed = 1;
  int crashes = 4;             // processor crashes to inject
  int node_restarts = 1;       // whole-node restarts (>= 1 in the default job)
  int orders_per_transaction = 10;
};

struct job_report {
  int64_t orders_loaded = 0; // 0 when resuming on a data directory that has them
  int crashes_requested = 0;
  int node_restarts_requested = 0;
  result actual;
  result expected;
  int crashes_injected = 0;
  int node_restarts = 0;
  int transactions_committed = 0;
  std::vector<std::string> events; // what was injected, in order
  bool equal() const { return actual == expected; }
};

/// The main job: starts a node on data_dir, loads, runs the processor with
/// the injected crashes and node restarts, reads the result and computes
/// the sequential reference.
job_report run_job(caf::actor_system& sys, const job_options& opts);

/// The same job against a running cluster whose nodes are
/// `bootstrap_servers` (host:port,...; docs/node.md), with clients built
/// from properties alone: data_dir is unused and opts.node_restarts must
/// be 0 (the crash plan restarts processor instances only); throws
/// std::invalid_argument otherwise.
job_report run_job_against(const std::string& bootstrap_servers, const job_options& opts);

} // namespace northwind
