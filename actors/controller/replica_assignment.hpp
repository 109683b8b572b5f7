// Replica assignment of a new topic: Kafka's
// AdminUtils.assignReplicasToBrokers, rack-unaware (docs/controller.md
// §Create topic). Pure; the random start index and replica shift Kafka
// draws are inputs, so the result is reproducible.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "runtime/controller_model.hpp"
#include "runtime/status.hpp"

namespace caftx::controller {

/// partition -> replicas for `partitions` partitions of `replication_factor`
/// replicas over `nodes` (sorted ascending first, as Kafka's
/// getBrokerMetadatas), numbered from `first_partition` on (Kafka's
/// startPartitionId: the partitions CreatePartitions adds to a topic of
/// that many). Partition p's first replica is
/// nodes[(p + start_index) % n]; the others follow at shifts
/// 1 + (shift + j) % (n - 1), where shift starts at next_replica_shift and
/// grows by one after every n partitions. Both inputs are taken mod n.
/// Errors (Kafka's messages): partitions <= 0 -> INVALID_PARTITIONS "Number
/// of partitions must be larger than 0."; replication_factor <= 0 ->
/// INVALID_REPLICATION_FACTOR "Replication factor must be larger than 0.";
/// replication_factor > n -> INVALID_REPLICATION_FACTOR "Replication
/// factor: 3 larger than available brokers: 2.".
status_or<std::map<int32_t, std::vector<node_id>>>
assign_replicas(int32_t partitions, int32_t replication_factor, std::vector<node_id> nodes,
                int32_t start_index, int32_t next_replica_shift, int32_t first_partition = 0);

} // namespace caftx::controller
