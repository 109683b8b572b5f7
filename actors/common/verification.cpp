#include "actors/common/verification.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <chrono>

#include "actors/broker/node_context.hpp"
#include "actors/common/lost_connection.hpp"
#include "runtime/txn_coordinator_messages.hpp"
#include "runtime/partitioner.hpp"

namespace caftx {

namespace {

template <class Self>
void verify(Self* self, const node_context& ctx, api_kind api, const std::string& transactional_id,
            producer_id pid, producer_epoch epoch, const topic_partition& tp,
            std::function<void(error_code, std::string)> done) {
  auto shard = partition_for(transactional_id, ctx.config.transaction_state_log_num_partitions);
  auto coordinator = ctx.directory->txn_coordinator(shard);
  if (!coordinator) {
    done(verification_error(api, error_code::coordinator_not_available),
         "transaction coordinator not available");
    return;
  }
  add_partitions_to_txn_request req{transactional_id, pid, epoch, {tp}, true};
  auto timeout = std::chrono::milliseconds(ctx.config.request_timeout_ms);
  auto h = self->request(coordinator, timeout, std::move(req));
  h.then(
      [api, done, w = watch_connection(self, h.id(), coordinator)](const txn_response& r) {
        done(verification_error(api, r.error),
             r.error == error_code::none ? std::string{}
                                         : "verification with the transaction coordinator: "
                                             + std::string(to_string(r.error)) + " "
                                             + r.message);
      },
      [api, done](const caf::error&) {
        done(verification_error(api, error_code::coordinator_not_available),
             "no reply from the transaction coordinator");
      });
}

} // namespace

void verify_in_transaction(group_coordinator_impl_actor::base* self, const node_context& ctx,
                           api_kind api, const std::string& transactional_id, producer_id pid,
                           producer_epoch epoch, const topic_partition& tp,
                           std::function<void(error_code, std::string)> done) {
  verify(self, ctx, api, transactional_id, pid, epoch, tp, std::move(done));
}

void verify_in_transaction(partition_impl_actor::base* self, const node_context& ctx,
                           api_kind api, const std::string& transactional_id, producer_id pid,
                           producer_epoch epoch, const topic_partition& tp,
                           std::function<void(error_code, std::string)> done) {
  verify(self, ctx, api, transactional_id, pid, epoch, tp, std::move(done));
}

} // namespace caftx
