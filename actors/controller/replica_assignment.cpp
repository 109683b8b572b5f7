#include "actors/controller/replica_assignment.hpp"

#include <algorithm>

namespace caftx::controller {

status_or<std::map<int32_t, std::vector<node_id>>>
assign_replicas(int32_t partitions, int32_t replication_factor, std::vector<node_id> nodes,
                int32_t start_index, int32_t next_replica_shift, int32_t first_partition) {
  if (partitions <= 0)
    return status{error_code::invalid_partitions, "Number of partitions must be larger than 0."};
  if (replication_factor <= 0)
    return status{error_code::invalid_replication_factor,
                  "Replication factor must be larger than 0."};
  if (static_cast<size_t>(replication_factor) > nodes.size())
    return status{error_code::invalid_replication_factor,
                  "Replication factor: " + std::to_string(replication_factor)
                    + " larger than available brokers: " + std::to_string(nodes.size()) + "."};
  std::sort(nodes.begin(), nodes.end());
  const auto n = static_cast<int32_t>(nodes.size());
  auto mod = [n](int64_t v) { return static_cast<int32_t>(((v % n) + n) % n); };
  const int32_t start = mod(start_index);
  int64_t shift = mod(next_replica_shift);
  std::map<int32_t, std::vector<node_id>> out;
  const int32_t first_id = std::max(0, first_partition);
  for (int32_t p = first_id; p - first_id < partitions; ++p) {
    if (p > 0 && p % n == 0)
      ++shift;
    const int32_t first = mod(int64_t{p} + start);
    std::vector<node_id> replicas{nodes[first]};
    for (int32_t j = 0; j < replication_factor - 1; ++j)
      replicas.push_back(nodes[mod(first + 1 + (shift + j) % (n - 1))]);
    out[p] = std::move(replicas);
  }
  return out;
}

} // namespace caftx::controller
