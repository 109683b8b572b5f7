// config: Kafka's names and defaults (docs/configuration.md), validation
// messages that name the key and the range, and .properties files.

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "config/config.hpp"
#include "unit_test_support.hpp"

namespace caftx {
namespace {

namespace fs = std::filesystem;

template <class T>
std::string error_of(const status_or<T>& r) {
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), error_code::invalid_config);
  return r.error().message();
}

// -- defaults ----------------------------------------------------------------

TEST(Config, BrokerDefaultsEqualKafka) {
  auto c = node_config::parse({});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->transaction_state_log_num_partitions, 50);
  EXPECT_EQ(c->offsets_topic_num_partitions, 50);
  EXPECT_EQ(c->offsets_retention_minutes, 10080);
  EXPECT_EQ(c->offsets_retention_check_interval_ms, 600000);
  EXPECT_EQ(c->transaction_max_timeout_ms, 900000);
  EXPECT_EQ(c->transaction_abort_timed_out_transaction_cleanup_interval_ms, 10000);
  EXPECT_EQ(c->transactional_id_expiration_ms, 604800000);
  EXPECT_EQ(c->transaction_remove_expired_transaction_cleanup_interval_ms, 3600000);
  EXPECT_EQ(c->num_partitions, 1);
  // caftx's own settings.
  EXPECT_TRUE(c->storage_sync);
  EXPECT_EQ(c->supervisor_max_restarts, 5);
  EXPECT_EQ(c->supervisor_restart_window_ms, 10000);
  EXPECT_EQ(c->marker_retry_backoff_ms, 100);
  EXPECT_EQ(c->coordinator_load_chunk_cards, 1000);
  EXPECT_EQ(c->coordinator_park_ms, 1000);
  // Kafka's GroupCoordinatorConfig defaults.
  EXPECT_EQ(c->group_min_session_timeout_ms, 6000);
  EXPECT_EQ(c->group_max_session_timeout_ms, 1800000);
  EXPECT_EQ(c->group_initial_rebalance_delay_ms, 3000);
  EXPECT_EQ(c->group_max_size, 2147483647);
  // Deliberately unlike Kafka (documented in config.hpp): topics are not
  // auto-created unless asked for.
  EXPECT_FALSE(c->auto_create_topics_enable);
}

TEST(Config, ProducerDefaultsEqualKafka) {
  auto c = producer_config::parse({});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_FALSE(c->transactional_id.has_value());
  EXPECT_TRUE(c->enable_idempotence);
  EXPECT_EQ(c->transaction_timeout_ms, 60000);
  EXPECT_EQ(c->max_in_flight_requests_per_connection, 5);
  EXPECT_EQ(c->acks, -1);
  EXPECT_EQ(c->retries, INT32_MAX);
  EXPECT_EQ(c->retry_backoff_ms, 100);
  EXPECT_EQ(c->delivery_timeout_ms, 120000);
  EXPECT_EQ(c->request_timeout_ms, 30000);
  EXPECT_EQ(c->linger_ms, 5); // Kafka 4.0 default
  EXPECT_EQ(c->batch_size, 16384);
  EXPECT_EQ(c->buffer_memory, 33554432);
  EXPECT_EQ(c->max_block_ms, 60000);
  EXPECT_EQ(c->max_request_size, 1048576);
}

TEST(Config, ProducerAndConsumerLimitsAreParsedWithTheirRanges) {
  auto p = producer_config::parse(
    {{"buffer.memory", "1048576"}, {"max.block.ms", "1"}, {"max.request.size", "1000"}});
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->buffer_memory, 1048576);
  EXPECT_EQ(p->max_block_ms, 1);
  EXPECT_EQ(p->max_request_size, 1000);
  auto bad = producer_config::parse({{"max.request.size", "0"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("max.request.size"), std::string::npos);
  auto c = consumer_config::parse(
    {{"fetch.min.bytes", "100"}, {"fetch.max.wait.ms", "0"}, {"fetch.max.bytes", "4096"}});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->fetch_min_bytes, 100);
  EXPECT_EQ(c->fetch_max_wait_ms, 0);
  EXPECT_EQ(c->fetch_max_bytes, 4096);
  auto d = consumer_config::parse({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->fetch_min_bytes, 1);
  EXPECT_EQ(d->fetch_max_wait_ms, 500);
  EXPECT_EQ(d->fetch_max_bytes, 52428800);
  node_config n;
  auto t = topic_config::parse({}, n);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(n.message_max_bytes, 1048588);
  EXPECT_EQ(t->max_message_bytes, 1048588);
  auto nodes = node_config::parse({{"message.max.bytes", "2000"}});
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  EXPECT_EQ(topic_config::parse({}, *nodes)->max_message_bytes, 2000);
  EXPECT_EQ(topic_config::parse({{"max.message.bytes", "300"}}, *nodes)->max_message_bytes, 300);
}

TEST(Config, ConsumerDefaultsEqualKafka) {
  auto c = consumer_config::parse({});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_FALSE(c->group_id.has_value());
  EXPECT_EQ(c->isolation, isolation_level::read_uncommitted);
  EXPECT_EQ(c->auto_offset_reset, "latest");
  EXPECT_EQ(c->max_poll_records, 500);
  EXPECT_EQ(c->max_partition_fetch_bytes, 1048576);
  EXPECT_EQ(c->request_timeout_ms, 30000);
  EXPECT_EQ(c->retry_backoff_ms, 100);
  EXPECT_EQ(c->default_api_timeout_ms, 60000);
  // Deliberately unlike Kafka: only explicit commits are supported.
  EXPECT_FALSE(c->enable_auto_commit);
}

TEST(Config, ValuesAreParsedAndTrimmed) {
  auto n = node_config::parse({{"transaction.state.log.num.partitions", " 7 "},
                               {"log.dirs", "/var/caftx"},
                               {"auto.create.topics.enable", "true"}});
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->transaction_state_log_num_partitions, 7);
  EXPECT_EQ(n->data_dir, "/var/caftx");
  EXPECT_TRUE(n->auto_create_topics_enable);
  auto p = producer_config::parse({{"transactional.id", "txn-A"}, {"acks", "all"}});
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->transactional_id, std::optional<std::string>{"txn-A"});
  auto c = consumer_config::parse({{"isolation.level", "read_committed"}, {"group.id", "g"}});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->isolation, isolation_level::read_committed);
  EXPECT_EQ(c->group_id, std::optional<std::string>{"g"});
}

// -- validation ----------------------------------------------------------------

TEST(Config, OutOfRangeValueErrorNamesKeyAndRange) {
  EXPECT_EQ(error_of(node_config::parse({{"transaction.state.log.num.partitions", "0"}})),
            "config 'transaction.state.log.num.partitions' = '0' is out of range [1, 1000]");
  EXPECT_EQ(error_of(node_config::parse({{"caftx.marker.retry.backoff.ms", "60001"}})),
            "config 'caftx.marker.retry.backoff.ms' = '60001' is out of range [1, 60000]");
  EXPECT_EQ(error_of(producer_config::parse({{"transaction.timeout.ms", "-1"}})),
            "config 'transaction.timeout.ms' = '-1' is out of range [1, 2147483647]");
  EXPECT_EQ(error_of(consumer_config::parse({{"max.poll.records", "2147483648"}})),
            "config 'max.poll.records' = '2147483648' is out of range [1, 2147483647]");
  EXPECT_EQ(error_of(consumer_config::parse({{"retry.backoff.ms", "-1"}})),
            "config 'retry.backoff.ms' = '-1' is out of range [0, 2147483647]");
  EXPECT_EQ(error_of(consumer_config::parse({{"default.api.timeout.ms", "0"}})),
            "config 'default.api.timeout.ms' = '0' is out of range [1, 2147483647]");
}

TEST(Config, GroupKeysAreParsedWithTheirRanges) {
  auto n = node_config::parse({{"group.min.session.timeout.ms", "1000"},
                               {"group.max.session.timeout.ms", "1000"},
                               {"group.initial.rebalance.delay.ms", "0"},
                               {"group.max.size", "3"},
                               {"caftx.coordinator.park.ms", "0"}});
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->group_min_session_timeout_ms, 1000);
  EXPECT_EQ(n->group_max_session_timeout_ms, 1000);
  EXPECT_EQ(n->group_initial_rebalance_delay_ms, 0);
  EXPECT_EQ(n->group_max_size, 3);
  EXPECT_EQ(n->coordinator_park_ms, 0);
  EXPECT_EQ(error_of(node_config::parse({{"group.min.session.timeout.ms", "7000"},
                                         {"group.max.session.timeout.ms", "6000"}})),
            "config 'group.max.session.timeout.ms' = '6000' is out of range [7000, 2147483647]");
  EXPECT_EQ(error_of(node_config::parse({{"group.max.size", "0"}})),
            "config 'group.max.size' = '0' is out of range [1, 2147483647]");
  auto c = consumer_config::parse({{"partition.assignment.strategy",
                                    "roundrobin, org.apache.kafka.clients.consumer.RangeAssignor"},
                                   {"session.timeout.ms", "6000"}});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->partition_assignment_strategy, (std::vector<std::string>{"roundrobin", "range"}));
  EXPECT_EQ(c->session_timeout_ms, 6000);
  EXPECT_EQ(error_of(consumer_config::parse({{"partition.assignment.strategy", "sticky"}})),
            "config 'partition.assignment.strategy' names 'sticky'; allowed: range, roundrobin");
}

// group.instance.id (KIP-345) as Kafka's JoinGroupRequest.validateGroupInstanceId
// checks it.
TEST(Config, GroupInstanceIdIsValidatedAsKafkaDoes) {
  auto c = consumer_config::parse({{"group.instance.id", "host-1_a.B"}});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->group_instance_id, "host-1_a.B");
  EXPECT_EQ(consumer_config::parse({})->group_instance_id, std::nullopt);
  EXPECT_TRUE(consumer_config::parse({{"group.instance.id", std::string(249, 'x')}}).ok());
  const std::string rule =
    "' is not a legal instance id: 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'";
  std::vector<std::string> bad_ids{"", ".", "..", "a b", "a:b", std::string(250, 'x')};
  for (const auto& bad : bad_ids)
    EXPECT_EQ(error_of(consumer_config::parse({{"group.instance.id", bad}})),
              "config 'group.instance.id' = '" + bad + rule);
}

TEST(Config, ExpirationKeysAreParsedWithTheirRanges) {
  auto n = node_config::parse({{"transactional.id.expiration.ms", "2147483647"},
                               {"transaction.remove.expired.transaction.cleanup.interval.ms", "1"},
                               {"caftx.coordinator.load.chunk.cards", "50"}});
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->transactional_id_expiration_ms, 2147483647);
  EXPECT_EQ(n->transaction_remove_expired_transaction_cleanup_interval_ms, 1);
  EXPECT_EQ(n->coordinator_load_chunk_cards, 50);
  EXPECT_EQ(error_of(node_config::parse({{"transactional.id.expiration.ms", "0"}})),
            "config 'transactional.id.expiration.ms' = '0' is out of range [1, 2147483647]");
  EXPECT_EQ(
    error_of(node_config::parse(
      {{"transaction.remove.expired.transaction.cleanup.interval.ms", "2147483648"}})),
    "config 'transaction.remove.expired.transaction.cleanup.interval.ms' = '2147483648' is out of "
    "range [1, 2147483647]");
  EXPECT_EQ(error_of(node_config::parse({{"transactional.id.expiration.ms", "7d"}})),
            "config 'transactional.id.expiration.ms' = '7d' is not an integer");
  EXPECT_EQ(error_of(node_config::parse({{"caftx.coordinator.load.chunk.cards", "0"}})),
            "config 'caftx.coordinator.load.chunk.cards' = '0' is out of range [1, 1000000]");
}

TEST(Config, LeaderRebalanceKeysHaveKafkasDefaultsAndRanges) {
  auto d = node_config::parse({});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->auto_leader_rebalance_enable);
  EXPECT_EQ(d->leader_imbalance_check_interval_seconds, 300);
  EXPECT_EQ(d->leader_imbalance_per_broker_percentage, 10);
  auto n = node_config::parse({{"auto.leader.rebalance.enable", "false"},
                               {"leader.imbalance.check.interval.seconds", "1"},
                               {"leader.imbalance.per.broker.percentage", "0"}});
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_FALSE(n->auto_leader_rebalance_enable);
  EXPECT_EQ(n->leader_imbalance_check_interval_seconds, 1);
  EXPECT_EQ(n->leader_imbalance_per_broker_percentage, 0);
  EXPECT_EQ(error_of(node_config::parse({{"leader.imbalance.per.broker.percentage", "101"}})),
            "config 'leader.imbalance.per.broker.percentage' = '101' is out of range [0, 100]");
  EXPECT_EQ(error_of(node_config::parse({{"leader.imbalance.check.interval.seconds", "0"}})),
            "config 'leader.imbalance.check.interval.seconds' = '0' is out of range [1, "
            "9223372036854775807]");
}

TEST(Config, DrillsAreOffUnlessEnabled) {
  auto d = node_config::parse({});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->drills_enable);
  auto on = node_config::parse({{"caftx.drills.enable", "true"}});
  ASSERT_TRUE(on.ok()) << on.error().to_string();
  EXPECT_TRUE(on->drills_enable);
  EXPECT_EQ(error_of(node_config::parse({{"caftx.drills.enable", "on"}})),
            "config 'caftx.drills.enable' = 'on' must be true or false");
}

TEST(Config, NonIntegerValueErrorNamesKey) {
  EXPECT_EQ(error_of(node_config::parse({{"num.partitions", "3x"}})),
            "config 'num.partitions' = '3x' is not an integer");
  EXPECT_EQ(error_of(producer_config::parse({{"linger.ms", ""}})),
            "config 'linger.ms' = '' is not an integer");
  EXPECT_EQ(error_of(node_config::parse({{"caftx.storage.sync", "yes"}})),
            "config 'caftx.storage.sync' = 'yes' must be true or false");
}

TEST(Config, UnknownKeyIsRejectedNamingTheKey) {
  EXPECT_EQ(error_of(node_config::parse({{"transaction.max.timeout", "1"}})),
            "unknown broker config 'transaction.max.timeout'");
  EXPECT_EQ(error_of(producer_config::parse({{"acks", "all"}, {"lingerms", "1"}})),
            "unknown producer config 'lingerms'");
  EXPECT_EQ(error_of(consumer_config::parse({{"isolation", "read_committed"}})),
            "unknown consumer config 'isolation'");
}

TEST(Config, IgnoredKafkaKeysAreAccepted) {
  EXPECT_TRUE(node_config::parse({{"broker.id", "1"},
                                  {"transaction.state.log.replication.factor", "3"},
                                  {"transaction.state.log.min.isr", "2"},
                                  {"log.segment.bytes", "1073741824"}})
                .ok());
  EXPECT_TRUE(producer_config::parse({{"bootstrap.servers", "localhost:9092"},
                                      {"key.serializer", "x"},
                                      {"compression.type", "none"}})
                .ok());
  EXPECT_TRUE(consumer_config::parse({{"bootstrap.servers", "localhost:9092"},
                                      {"session.timeout.ms", "45000"},
                                      {"fetch.min.bytes", "1"}})
                .ok());
}

TEST(Config, MaxInFlightSixWithIdempotenceIsError) {
  EXPECT_EQ(error_of(producer_config::parse({{"enable.idempotence", "true"},
                                             {"max.in.flight.requests.per.connection", "6"}})),
            "config 'max.in.flight.requests.per.connection' = 6 is out of range [1, 5] with "
            "idempotence enabled");
  EXPECT_EQ(error_of(producer_config::parse({{"transactional.id", "txn-A"},
                                             {"max.in.flight.requests.per.connection", "6"}})),
            "config 'max.in.flight.requests.per.connection' = 6 is out of range [1, 5] with "
            "idempotence enabled");
  // Implicit idempotence is turned off instead (Kafka 3.x behaviour).
  auto implicit = producer_config::parse({{"max.in.flight.requests.per.connection", "6"}});
  ASSERT_TRUE(implicit.ok());
  EXPECT_FALSE(implicit->enable_idempotence);
  EXPECT_EQ(implicit->max_in_flight_requests_per_connection, 6);
  auto five = producer_config::parse({{"enable.idempotence", "true"},
                                      {"max.in.flight.requests.per.connection", "5"}});
  ASSERT_TRUE(five.ok());
  EXPECT_TRUE(five->enable_idempotence);
}

TEST(Config, IdempotenceRequiresAcksAllAndRetries) {
  EXPECT_EQ(error_of(producer_config::parse({{"enable.idempotence", "true"}, {"acks", "1"}})),
            "config 'acks' must be 'all' with idempotence enabled");
  EXPECT_EQ(error_of(producer_config::parse({{"enable.idempotence", "true"}, {"retries", "0"}})),
            "config 'retries' must be > 0 with idempotence enabled");
  EXPECT_EQ(error_of(producer_config::parse({{"transactional.id", "t"},
                                             {"enable.idempotence", "false"}})),
            "config 'transactional.id' requires 'enable.idempotence' = true");
  EXPECT_EQ(error_of(producer_config::parse({{"transactional.id", ""}})),
            "config 'transactional.id' must not be empty when set");
  EXPECT_EQ(error_of(producer_config::parse({{"acks", "2"}})),
            "config 'acks' = '2' must be one of all, -1, 0, 1");
}

TEST(Config, ConsumerRejectsAutoCommitAndBadEnums) {
  EXPECT_EQ(error_of(consumer_config::parse({{"isolation.level", "committed"}})),
            "config 'isolation.level' = 'committed' must be read_committed or read_uncommitted");
  EXPECT_EQ(error_of(consumer_config::parse({{"auto.offset.reset", "smallest"}})),
            "config 'auto.offset.reset' = 'smallest' must be earliest, latest or none");
  EXPECT_FALSE(consumer_config::parse({{"enable.auto.commit", "true"}}).ok());
  EXPECT_TRUE(consumer_config::parse({{"enable.auto.commit", "false"}}).ok());
}

// -- properties files ------------------------------------------------------------

class PropertiesFile : public ::testing::Test {
protected:
  void SetUp() override {
    auto info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir())
           / ("caftx-config-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    auto path = (dir_ / name).string();
    std::ofstream out{path};
    out << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(PropertiesFile, ReadsKeyValuesCommentsAndColonSeparator) {
  auto path = write("broker.properties",
                    "# a comment\n"
                    "! another comment\n"
                    "\n"
                    "transaction.state.log.num.partitions = 8\n"
                    "  log.dirs=/data/caftx  \n"
                    "broker.id: 1\n");
  auto props = load_properties_file(path);
  ASSERT_TRUE(props.ok()) << props.error().to_string();
  EXPECT_EQ(*props, (properties{{"transaction.state.log.num.partitions", "8"},
                                {"log.dirs", "/data/caftx"},
                                {"broker.id", "1"}}));
  auto c = node_config::parse(*props);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->transaction_state_log_num_partitions, 8);
  EXPECT_EQ(c->data_dir, "/data/caftx");
}

TEST_F(PropertiesFile, LineWithoutSeparatorErrorNamesFileAndLine) {
  auto path = write("bad.properties", "# header\nacks=all\ngarbage line\n");
  auto r = load_properties_file(path);
  EXPECT_EQ(error_of(r), path + ":3: expected key=value, got 'garbage line'");
}

TEST_F(PropertiesFile, DuplicateKeyErrorNamesFileAndLine) {
  auto path = write("dup.properties", "acks=all\nretries=3\n\nacks=1\n");
  EXPECT_EQ(error_of(load_properties_file(path)), path + ":4: duplicate key 'acks'");
}

TEST_F(PropertiesFile, EmptyKeyErrorNamesFileAndLine) {
  auto path = write("empty.properties", "=value\n");
  EXPECT_EQ(error_of(load_properties_file(path)), path + ":1: empty key");
}

TEST_F(PropertiesFile, MissingFileErrorNamesFile) {
  auto path = (dir_ / "missing.properties").string();
  EXPECT_EQ(error_of(load_properties_file(path)), "cannot read config file " + path);
}

} // namespace
} // namespace caftx

namespace caftx {
namespace {

// -- retention ------------------------------------------------------------------

TEST(Config, RetentionDefaultsAndKafkasPrecedenceOfMsMinutesHours) {
  auto d = node_config::parse({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->log_retention_ms, 604800000);
  EXPECT_EQ(d->log_retention_bytes, -1);
  EXPECT_EQ(d->log_retention_check_interval_ms, 300000);
  EXPECT_EQ(node_config::parse({{"log.retention.hours", "1"}})->log_retention_ms, 3600000);
  EXPECT_EQ(node_config::parse({{"log.retention.hours", "1"}, {"log.retention.minutes", "2"}})
              ->log_retention_ms,
            120000);
  EXPECT_EQ(node_config::parse({{"log.retention.minutes", "2"}, {"log.retention.ms", "5"}})
              ->log_retention_ms,
            5);
  EXPECT_EQ(node_config::parse({{"log.retention.hours", "-1"}})->log_retention_ms, -1);
  EXPECT_EQ(error_of(node_config::parse({{"log.retention.bytes", "-2"}})),
            "config 'log.retention.bytes' = '-2' is out of range [-1, 9223372036854775807]");
  EXPECT_EQ(error_of(node_config::parse({{"log.retention.check.interval.ms", "0"}})),
            "config 'log.retention.check.interval.ms' = '0' is out of range [1, 2147483647]");
}

TEST(Config, TopicConfigsOverTheNodesDefaults) {
  node_config n;
  n.log_retention_ms = 1000;
  n.log_retention_bytes = 2000;
  auto inherited = topic_config::parse({}, n);
  ASSERT_TRUE(inherited.ok());
  EXPECT_EQ(inherited->retention_ms, 1000);
  EXPECT_EQ(inherited->retention_bytes, 2000);
  auto own = topic_config::parse({{"retention.ms", "-1"}, {"retention.bytes", "10"}}, n);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->retention_ms, -1);
  EXPECT_EQ(own->retention_bytes, 10);
  EXPECT_EQ(error_of(topic_config::parse({{"retention.ms", "x"}}, n)),
            "config 'retention.ms' = 'x' is not an integer");
  EXPECT_TRUE(topic_config::parse({{"cleanup.policy", "delete"}, {"segment.ms", "1"}}, n).ok());
  EXPECT_NE(error_of(topic_config::parse({{"compression.type", "gzip"}}, n)).find("compression.type"),
            std::string::npos);
}

TEST(Config, ProducerCompressionOtherThanNoneIsRefused) {
  EXPECT_TRUE(producer_config::parse({{"compression.type", "none"}}).ok());
  EXPECT_EQ(error_of(producer_config::parse({{"compression.type", "gzip"}})),
            "config 'compression.type' = 'gzip' is not supported (only none: caftx writes "
            "uncompressed RecordBatch v2)");
}

TEST(Config, OffsetsRetentionMinutesOutsideItsRangeIsInvalidConfig) {
  EXPECT_EQ(error_of(node_config::parse({{"offsets.retention.minutes", "0"}})),
            "config 'offsets.retention.minutes' = '0' is out of range [1, 2147483647]");
  EXPECT_EQ(error_of(node_config::parse({{"offsets.retention.check.interval.ms", "-5"}})),
            "config 'offsets.retention.check.interval.ms' = '-5' is out of range [1, 2147483647]");
  auto c = node_config::parse({{"offsets.retention.minutes", "3"}});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->offsets_retention_minutes, 3);
}

} // namespace
} // namespace caftx

namespace caftx {
namespace {

TEST(Config, CleanupPolicyIsKafkasListOfCompactAndDelete) {
  node_config n;
  auto d = topic_config::parse({}, n);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->cleanup_delete);
  EXPECT_FALSE(d->cleanup_compact);
  EXPECT_EQ(d->delete_retention_ms, 86400000);
  EXPECT_DOUBLE_EQ(d->min_cleanable_dirty_ratio, 0.5);
  EXPECT_EQ(d->min_compaction_lag_ms, 0);
  auto c = topic_config::parse({{"cleanup.policy", "compact"}}, n);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->cleanup_delete);
  EXPECT_TRUE(c->cleanup_compact);
  auto both = topic_config::parse({{"cleanup.policy", "compact, delete"}}, n);
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->cleanup_delete);
  EXPECT_TRUE(both->cleanup_compact);
  for (auto bad : {"compacted", "", "compact,", "delete;compact"})
    EXPECT_EQ(error_of(topic_config::parse({{"cleanup.policy", bad}}, n)),
              std::string("config 'cleanup.policy' = '") + bad
                + "' must be a list of compact and delete (compact, delete or compact,delete)");
}

TEST(Config, CompactionSettingsWithTheNodesDefaults) {
  auto n = node_config::parse({{"log.cleanup.policy", "compact"},
                               {"log.cleaner.delete.retention.ms", "1000"},
                               {"log.cleaner.min.cleanable.ratio", "0.25"},
                               {"log.cleaner.min.compaction.lag.ms", "5"},
                               {"log.cleaner.backoff.ms", "200"},
                               {"log.cleaner.enable", "false"},
                               {"log.cleaner.threads", "4"}});
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->log_cleaner_backoff_ms, 200);
  EXPECT_FALSE(n->log_cleaner_enable);
  auto t = topic_config::parse({}, *n);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->cleanup_compact);
  EXPECT_FALSE(t->cleanup_delete);
  EXPECT_EQ(t->delete_retention_ms, 1000);
  EXPECT_DOUBLE_EQ(t->min_cleanable_dirty_ratio, 0.25);
  EXPECT_EQ(t->min_compaction_lag_ms, 5);
  auto own = topic_config::parse({{"delete.retention.ms", "7"}, {"min.cleanable.dirty.ratio", "1"},
                                  {"min.compaction.lag.ms", "9"}}, *n);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->delete_retention_ms, 7);
  EXPECT_DOUBLE_EQ(own->min_cleanable_dirty_ratio, 1.0);
  EXPECT_EQ(own->min_compaction_lag_ms, 9);
  node_config d;
  EXPECT_EQ(error_of(topic_config::parse({{"min.cleanable.dirty.ratio", "1.5"}}, d)),
            "config 'min.cleanable.dirty.ratio' = '1.5' is out of range [0, 1]");
  EXPECT_EQ(error_of(topic_config::parse({{"min.cleanable.dirty.ratio", "half"}}, d)),
            "config 'min.cleanable.dirty.ratio' = 'half' is not a number");
  EXPECT_EQ(error_of(topic_config::parse({{"delete.retention.ms", "-1"}}, d)),
            "config 'delete.retention.ms' = '-1' is out of range [0, 9223372036854775807]");
  EXPECT_EQ(error_of(node_config::parse({{"log.cleaner.backoff.ms", "0"}})),
            "config 'log.cleaner.backoff.ms' = '0' is out of range [1, 2147483647]");
  EXPECT_EQ(error_of(node_config::parse({{"log.cleaner.min.cleanable.ratio", "-0.1"}})),
            "config 'log.cleaner.min.cleanable.ratio' = '-0.1' is out of range [0, 1]");
  EXPECT_EQ(error_of(node_config::parse({{"log.cleaner.dedupe.buffer.size", "1000"}})),
            "config 'log.cleaner.dedupe.buffer.size' = '1000' is out of range [1048576, "
            "9223372036854775807]");
  EXPECT_EQ(error_of(node_config::parse({{"log.cleanup.policy", "none"}})),
            "config 'log.cleanup.policy' = 'none' must be a list of compact and delete (compact, "
            "delete or compact,delete)");
  EXPECT_EQ(error_of(node_config::parse({{"log.cleaner.enable", "yes"}})),
            "config 'log.cleaner.enable' = 'yes' must be true or false");
}

// -- DescribeConfigs -------------------------------------------------------------

const config_entry* entry(const std::vector<config_entry>& entries, const std::string& name) {
  for (const auto& e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

// Kafka's ConfigHelper for a topic: the override first, then the node's
// key; the value and source are the first synonym's.
TEST(Config, DescribeTopicConfigsGivesOverridesThenTheNodesKeys) {
  auto node = node_config::parse({{"log.retention.hours", "1"}, {"log.cleanup.policy", "compact"}});
  ASSERT_TRUE(node.ok());
  auto entries = describe_topic_configs({{"retention.bytes", "2048"}}, *node);
  std::vector<std::string> names;
  for (auto& e : entries)
    names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cleanup.policy", "compression.type",
                                             "delete.retention.ms", "max.message.bytes",
                                             "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
                                             "min.insync.replicas", "retention.bytes",
                                             "retention.ms"}));
  auto* bytes = entry(entries, "retention.bytes");
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes->value, "2048");
  EXPECT_EQ(bytes->source, config_source::dynamic_topic_config);
  EXPECT_FALSE(bytes->read_only);
  ASSERT_EQ(bytes->synonyms.size(), 2u);
  EXPECT_EQ(bytes->synonyms[1].name, "log.retention.bytes");
  EXPECT_EQ(bytes->synonyms[1].value, "-1");
  EXPECT_EQ(bytes->synonyms[1].source, config_source::default_config);
  auto* ms = entry(entries, "retention.ms"); // from log.retention.hours
  ASSERT_NE(ms, nullptr);
  EXPECT_EQ(ms->value, "3600000");
  EXPECT_EQ(ms->source, config_source::static_broker_config);
  EXPECT_EQ(ms->synonyms.size(), 1u);
  EXPECT_EQ(entry(entries, "cleanup.policy")->value, "compact");
  EXPECT_EQ(entry(entries, "min.cleanable.dirty.ratio")->value, "0.5");
  EXPECT_EQ(entry(entries, "min.cleanable.dirty.ratio")->source, config_source::default_config);
  EXPECT_EQ(entry(entries, "compression.type")->value, "producer");
  EXPECT_EQ(entry(entries, "max.message.bytes")->value, "1048588");
}

TEST(Config, DescribeNodeConfigsListsEveryKeyReadOnlyWithItsSource) {
  auto node = node_config::parse({{"num.partitions", "4"},
                                  {"log.cleaner.min.cleanable.ratio", "0.25"},
                                  {"log.cleanup.policy", "delete,compact"},
                                  {"log.dirs", "/var/lib/caftx"}});
  ASSERT_TRUE(node.ok());
  auto entries = describe_node_configs(*node);
  EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end(),
                             [](auto& a, auto& b) { return a.name < b.name; }));
  for (auto& e : entries)
    EXPECT_TRUE(e.read_only) << e.name;
  auto is = [&](const std::string& name, const std::string& value, config_source source) {
    auto* e = entry(entries, name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->value, value) << name;
    EXPECT_EQ(e->source, source) << name;
  };
  is("num.partitions", "4", config_source::static_broker_config);
  is("log.cleaner.min.cleanable.ratio", "0.25", config_source::static_broker_config);
  is("log.cleanup.policy", "compact,delete", config_source::static_broker_config);
  is("log.dirs", "/var/lib/caftx", config_source::static_broker_config);
  is("default.replication.factor", "1", config_source::default_config);
  is("auto.create.topics.enable", "false", config_source::default_config);
  is("log.retention.ms", "604800000", config_source::default_config);
  // Every key the parser takes is listed: each one parses back.
  for (auto& e : entries) {
    if (e.name == "log.dirs")
      continue;
    auto again = node_config::parse({{e.name, e.value}});
    EXPECT_TRUE(again.ok()) << e.name << "=" << e.value << ": " << again.error().message();
  }
}

} // namespace
} // namespace caftx
