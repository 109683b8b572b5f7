// config/server_config: caftx-node's server.properties keys (Kafka's names)
// and the connection keys of clients built from bootstrap.servers.

#include <gtest/gtest.h>

#include "config/server_config.hpp"

namespace caftx {
namespace {

template <class T>
std::string error_of(const status_or<T>& r) {
  EXPECT_FALSE(r.ok());
  if (r.ok())
    return {};
  EXPECT_EQ(r.error().code(), error_code::invalid_config);
  return r.error().message();
}

properties with_dir(properties p) {
  p.emplace("log.dirs", "/tmp/x");
  return p;
}

TEST(ServerConfig, MetricsListenersIsOneHttpEndpointOrNone) {
  auto none = server_config::parse(with_dir({}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->metrics_listener.has_value());
  auto empty = server_config::parse(with_dir({{"metrics.listeners", ""}}));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->metrics_listener.has_value());
  auto c = server_config::parse(with_dir({{"metrics.listeners", "http://0.0.0.0:9404"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_TRUE(c->metrics_listener.has_value());
  EXPECT_EQ(c->metrics_listener->to_string(), "0.0.0.0:9404");
  auto any = server_config::parse(with_dir({{"metrics.listeners", "http://:0"}}));
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->metrics_listener->to_string(), ":0");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"metrics.listeners", "https://h:1"}}))),
            "config 'metrics.listeners' = 'https://h:1' must be http://host:port (Prometheus' "
            "text format over plain HTTP, at /metrics)");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"metrics.listeners", "http://h:70000"}}))),
            "config 'metrics.listeners' = 'h:70000': port '70000' is out of range [0, 65535]");
  EXPECT_NE(error_of(server_config::parse(with_dir({{"metrics.listeners", "http://h:1/metrics"}})))
              .find("without a path"),
            std::string::npos);
  EXPECT_NE(error_of(server_config::parse(
                       with_dir({{"metrics.listeners", "http://h:1,http://h:2"}})))
              .find("exactly one listener"),
            std::string::npos);
}

TEST(ServerConfig, DefaultsAreKafkasWhereKafkaHasOne) {
  auto c = server_config::parse(with_dir({}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->node_id, 0);
  EXPECT_EQ(c->listener.to_string(), "127.0.0.1:9092");
  EXPECT_EQ(c->advertised.to_string(), "127.0.0.1:9092");
  EXPECT_FALSE(c->zookeeper.has_value());
  EXPECT_EQ(c->zookeeper_session_timeout_ms, 18000); // KIP-537
  EXPECT_EQ(c->node.default_replication_factor, 1);
  EXPECT_EQ(c->node.transaction_state_log_replication_factor, 3);
  EXPECT_EQ(c->node.transaction_state_log_min_isr, 2);
  EXPECT_EQ(c->node.offsets_topic_replication_factor, 3);
  EXPECT_EQ(c->node.replica_lag_time_max_ms, 30000);
  EXPECT_EQ(c->log_level, "info");
  EXPECT_EQ(c->cluster_id, "caftx");
  EXPECT_EQ(c->middleman.heartbeat_interval_ms, 1000);
  EXPECT_EQ(c->middleman.connection_timeout_ms, 10000);
  EXPECT_EQ(c->node.data_dir, "/tmp/x");
}

TEST(ServerConfig, BrokerIdIsAnAliasOfNodeId) {
  EXPECT_EQ(server_config::parse(with_dir({{"broker.id", "4"}}))->node_id, 4);
  EXPECT_EQ(server_config::parse(with_dir({{"node.id", "5"}}))->node_id, 5);
  EXPECT_EQ(server_config::parse(with_dir({{"node.id", "5"}, {"broker.id", "5"}}))->node_id, 5);
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"node.id", "5"}, {"broker.id", "6"}}))),
            "config 'broker.id' = 6 and 'node.id' = 5 differ (node.id is broker.id's alias)");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"node.id", "-1"}}))),
            "config 'node.id' = '-1' is out of range [0, 2147483647]");
}

TEST(ServerConfig, ListenersAreOneCaftxEndpoint) {
  auto c = server_config::parse(with_dir({{"listeners", "caftx://:0"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->listener.host, "");
  EXPECT_EQ(c->listener.port, 0);
  c = server_config::parse(with_dir({{"listeners", "caftx://10.0.0.1:9093"},
                                     {"advertised.listeners", "caftx://node1:19093"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->listener.to_string(), "10.0.0.1:9093");
  EXPECT_EQ(c->advertised.to_string(), "node1:19093");
  EXPECT_FALSE(c->kafka_listener.has_value());
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"listeners", "PLAINTEXT://h:9092"}}))),
            "config 'listeners' = 'PLAINTEXT://h:9092' needs a caftx://host:port listener (the "
            "CAF middleman nodes and caftx clients use)");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"listeners", "caftx://a:1,SSL://a:2"}}))),
            "config 'listeners' = 'caftx://a:1,SSL://a:2': 'SSL://a:2' is not served: "
            "caftx://host:port is the CAF middleman, PLAINTEXT://host:port Kafka's wire protocol "
            "(SSL and SASL are not supported)");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"listeners", "caftx://a:1,caftx://b:2"}}))),
            "config 'listeners' = 'caftx://a:1,caftx://b:2': at most one caftx:// listener");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"listeners", "caftx://a:65536"}}))),
            "config 'listeners' = 'a:65536': port '65536' is out of range [0, 65535]");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"advertised.listeners", "caftx://:9092"}}))),
            "config 'advertised.listeners' = 'caftx://:9092' must name a host and a port other "
            "than 0");
}

// A PLAINTEXT:// listener beside the caftx:// one serves Kafka's wire
// protocol; what Kafka clients are told must be a reachable address.
TEST(ServerConfig, APlaintextListenerServesKafkasProtocol) {
  auto c = server_config::parse(
    with_dir({{"listeners", "caftx://127.0.0.1:9192, PLAINTEXT://127.0.0.1:9092"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->listener.to_string(), "127.0.0.1:9192");
  EXPECT_EQ(c->kafka_listener->to_string(), "127.0.0.1:9092");
  EXPECT_EQ(c->kafka_advertised->to_string(), "127.0.0.1:9092");
  c = server_config::parse(with_dir({{"listeners", "caftx://:9192,PLAINTEXT://:0"},
                                     {"advertised.listeners", "PLAINTEXT://broker1:19092"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->kafka_listener->to_string(), ":0");
  EXPECT_EQ(c->kafka_advertised->to_string(), "broker1:19092");
  EXPECT_EQ(c->advertised.to_string(), ":9192"); // the caftx one stays the listener's
  EXPECT_EQ(error_of(server_config::parse(
              with_dir({{"listeners", "caftx://:9192,PLAINTEXT://:9092"}}))),
            "config 'listeners' = 'caftx://:9192,PLAINTEXT://:9092': its PLAINTEXT:// listener "
            "listens on every interface: set 'advertised.listeners' to the PLAINTEXT://host:port "
            "Kafka clients reach");
  EXPECT_EQ(error_of(server_config::parse(
              with_dir({{"listeners", "caftx://:9192,PLAINTEXT://127.0.0.1:0"}}))),
            "config 'listeners' = 'caftx://:9192,PLAINTEXT://127.0.0.1:0': its PLAINTEXT:// "
            "listener has a port the OS chooses: set 'advertised.listeners' to the "
            "PLAINTEXT://host:port Kafka clients reach");
  EXPECT_EQ(error_of(server_config::parse(
              with_dir({{"advertised.listeners", "PLAINTEXT://h:9092"}}))),
            "config 'advertised.listeners' = 'PLAINTEXT://h:9092' advertises PLAINTEXT:// but "
            "'listeners' has no PLAINTEXT:// listener");
  EXPECT_EQ(error_of(server_config::parse(
              with_dir({{"listeners", "caftx://a:1,PLAINTEXT://a:2,PLAINTEXT://a:3"}}))),
            "config 'listeners' = 'caftx://a:1,PLAINTEXT://a:2,PLAINTEXT://a:3': at most one "
            "PLAINTEXT:// listener");
}

TEST(ServerConfig, ZookeeperConnectIsParsedWithItsChroot) {
  auto c = server_config::parse(
    with_dir({{"zookeeper.connect", "zk1:2181,zk2:2182/caftx/c1"},
              {"zookeeper.session.timeout.ms", "6000"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_TRUE(c->zookeeper.has_value());
  ASSERT_EQ(c->zookeeper->servers.size(), 2u);
  EXPECT_EQ(c->zookeeper->servers[1].to_string(), "zk2:2182");
  EXPECT_EQ(c->zookeeper->chroot, "/caftx/c1");
  EXPECT_EQ(c->zookeeper_session_timeout_ms, 6000);
  // Kafka's zookeeper.connection.timeout.ms defaults to the session timeout.
  EXPECT_EQ(c->zookeeper_connection_timeout_ms, 6000);
  auto own = server_config::parse(with_dir({{"zookeeper.connect", "zk1:2181"},
                                            {"zookeeper.connection.timeout.ms", "2500"}}));
  ASSERT_TRUE(own.ok()) << own.error().to_string();
  EXPECT_EQ(own->zookeeper_connection_timeout_ms, 2500);
  EXPECT_EQ(own->zookeeper_session_timeout_ms, 18000);
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"zookeeper.connect", "zk1:2181/caftx/"}}))),
            "config 'zookeeper.connect' = 'zk1:2181/caftx/': the chroot must be a path like "
            "/caftx/cluster-1 (no trailing or double slash)");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"zookeeper.connect", "zk1"}}))),
            "config 'zookeeper.connect' = 'zk1' must be host:port");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"zookeeper.connect", "/caftx"}}))),
            "config 'zookeeper.connect' must list at least one host:port");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"zookeeper.session.timeout.ms", "999"}}))),
            "config 'zookeeper.session.timeout.ms' = '999' is out of range [1000, 2147483647]");
}

TEST(ServerConfig, OtherKeysGoToTheNodeConfigAndUnknownOnesAreRefused) {
  auto c = server_config::parse(with_dir({{"num.partitions", "3"},
                                          {"auto.create.topics.enable", "true"},
                                          {"log.level", "debug"},
                                          {"caftx.cluster.id", "c1"}}));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->node.num_partitions, 3);
  EXPECT_TRUE(c->node.auto_create_topics_enable);
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_EQ(c->cluster_id, "c1");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"no.such.key", "1"}}))),
            "unknown broker config 'no.such.key'");
  EXPECT_EQ(error_of(server_config::parse({})),
            "config 'log.dirs' must be set (the node's data directory)");
  EXPECT_EQ(error_of(server_config::parse({{"log.dirs", "/a,/b"}})),
            "config 'log.dirs' = '/a,/b': caftx keeps one data directory per node");
  EXPECT_EQ(error_of(server_config::parse(with_dir({{"default.replication.factor", "0"}}))),
            "config 'default.replication.factor' = '0' is out of range [1, 32767]");
  EXPECT_EQ(error_of(server_config::parse(
              with_dir({{"caftx.middleman.heartbeat.interval.ms", "5000"},
                        {"caftx.middleman.connection.timeout.ms", "5000"}}))),
            "config 'caftx.middleman.connection.timeout.ms' = 5000 must be greater than "
            "'caftx.middleman.heartbeat.interval.ms' = 5000");
}

TEST(ClientConnectionConfig, TakesItsKeysAndLeavesTheClientsOwn) {
  properties p{{"bootstrap.servers", "a:1, b:2"},
               {"metadata.max.age.ms", "1000"},
               {"reconnect.backoff.max.ms", "300"},
               {"transactional.id", "t"}};
  auto c = client_connection_config::take(p);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_EQ(c->bootstrap_servers.size(), 2u);
  EXPECT_EQ(c->bootstrap_servers[1].to_string(), "b:2");
  EXPECT_EQ(c->metadata_max_age_ms, 1000);
  EXPECT_EQ(c->reconnect_backoff_ms, 50);
  EXPECT_EQ(c->reconnect_backoff_max_ms, 300);
  EXPECT_EQ(c->socket_connection_setup_timeout_ms, 10000);
  EXPECT_EQ(p, (properties{{"transactional.id", "t"}}));
  properties none;
  EXPECT_EQ(error_of(client_connection_config::take(none)),
            "config 'bootstrap.servers' must be set (host:port,...)");
  properties bad{{"bootstrap.servers", "a:0"}};
  EXPECT_EQ(error_of(client_connection_config::take(bad)),
            "config 'bootstrap.servers' = 'a:0': port '0' is out of range [1, 65535]");
  properties nohost{{"bootstrap.servers", ":9092"}};
  EXPECT_EQ(error_of(client_connection_config::take(nohost)),
            "config 'bootstrap.servers' = ':9092' has no host (host:port)");
}

} // namespace
} // namespace caftx
