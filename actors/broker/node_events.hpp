// What a node tells its operator: one event per thing a Kafka operator
// reads in server.log (a partition's leader epoch, a coordinator shard
// loaded, a producer fenced, a transaction aborted on its timeout, a
// component given up). The embedding application decides where they go
// (caftx-node writes them with spdlog; docs/node.md §Logging); the default
// drops them. No CAF.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace caftx {

/// Severity, as the log levels of caftx-node's log.level.
enum class node_event_level : uint8_t { trace, debug, info, warn, error };

struct node_event {
  node_event_level level = node_event_level::info;
  /// A stable name: "leader_elected", "coordinator_loaded",
  /// "group_coordinator_loaded", "producer_fenced",
  /// "transaction_timed_out", "hello_refused", "component_failed".
  std::string kind;
  /// The line for the operator, e.g. "[Partition orders-0 broker=1]
  /// orders-0 starts at leader epoch 3 from offset 120".
  std::string text;
};

/// Called from the node's actors, on any scheduler thread, concurrently:
/// must be thread-safe and must not block. Exceptions it throws are
/// swallowed.
using node_event_sink = std::function<void(const node_event&)>;

/// Calls `sink` (if set) with the event; never throws.
inline void emit_event(const node_event_sink& sink, node_event_level level, const char* kind,
                       std::string text) noexcept {
  if (!sink)
    return;
  try {
    sink(node_event{level, kind, std::move(text)});
  } catch (...) {
  }
}

} // namespace caftx
