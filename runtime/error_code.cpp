#include "runtime/error_code.hpp"

namespace caftx {

const char* to_string(error_code code) {
  switch (code) {
    case error_code::none: return "NONE";
    case error_code::offset_out_of_range: return "OFFSET_OUT_OF_RANGE";
    case error_code::corrupt_message: return "CORRUPT_MESSAGE";
    case error_code::unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case error_code::not_leader_or_follower: return "NOT_LEADER_OR_FOLLOWER";
    case error_code::leader_not_available: return "LEADER_NOT_AVAILABLE";
    case error_code::request_timed_out: return "REQUEST_TIMED_OUT";
    case error_code::broker_not_available: return "BROKER_NOT_AVAILABLE";
    case error_code::stale_controller_epoch: return "STALE_CONTROLLER_EPOCH";
    case error_code::invalid_replication_factor: return "INVALID_REPLICATION_FACTOR";
    case error_code::invalid_replica_assignment: return "INVALID_REPLICA_ASSIGNMENT";
    case error_code::not_controller: return "NOT_CONTROLLER";
    case error_code::stale_broker_epoch: return "STALE_BROKER_EPOCH";
    case error_code::topic_deletion_disabled: return "TOPIC_DELETION_DISABLED";
    case error_code::offset_metadata_too_large: return "OFFSET_METADATA_TOO_LARGE";
    case error_code::illegal_generation: return "ILLEGAL_GENERATION";
    case error_code::inconsistent_group_protocol: return "INCONSISTENT_GROUP_PROTOCOL";
    case error_code::invalid_group_id: return "INVALID_GROUP_ID";
    case error_code::unknown_member_id: return "UNKNOWN_MEMBER_ID";
    case error_code::invalid_session_timeout: return "INVALID_SESSION_TIMEOUT";
    case error_code::rebalance_in_progress: return "REBALANCE_IN_PROGRESS";
    case error_code::non_empty_group: return "NON_EMPTY_GROUP";
    case error_code::group_id_not_found: return "GROUP_ID_NOT_FOUND";
    case error_code::member_id_required: return "MEMBER_ID_REQUIRED";
    case error_code::group_max_size_reached: return "GROUP_MAX_SIZE_REACHED";
    case error_code::fenced_instance_id: return "FENCED_INSTANCE_ID";
    case error_code::unsupported_for_message_format: return "UNSUPPORTED_FOR_MESSAGE_FORMAT";
    case error_code::fetch_session_id_not_found: return "FETCH_SESSION_ID_NOT_FOUND";
    case error_code::message_too_large: return "MESSAGE_TOO_LARGE";
    case error_code::coordinator_load_in_progress: return "COORDINATOR_LOAD_IN_PROGRESS";
    case error_code::coordinator_not_available: return "COORDINATOR_NOT_AVAILABLE";
    case error_code::not_coordinator: return "NOT_COORDINATOR";
    case error_code::invalid_topic_exception: return "INVALID_TOPIC_EXCEPTION";
    case error_code::not_enough_replicas: return "NOT_ENOUGH_REPLICAS";
    case error_code::not_enough_replicas_after_append: return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
    case error_code::invalid_required_acks: return "INVALID_REQUIRED_ACKS";
    case error_code::unknown_leader_epoch: return "UNKNOWN_LEADER_EPOCH";
    case error_code::invalid_update_version: return "INVALID_UPDATE_VERSION";
    case error_code::ineligible_replica: return "INELIGIBLE_REPLICA";
    case error_code::preferred_leader_not_available: return "PREFERRED_LEADER_NOT_AVAILABLE";
    case error_code::election_not_needed: return "ELECTION_NOT_NEEDED";
    case error_code::fenced_leader_epoch: return "FENCED_LEADER_EPOCH";
    case error_code::invalid_request: return "INVALID_REQUEST";
    case error_code::out_of_order_sequence_number: return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case error_code::duplicate_sequence_number: return "DUPLICATE_SEQUENCE_NUMBER";
    case error_code::invalid_producer_epoch: return "INVALID_PRODUCER_EPOCH";
    case error_code::invalid_txn_state: return "INVALID_TXN_STATE";
    case error_code::invalid_producer_id_mapping: return "INVALID_PRODUCER_ID_MAPPING";
    case error_code::invalid_transaction_timeout: return "INVALID_TRANSACTION_TIMEOUT";
    case error_code::concurrent_transactions: return "CONCURRENT_TRANSACTIONS";
    case error_code::transaction_coordinator_fenced: return "TRANSACTION_COORDINATOR_FENCED";
    case error_code::operation_not_attempted: return "OPERATION_NOT_ATTEMPTED";
    case error_code::kafka_storage_error: return "KAFKA_STORAGE_ERROR";
    case error_code::unknown_producer_id: return "UNKNOWN_PRODUCER_ID";
    case error_code::unsupported_compression_type: return "UNSUPPORTED_COMPRESSION_TYPE";
    case error_code::invalid_record: return "INVALID_RECORD";
    case error_code::policy_violation: return "POLICY_VIOLATION";
    case error_code::unstable_offset_commit: return "UNSTABLE_OFFSET_COMMIT";
    case error_code::producer_fenced: return "PRODUCER_FENCED";
    case error_code::transaction_abortable: return "TRANSACTION_ABORTABLE";
    case error_code::invalid_config: return "INVALID_CONFIG";
    case error_code::topic_already_exists: return "TOPIC_ALREADY_EXISTS";
    case error_code::invalid_partitions: return "INVALID_PARTITIONS";
    case error_code::transactional_id_not_found: return "TRANSACTIONAL_ID_NOT_FOUND";
    case error_code::inconsistent_cluster_id: return "INCONSISTENT_CLUSTER_ID";
    case error_code::unknown_server_error: return "UNKNOWN_SERVER_ERROR";
  }
  return "UNKNOWN_SERVER_ERROR";
}

bool is_retriable(error_code code) {
  switch (code) {
    case error_code::corrupt_message: // CorruptRecordException is retriable
    case error_code::not_leader_or_follower:
    case error_code::leader_not_available: // LeaderNotAvailableException is an InvalidMetadataException
    case error_code::not_controller:       // NotControllerException is retriable
    case error_code::request_timed_out:
    case error_code::coordinator_load_in_progress:
    case error_code::coordinator_not_available:
    case error_code::not_coordinator:
    case error_code::not_enough_replicas:
    case error_code::not_enough_replicas_after_append:
    case error_code::fenced_leader_epoch:  // InvalidMetadataException
    case error_code::unknown_leader_epoch: // UnknownLeaderEpochException is retriable
    case error_code::concurrent_transactions:
    case error_code::unknown_topic_or_partition:
    case error_code::kafka_storage_error:
    case error_code::unstable_offset_commit:
      return true;
    default:
      return false;
  }
}

error_class classify(api_kind api, error_code code) {
  if (code == error_code::none)
    return error_class::none;
  if (is_retriable(code))
    return error_class::retriable;
  switch (api) {
    case api_kind::produce:
      // docs/errors.md §Classification: every non-retriable produce error
      // is abortable except the fencing and authorization ones.
      return code == error_code::producer_fenced ? error_class::fatal
                                                 : error_class::abortable;
    case api_kind::add_partitions_to_txn:
    case api_kind::add_offsets_to_txn:
    case api_kind::end_txn:
      if (code == error_code::operation_not_attempted || code == error_code::transaction_abortable
          || code == error_code::unknown_producer_id
          || code == error_code::invalid_producer_id_mapping)
        return error_class::abortable;
      return error_class::fatal;
    case api_kind::txn_offset_commit:
      // Kafka's TxnOffsetCommitHandler: a consumer fenced by its group
      // (KIP-447) is a CommitFailedException, abortable; so is a static
      // member fenced by its instance id (KIP-345).
      return code == error_code::transaction_abortable || code == error_code::illegal_generation
                 || code == error_code::unknown_member_id
                 || code == error_code::fenced_instance_id
               ? error_class::abortable
               : error_class::fatal;
    case api_kind::init_producer_id:
    case api_kind::find_coordinator:
      return error_class::fatal;
  }
  return error_class::fatal;
}

error_code verification_error(api_kind api, error_code code) {
  switch (code) {
    case error_code::none:
    case error_code::transaction_abortable:
    case error_code::invalid_producer_id_mapping:
    case error_code::invalid_request:
      return code;
    case error_code::producer_fenced:
    case error_code::invalid_producer_epoch:
      return error_code::invalid_producer_epoch;
    case error_code::concurrent_transactions:
      return api == api_kind::produce ? error_code::not_enough_replicas : code;
    default: // unavailable, loading, not the coordinator, no reply
      return api == api_kind::produce ? error_code::not_enough_replicas
                                      : error_code::coordinator_load_in_progress;
  }
}

const char* to_string(error_class c) {
  switch (c) {
    case error_class::none: return "none";
    case error_class::retriable: return "retriable";
    case error_class::abortable: return "abortable";
    case error_class::fatal: return "fatal";
  }
  return "fatal";
}

} // namespace caftx
