// A node's Kafka listener (the PLAINTEXT:// entry of `listeners`): Kafka's
// wire protocol over TCP for unmodified Kafka clients (docs/kafka-protocol.md).
// One CAF broker accepts connections and forks one actor per connection;
// each reads size-prefixed requests, answers them one at a time in arrival
// order (as Kafka's SocketServer, which mutes a connection while its
// request is processed), asks the node's broker actor for what it does
// not know itself, and never blocks a scheduler thread. A request it
// cannot parse, an API or version it does not answer (ApiVersions
// excepted: KIP-511's UNSUPPORTED_VERSION) or a frame above
// socket.request.max.bytes closes the connection, as Kafka does.
#pragma once

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/broker/node_events.hpp"
#include "runtime/status.hpp"

namespace caftx {

struct kafka_listener_options {
  /// Where to listen: an empty host is every interface, port 0 the OS's
  /// choice.
  std::string host;
  uint16_t port = 0;
  /// The node's broker actor (kafka_cluster_request, describe_topics_request).
  caf::actor broker;
  /// How long a connection waits for the broker's answer; the request is
  /// then answered with REQUEST_TIMED_OUT where its API has an error field.
  int64_t request_timeout_ms = 30000;
  /// Kafka's socket.request.max.bytes: a larger frame closes the connection.
  int32_t max_request_bytes = 104857600;
  /// Connection events (closed for a bad request) for the node's log.
  node_event_sink events;
  int32_t node_id = 0;
};

/// Binds and starts the listener; returns the bound port. Errors:
/// UNKNOWN_SERVER_ERROR "cannot listen on PLAINTEXT://host:port: <reason>".
/// The listener and its connections stop with the actor system.
status_or<uint16_t> start_kafka_listener(caf::actor_system& sys, kafka_listener_options opts);

} // namespace caftx
