// KIP-890 part 1 for the actor shells: before the first transactional
// write of a producer to a partition (or of its offsets to a group), ask
// the transaction coordinator whether that partition is part of the
// producer's ongoing transaction (AddPartitionsToTxn with verify_only).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "runtime/error_code.hpp"
#include "runtime/ids.hpp"
#include "runtime/actor_interfaces.hpp"

namespace caftx {

struct node_context;

/// Sends the verification for (`transactional_id`, `pid`, `epoch`, `tp`) to
/// the transaction coordinator shard of `transactional_id` and calls `done`
/// inside `self` with the error to answer the writer, already mapped for
/// `api` (produce or txn_offset_commit) by verification_error(): NONE when
/// the write may open the transaction. No reply within
/// `request_timeout_ms` counts as the coordinator being unavailable.
/// Sent from a group coordinator.
void verify_in_transaction(group_coordinator_impl_actor::base* self, const node_context& ctx,
                           api_kind api, const std::string& transactional_id, producer_id pid,
                           producer_epoch epoch, const topic_partition& tp,
                           std::function<void(error_code, std::string)> done);
/// Sent from a partition leader.
void verify_in_transaction(partition_impl_actor::base* self, const node_context& ctx,
                           api_kind api, const std::string& transactional_id, producer_id pid,
                           producer_epoch epoch, const topic_partition& tp,
                           std::function<void(error_code, std::string)> done);

} // namespace caftx
