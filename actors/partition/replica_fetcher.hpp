// The replica fetcher of one (follower node, leader node) pair (Kafka's
// ReplicaFetcherThread): it runs the fetch loop of every partition this
// node follows on that leader. Per partition: become_follower at the
// leader epoch of the LeaderAndIsr, then fetch from the synced log end
// with the last fetched epoch; a diverging epoch truncates the local
// replica (KIP-101/KIP-279/KIP-320); fetched batches are appended and
// synced before the next fetch reports them. Each partition has its own
// request in flight, held by the leader while it has nothing new
// (replica.fetch.wait.max.ms), so a partition is answered the moment it
// has data instead of waiting for a whole multi-partition fetch.
// Failed fetches are retried after replica.fetch.backoff.ms.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "runtime/actor_interfaces.hpp"
#include "runtime/ids.hpp"
#include "runtime/message_inspect.hpp"

namespace caftx {

struct node_context;

/// Starts following `tp` (replacing any earlier loop of it) at
/// `leader_epoch`; `local` is the replica's partition actor here.
struct fetcher_assign {
  topic_partition tp;
  partition_actor local;
  int32_t leader_epoch = -1;
};
/// Stops the fetch loop of `tp` (it leads now, follows another node, or
/// stopped).
struct fetcher_remove {
  topic_partition tp;
};
/// The fetcher's own timer: fetch (or restart) `tp` of loop `generation`.
struct fetcher_retry {
  topic_partition tp;
  uint64_t generation = 0;
  bool restart = false;
};

CAFTX_INSPECT(fetcher_assign, x.tp, x.local, x.leader_epoch)
CAFTX_INSPECT(fetcher_remove, x.tp)
CAFTX_INSPECT(fetcher_retry, x.tp, x.generation, x.restart)

using replica_fetcher_actor =
  caf::typed_actor<caf::reacts_to<fetcher_assign>, caf::reacts_to<fetcher_remove>,
                   caf::reacts_to<fetcher_retry>>;

/// Spawns the fetcher of this node for the partitions `leader` leads. The
/// leader's partition handles come from the node's directory (the broker
/// resolves them from the controller's metadata).
replica_fetcher_actor spawn_replica_fetcher(caf::actor_system& sys,
                                            std::shared_ptr<const node_context> ctx,
                                            int32_t leader);

} // namespace caftx
