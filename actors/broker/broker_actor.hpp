// The broker actor: root of a node's request routing. Answers CreateTopics,
// Metadata and FindCoordinator; spawns the partition leaders of new topics
// after their metadata is durable.
#pragma once

#include <memory>
#include <string>

#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "runtime/actor_interfaces.hpp"
#include "runtime/controller_model.hpp"
#include "runtime/status.hpp"

namespace caftx {

struct node_context;

/// Spawns the broker of a node. Handles create_topic_request ->
/// txn_response, metadata_request -> metadata_response,
/// find_coordinator_request -> find_coordinator_response,
/// list_transactions_request -> list_transactions_response (merged from
/// every transaction coordinator shard of the node), node_fetch_request ->
/// node_fetch_response (fanned out to the node's partition leaders,
/// actors/broker/node_fetch.hpp).
caf::actor spawn_broker(caf::actor_system& sys, std::shared_ptr<const node_context> ctx);

// -- cluster mode wiring (node.cpp; docs/node.md §Cluster mode) ---------------

/// The node's controller actor, which the broker asks for topic configs
/// and to which it hands CreateTopics when this node is the controller.
void broker_set_controller(const caf::actor& broker, const controller_actor& controller);
/// The node registered (again) with `node_epoch`: controller requests are
/// checked against it from now on (held until the first).
void broker_registered(const caf::actor& broker, int64_t node_epoch);
/// Delivers a request of the local controller: to this node's broker
/// itself, or over the middleman to the target's broker at `ep`.
void broker_forward(const caf::actor& broker, const controller::outbound_request& r,
                    const controller::endpoint& ep);

// controlled_shutdown_atom (runtime/actor_interfaces.hpp), to the node's own
// broker at shutdown (node::stop): the ControlledShutdown loop
// (controlled.shutdown.max.retries, controlled.shutdown.retry.backoff.ms)
// against the controller; answered with the last controlled_shutdown_response.

/// Kafka's topic-name rule: 1-249 characters of [a-zA-Z0-9._-], not "."
/// or "..". Returns INVALID_REQUEST naming the problem.
status validate_topic_name(const std::string& name);

} // namespace caftx
