#include "config/config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>

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
  CAFTX_TRY(r.int32("transaction.max.timeout.ms", c.transaction_max_timeout_ms, 1, int_max));
  CAFTX_TRY(r.int32("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                    c.transaction_abort_timed_out_transaction_cleanup_interval_ms, 1, int_max));
  CAFTX_TRY(r.int32("transactional.id.expiration.ms", c.transactional_id_expiration_ms, 1, int_max));
  CAFTX_TRY(r.int32("transaction.remove.expired.transaction.cleanup.interval.ms",
                    c.transaction_remove_expired_transaction_cleanup_interval_ms, 1, int_max));
  CAFTX_TRY(r.int32("caftx.coordinator.load.chunk.cards", c.coordinator_load_chunk_cards, 1, 1000000));
  CAFTX_TRY(r.boolean("auto.create.topics.enable", c.auto_create_topics_enable));
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
  static const std::set<std::string> ignored = {
    "broker.id", "node.id", "listeners", "advertised.listeners", "zookeeper.connect",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "transaction.state.log.segment.bytes", "transaction.state.log.load.buffer.size",
    "offsets.topic.replication.factor", "log.segment.bytes",
    "default.replication.factor", "min.insync.replicas", "num.network.threads", "num.io.threads",
    "log.cleaner.threads", "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
  };
  CAFTX_TRY(r.check_unknown(ignored, "broker"));
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
  static const std::set<std::string> ignored = {
    "segment.bytes", "segment.ms", "min.insync.replicas",
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
  static const std::set<std::string> ignored = {
    "bootstrap.servers", "client.id", "key.deserializer", "value.deserializer",
    "session.timeout.ms", "heartbeat.interval.ms",
  };
  CAFTX_TRY(r.check_unknown(ignored, "consumer"));
  return c;
}

} // namespace caftx
