// Claiming a block of producer ids cluster-wide: Kafka's ZooKeeper-mode
// ProducerIdManager.getNewProducerIdBlock (docs/controller.md §Producer
// ids). Pure: the shell reads /producer_id_block (data and version), writes
// the claim, and on BADVERSION or NODEEXISTS reads again and asks anew.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "actors/controller/znodes.hpp"

namespace caftx::controller {

/// Ids per block (Kafka's ProducerIdManager.PidBlockSize).
inline constexpr int64_t producer_id_block_size = 1000;

/// The block a node claims and the write that claims it.
struct producer_id_claim {
  producer_id_block block;
  store_op op; // create (no znode yet) or set at the read version
};

/// The current znode as read: its data and data version.
struct versioned_data {
  std::string data;
  int32_t version = 0;
};

/// The next block for node `self` after `current` (nullopt: the znode does
/// not exist): [old end + 1, old end + 1000], or [0, 999] for the first.
/// Errors: a malformed znode (UNKNOWN_SERVER_ERROR naming the path); ids
/// exhausted when old end > INT64_MAX - 1000 (UNKNOWN_SERVER_ERROR "Have
/// exhausted all producerIds.", Kafka's message).
status_or<producer_id_claim> claim_producer_id_block(const std::optional<versioned_data>& current,
                                                     node_id self);

/// After a connection loss (unknown outcome): true if the znode now read
/// holds exactly our claim, so the claim succeeded (Kafka's
/// checkProducerIdBlockZkData).
bool claim_succeeded(const producer_id_claim& claim, std::string_view data_now);

} // namespace caftx::controller
