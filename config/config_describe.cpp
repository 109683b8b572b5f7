// DescribeConfigs' view of a topic's and a node's settings (Kafka's
// ConfigHelper.describeConfigs, KIP-226 sources and synonyms).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "config/config.hpp"

namespace caftx {

namespace {

std::string text(bool v) { return v ? "true" : "false"; }
std::string text(int32_t v) { return std::to_string(v); }
std::string text(int64_t v) { return std::to_string(v); }

// The shortest decimal that reads back as `v` (Java's Double.toString for
// the ratios Kafka configs hold: 0.5, 0.25).
std::string text(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

// Kafka's list value: "compact,delete", "delete", "compact".
std::string policy(bool del, bool compact) {
  return del && compact ? "compact,delete" : compact ? "compact" : "delete";
}

bool given(const node_config& node, const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (std::find(node.given.begin(), node.given.end(), k) != node.given.end())
      return true;
  return false;
}

struct node_key {
  const char* name;
  std::function<std::string(const node_config&)> value;
  // Keys that set it when not only its own (log.retention.ms also comes
  // from .minutes and .hours). Owned: an initializer_list member would
  // outlive the array behind it.
  std::vector<std::string> set_by;
};

const std::vector<node_key>& node_keys() {
  using n = const node_config&;
  static const std::vector<node_key> keys{
    {"log.dirs", [](n c) { return c.data_dir; }, {"log.dirs", "data.dir"}},
    {"transaction.state.log.num.partitions", [](n c) { return text(c.transaction_state_log_num_partitions); }, {}},
    {"offsets.topic.num.partitions", [](n c) { return text(c.offsets_topic_num_partitions); }, {}},
    {"offsets.retention.minutes", [](n c) { return text(c.offsets_retention_minutes); }, {}},
    {"offsets.retention.check.interval.ms", [](n c) { return text(c.offsets_retention_check_interval_ms); }, {}},
    {"group.min.session.timeout.ms", [](n c) { return text(c.group_min_session_timeout_ms); }, {}},
    {"group.max.session.timeout.ms", [](n c) { return text(c.group_max_session_timeout_ms); }, {}},
    {"group.initial.rebalance.delay.ms", [](n c) { return text(c.group_initial_rebalance_delay_ms); }, {}},
    {"group.max.size", [](n c) { return text(c.group_max_size); }, {}},
    {"transaction.max.timeout.ms", [](n c) { return text(c.transaction_max_timeout_ms); }, {}},
    {"transaction.abort.timed.out.transaction.cleanup.interval.ms",
     [](n c) { return text(c.transaction_abort_timed_out_transaction_cleanup_interval_ms); }, {}},
    {"transactional.id.expiration.ms", [](n c) { return text(c.transactional_id_expiration_ms); }, {}},
    {"transaction.remove.expired.transaction.cleanup.interval.ms",
     [](n c) { return text(c.transaction_remove_expired_transaction_cleanup_interval_ms); }, {}},
    {"caftx.coordinator.load.chunk.cards", [](n c) { return text(c.coordinator_load_chunk_cards); }, {}},
    {"caftx.coordinator.park.ms", [](n c) { return text(c.coordinator_park_ms); }, {}},
    {"auto.create.topics.enable", [](n c) { return text(c.auto_create_topics_enable); }, {}},
    {"delete.topic.enable", [](n c) { return text(c.delete_topic_enable); }, {}},
    {"num.partitions", [](n c) { return text(c.num_partitions); }, {}},
    {"producer.id.expiration.ms", [](n c) { return text(c.producer_id_expiration_ms); }, {}},
    {"producer.id.expiration.check.interval.ms",
     [](n c) { return text(c.producer_id_expiration_check_interval_ms); }, {}},
    {"log.retention.ms", [](n c) { return text(c.log_retention_ms); },
     {"log.retention.ms", "log.retention.minutes", "log.retention.hours"}},
    {"log.retention.bytes", [](n c) { return text(c.log_retention_bytes); }, {}},
    {"log.retention.check.interval.ms", [](n c) { return text(c.log_retention_check_interval_ms); }, {}},
    {"caftx.storage.sync", [](n c) { return text(c.storage_sync); }, {}},
    {"caftx.log.tail.cache.bytes", [](n c) { return text(c.log_tail_cache_bytes); }, {}},
    {"caftx.log.snapshot.interval.bytes", [](n c) { return text(c.log_snapshot_interval_bytes); }, {}},
    {"caftx.supervisor.max.restarts", [](n c) { return text(c.supervisor_max_restarts); }, {}},
    {"caftx.supervisor.restart.window.ms", [](n c) { return text(c.supervisor_restart_window_ms); }, {}},
    {"caftx.marker.retry.backoff.ms", [](n c) { return text(c.marker_retry_backoff_ms); }, {}},
    {"controlled.shutdown.enable", [](n c) { return text(c.controlled_shutdown_enable); }, {}},
    {"controlled.shutdown.max.retries", [](n c) { return text(c.controlled_shutdown_max_retries); }, {}},
    {"controlled.shutdown.retry.backoff.ms",
     [](n c) { return text(c.controlled_shutdown_retry_backoff_ms); }, {}},
    {"request.timeout.ms", [](n c) { return text(c.request_timeout_ms); }, {}},
    {"log.cleanup.policy", [](n c) { return policy(c.log_cleanup_delete, c.log_cleanup_compact); }, {}},
    {"log.cleaner.enable", [](n c) { return text(c.log_cleaner_enable); }, {}},
    {"log.cleaner.backoff.ms", [](n c) { return text(c.log_cleaner_backoff_ms); }, {}},
    {"log.cleaner.delete.retention.ms", [](n c) { return text(c.log_cleaner_delete_retention_ms); }, {}},
    {"log.cleaner.min.cleanable.ratio", [](n c) { return text(c.log_cleaner_min_cleanable_ratio); }, {}},
    {"log.cleaner.min.compaction.lag.ms", [](n c) { return text(c.log_cleaner_min_compaction_lag_ms); }, {}},
    {"log.cleaner.dedupe.buffer.size", [](n c) { return text(c.log_cleaner_dedupe_buffer_size); }, {}},
    {"caftx.log.cleaner.step.batches", [](n c) { return text(c.log_cleaner_step_batches); }, {}},
    {"message.max.bytes", [](n c) { return text(c.message_max_bytes); }, {}},
    {"default.replication.factor", [](n c) { return text(c.default_replication_factor); }, {}},
    {"min.insync.replicas", [](n c) { return text(c.min_insync_replicas); }, {}},
    {"transaction.state.log.replication.factor",
     [](n c) { return text(c.transaction_state_log_replication_factor); }, {}},
    {"transaction.state.log.min.isr", [](n c) { return text(c.transaction_state_log_min_isr); }, {}},
    {"offsets.topic.replication.factor", [](n c) { return text(c.offsets_topic_replication_factor); }, {}},
    {"replica.lag.time.max.ms", [](n c) { return text(c.replica_lag_time_max_ms); }, {}},
    {"replica.fetch.wait.max.ms", [](n c) { return text(c.replica_fetch_wait_max_ms); }, {}},
    {"replica.fetch.max.bytes", [](n c) { return text(c.replica_fetch_max_bytes); }, {}},
    {"replica.fetch.backoff.ms", [](n c) { return text(c.replica_fetch_backoff_ms); }, {}},
    {"auto.leader.rebalance.enable", [](n c) { return text(c.auto_leader_rebalance_enable); }, {}},
    {"leader.imbalance.check.interval.seconds",
     [](n c) { return text(c.leader_imbalance_check_interval_seconds); }, {}},
    {"leader.imbalance.per.broker.percentage",
     [](n c) { return text(c.leader_imbalance_per_broker_percentage); }, {}},
    {"caftx.drills.enable", [](n c) { return text(c.drills_enable); }, {}},
  };
  return keys;
}

const node_key& key_named(const std::string& name) {
  for (const auto& k : node_keys())
    if (name == k.name)
      return k;
  throw std::logic_error("no node key " + name);
}

config_source source_of(const node_config& node, const node_key& k) {
  bool set = k.set_by.empty() ? given(node, {k.name}) : given(node, k.set_by);
  return set ? config_source::static_broker_config : config_source::default_config;
}

} // namespace

std::vector<config_entry> describe_node_configs(const node_config& node) {
  std::vector<config_entry> out;
  for (const auto& k : node_keys()) {
    auto source = source_of(node, k);
    auto value = k.value(node);
    out.push_back({k.name, value, true, source, {{k.name, value, source}}});
  }
  std::sort(out.begin(), out.end(),
            [](const config_entry& a, const config_entry& b) { return a.name < b.name; });
  return out;
}

std::vector<config_entry> describe_topic_configs(const properties& overrides,
                                                 const node_config& node) {
  // Each topic key and the node key it defaults to (Kafka's
  // LogConfig.TopicConfigSynonyms).
  static const std::vector<std::pair<const char*, const char*>> topic_keys{
    {"cleanup.policy", "log.cleanup.policy"},
    {"compression.type", nullptr},
    {"delete.retention.ms", "log.cleaner.delete.retention.ms"},
    {"max.message.bytes", "message.max.bytes"},
    {"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"},
    {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"},
    {"min.insync.replicas", "min.insync.replicas"},
    {"retention.bytes", "log.retention.bytes"},
    {"retention.ms", "log.retention.ms"},
  };
  std::vector<config_entry> out;
  for (const auto& [topic_key, node_key_name] : topic_keys) {
    config_entry e;
    e.name = topic_key;
    if (auto o = overrides.find(topic_key); o != overrides.end())
      e.synonyms.push_back({topic_key, o->second, config_source::dynamic_topic_config});
    if (node_key_name) {
      const auto& k = key_named(node_key_name);
      e.synonyms.push_back({k.name, k.value(node), source_of(node, k)});
    } else {
      // Kafka's compression.type: "producer" keeps what the producer sent,
      // the only way caftx stores batches.
      e.synonyms.push_back({"compression.type", "producer", config_source::default_config});
    }
    e.value = e.synonyms.front().value;
    e.source = e.synonyms.front().source;
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace caftx
