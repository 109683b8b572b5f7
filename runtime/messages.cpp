#include "runtime/messages.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>

#include <cstdio>

#include "runtime/controller_messages.hpp"
#include "runtime/coordination_messages.hpp"

namespace caftx {

#define CAFTX_MESSAGE_TYPES(X)                                                                     \
  X(topic_partition)                                                                               \
  X(record_header)                                                                                 \
  X(record)                                                                                        \
  X(aborted_transaction)                                                                           \
  X(create_topic_request)                                                                          \
  X(delete_topic_request)                                                                          \
  X(create_partitions_request)                                                                     \
  X(config_synonym)                                                                                \
  X(config_entry)                                                                                  \
  X(describe_configs_request)                                                                      \
  X(describe_configs_response)                                                                     \
  X(kafka_cluster_request)                                                                         \
  X(kafka_coordinator_request)                                                                     \
  X(kafka_coordinator_response)                                                                    \
  X(kafka_broker_info)                                                                             \
  X(kafka_cluster_response)                                                                        \
  X(partition_description)                                                                         \
  X(topic_description)                                                                             \
  X(describe_topics_request)                                                                       \
  X(describe_topics_response)                                                                      \
  X(topic_metadata)                                                                                \
  X(metadata_request)                                                                              \
  X(metadata_response)                                                                             \
  X(find_coordinator_request)                                                                      \
  X(find_coordinator_response)                                                                     \
  X(cluster_hello_request)                                                                         \
  X(cluster_hello_response)                                                                        \
  X(partition_handle)                                                                           \
  X(node_handles_request)                                                                       \
  X(node_handles_response)                                                                      \
  X(cluster_nodes_request)                                                                      \
  X(cluster_nodes_response)                                                                      \
  X(drill_network_request)                                                                       \
  X(drill_network_response)                                                                      \
  X(drill_fault_request)                                                                         \
  X(drill_fault_response)                                                                        \
  X(producer_id_block_request)                                                                      \
  X(producer_id_block_response)                                                                      \
  X(controller_create_topic_request)                                                            \
  X(controller_delete_topic_request)                                                            \
  X(controller_create_partitions_request)                                                       \
  X(replicas_deleted)                                                                           \
  X(elect_leaders_request)                                                                      \
  X(elect_leaders_result)                                                                       \
  X(elect_leaders_response)                                                                     \
  X(controller_topic_request)                                                                   \
  X(controller_topic_response)                                                                  \
  X(controlled_shutdown_request)                                                                \
  X(alter_isr_request)                                                                          \
  X(alter_isr_response)                                                                         \
  X(controlled_shutdown_response)                                                               \
  X(init_producer_id_request)                                                                      \
  X(init_producer_id_response)                                                                     \
  X(add_partitions_to_txn_request)                                                                 \
  X(add_offsets_to_txn_request)                                                                    \
  X(end_txn_request)                                                                               \
  X(end_txn_response)                                                                              \
  X(txn_response)                                                                                  \
  X(describe_transaction_request)                                                                  \
  X(describe_transaction_response)                                                                 \
  X(produce_request)                                                                               \
  X(produce_response)                                                                              \
  X(fetch_request)                                                                                 \
  X(fetch_response)                                                                                \
  X(node_fetch_request)                                                                            \
  X(node_fetch_response)                                                                           \
  X(list_offsets_request)                                                                          \
  X(list_offsets_response)                                                                         \
  X(delete_records_request)                                                                        \
  X(delete_records_response)                                                                       \
  X(retention_tick)                                                                                \
  X(cleaner_tick)                                                                                  \
  X(cleaner_step)                                                                                  \
  X(write_snapshot_request)                                                                        \
  X(become_leader_request)                                                                         \
  X(isr_expiration_tick)                                                                           \
  X(alter_isr_retry)                                                                               \
  X(replica_fetch_request)                                                                         \
  X(replica_fetch_response)                                                                        \
  X(become_follower_request)                                                                       \
  X(replica_append_request)                                                                        \
  X(replica_truncate_request)                                                                      \
  X(replica_position)                                                                              \
  X(become_leader_response)                                                                        \
  X(write_txn_marker_request)                                                                      \
  X(txn_offset_commit_request)                                                                     \
  X(offset_commit_request)                                                                         \
  X(offset_fetch_request)                                                                          \
  X(offset_fetch_response)                                                                         \
  X(list_transactions_filter)                                                                      \
  X(transaction_listing)                                                                           \
  X(active_producer)                                                                               \
  X(list_transactions_request)                                                                     \
  X(list_transactions_response)                                                                    \
  X(describe_producers_request)                                                                    \
  X(describe_producers_response)                                                                   \
  X(storage_done)                                                                                  \
  X(coordinator_tick)                                                                              \
  X(txn_expiration_tick)                                                                           \
  X(coordinator_load_chunk)                                                                        \
  X(marker_retry)                                                                                  \
  X(parked_request_expired)                                                                        \
  X(fetch_wait_expired)                                                                            \
  X(producer_expiration_tick)                                                                      \
  X(offsets_retention_tick)                                                                        \
  X(offsets_topics_deleted)                                                                        \
  X(join_group_request)                                                                            \
  X(join_group_response)                                                                           \
  X(sync_group_request)                                                                            \
  X(sync_group_response)                                                                           \
  X(heartbeat_request)                                                                             \
  X(leave_group_request)                                                                           \
  X(leave_group_response)                                                                          \
  X(describe_groups_request)                                                                       \
  X(describe_groups_response)                                                                      \
  X(list_groups_request)                                                                           \
  X(list_groups_response)                                                                          \
  X(delete_groups_request)                                                                         \
  X(delete_groups_response)                                                                        \
  X(group_membership_tick)                                                                         \
  X(supervisor_stats_request)                                                                      \
  X(supervisor_stats)                                                                              \
  X(session_identity)                                                                              \
  X(session_record)                                                                                \
  X(session_completion)                                                                            \
  X(session_flush)                                                                                 \
  X(session_flush_result)                                                                          \
  X(session_linger)                                                                                \
  X(session_retry)                                                                                 \
  X(session_add_retry)                                                                             \
  X(kill_child_request)                                                                            \
  X(supervisor_settled)

void register_message_types(caf::actor_system_config& cfg) {
#define CAFTX_REGISTER(type) cfg.add_message_type<type>("caftx::" #type);
  CAFTX_MESSAGE_TYPES(CAFTX_REGISTER)
  CAFTX_COORDINATION_MESSAGE_TYPES(CAFTX_REGISTER)
  CAFTX_CONTROLLER_MESSAGE_TYPES(CAFTX_REGISTER)
#undef CAFTX_REGISTER
}

std::vector<std::string> registered_message_type_names() {
  std::vector<std::string> names;
#define CAFTX_NAME(type) names.emplace_back("caftx::" #type);
  CAFTX_MESSAGE_TYPES(CAFTX_NAME)
  CAFTX_COORDINATION_MESSAGE_TYPES(CAFTX_NAME)
  CAFTX_CONTROLLER_MESSAGE_TYPES(CAFTX_NAME)
#undef CAFTX_NAME
  return names;
}

namespace {

uint64_t fnv1a(uint64_t h, const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

template <class T>
uint64_t fingerprint(uint64_t h, const char* name) {
  T x{};
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  (void) sink(x);
  h = fnv1a(h, name, std::char_traits<char>::length(name) + 1);
  return fnv1a(h, buf.data(), buf.size());
}

} // namespace

const std::string& wire_build_id() {
  static const std::string id = [] {
    uint64_t h = 14695981039346656037ull;
#define CAFTX_FINGERPRINT(type) h = fingerprint<type>(h, "caftx::" #type);
    CAFTX_MESSAGE_TYPES(CAFTX_FINGERPRINT)
    CAFTX_COORDINATION_MESSAGE_TYPES(CAFTX_FINGERPRINT)
    CAFTX_CONTROLLER_MESSAGE_TYPES(CAFTX_FINGERPRINT)
#undef CAFTX_FINGERPRINT
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
    return std::string("caftx-") + CAFTX_VERSION + "-" + hex;
  }();
  return id;
}

} // namespace caftx
