#include "config/config.hpp"
#include "config/server_config.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace caftx {

namespace {

status invalid(std::string message) {
  return {error_code::invalid_config, std::move(message)};
}

std::string number(double x) {
  auto s = std::to_string(x);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Reads the properties of one config kind, remembering which keys were used.
class reader {
public:
  explicit reader(const properties& props) : props_(props) {}

  status int32(const std::string& key, int32_t& out, int64_t min, int64_t max) {
    int64_t x = out;
    auto st = int64(key, x, min, max);
    out = static_cast<int32_t>(x);
    return st;
  }

  status int64(const std::string& key, int64_t& out, int64_t min, int64_t max) {
    auto v = take(key);
    if (!v)
      return {};
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno == ERANGE)
      return invalid("config '" + key + "' = '" + *v + "' is not an integer");
    if (x < min || x > max)
      return invalid("config '" + key + "' = '" + *v + "' is out of range [" + std::to_string(min)
                     + ", " + std::to_string(max) + "]");
    out = x;
    return {};
  }

  status real(const std::string& key, double& out, double min, double max) {
    auto v = take(key);
    if (!v)
      return {};
    errno = 0;
    char* end = nullptr;
    double x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x))
      return invalid("config '" + key + "' = '" + *v + "' is not a number");
    if (x < min || x > max)
      return invalid("config '" + key + "' = '" + *v + "' is out of range [" + number(min) + ", "
                     + number(max) + "]");
    out = x;
    return {};
  }

  /// Kafka's cleanup.policy list: comma-separated `compact` and `delete`.
  status cleanup_policy(const std::string& key, bool& del, bool& compact) {
    auto v = take(key);
    if (!v)
      return {};
    bool d = false, c = false;
    size_t from = 0;
    for (;;) {
      auto comma = v->find(',', from);
      auto item = trim(v->substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (item == "delete")
        d = true;
      else if (item == "compact")
        c = true;
      else
        return invalid("config '" + key + "' = '" + *v
                       + "' must be a list of compact and delete (compact, delete or "
                         "compact,delete)");
      if (comma == std::string::npos)
        break;
      from = comma + 1;
    }
    del = d;
    compact = c;
    return {};
  }

  status boolean(const std::string& key, bool& out) {
    auto v = take(key);
    if (!v)
      return {};
    if (*v == "true")
      out = true;
    else if (*v == "false")
      out = false;
    else
      return invalid("config '" + key + "' = '" + *v + "' must be true or false");
    return {};
  }

  std::optional<std::string> take(const std::string& key) {
    auto i = props_.find(key);
    if (i == props_.end())
      return std::nullopt;
    used_.insert(key);
    return trim(i->second);
  }

  /// Fails on the first key that was neither used nor in `ignored`.
  status check_unknown(const std::set<std::string>& ignored, const char* kind) {
    for (auto& [k, v] : props_)
      if (!used_.count(k) && !ignored.count(k))
        return invalid(std::string("unknown ") + kind + " config '" + k + "'");
    return {};
  }

private:
  const properties& props_;
  std::set<std::string> used_;
};

constexpr int64_t int_max = std::numeric_limits<int32_t>::max();
constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

#define CAFTX_TRY(expr)                                                                            \
  do {                                                                                             \
    if (auto st_ = (expr); !st_.ok())                                                              \
      return st_;                                                                                  \
  } while (false)

} // namespace

status_or<properties> load_properties_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return invalid("config file " + path + " is a directory");
  std::ifstream in{path};
  if (!in)
    return invalid("cannot read config file " + path);
  properties props;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    auto t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == '!')
      continue;
    auto sep = t.find_first_of("=:");
    if (sep == std::string::npos)
      return invalid(path + ":" + std::to_string(line_no) + ": expected key=value, got '" + t + "'");
    auto key = trim(t.substr(0, sep));
    if (key.empty())
      return invalid(path + ":" + std::to_string(line_no) + ": empty key");
    if (props.count(key))
      return invalid(path + ":" + std::to_string(line_no) + ": duplicate key '" + key + "'");
    props[key] = trim(t.substr(sep + 1));
  }
  return props;
}

status_or<node_config> node_config::parse(const properties& props) {
  node_config c;
  reader r{props};
  if (auto v = r.take("log.dirs"))
    c.data_dir = *v;
  if (auto v = r.take("data.dir"))
    c.data_dir = *v;
  CAFTX_TRY(r.int32("transaction.state.log.num.partitions", c.transaction_state_log_num_partitions, 1, 1000));
  CAFTX_TRY(r.int32("offsets.topic.num.partitions", c.offsets_topic_num_partitions, 1, 1000));
  CAFTX_TRY(r.int32("offsets.retention.minutes", c.offsets_retention_minutes, 1, int_max));
  CAFTX_TRY(r.int32("offsets.retention.check.interval.ms", c.offsets_retention_check_interval_ms, 1,
                    int_max));
  CAFTX_TRY(r.int32("group.min.session.timeout.ms", c.group_min_session_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("group.max.session.timeout.ms", c.group_max_session_timeout_ms,
                    c.group_min_session_timeout_ms, int_max));
  CAFTX_TRY(r.int32("group.initial.rebalance.delay.ms", c.group_initial_rebalance_delay_ms, 0,
                    int_max));
  CAFTX_TRY(r.int32("group.max.size", c.group_max_size, 1, int_max));
  CAFTX_TRY(r.int32("transaction.max.timeout.ms", c.transaction_max_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                    c.transaction_abort_timed_out_transaction_cleanup_interval_ms, 1, int_max));
  CAFTX_TRY(r.int32("transactional.id.expiration.ms", c.transactional_id_expiration_ms, 1, int_max));
  CAFTX_TRY(r.int32("transaction.remove.expired.transaction.cleanup.interval.ms",
                    c.transaction_remove_expired_transaction_cleanup_interval_ms, 1, int_max));
  CAFTX_TRY(r.int32("caftx.coordinator.load.chunk.cards", c.coordinator_load_chunk_cards, 1, 1000000));
  CAFTX_TRY(r.int32("caftx.coordinator.park.ms", c.coordinator_park_ms, 0, int_max));
  CAFTX_TRY(r.boolean("auto.create.topics.enable", c.auto_create_topics_enable));
  CAFTX_TRY(r.boolean("delete.topic.enable", c.delete_topic_enable));
  CAFTX_TRY(r.int32("num.partitions", c.num_partitions, 1, 10000));
  CAFTX_TRY(r.int32("producer.id.expiration.ms", c.producer_id_expiration_ms, 1, int_max));
  CAFTX_TRY(r.int32("producer.id.expiration.check.interval.ms",
                    c.producer_id_expiration_check_interval_ms, 1, int_max));
  // Kafka's precedence: log.retention.ms, else .minutes, else .hours.
  int32_t hours = 168, minutes = -1;
  int64_t retention_ms = -2;
  CAFTX_TRY(r.int32("log.retention.hours", hours, -1, int_max));
  CAFTX_TRY(r.int32("log.retention.minutes", minutes, -1, int_max));
  CAFTX_TRY(r.int64("log.retention.ms", retention_ms, -1, int64_max));
  c.log_retention_ms = retention_ms != -2 ? retention_ms
                       : minutes != -1    ? int64_t{minutes} * 60000
                       : hours == -1      ? -1
                                          : int64_t{hours} * 3600000;
  CAFTX_TRY(r.int64("log.retention.bytes", c.log_retention_bytes, -1, int64_max));
  CAFTX_TRY(r.int32("log.retention.check.interval.ms", c.log_retention_check_interval_ms, 1,
                    int_max));
  CAFTX_TRY(r.boolean("caftx.storage.sync", c.storage_sync));
  CAFTX_TRY(r.int32("caftx.log.tail.cache.bytes", c.log_tail_cache_bytes, 0, int_max));
  CAFTX_TRY(r.int32("caftx.log.snapshot.interval.bytes", c.log_snapshot_interval_bytes, 1,
                    int_max));
  CAFTX_TRY(r.int32("caftx.supervisor.max.restarts", c.supervisor_max_restarts, 0, 1000));
  CAFTX_TRY(r.int32("caftx.supervisor.restart.window.ms", c.supervisor_restart_window_ms, 1, int_max));
  CAFTX_TRY(r.int32("caftx.marker.retry.backoff.ms", c.marker_retry_backoff_ms, 1, 60000));
  CAFTX_TRY(r.boolean("controlled.shutdown.enable", c.controlled_shutdown_enable));
  CAFTX_TRY(r.int32("controlled.shutdown.max.retries", c.controlled_shutdown_max_retries, 0,
                    int_max - 1));
  CAFTX_TRY(r.int32("controlled.shutdown.retry.backoff.ms", c.controlled_shutdown_retry_backoff_ms,
                    0, int_max));
  CAFTX_TRY(r.int32("request.timeout.ms", c.request_timeout_ms, 1,
                    int_max));
  CAFTX_TRY(r.cleanup_policy("log.cleanup.policy", c.log_cleanup_delete, c.log_cleanup_compact));
  CAFTX_TRY(r.boolean("log.cleaner.enable", c.log_cleaner_enable));
  CAFTX_TRY(r.int32("log.cleaner.backoff.ms", c.log_cleaner_backoff_ms, 1, int_max));
  CAFTX_TRY(r.int64("log.cleaner.delete.retention.ms", c.log_cleaner_delete_retention_ms, 0,
                    int64_max));
  CAFTX_TRY(r.real("log.cleaner.min.cleanable.ratio", c.log_cleaner_min_cleanable_ratio, 0, 1));
  CAFTX_TRY(r.int64("log.cleaner.min.compaction.lag.ms", c.log_cleaner_min_compaction_lag_ms, 0,
                    int64_max));
  CAFTX_TRY(r.int64("log.cleaner.dedupe.buffer.size", c.log_cleaner_dedupe_buffer_size, 1048576,
                    int64_max));
  CAFTX_TRY(r.int32("caftx.log.cleaner.step.batches", c.log_cleaner_step_batches, 1, 1000000));
  CAFTX_TRY(r.int32("message.max.bytes", c.message_max_bytes, 0, int_max));
  CAFTX_TRY(r.int32("default.replication.factor", c.default_replication_factor, 1, 32767));
  CAFTX_TRY(r.int32("min.insync.replicas", c.min_insync_replicas, 1, int_max));
  CAFTX_TRY(r.int32("transaction.state.log.replication.factor",
                    c.transaction_state_log_replication_factor, 1, 32767));
  CAFTX_TRY(r.int32("transaction.state.log.min.isr", c.transaction_state_log_min_isr, 1, int_max));
  CAFTX_TRY(r.int32("offsets.topic.replication.factor", c.offsets_topic_replication_factor, 1,
                    32767));
  CAFTX_TRY(r.int64("replica.lag.time.max.ms", c.replica_lag_time_max_ms, 1, int64_max));
  CAFTX_TRY(r.int32("replica.fetch.wait.max.ms", c.replica_fetch_wait_max_ms, 0, int_max));
  CAFTX_TRY(r.int32("replica.fetch.max.bytes", c.replica_fetch_max_bytes, 1, int_max));
  CAFTX_TRY(r.int32("replica.fetch.backoff.ms", c.replica_fetch_backoff_ms, 0, int_max));
  CAFTX_TRY(r.boolean("auto.leader.rebalance.enable", c.auto_leader_rebalance_enable));
  CAFTX_TRY(r.int64("leader.imbalance.check.interval.seconds",
                    c.leader_imbalance_check_interval_seconds, 1, int64_max));
  CAFTX_TRY(r.int32("leader.imbalance.per.broker.percentage",
                    c.leader_imbalance_per_broker_percentage, 0, 100));
  CAFTX_TRY(r.boolean("caftx.drills.enable", c.drills_enable));
  static const std::set<std::string> ignored = {
    "broker.id", "node.id", "listeners", "advertised.listeners", "zookeeper.connect",
    "transaction.state.log.segment.bytes", "transaction.state.log.load.buffer.size",
    "log.segment.bytes", "num.network.threads", "num.io.threads",
    "log.cleaner.threads", "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
  };
  CAFTX_TRY(r.check_unknown(ignored, "broker"));
  for (const auto& [key, value] : props)
    c.given.push_back(key);
  return c;
}

status_or<topic_config> topic_config::parse(const properties& props, const node_config& node) {
  topic_config c;
  c.retention_ms = node.log_retention_ms;
  c.retention_bytes = node.log_retention_bytes;
  reader r{props};
  CAFTX_TRY(r.int64("retention.ms", c.retention_ms, -1, int64_max));
  CAFTX_TRY(r.int64("retention.bytes", c.retention_bytes, -1, int64_max));
  if (auto v = r.take("compression.type"); v && *v != "producer" && *v != "uncompressed")
    return invalid("config 'compression.type' = '" + *v
                   + "' is not supported (producer or uncompressed: batches are stored as sent)");
  c.cleanup_delete = node.log_cleanup_delete;
  c.cleanup_compact = node.log_cleanup_compact;
  c.delete_retention_ms = node.log_cleaner_delete_retention_ms;
  c.min_cleanable_dirty_ratio = node.log_cleaner_min_cleanable_ratio;
  c.min_compaction_lag_ms = node.log_cleaner_min_compaction_lag_ms;
  CAFTX_TRY(r.cleanup_policy("cleanup.policy", c.cleanup_delete, c.cleanup_compact));
  CAFTX_TRY(r.int64("delete.retention.ms", c.delete_retention_ms, 0, int64_max));
  CAFTX_TRY(r.real("min.cleanable.dirty.ratio", c.min_cleanable_dirty_ratio, 0, 1));
  CAFTX_TRY(r.int64("min.compaction.lag.ms", c.min_compaction_lag_ms, 0, int64_max));
  c.max_message_bytes = node.message_max_bytes;
  CAFTX_TRY(r.int32("max.message.bytes", c.max_message_bytes, 0, int_max));
  c.min_insync_replicas = node.min_insync_replicas;
  CAFTX_TRY(r.int32("min.insync.replicas", c.min_insync_replicas, 1, int_max));
  static const std::set<std::string> ignored = {
    "segment.bytes", "segment.ms",
    "message.timestamp.type", "unclean.leader.election.enable",
  };
  CAFTX_TRY(r.check_unknown(ignored, "topic"));
  return c;
}

status_or<producer_config> producer_config::parse(const properties& props) {
  producer_config c;
  reader r{props};
  bool idempotence_set = props.count("enable.idempotence") > 0;
  if (auto v = r.take("transactional.id")) {
    if (v->empty())
      return invalid("config 'transactional.id' must not be empty when set");
    c.transactional_id = *v;
  }
  CAFTX_TRY(r.boolean("enable.idempotence", c.enable_idempotence));
  CAFTX_TRY(r.int32("transaction.timeout.ms", c.transaction_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("max.in.flight.requests.per.connection",
                    c.max_in_flight_requests_per_connection, 1, int_max));
  if (auto v = r.take("acks")) {
    if (*v == "all" || *v == "-1")
      c.acks = -1;
    else if (*v == "1")
      c.acks = 1;
    else if (*v == "0")
      c.acks = 0;
    else
      return invalid("config 'acks' = '" + *v + "' must be one of all, -1, 0, 1");
  }
  CAFTX_TRY(r.int32("retries", c.retries, 0, int_max));
  CAFTX_TRY(r.int32("retry.backoff.ms", c.retry_backoff_ms, 0, int_max));
  CAFTX_TRY(r.int32("delivery.timeout.ms", c.delivery_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("request.timeout.ms", c.request_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("linger.ms", c.linger_ms, 0, int_max));
  CAFTX_TRY(r.int32("batch.size", c.batch_size, 1, int_max));
  CAFTX_TRY(r.int64("buffer.memory", c.buffer_memory, 1, int64_max));
  CAFTX_TRY(r.int64("max.block.ms", c.max_block_ms, 0, int64_max));
  CAFTX_TRY(r.int32("max.request.size", c.max_request_size, 1, int_max));
  if (auto v = r.take("compression.type"); v && *v != "none")
    return invalid("config 'compression.type' = '" + *v
                   + "' is not supported (only none: caftx writes uncompressed RecordBatch v2)");
  static const std::set<std::string> ignored = {
    "bootstrap.servers", "client.id", "key.serializer", "value.serializer",
    "partitioner.class",
  };
  CAFTX_TRY(r.check_unknown(ignored, "producer"));
  if (c.transactional_id && !c.enable_idempotence)
    return invalid("config 'transactional.id' requires 'enable.idempotence' = true");
  if (c.enable_idempotence) {
    // Kafka: explicit idempotence with incompatible settings is an error;
    // implicit idempotence is silently turned off instead.
    bool incompatible = c.acks != -1 || c.retries == 0 || c.max_in_flight_requests_per_connection > 5;
    if (incompatible && (idempotence_set || c.transactional_id)) {
      if (c.max_in_flight_requests_per_connection > 5)
        return invalid("config 'max.in.flight.requests.per.connection' = "
                       + std::to_string(c.max_in_flight_requests_per_connection)
                       + " is out of range [1, 5] with idempotence enabled");
      if (c.acks != -1)
        return invalid("config 'acks' must be 'all' with idempotence enabled");
      return invalid("config 'retries' must be > 0 with idempotence enabled");
    }
    if (incompatible)
      c.enable_idempotence = false;
  }
  return c;
}

status_or<consumer_config> consumer_config::parse(const properties& props) {
  consumer_config c;
  reader r{props};
  if (auto v = r.take("group.id")) {
    if (v->empty())
      return invalid("config 'group.id' must not be empty when set");
    c.group_id = *v;
  }
  if (auto v = r.take("isolation.level")) {
    if (*v == "read_committed")
      c.isolation = isolation_level::read_committed;
    else if (*v == "read_uncommitted")
      c.isolation = isolation_level::read_uncommitted;
    else
      return invalid("config 'isolation.level' = '" + *v
                     + "' must be read_committed or read_uncommitted");
  }
  if (auto v = r.take("auto.offset.reset")) {
    if (*v != "earliest" && *v != "latest" && *v != "none")
      return invalid("config 'auto.offset.reset' = '" + *v + "' must be earliest, latest or none");
    c.auto_offset_reset = *v;
  }
  CAFTX_TRY(r.int32("max.poll.records", c.max_poll_records, 1, int_max));
  CAFTX_TRY(r.int32("max.partition.fetch.bytes", c.max_partition_fetch_bytes, 1, int_max));
  CAFTX_TRY(r.int32("fetch.min.bytes", c.fetch_min_bytes, 0, int_max));
  CAFTX_TRY(r.int32("fetch.max.wait.ms", c.fetch_max_wait_ms, 0, int_max));
  CAFTX_TRY(r.int32("fetch.max.bytes", c.fetch_max_bytes, 0, int_max));
  CAFTX_TRY(r.int32("request.timeout.ms", c.request_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("retry.backoff.ms", c.retry_backoff_ms, 0, int_max));
  CAFTX_TRY(r.int32("default.api.timeout.ms", c.default_api_timeout_ms, 1, int_max));
  CAFTX_TRY(r.boolean("enable.auto.commit", c.enable_auto_commit));
  if (c.enable_auto_commit)
    return invalid("config 'enable.auto.commit' = 'true' is not supported; commit with "
                   "commit() or send_offsets_to_transaction()");
  if (auto v = r.take("client.id"))
    c.client_id = *v;
  if (auto v = r.take("group.instance.id")) {
    bool legal = !v->empty() && v->size() <= 249 && *v != "." && *v != "..";
    for (char ch : *v)
      legal = legal && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-');
    if (!legal)
      return invalid("config 'group.instance.id' = '" + *v
                     + "' is not a legal instance id: 1 to 249 characters of [a-zA-Z0-9._-], "
                       "not '.' or '..'");
    c.group_instance_id = *v;
  }
  CAFTX_TRY(r.int32("session.timeout.ms", c.session_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("heartbeat.interval.ms", c.heartbeat_interval_ms, 1, int_max));
  CAFTX_TRY(r.int32("max.poll.interval.ms", c.max_poll_interval_ms, 1, int_max));
  if (auto v = r.take("partition.assignment.strategy")) {
    c.partition_assignment_strategy.clear();
    std::string item;
    std::istringstream in{*v};
    while (std::getline(in, item, ',')) {
      item = trim(item);
      if (item == "range" || item == "org.apache.kafka.clients.consumer.RangeAssignor")
        c.partition_assignment_strategy.push_back("range");
      else if (item == "roundrobin"
               || item == "org.apache.kafka.clients.consumer.RoundRobinAssignor")
        c.partition_assignment_strategy.push_back("roundrobin");
      else
        return invalid("config 'partition.assignment.strategy' names '" + item
                       + "'; allowed: range, roundrobin");
    }
    if (c.partition_assignment_strategy.empty())
      return invalid("config 'partition.assignment.strategy' must name an assignor");
  }
  static const std::set<std::string> ignored = {
    "bootstrap.servers", "key.deserializer", "value.deserializer",
  };
  CAFTX_TRY(r.check_unknown(ignored, "consumer"));
  return c;
}

// -- caftx-node and remote clients (config/server_config.hpp) -------------------

std::string endpoint::to_string() const {
  return host + ":" + std::to_string(port);
}

namespace {

// "host:port" with port in [min_port, 65535]; an empty host only if allowed.
status_or<endpoint> parse_endpoint(const std::string& key, const std::string& value,
                                   int min_port, bool empty_host) {
  auto colon = value.rfind(':');
  if (colon == std::string::npos)
    return invalid("config '" + key + "' = '" + value + "' must be host:port");
  endpoint e;
  e.host = value.substr(0, colon);
  if (e.host.size() >= 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  auto port = value.substr(colon + 1);
  if (e.host.empty() && !empty_host)
    return invalid("config '" + key + "' = '" + value + "' has no host (host:port)");
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || errno == ERANGE || x < min_port || x > 65535)
    return invalid("config '" + key + "' = '" + value + "': port '" + port
                   + "' is out of range [" + std::to_string(min_port) + ", 65535]");
  e.port = static_cast<uint16_t>(x);
  return e;
}

// One `<scheme>host:port` listener: `what` names what is served on it
// ("" for the node itself), `why` explains why only that scheme. The port
// is in [0, 65535] (0: the OS's choice), the host may be empty (every
// interface), and there is no path.
status_or<endpoint> parse_one_listener(const std::string& key, const std::string& value,
                                       const std::string& scheme, const std::string& what,
                                       const std::string& why) {
  if (value.find(',') != std::string::npos)
    return invalid("config '" + key + "' = '" + value + "': caftx serves "
                   + (what.empty() ? "" : what + " on ") + "exactly one listener (" + scheme
                   + "host:port)");
  if (value.rfind(scheme, 0) != 0)
    return invalid("config '" + key + "' = '" + value + "' must be " + scheme + "host:port ("
                   + why + ")");
  auto rest = value.substr(scheme.size());
  if (rest.find('/') != std::string::npos)
    return invalid("config '" + key + "' = '" + value + "' must be " + scheme
                   + "host:port without a path");
  return parse_endpoint(key, rest, 0, true);
}

// `listeners` / `advertised.listeners`: comma-separated, at most one
// `caftx://host:port` (the CAF middleman) and at most one
// `PLAINTEXT://host:port` (Kafka's wire protocol).
struct listener_set {
  std::optional<endpoint> caftx;
  std::optional<endpoint> plaintext;
};

status_or<listener_set> parse_listeners(const std::string& key, const std::string& value) {
  listener_set out;
  size_t from = 0;
  for (;;) {
    auto comma = value.find(',', from);
    auto item = trim(value.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (!item.empty()) {
      bool kafka = item.rfind("PLAINTEXT://", 0) == 0;
      if (!kafka && item.rfind("caftx://", 0) != 0)
        return invalid("config '" + key + "' = '" + value + "': '" + item
                       + "' is not served: caftx://host:port is the CAF middleman, "
                         "PLAINTEXT://host:port Kafka's wire protocol (SSL and SASL are not "
                         "supported)");
      auto& slot = kafka ? out.plaintext : out.caftx;
      if (slot)
        return invalid("config '" + key + "' = '" + value + "': at most one "
                       + (kafka ? "PLAINTEXT://" : "caftx://") + " listener");
      auto e = parse_one_listener(key, item, kafka ? "PLAINTEXT://" : "caftx://", "", "");
      if (!e.ok())
        return e.error();
      slot = *e;
    }
    if (comma == std::string::npos)
      break;
    from = comma + 1;
  }
  return out;
}

// `metrics.listeners`: one `http://host:port` (the Prometheus endpoint, at
// /metrics).
status_or<endpoint> parse_metrics_listener(const std::string& key, const std::string& value) {
  return parse_one_listener(key, value, "http://", "metrics",
                            "Prometheus' text format over plain HTTP, at /metrics");
}

status middleman_keys(reader& r, middleman_config& m) {
  CAFTX_TRY(r.int32("caftx.middleman.heartbeat.interval.ms", m.heartbeat_interval_ms, 1, 3600000));
  CAFTX_TRY(r.int32("caftx.middleman.connection.timeout.ms", m.connection_timeout_ms, 1, 3600000));
  if (m.connection_timeout_ms <= m.heartbeat_interval_ms)
    return invalid("config 'caftx.middleman.connection.timeout.ms' = "
                   + std::to_string(m.connection_timeout_ms)
                   + " must be greater than 'caftx.middleman.heartbeat.interval.ms' = "
                   + std::to_string(m.heartbeat_interval_ms));
  return {};
}

} // namespace

status_or<std::vector<endpoint>> parse_endpoint_list(const std::string& key,
                                                     const std::string& value) {
  std::vector<endpoint> out;
  size_t from = 0;
  for (;;) {
    auto comma = value.find(',', from);
    auto item = trim(value.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (!item.empty()) {
      auto e = parse_endpoint(key, item, 1, false);
      if (!e.ok())
        return e.error();
      out.push_back(*e);
    }
    if (comma == std::string::npos)
      break;
    from = comma + 1;
  }
  if (out.empty())
    return invalid("config '" + key + "' must list at least one host:port");
  return out;
}

status_or<server_config> server_config::parse(const properties& props) {
  server_config c;
  reader r{props};
  int32_t broker_id = -1, node_id = -1;
  CAFTX_TRY(r.int32("broker.id", broker_id, 0, int_max));
  CAFTX_TRY(r.int32("node.id", node_id, 0, int_max));
  if (broker_id >= 0 && node_id >= 0 && broker_id != node_id)
    return invalid("config 'broker.id' = " + std::to_string(broker_id) + " and 'node.id' = "
                   + std::to_string(node_id) + " differ (node.id is broker.id's alias)");
  c.node_id = node_id >= 0 ? node_id : broker_id >= 0 ? broker_id : 0;
  std::string listeners_text = "caftx://127.0.0.1:9092";
  if (auto v = r.take("listeners")) {
    auto l = parse_listeners("listeners", *v);
    if (!l.ok())
      return l.error();
    if (!l->caftx)
      return invalid("config 'listeners' = '" + *v
                     + "' needs a caftx://host:port listener (the CAF middleman nodes and "
                       "caftx clients use)");
    c.listener = *l->caftx;
    c.kafka_listener = l->plaintext;
    listeners_text = *v;
  }
  c.advertised = c.listener;
  c.kafka_advertised = c.kafka_listener;
  if (auto v = r.take("advertised.listeners")) {
    auto l = parse_listeners("advertised.listeners", *v);
    if (!l.ok())
      return l.error();
    for (auto* e : {&l->caftx, &l->plaintext})
      if (*e && ((*e)->host.empty() || (*e)->port == 0))
        return invalid("config 'advertised.listeners' = '" + *v
                       + "' must name a host and a port other than 0");
    if (l->plaintext && !c.kafka_listener)
      return invalid("config 'advertised.listeners' = '" + *v
                     + "' advertises PLAINTEXT:// but 'listeners' has no PLAINTEXT:// listener");
    if (l->caftx)
      c.advertised = *l->caftx;
    if (l->plaintext)
      c.kafka_advertised = l->plaintext;
  }
  if (c.kafka_advertised && (c.kafka_advertised->host.empty() || c.kafka_advertised->port == 0))
    return invalid("config 'listeners' = '" + listeners_text + "': its PLAINTEXT:// listener "
                   + (c.kafka_advertised->host.empty() ? "listens on every interface"
                                                       : "has a port the OS chooses")
                   + ": set 'advertised.listeners' to the PLAINTEXT://host:port Kafka clients "
                     "reach");
  if (auto v = r.take("zookeeper.connect")) {
    zookeeper_connect zk;
    auto slash = v->find('/');
    if (slash != std::string::npos) {
      zk.chroot = v->substr(slash);
      if (zk.chroot.size() < 2 || zk.chroot.back() == '/'
          || zk.chroot.find("//") != std::string::npos)
        return invalid("config 'zookeeper.connect' = '" + *v
                       + "': the chroot must be a path like /caftx/cluster-1 (no trailing or "
                         "double slash)");
    }
    auto servers = parse_endpoint_list("zookeeper.connect", v->substr(0, slash));
    if (!servers.ok())
      return servers.error();
    zk.servers = *servers;
    c.zookeeper = std::move(zk);
  }
  CAFTX_TRY(r.int32("zookeeper.session.timeout.ms", c.zookeeper_session_timeout_ms, 1000, int_max));
  c.zookeeper_connection_timeout_ms = c.zookeeper_session_timeout_ms;
  CAFTX_TRY(r.int32("zookeeper.connection.timeout.ms", c.zookeeper_connection_timeout_ms, 1000,
                    int_max));
  if (auto v = r.take("log.level")) {
    static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error"};
    if (!levels.count(*v))
      return invalid("config 'log.level' = '" + *v + "' must be trace, debug, info, warn or error");
    c.log_level = *v;
  }
  if (auto v = r.take("caftx.cluster.id")) {
    if (v->empty())
      return invalid("config 'caftx.cluster.id' must not be empty");
    c.cluster_id = *v;
  }
  CAFTX_TRY(middleman_keys(r, c.middleman));
  if (auto v = r.take("metrics.listeners"); v && !trim(*v).empty()) {
    auto l = parse_metrics_listener("metrics.listeners", trim(*v));
    if (!l.ok())
      return l.error();
    c.metrics_listener = *l;
  }
  properties rest = props;
  for (auto* k : {"log.level", "caftx.cluster.id", "zookeeper.session.timeout.ms",
                  "zookeeper.connection.timeout.ms", "metrics.listeners",
                  "caftx.middleman.heartbeat.interval.ms", "caftx.middleman.connection.timeout.ms"})
    rest.erase(k);
  auto node = node_config::parse(rest);
  if (!node.ok())
    return node.error();
  c.node = std::move(node).value();
  if (c.node.data_dir.empty())
    return invalid("config 'log.dirs' must be set (the node's data directory)");
  if (c.node.data_dir.find(',') != std::string::npos)
    return invalid("config 'log.dirs' = '" + c.node.data_dir
                   + "': caftx keeps one data directory per node");
  return c;
}

status_or<client_connection_config> client_connection_config::take(properties& props) {
  client_connection_config c;
  {
    reader r{props};
    auto v = r.take("bootstrap.servers");
    if (!v)
      return invalid("config 'bootstrap.servers' must be set (host:port,...)");
    auto servers = parse_endpoint_list("bootstrap.servers", *v);
    if (!servers.ok())
      return servers.error();
    c.bootstrap_servers = *servers;
    CAFTX_TRY(r.int32("metadata.max.age.ms", c.metadata_max_age_ms, 0, int_max));
    CAFTX_TRY(r.int32("reconnect.backoff.ms", c.reconnect_backoff_ms, 0, int_max));
    CAFTX_TRY(r.int32("reconnect.backoff.max.ms", c.reconnect_backoff_max_ms, 0, int_max));
    CAFTX_TRY(r.int32("socket.connection.setup.timeout.ms", c.socket_connection_setup_timeout_ms,
                      1, int_max));
    CAFTX_TRY(middleman_keys(r, c.middleman));
  }
  for (auto* k : {"bootstrap.servers", "metadata.max.age.ms", "reconnect.backoff.ms",
                  "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
                  "caftx.middleman.heartbeat.interval.ms", "caftx.middleman.connection.timeout.ms"})
    props.erase(k);
  return c;
}

} // namespace caftx
