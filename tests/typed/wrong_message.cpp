// Compiled by check_typed.cmake: with CAFTX_CASE unset every request below
// matches its receiver's interface and the file compiles; with
// CAFTX_CASE=N the Nth request is one the receiver does not take, and the
// compiler must refuse it (runtime/actor_interfaces.hpp).
#include <caf/event_based_actor.hpp>

#include "runtime/broker_messages.hpp"
#include "runtime/controller_messages.hpp"
#include "runtime/coordination_messages.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/txn_coordinator_messages.hpp"

namespace caftx {

void send_all(caf::event_based_actor* self, const partition_actor& leader,
              const txn_coordinator_actor& coordinator, const group_coordinator_actor& group,
              const marker_target& markers, const controller_actor& controller,
              const broker_actor& broker) {
  self->request(leader, caf::infinite, fetch_request{});
  self->request(coordinator, caf::infinite, end_txn_request{});
  self->request(group, caf::infinite, offset_fetch_request{});
  self->request(markers, caf::infinite, write_txn_marker_request{});
  self->request(controller, caf::infinite, controlled_shutdown_request{});
  self->request(broker, caf::infinite, metadata_request{});
#if CAFTX_CASE == 1 // a consumer-group request to a partition leader
  self->request(leader, caf::infinite, offset_fetch_request{});
#elif CAFTX_CASE == 2 // a produce to a transaction coordinator
  self->request(coordinator, caf::infinite, produce_request{});
#elif CAFTX_CASE == 3 // a partition's internal timer from outside
  self->request(leader, caf::infinite, retention_tick{});
#elif CAFTX_CASE == 4 // a fetch where only markers are taken
  self->request(markers, caf::infinite, fetch_request{});
#elif CAFTX_CASE == 5 // a produce to a controller
  self->request(controller, caf::infinite, produce_request{});
#elif CAFTX_CASE == 6 // a store's session event from outside the controller
  self->request(controller, caf::infinite, coord_session_event{});
#elif CAFTX_CASE == 7 // a partition's fetch to a broker (its node fetch is node_fetch_request)
  self->request(broker, caf::infinite, fetch_request{});
#elif CAFTX_CASE == 8 // a broker's own timer from outside
  self->request(broker, caf::infinite, broker_resolve_atom::value);
#endif
}

} // namespace caftx
