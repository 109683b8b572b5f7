// Admin calls for embedding applications and tools (Kafka's Admin client):
// blocking, usable from any plain C++ thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/messages.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// CreateTopics for one topic through `broker`. Errors: TOPIC_ALREADY_EXISTS,
/// INVALID_PARTITIONS (count outside [1, 10000]), INVALID_REQUEST (name),
/// REQUEST_TIMED_OUT (no reply within `timeout`).
status create_topic(caf::actor_system& sys, const caf::actor& broker, const std::string& name,
                    int32_t partitions,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

/// DescribeTransactions (KIP-664) for one transactional id: state name,
/// producer id and epoch, partitions, coordinator epoch.
status_or<describe_transaction_response>
describe_transaction(caf::actor_system& sys, const caf::actor& broker,
                     const std::string& transactional_id,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

} // namespace caftx
