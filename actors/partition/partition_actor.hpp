// The partition leader actor: the thin shell around partition_core. It
// appends batches to the node's LevelDB (durably, off the scheduler
// thread), answers a produce only once its batch is durable (the high
// watermark passed it), serves Fetch and ListOffsets, and writes markers.
// On spawn it rebuilds the log and producer state from storage.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "runtime/ids.hpp"
#include "runtime/partition_messages.hpp"

namespace caftx {

struct node_context;

/// Spawns the leader of `tp` (the partition_actor interface of
/// runtime/partition_messages.hpp). Applies the topic's retention
/// (`topic`) every log.retention.check.interval.ms.
/// Throws std::runtime_error if the stored log cannot be decoded.
partition_actor spawn_partition(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                                topic_partition tp, topic_config topic);

/// Spawns the leader of `tp` under a supervisor (actors/common/supervisor.hpp)
/// that restarts it, rebuilt from storage, when it crashes; requests to a
/// leader that is not running fail with CAF's request_receiver_down, which
/// clients treat as retriable.
partition_actor spawn_supervised_partition(caf::actor_system& sys,
                                           std::shared_ptr<const node_context> ctx,
                                           topic_partition tp, topic_config topic);

/// Spawns the supervised leaders of partitions 0..partitions-1 of `topic`
/// and registers them in the node's directory (every actor, and the topic's
/// leaders).
void spawn_topic_leaders(caf::actor_system& sys, const std::shared_ptr<const node_context>& ctx,
                         const std::string& topic, int32_t partitions, const topic_config& config);

} // namespace caftx
