// A node's Kafka listener (the PLAINTEXT:// entry of `listeners`): Kafka's
// wire protocol over TCP for unmodified Kafka clients (docs/kafka-protocol.md).
// One CAF broker accepts connections and forks one actor per connection;
// each reads size-prefixed requests, answers them one at a time in arrival
// order (as Kafka's SocketServer, which mutes a connection while its
// request is processed), asks the node's broker actor for what it does
// not know itself, and never blocks a scheduler thread. A request it
// cannot parse, an API or version it does not answer (ApiVersions
// excepted: KIP-511's UNSUPPORTED_VERSION) or a frame above
// socket.request.max.bytes closes the connection, as Kafka does. A frame's
// bytes are buffered as they arrive, never reserved from its declared size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/broker/node_events.hpp"
#include "runtime/status.hpp"

namespace caftx {

class actor_directory;

struct kafka_listener_options {
  /// Where to listen: an empty host is every interface, port 0 the OS's
  /// choice.
  std::string host;
  uint16_t port = 0;
  /// How long a connection waits for the broker's answer; the request is
  /// then answered with REQUEST_TIMED_OUT where its API has an error field.
  int64_t request_timeout_ms = 30000;
  /// Kafka's socket.request.max.bytes: a larger frame closes the connection.
  int32_t max_request_bytes = 104857600;
  /// Connection events (closed for a bad request) for the node's log.
  node_event_sink events;
  int32_t node_id = 0;
};

/// A running listener. It is bound before the node starts (a port in use
/// stops the node before it opens its data directory, as Kafka binds its
/// sockets first) and answers with the node's broker once set_broker()
/// gave it; until then Metadata lists no broker and no topic.
class kafka_listener {
public:
  /// Binds and starts. Errors: UNKNOWN_SERVER_ERROR "cannot listen on
  /// PLAINTEXT://host:port: <reason>".
  static status_or<std::unique_ptr<kafka_listener>> start(caf::actor_system& sys,
                                                          kafka_listener_options opts);
  /// Stops (see stop()).
  ~kafka_listener();
  kafka_listener(const kafka_listener&) = delete;
  kafka_listener& operator=(const kafka_listener&) = delete;

  /// The bound port.
  uint16_t port() const { return port_; }
  /// The node's broker actor (kafka_cluster_request, describe_topics_request,
  /// node_fetch_request) and its directory (the partitions it leads).
  void set_broker(caf::actor broker, std::shared_ptr<const actor_directory> directory);
  /// Stops accepting and closes every connection. Idempotent.
  void stop();

  struct broker_slot;

private:
  kafka_listener(caf::actor server, uint16_t port, std::shared_ptr<broker_slot> slot)
    : server_(std::move(server)), port_(port), slot_(std::move(slot)) {}
  caf::actor server_;
  uint16_t port_ = 0;
  std::shared_ptr<broker_slot> slot_;
};

} // namespace caftx
