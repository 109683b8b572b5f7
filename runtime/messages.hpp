// Every message caftx actors exchange, for the code that registers them
// (register_message_types) and for code that talks to several actor kinds
// (tests, tools). Actors include only the header of the kind they are:
//   runtime/common_messages.hpp          shared replies, storage, supervisors
//   runtime/partition_messages.hpp       partition leaders
//   runtime/txn_coordinator_messages.hpp transaction coordinator shards
//   runtime/group_coordinator_messages.hpp group coordinators
//   runtime/broker_messages.hpp          a node's broker
//   runtime/controller_messages.hpp      the controller and its requests
//   runtime/session_messages.hpp         producer sessions
// Messages are named after Kafka's APIs; every one is registered under a
// fixed name, so the same messages cross the CAF middleman. Responses carry
// Kafka error codes; CAF errors only mean "no reply" (timeout, actor down).
#pragma once

#include <caf/fwd.hpp>

#include <string>
#include <vector>

#include "runtime/broker_messages.hpp"
#include "runtime/common_messages.hpp"
#include "runtime/controller_messages.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/session_messages.hpp"
#include "runtime/txn_coordinator_messages.hpp"

namespace caftx {

/// Registers every message type of the headers above with `cfg` under "caftx::<name>".
/// Must be called on every node's config before the actor system starts.
void register_message_types(caf::actor_system_config& cfg);

/// Calls `fn(name)` for every registered message type name (for tests).
std::vector<std::string> registered_message_type_names();

} // namespace caftx
