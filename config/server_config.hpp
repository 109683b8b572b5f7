// Settings of a caftx-node process and of clients that connect to one over
// the network: Kafka's server.properties names (node.id, listeners,
// advertised.listeners, zookeeper.connect, ...) on top of node_config, and
// the client side's bootstrap.servers. Value types; no CAF (the middleman
// setup that uses them is actors/common/middleman.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace caftx {

/// A TCP endpoint: host and port. An empty host means every interface
/// (only for a listener).
struct endpoint {
  std::string host;
  uint16_t port = 0;
  /// "host:port".
  std::string to_string() const;
};

/// Parses a comma-separated `host:port` list (Kafka's bootstrap.servers):
/// INVALID_CONFIG naming `key` for an empty list, an entry without a
/// host or a port, or a port outside [1, 65535].
status_or<std::vector<endpoint>> parse_endpoint_list(const std::string& key,
                                                     const std::string& value);

/// The CAF middleman of a node or a remote client (docs/node.md
/// §Middleman). CAF 0.17 turns both off by default, so a frozen peer would
/// never be noticed.
struct middleman_config {
  /// `caftx.middleman.heartbeat.interval.ms`, [1, 3600000]: BASP heartbeats
  /// to every connected peer (CAF's middleman.heartbeat-interval).
  int32_t heartbeat_interval_ms = 1000;
  /// `caftx.middleman.connection.timeout.ms`, [1, 3600000], greater than
  /// the heartbeat interval: a peer silent this long is disconnected, its
  /// proxies' monitors get down messages (CAF's middleman.connection-timeout).
  int32_t connection_timeout_ms = 10000;
};

/// `zookeeper.connect`: `host:port,host:port[/chroot]`.
struct zookeeper_connect {
  std::vector<endpoint> servers;
  /// "" or "/a/b" (no trailing slash).
  std::string chroot;
};

/// Settings of one caftx-node process (Kafka's KafkaConfig names).
struct server_config {
  /// `node.id` or its alias `broker.id`, [0, 2147483647]; default 0. Both
  /// set to different values is INVALID_CONFIG.
  int32_t node_id = 0;
  /// `listeners`: comma-separated, one `caftx://host:port` (port [0,
  /// 65535]; 0 = chosen by the OS; empty host = every interface) and at
  /// most one `PLAINTEXT://host:port`; default `caftx://127.0.0.1:9092`.
  endpoint listener{"127.0.0.1", 9092};
  /// `advertised.listeners`: what clients and other nodes are told;
  /// default the listener.
  endpoint advertised{"127.0.0.1", 9092};
  /// The `PLAINTEXT://` entry of `listeners`: where the node serves Kafka's
  /// wire protocol (docs/kafka-protocol.md); nullopt: not served.
  std::optional<endpoint> kafka_listener;
  /// The `PLAINTEXT://` entry of `advertised.listeners` (default the
  /// listener's, which then must name a host and a port other than 0):
  /// what Kafka clients are told in Metadata.
  std::optional<endpoint> kafka_advertised;
  /// `zookeeper.connect`; nullopt when not set.
  std::optional<zookeeper_connect> zookeeper;
  /// `zookeeper.session.timeout.ms`, [1000, 2147483647]: Kafka's default
  /// 18000 (KIP-537).
  int32_t zookeeper_session_timeout_ms = 18000;
  /// `zookeeper.connection.timeout.ms`, [1000, 2147483647]; default the
  /// session timeout (Kafka's): how long a starting node waits for its
  /// ZooKeeper session to connect before it gives up with exit 2.
  int32_t zookeeper_connection_timeout_ms = 18000;
  /// `log.level`: trace, debug, info (default), warn or error.
  std::string log_level = "info";
  /// `caftx.cluster.id`: the cluster this node belongs to; nodes of
  /// another cluster are refused (INCONSISTENT_CLUSTER_ID). Default "caftx".
  std::string cluster_id = "caftx";
  middleman_config middleman;
  /// `metrics.listeners`: one `http://host:port` where the node serves its
  /// metrics in Prometheus' text format at GET /metrics (docs/metrics.md);
  /// port [0, 65535], 0 = chosen by the OS; empty host = every interface.
  /// nullopt (unset or empty): no metrics server.
  std::optional<endpoint> metrics_listener;
  /// Every other key: node_config::parse (log.dirs, num.partitions,
  /// auto.create.topics.enable, transaction.*, ...).
  node_config node;

  /// Unknown keys and bad values give INVALID_CONFIG naming the key (and
  /// the range).
  static status_or<server_config> parse(const properties& props);
};

/// How a client in another process reaches the cluster: the keys a
/// producer, consumer or admin client built from properties alone reads
/// besides its own.
struct client_connection_config {
  /// `bootstrap.servers`: host:port list; required.
  std::vector<endpoint> bootstrap_servers;
  /// `metadata.max.age.ms`, [0, 2147483647]: cached partition leaders and
  /// coordinators are looked up again at least this often (Kafka's 300000).
  int32_t metadata_max_age_ms = 300000;
  /// `reconnect.backoff.ms` and `reconnect.backoff.max.ms`, [0,
  /// 2147483647]: the wait before connecting again after a lost or failed
  /// connection, doubled per failure up to the maximum (Kafka's 50, 1000).
  int32_t reconnect_backoff_ms = 50;
  int32_t reconnect_backoff_max_ms = 1000;
  /// `socket.connection.setup.timeout.ms`, [1, 2147483647]: how long the
  /// constructor waits for the first connection (Kafka's 10000); the client
  /// goes on connecting in the background after it.
  int32_t socket_connection_setup_timeout_ms = 10000;
  middleman_config middleman;

  /// Removes these keys from `props` (the rest is the client's own
  /// config). Errors: INVALID_CONFIG naming the key.
  static status_or<client_connection_config> take(properties& props);
};

} // namespace caftx
