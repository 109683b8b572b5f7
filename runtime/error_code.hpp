// Kafka protocol error codes (names and numbers as in Kafka's `Errors` enum)
// and the client-side classification of docs/errors.md §Classification.
#pragma once

#include <cstdint>
#include <string>

namespace caftx {

/// Kafka error codes. Every value equals Kafka's wire number, so logs and
/// tools read the same as Kafka's. Only codes some caller reacts to exist.
enum class error_code : uint8_t {
  none = 0,
  offset_out_of_range = 1,
  corrupt_message = 2,
  unknown_topic_or_partition = 3,
  leader_not_available = 5,      // the partition has no live leader (an election pending or impossible)
  not_leader_or_follower = 6,
  request_timed_out = 7,
  broker_not_available = 8,      // ControlledShutdown from a node that is not registered
  /// Kafka's MESSAGE_TOO_LARGE, thrown by its clients as
  /// RecordTooLargeException: a record above the producer's
  /// max.request.size or buffer.memory, or a batch above the partition's
  /// max.message.bytes (the node's message.max.bytes).
  message_too_large = 10,
  stale_controller_epoch = 11,   // a controller request older than the highest controller epoch seen
  offset_metadata_too_large = 12, // an offset's metadata above offset.metadata.max.bytes
  coordinator_load_in_progress = 14,
  coordinator_not_available = 15,
  not_coordinator = 16,
  invalid_topic_exception = 17, // a client's produce to an internal topic
  not_enough_replicas = 19,
  not_enough_replicas_after_append = 20, // acks=all: appended, but the ISR shrank below min.insync.replicas
  invalid_required_acks = 21,            // acks other than -1, 0 or 1
  illegal_generation = 22,       // a group request of a generation other than the group's
  inconsistent_group_protocol = 23, // JoinGroup: no protocol in common with the group's members
  invalid_group_id = 24,         // an empty group id
  unknown_member_id = 25,        // a member id the group does not have
  invalid_session_timeout = 26,  // outside group.min/max.session.timeout.ms
  rebalance_in_progress = 27,    // the group is rebalancing: the member must rejoin
  non_empty_group = 68,          // DeleteGroups of a group with members
  group_id_not_found = 69,       // DeleteGroups of a group the coordinator does not have
  member_id_required = 79,       // JoinGroup v4+ without a member id (KIP-394): rejoin with the one given
  group_max_size_reached = 81,   // JoinGroup into a group of group.max.size members
  fenced_instance_id = 82,       // a static member's instance id now held by another member id (KIP-345)
  invalid_replication_factor = 38, // CreateTopics: replication factor <= 0 or above the live nodes
  invalid_replica_assignment = 39, // CreatePartitions: an assignment Kafka's AdminZkClient refuses
  not_controller = 41,           // a request only the active controller answers
  invalid_request = 42,
  unsupported_for_message_format = 43, // Produce v0-2: message formats 0 and 1, which caftx does not keep
  policy_violation = 44,
  out_of_order_sequence_number = 45,
  duplicate_sequence_number = 46,
  invalid_producer_epoch = 47,
  invalid_txn_state = 48,
  invalid_producer_id_mapping = 49,
  invalid_transaction_timeout = 50,
  concurrent_transactions = 51,
  transaction_coordinator_fenced = 52,
  operation_not_attempted = 55,
  kafka_storage_error = 56,
  unknown_producer_id = 59,
  fenced_leader_epoch = 74, // a coordinator's append with a leader epoch no longer current
  unknown_leader_epoch = 75, // a fetch or proposal from a leader epoch newer than the receiver's (KIP-320)
  invalid_update_version = 95, // an ISR proposal based on a partition epoch no longer current
  ineligible_replica = 107,     // an ISR proposal adding a node that is not live or shuts down (KIP-841)
  preferred_leader_not_available = 80, // ElectLeaders: the preferred replica cannot lead now (KIP-460)
  election_not_needed = 84,     // ElectLeaders: the preferred replica leads already (KIP-460)
  unsupported_compression_type = 76,
  stale_broker_epoch = 77,       // a controller request for an older registration of the node (KIP-380)
  fetch_session_id_not_found = 70, // an incremental Fetch of a session the node does not have (KIP-227)
  topic_deletion_disabled = 73,  // DeleteTopics while delete.topic.enable=false
  invalid_record = 87,
  unstable_offset_commit = 88,
  producer_fenced = 90,
  transaction_abortable = 120,
  invalid_config = 40,
  topic_already_exists = 36,
  invalid_partitions = 37,
  transactional_id_not_found = 105, // DescribeTransactions: absent or Dead id (KIP-664)
  inconsistent_cluster_id = 104, // a node of another cluster (Kafka's InconsistentClusterIdException)
  unknown_server_error = 255,  // Kafka's -1, kept unsigned for CAF's error type
};

/// Kafka's upper-case name, e.g. "PRODUCER_FENCED".
const char* to_string(error_code code);

/// True for errors after which the same request may simply be sent again
/// (Kafka's RetriableException subclasses).
bool is_retriable(error_code code);

/// How a transactional producer treats an error (docs/errors.md §Classification).
enum class error_class : uint8_t { none, retriable, abortable, fatal };

/// Which API the error came back from; the same code is classified
/// differently per API (INVALID_TXN_STATE is fatal from EndTxn but abortable
/// from Produce).
enum class api_kind : uint8_t {
  produce,
  init_producer_id,
  add_partitions_to_txn,
  add_offsets_to_txn,
  txn_offset_commit,
  end_txn,
  find_coordinator,
};

/// The Java client's classification of `code` returned by `api`.
error_class classify(api_kind api, error_code code);

/// The error a partition leader (api produce) or group coordinator (api
/// txn_offset_commit) answers when verifying a transactional write with the
/// transaction coordinator (KIP-890 part 1) gave `code` (docs/errors.md
/// §Verification; docs/producer-state.md §Produce step 4,
/// docs/transactions.md §TxnOffsetCommit step 5). Produce: PRODUCER_FENCED
/// -> INVALID_PRODUCER_EPOCH;
/// CONCURRENT_TRANSACTIONS and coordinator-unavailable errors ->
/// NOT_ENOUGH_REPLICAS (retriable). TxnOffsetCommit: PRODUCER_FENCED ->
/// INVALID_PRODUCER_EPOCH; no reply -> COORDINATOR_LOAD_IN_PROGRESS.
/// TRANSACTION_ABORTABLE ("not in the transaction") and
/// INVALID_PRODUCER_ID_MAPPING pass through.
error_code verification_error(api_kind api, error_code code);

const char* to_string(error_class c);

} // namespace caftx
