// The broker actor: root of a node's request routing. Answers CreateTopics,
// Metadata and FindCoordinator; spawns the partition leaders of new topics
// after their metadata is durable.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

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

/// Kafka's topic-name rule: 1-249 characters of [a-zA-Z0-9._-], not "."
/// or "..". Returns INVALID_REQUEST naming the problem.
status validate_topic_name(const std::string& name);

} // namespace caftx
