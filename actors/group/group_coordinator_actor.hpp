// The group coordinator actor for one `__consumer_offsets` partition: the
// thin shell around group_coordinator_core. Committed offsets and offsets
// pending inside a transaction are written to the node's LevelDB before the
// reply; a commit marker turns a producer's pending offsets into committed
// ones in one atomic write.
#pragma once

#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

namespace caftx {

struct node_context;

/// Spawns the group coordinator of `__consumer_offsets` partition
/// `partition`. Handles txn_offset_commit_request, offset_commit_request,
/// write_txn_marker_request -> txn_response; offset_fetch_request ->
/// offset_fetch_response.
caf::actor spawn_group_coordinator(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                                   int32_t partition);

/// Spawns the group coordinator of `partition` under a supervisor that
/// restarts it, reloaded from storage, when it crashes.
caf::actor spawn_supervised_group_coordinator(caf::actor_system& sys,
                                              std::shared_ptr<const node_context> ctx,
                                              int32_t partition);

} // namespace caftx
