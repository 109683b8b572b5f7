// The one place where caftx processes set up CAF's middleman (the
// network between a node and its clients, and later between nodes):
// module, heartbeats and connection timeout, app-identifiers, message
// types, publishing a node's broker and connecting to one with caftx's
// handshake (docs/node.md §Middleman).
//
// Design (CAF 0.17): BASP's handshake lets the connecting side refuse a
// server whose app-identifiers share none with its own; a payload that does
// not deserialize is dropped without a word, so two builds must never talk.
// Every caftx process therefore uses one app-identifier, wire_build_id()
// (version + fingerprint of the message types): another build or another
// CAF application is refused by BASP (incompatible_application_ids). The
// cluster is not in the app-identifier, since a client that only knows
// bootstrap.servers must reach any cluster; instead the first message on a
// connection is caftx's cluster_hello_request, which a node answers
// INCONSISTENT_CLUSTER_ID for a node of another cluster and INVALID_REQUEST
// for another build.
#pragma once

#include <chrono>
#include <cstdint>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "config/server_config.hpp"
#include "runtime/messages.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// Loads the middleman into `cfg` with caftx's settings: heartbeats every
/// m.heartbeat_interval_ms, peers silent for m.connection_timeout_ms
/// disconnected, app-identifiers = {wire_build_id()}, utility actors
/// detached (CAF issue #599), and every caftx message type registered.
/// Call before the actor system is constructed.
void configure_middleman(caf::actor_system_config& cfg, const middleman_config& m);

/// Publishes `broker` on `listener` (empty host = every interface) with
/// reuse_addr, so a restarted node rebinds at once even while its old
/// connections are in TIME_WAIT. Returns the bound port (the OS's choice
/// for port 0). Errors: INVALID_CONFIG naming the listener when it cannot
/// be bound (in use, no such address).
status_or<uint16_t> publish_broker(caf::actor_system& sys, const caf::actor& broker,
                                   const endpoint& listener);

/// A node's broker reached over the middleman, and its answer to the hello.
struct connected_node {
  caf::actor broker;
  cluster_hello_response hello;
};

/// Connects to the node at `at` (blocking; call from a plain thread),
/// then sends `hello` with `timeout`. Errors: REQUEST_TIMED_OUT naming the
/// endpoint for a refused or failed connection, a refused BASP handshake
/// (another build or CAF application) or no answer; the hello's own error
/// (INCONSISTENT_CLUSTER_ID, INVALID_REQUEST) otherwise. Kafka's client
/// calls a refused connection retriable, and so do callers here.
/// Why a connection to another process failed, in words for an operator
/// (no CAF type names): the middleman's "cannot connect to node" and
/// "request timeout" get plain text, anything else CAF's rendering.
std::string connection_failure_text(caf::actor_system& sys, const caf::error& e);

status_or<connected_node> connect_to_node(caf::actor_system& sys, const endpoint& at,
                                          const cluster_hello_request& hello,
                                          std::chrono::milliseconds timeout);

} // namespace caftx
