// CAF inspectors of the controller's requests to nodes (LeaderAndIsr,
// UpdateMetadata, StopReplica; runtime/controller_model.hpp), so that they
// cross the middleman: a controller sends them to the nodes' brokers. The
// types stay plain in controller_model.hpp for the pure cores; this header
// is for registration (register_message_types) and for the shells.
#pragma once

#include <caf/meta/type_name.hpp>

#include "runtime/controller_model.hpp"

namespace caftx::controller {

#define CAFTX_CONTROLLER_INSPECT(type, ...)                                                        \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type& x) {                                 \
    return f(caf::meta::type_name("caftx::controller::" #type), __VA_ARGS__);                      \
  }

CAFTX_CONTROLLER_INSPECT(endpoint, x.host, x.port)
CAFTX_CONTROLLER_INSPECT(live_node, x.id, x.node_epoch, x.ep, x.rack)
CAFTX_CONTROLLER_INSPECT(partition_info, x.tp, x.controller_epoch, x.leader, x.leader_epoch, x.isr,
                         x.partition_epoch, x.replicas, x.is_new)
CAFTX_CONTROLLER_INSPECT(leader_and_isr_request, x.controller_id, x.controller_epoch, x.node_epoch,
                         x.partitions)
CAFTX_CONTROLLER_INSPECT(update_metadata_request, x.controller_id, x.controller_epoch,
                         x.node_epoch, x.partitions, x.live_nodes)
CAFTX_CONTROLLER_INSPECT(stop_replica_partition, x.tp, x.leader_epoch, x.delete_partition)
CAFTX_CONTROLLER_INSPECT(stop_replica_request, x.controller_id, x.controller_epoch, x.node_epoch,
                         x.partitions)

#undef CAFTX_CONTROLLER_INSPECT

} // namespace caftx::controller

/// Every controller request type, for register_message_types() (names
/// relative to caftx::).
#define CAFTX_CONTROLLER_MESSAGE_TYPES(X)                                                          \
  X(controller::endpoint)                                                                          \
  X(controller::live_node)                                                                         \
  X(controller::partition_info)                                                                    \
  X(controller::leader_and_isr_request)                                                            \
  X(controller::update_metadata_request)                                                           \
  X(controller::stop_replica_partition)                                                            \
  X(controller::stop_replica_request)
