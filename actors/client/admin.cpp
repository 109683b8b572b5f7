#include "actors/client/admin.hpp"

#include "actors/client/client_context.hpp"

namespace caftx {

status create_topic(caf::actor_system& sys, const caf::actor& broker, const std::string& name,
                    int32_t partitions, std::chrono::milliseconds timeout) {
  detail::client_channel ch{sys, broker};
  auto r = ch.call<txn_response>(broker, create_topic_request{name, partitions}, timeout);
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

status_or<describe_transaction_response>
describe_transaction(caf::actor_system& sys, const caf::actor& broker,
                     const std::string& transactional_id, std::chrono::milliseconds timeout) {
  detail::client_channel ch{sys, broker};
  auto coord = ch.coordinator(1, transactional_id, false, timeout);
  if (!coord.ok())
    return coord.error();
  auto r = ch.call<describe_transaction_response>(
    coord.value(), describe_transaction_request{transactional_id}, timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, "describe " + transactional_id};
  return std::move(r).value();
}

} // namespace caftx
