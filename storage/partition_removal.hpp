// Removal of one partition's data from a node's store, for StopReplica
// with delete (Kafka's LogManager.asyncDelete when a topic is deleted).
#pragma once

#include <cstddef>

#include "runtime/ids.hpp"
#include "storage/node_store.hpp"

namespace caftx {

/// Queues deletes of every key of `tp` (storage/FORMAT.md: `log/`,
/// `pstate/`, `aborted/`, `logstart/`, `cleaner/`, `hw/`, `epoch/`) as
/// durable writes of at most `keys_per_write` keys each, in key order;
/// `done` runs once, after the last of them is on disk, with the first
/// failure (KAFKA_STORAGE_ERROR) or ok. Writes queued on `store` before
/// this call land before the deletes. The keys are read on the calling
/// thread; a read error is given to `done` before anything is deleted.
/// Removing a partition that has no data is one write of the fixed keys.
void remove_partition_data(node_store& store, const topic_partition& tp,
                           node_store::callback done, size_t keys_per_write = 10000);

} // namespace caftx
