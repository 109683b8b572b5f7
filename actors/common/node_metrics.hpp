// The families a node reports (docs/metrics.md has each one's type,
// labels, unit, Kafka MBean and meaning): names of Kafka's MBeans as the
// Prometheus JMX exporter writes them (`kafka_<domain>_<type>_<name>`,
// lower case) where Kafka has one, `caftx_` where it has none. Every
// accessor takes the node's registry, which may be null (an embedded node
// or a test without metrics): it then hands out empty handles, whose
// updates do nothing. No CAF.
#pragma once

#include <memory>
#include <string>

#include "runtime/ids.hpp"
#include "runtime/metrics.hpp"

namespace caftx::node_metrics {

using metrics::family_def;
using metrics::metric_type;

// -- partitions (labels topic, partition; the leader's) --------------------------

/// Kafka's Partition LastStableOffsetLag: high watermark - last stable offset.
inline const family_def partition_lso_lag{
  "kafka_cluster_partition_laststableoffsetlag",
  "High watermark minus last stable offset of a partition this node leads (offsets)",
  metric_type::gauge, {}};
inline const family_def partition_under_replicated{
  "kafka_cluster_partition_underreplicated",
  "1 if the partition's ISR is smaller than its replicas, else 0", metric_type::gauge, {}};
inline const family_def partition_isr_count{"kafka_cluster_partition_insyncreplicascount",
                                            "Replicas in the partition's ISR",
                                            metric_type::gauge, {}};
inline const family_def partition_replicas_count{"kafka_cluster_partition_replicascount",
                                                 "Replicas assigned to the partition",
                                                 metric_type::gauge, {}};
inline const family_def log_size{"kafka_log_log_size",
                                 "Bytes of the partition's log from its log start offset",
                                 metric_type::gauge, {}};
inline const family_def log_end_offset{"kafka_log_log_logendoffset",
                                       "The partition's log end offset", metric_type::gauge, {}};
inline const family_def log_start_offset{"kafka_log_log_logstartoffset",
                                         "The partition's log start offset",
                                         metric_type::gauge, {}};
inline const family_def partition_high_watermark{"caftx_partition_high_watermark",
                                                 "The partition's high watermark (offset)",
                                                 metric_type::gauge, {}};
inline const family_def partition_last_stable_offset{"caftx_partition_last_stable_offset",
                                                     "The partition's last stable offset",
                                                     metric_type::gauge, {}};
inline const family_def partition_producer_ids{
  "caftx_partition_producer_id_count", "Producer ids the partition keeps state for",
  metric_type::gauge, {}};
inline const family_def partition_producer_state_bytes{
  "caftx_partition_producer_state_bytes",
  "Estimated heap bytes of the partition's producer state and aborted-transaction index",
  metric_type::gauge, {}};
/// Leader side of Kafka's FetcherLagMetrics ConsumerLag: per follower.
inline const family_def follower_lag{
  "caftx_partition_follower_lag",
  "Leader log end offset minus a follower's fetched log end offset (offsets)",
  metric_type::gauge, {}};

// -- node-wide sums (Kafka's ReplicaManager) -------------------------------------

inline const family_def producer_id_count{"kafka_server_replicamanager_produceridcount",
                                          "Producer ids with state in the partitions this node "
                                          "leads",
                                          metric_type::gauge, {}};
inline const family_def under_replicated_partitions{
  "kafka_server_replicamanager_underreplicatedpartitions",
  "Partitions this node leads whose ISR is smaller than their replicas", metric_type::gauge, {}};
inline const family_def leader_count{"kafka_server_replicamanager_leadercount",
                                     "Partitions this node leads", metric_type::gauge, {}};

// -- transaction coordinator (sums over this node's shards) ----------------------

inline const family_def txn_ids{"caftx_transaction_coordinator_transactional_ids",
                                "Transactional ids with a card in the shards this node leads",
                                metric_type::gauge, {}};
inline const family_def txn_by_state{
  "caftx_transaction_coordinator_transactions",
  "Transactional ids by the state of their card (Kafka's TransactionState names)",
  metric_type::gauge, {}};
inline const family_def txn_commits{"caftx_transaction_coordinator_commits_total",
                                    "Transactions completed with commit (CompleteCommit durable)",
                                    metric_type::counter, {}};
inline const family_def txn_aborts{"caftx_transaction_coordinator_aborts_total",
                                   "Transactions completed with abort (CompleteAbort durable)",
                                   metric_type::counter, {}};
inline const family_def txn_timeout_aborts{
  "caftx_transaction_coordinator_timeout_aborts_total",
  "Transactions aborted by the coordinator on transaction.timeout.ms", metric_type::counter, {}};
inline const family_def txn_fencings{
  "caftx_transaction_coordinator_producer_fencings_total",
  "InitProducerId calls that fenced an earlier producer of the same transactional id",
  metric_type::counter, {}};
inline const family_def txn_markers_in_flight{
  "caftx_transaction_coordinator_markers_in_flight",
  "WriteTxnMarkers not yet acknowledged by their partitions", metric_type::gauge, {}};
inline const family_def txn_load_time_max{
  "kafka_server_transaction_coordinator_metrics_partition_load_time_max",
  "Longest load of a __transaction_state partition since the node started (ms)",
  metric_type::gauge, {}};
inline const family_def txn_load_time_avg{
  "kafka_server_transaction_coordinator_metrics_partition_load_time_avg",
  "Mean load time of a __transaction_state partition since the node started (ms)",
  metric_type::gauge, {}};
inline const family_def txn_loads{"caftx_transaction_coordinator_partition_loads_total",
                                  "Loads of __transaction_state partitions finished",
                                  metric_type::counter, {}};
inline const family_def txn_load_time_sum{
  "caftx_transaction_coordinator_partition_load_time_ms_total",
  "Milliseconds spent in finished loads of __transaction_state partitions",
  metric_type::counter, {}};

// -- supervision, ZooKeeper, controller -------------------------------------------

inline const family_def supervisor_restarts{
  "caftx_supervisor_restarts_total",
  "Restarts of a supervised component after it crashed (label component)",
  metric_type::counter, {}};
inline const family_def zookeeper_session_state{
  "caftx_zookeeper_session_state",
  "1 for the state the node's ZooKeeper session is in, 0 for the others", metric_type::gauge, {}};
inline const family_def zookeeper_expires{
  "kafka_server_sessionexpirelistener_zookeeperexpires_total",
  "ZooKeeper sessions of this node that expired", metric_type::counter, {}};
inline const family_def active_controller{"kafka_controller_kafkacontroller_activecontrollercount",
                                          "1 if this node is the elected controller, else 0",
                                          metric_type::gauge, {}};

// -- requests ----------------------------------------------------------------------

/// Kafka's RequestMetrics TotalTimeMs (label request: Kafka's API name).
inline const family_def request_total_time{
  "kafka_network_requestmetrics_totaltimems",
  "Time from a request's arrival at the actor that handles it to its reply (ms)",
  metric_type::histogram,
  {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}};

// -- accessors (null registry: empty handles) -------------------------------------

using registry_ptr = std::shared_ptr<metrics::registry>;

inline metrics::gauge gauge(const registry_ptr& r, const family_def& f,
                            metrics::label_set labels = {}) {
  return r ? r->get_gauge(f, std::move(labels)) : metrics::gauge{};
}

inline metrics::counter counter(const registry_ptr& r, const family_def& f,
                                metrics::label_set labels = {}) {
  return r ? r->get_counter(f, std::move(labels)) : metrics::counter{};
}

/// A series of one owner's, which removes it when it goes
/// (registry::replace_gauge): a partition leader's gauges, a supervisor's
/// restart counter.
inline metrics::gauge owned_gauge(const registry_ptr& r, const family_def& f,
                                  metrics::label_set labels) {
  return r ? r->replace_gauge(f, std::move(labels)) : metrics::gauge{};
}

inline metrics::counter owned_counter(const registry_ptr& r, const family_def& f,
                                      metrics::label_set labels) {
  return r ? r->replace_counter(f, std::move(labels)) : metrics::counter{};
}

/// A timer of one request of Kafka API `api` ("Produce", "EndTxn", ...).
inline metrics::request_timer time_request(const registry_ptr& r, const char* api) {
  return metrics::request_timer{r ? r->get_histogram(request_total_time, {{"request", api}})
                                  : metrics::histogram{}};
}

inline metrics::label_set partition_labels(const topic_partition& tp) {
  return {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}};
}

} // namespace caftx::node_metrics
