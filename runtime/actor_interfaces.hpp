// The typed interfaces between caftx actors (caf::typed_actor), one per
// actor kind, so that a request an actor does not take is a compile error
// at the sender and a handler that does not match is one at the receiver.
// Only the message names are declared here: a handle can be stored and
// passed around (the node's directory, Metadata answers) by code that
// never sees the messages; sending needs the kind's message header
// (runtime/<kind>_messages.hpp). Each interface lists what other actors
// may send; the *_impl_actor types add what an actor sends itself (timers,
// load steps, its storage writer's completions).
//
// A supervised actor's handle is its supervisor's (actors/common/
// supervisor.hpp), which forwards every request to the current child: the
// supervisor's own requests (supervisor_stats_request, kill_child_request)
// go through the dynamic handle (caf::actor_cast<caf::actor>).
#pragma once

#include <caf/atom.hpp>
#include <caf/message.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>

namespace caftx {

// -- messages (runtime/*_messages.hpp) ----------------------------------------

struct topic_partition;
struct txn_response;
struct storage_done;
struct coordinator_load_chunk;

struct produce_request;
struct produce_response;
struct fetch_request;
struct fetch_response;
struct list_offsets_request;
struct list_offsets_response;
struct delete_records_request;
struct delete_records_response;
struct describe_producers_request;
struct describe_producers_response;
struct write_txn_marker_request;
struct become_leader_request;
struct become_leader_response;
struct write_snapshot_request;
struct retention_tick;
struct cleaner_tick;
struct cleaner_step;
struct producer_expiration_tick;
struct fetch_wait_expired;
struct isr_expiration_tick;
struct alter_isr_retry;
struct replica_fetch_request;
struct alter_isr_request;
struct alter_isr_response;
struct replica_fetch_response;
struct become_follower_request;
struct replica_append_request;
struct replica_truncate_request;
struct replica_position;

struct init_producer_id_request;
struct init_producer_id_response;
struct add_partitions_to_txn_request;
struct add_offsets_to_txn_request;
struct end_txn_request;
struct end_txn_response;
struct describe_transaction_request;
struct describe_transaction_response;
struct list_transactions_request;
struct list_transactions_response;
struct txn_expiration_tick;
struct coordinator_tick;
struct parked_request_expired;
struct marker_retry;

struct txn_offset_commit_request;
struct offset_commit_request;
struct offset_fetch_request;
struct offset_fetch_response;
struct offsets_retention_tick;
struct offsets_topics_deleted;
struct group_membership_tick;
struct join_group_request;
struct join_group_response;
struct sync_group_request;
struct sync_group_response;
struct heartbeat_request;
struct leave_group_request;
struct leave_group_response;
struct describe_groups_request;
struct describe_groups_response;
struct list_groups_request;
struct list_groups_response;
struct delete_groups_request;
struct delete_groups_response;

struct controller_create_topic_request;
struct controller_delete_topic_request;
struct controller_create_partitions_request;
struct replicas_deleted;
struct controller_topic_request;
struct controller_topic_response;
struct producer_id_block_request;
struct producer_id_block_response;
struct controlled_shutdown_request;
struct controlled_shutdown_response;
struct coord_session_event;
struct coord_watch_event;

struct create_topic_request;
struct delete_topic_request;
struct create_partitions_request;
struct describe_configs_request;
struct describe_configs_response;
struct kafka_cluster_request;
struct kafka_cluster_response;
struct kafka_coordinator_request;
struct kafka_coordinator_response;
struct describe_topics_request;
struct describe_topics_response;
struct metadata_request;
struct metadata_response;
struct find_coordinator_request;
struct find_coordinator_response;
struct node_fetch_request;
struct node_fetch_response;
struct cluster_hello_request;
struct cluster_hello_response;
struct cluster_nodes_request;
struct cluster_nodes_response;
struct node_handles_request;
struct node_handles_response;
struct drill_network_request;
struct drill_network_response;
struct drill_fault_request;
struct drill_fault_response;
struct elect_leaders_request;
struct elect_leaders_response;

namespace controller {
struct leader_and_isr_request;
struct update_metadata_request;
struct stop_replica_request;
} // namespace controller

// -- partition leaders (actors/partition/partition_actor.hpp) -----------------

/// A partition leader as its clients, coordinators and other nodes see it
/// (actors/partition/partition_actor.hpp). Each request gets exactly its
/// response type; a request the leader cannot serve gets the response with
/// a Kafka error code, never a CAF error (those mean "no reply": down or
/// timed out, retriable).
using partition_actor = caf::typed_actor<
  caf::replies_to<produce_request>::with<produce_response>,
  caf::replies_to<fetch_request>::with<fetch_response>,
  caf::replies_to<list_offsets_request>::with<list_offsets_response>,
  caf::replies_to<delete_records_request>::with<delete_records_response>,
  caf::replies_to<describe_producers_request>::with<describe_producers_response>,
  caf::replies_to<write_txn_marker_request>::with<txn_response>,
  caf::replies_to<become_leader_request>::with<become_leader_response>,
  caf::replies_to<write_snapshot_request>::with<txn_response>,
  caf::replies_to<replica_fetch_request>::with<replica_fetch_response>,
  caf::replies_to<become_follower_request>::with<replica_position>,
  caf::replies_to<replica_append_request>::with<replica_position>,
  caf::replies_to<replica_truncate_request>::with<replica_position>>;

/// What a partition leader also takes from itself and its storage writer
/// (its timers, held fetches, completed writes); not for other actors.
using partition_impl_actor = partition_actor::extend<
  caf::reacts_to<storage_done>, caf::reacts_to<retention_tick>, caf::reacts_to<cleaner_tick>,
  caf::reacts_to<cleaner_step>, caf::reacts_to<producer_expiration_tick>,
  caf::reacts_to<fetch_wait_expired>, caf::reacts_to<isr_expiration_tick>,
  caf::reacts_to<alter_isr_retry>>;

/// Where the WriteTxnMarkers of one partition go: its leader, or, for a
/// `__consumer_offsets` partition, the group coordinator on it (which
/// applies the marker to its pending offsets and writes it to the log).
/// Both a partition_actor and a group_coordinator_actor convert to it.
using marker_target = caf::typed_actor<caf::replies_to<write_txn_marker_request>::with<txn_response>>;

// -- transaction coordinators (actors/coordinator/txn_coordinator_actor.hpp) --

/// A transaction coordinator shard, the owner of one `__transaction_state`
/// partition (actors/coordinator/txn_coordinator_actor.hpp), as producers,
/// partition leaders (KIP-890 verification), admin clients and other nodes
/// see it. Every error is a Kafka error code in the response; CAF errors
/// mean "no reply".
using txn_coordinator_actor = caf::typed_actor<
  caf::replies_to<init_producer_id_request>::with<init_producer_id_response>,
  caf::replies_to<add_partitions_to_txn_request>::with<txn_response>,
  caf::replies_to<add_offsets_to_txn_request>::with<txn_response>,
  caf::replies_to<end_txn_request>::with<end_txn_response>,
  caf::replies_to<describe_transaction_request>::with<describe_transaction_response>,
  caf::replies_to<list_transactions_request>::with<list_transactions_response>>;

/// A shard's own retry of a producer id block claim (cluster mode).
using pid_block_retry_atom = caf::atom_constant<caf::atom("pidblock")>;

/// What a shard also takes from itself and its storage writer (load
/// steps, timers, marker retries, parked requests); not for other actors.
using txn_coordinator_impl_actor = txn_coordinator_actor::extend<
  caf::reacts_to<storage_done>, caf::reacts_to<coordinator_load_chunk>,
  caf::reacts_to<txn_expiration_tick>, caf::reacts_to<coordinator_tick>,
  caf::reacts_to<parked_request_expired>, caf::reacts_to<marker_retry>,
  caf::reacts_to<pid_block_retry_atom>>;

// -- group coordinators (actors/group/group_coordinator_actor.hpp) ------------

/// A group coordinator, the owner of one `__consumer_offsets` partition
/// (actors/group/group_coordinator_actor.hpp), as clients, transaction
/// coordinators (markers) and other nodes see it. Every error is a Kafka
/// error code in the response; CAF errors mean "no reply".
using group_coordinator_actor = caf::typed_actor<
  caf::replies_to<txn_offset_commit_request>::with<txn_response>,
  caf::replies_to<offset_commit_request>::with<txn_response>,
  caf::replies_to<offset_fetch_request>::with<offset_fetch_response>,
  caf::replies_to<write_txn_marker_request>::with<txn_response>,
  caf::replies_to<join_group_request>::with<join_group_response>,
  caf::replies_to<sync_group_request>::with<sync_group_response>,
  caf::replies_to<heartbeat_request>::with<txn_response>,
  caf::replies_to<leave_group_request>::with<leave_group_response>,
  caf::replies_to<describe_groups_request>::with<describe_groups_response>,
  caf::replies_to<list_groups_request>::with<list_groups_response>,
  caf::replies_to<delete_groups_request>::with<delete_groups_response>>;

/// What a group coordinator also takes from itself (its load steps,
/// retention and membership timers) and from its node's broker (a topic
/// deletion); not for other actors.
using group_coordinator_impl_actor = group_coordinator_actor::extend<
  caf::reacts_to<coordinator_load_chunk>, caf::reacts_to<offsets_retention_tick>,
  caf::reacts_to<offsets_topics_deleted>, caf::reacts_to<group_membership_tick>>;

// -- controllers (actors/controller/controller_actor.hpp) ----------------------

/// A node's controller actor (actors/controller/controller_actor.hpp) as
/// its node's broker and transaction coordinator shards see it (other
/// nodes reach it through their broker, which hands the request on).
/// Every error is a Kafka error code in the response (NOT_CONTROLLER when
/// this node is not the controller); CAF errors mean "no reply".
using controller_actor = caf::typed_actor<
  caf::replies_to<controller_create_topic_request>::with<txn_response>,
  caf::replies_to<controller_delete_topic_request>::with<txn_response>,
  caf::replies_to<controller_create_partitions_request>::with<txn_response>,
  caf::reacts_to<replicas_deleted>,
  caf::replies_to<controller_topic_request>::with<controller_topic_response>,
  caf::replies_to<producer_id_block_request>::with<producer_id_block_response>,
  caf::replies_to<controlled_shutdown_request>::with<controlled_shutdown_response>,
  caf::replies_to<alter_isr_request>::with<alter_isr_response>,
  caf::replies_to<elect_leaders_request>::with<elect_leaders_response>>;

/// The controller's own steps: registering again, a producer id block
/// claim retried, a new election round, a store read retried after a
/// connection loss.
using controller_register_atom = caf::atom_constant<caf::atom("register")>;
using controller_pid_retry_atom = caf::atom_constant<caf::atom("pidretry")>;
using controller_reelect_atom = caf::atom_constant<caf::atom("reelect")>;
using controller_read_retry_atom = caf::atom_constant<caf::atom("readretry")>;
using controller_rebalance_atom = caf::atom_constant<caf::atom("rebalance")>;
using controller_deletion_retry_atom = caf::atom_constant<caf::atom("delretry")>;

/// What a controller also takes from its coordination store (session and
/// watch events) and from itself; not for other actors.
using controller_impl_actor = controller_actor::extend<
  caf::reacts_to<coord_session_event>, caf::reacts_to<coord_watch_event>,
  caf::reacts_to<controller_register_atom, int64_t>, caf::reacts_to<controller_pid_retry_atom>,
  caf::reacts_to<controller_reelect_atom>, caf::reacts_to<controller_read_retry_atom>,
  caf::reacts_to<controller_rebalance_atom, uint64_t>,
  caf::reacts_to<controller_deletion_retry_atom, uint64_t>>;

// -- brokers (actors/broker/broker_actor.hpp) -----------------------------------

/// A node's broker, the root of its request routing
/// (actors/broker/broker_actor.hpp), as clients, other nodes' brokers and
/// controllers see it: CreateTopics, Metadata, FindCoordinator, idempotent
/// InitProducerId, ListTransactions, a node's fetch, the hello of a
/// connection, the live nodes, the handles of what it leads, the
/// controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica, no
/// reply), and the requests for the controller it hands on when its node
/// is the controller. Every error is a Kafka error code in the response.
using broker_actor = caf::typed_actor<
  caf::replies_to<create_topic_request>::with<txn_response>,
  caf::replies_to<delete_topic_request>::with<txn_response>,
  caf::replies_to<create_partitions_request>::with<txn_response>,
  caf::replies_to<describe_configs_request>::with<describe_configs_response>,
  caf::replies_to<kafka_cluster_request>::with<kafka_cluster_response>,
  caf::replies_to<kafka_coordinator_request>::with<kafka_coordinator_response>,
  caf::replies_to<metadata_request>::with<metadata_response>,
  caf::replies_to<describe_topics_request>::with<describe_topics_response>,
  caf::replies_to<find_coordinator_request>::with<find_coordinator_response>,
  caf::replies_to<init_producer_id_request>::with<init_producer_id_response>,
  caf::replies_to<list_transactions_request>::with<list_transactions_response>,
  caf::replies_to<node_fetch_request>::with<node_fetch_response>,
  caf::replies_to<cluster_hello_request>::with<cluster_hello_response>,
  caf::replies_to<cluster_nodes_request>::with<cluster_nodes_response>,
  caf::replies_to<node_handles_request>::with<node_handles_response>,
  caf::reacts_to<controller::leader_and_isr_request>,
  caf::reacts_to<controller::update_metadata_request>,
  caf::reacts_to<controller::stop_replica_request>,
  caf::replies_to<controller_create_topic_request>::with<txn_response>,
  caf::replies_to<controller_delete_topic_request>::with<txn_response>,
  caf::replies_to<controller_create_partitions_request>::with<txn_response>,
  caf::reacts_to<replicas_deleted>,
  caf::replies_to<controlled_shutdown_request>::with<controlled_shutdown_response>,
  caf::replies_to<alter_isr_request>::with<alter_isr_response>,
  caf::replies_to<drill_network_request>::with<drill_network_response>,
  caf::replies_to<drill_fault_request>::with<drill_fault_response>,
  caf::replies_to<elect_leaders_request>::with<elect_leaders_response>>;

/// The broker's own steps and its node's wiring (actors/broker/node.cpp):
/// the controller actor and the registration, a controller request to
/// deliver (forward: target node, host, port, the request), handle
/// resolution and reconnection timers, topic waiters, the controlled
/// shutdown at stop, the embedded node's wait until it leads everything
/// (ready: answered NONE, or REQUEST_TIMED_OUT after request.timeout.ms).
using broker_set_controller_atom = caf::atom_constant<caf::atom("setctl")>;
using broker_registered_atom = caf::atom_constant<caf::atom("registrd")>;
using broker_forward_atom = caf::atom_constant<caf::atom("forward")>;
using broker_resolve_atom = caf::atom_constant<caf::atom("resolve")>;
using broker_reconnect_atom = caf::atom_constant<caf::atom("reconnect")>;
using broker_waiters_atom = caf::atom_constant<caf::atom("waiters")>;
using controlled_shutdown_atom = caf::atom_constant<caf::atom("ctlshut")>;
using broker_ready_atom = caf::atom_constant<caf::atom("ready")>;
using broker_spawn_retry_atom = caf::atom_constant<caf::atom("spawnretry")>;

/// What a broker also takes from its node, its storage writer and itself;
/// not for other actors.
using broker_impl_actor = broker_actor::extend<
  caf::reacts_to<storage_done>, caf::reacts_to<broker_set_controller_atom, controller_actor>,
  caf::reacts_to<broker_registered_atom, int64_t>,
  caf::reacts_to<broker_forward_atom, int32_t, std::string, uint16_t, caf::message>,
  caf::reacts_to<broker_resolve_atom>, caf::reacts_to<broker_reconnect_atom, int32_t>,
  caf::reacts_to<broker_waiters_atom>, caf::reacts_to<broker_spawn_retry_atom, topic_partition>,
  caf::replies_to<controlled_shutdown_atom>::with<controlled_shutdown_response>,
  caf::replies_to<broker_ready_atom>::with<txn_response>>;

} // namespace caftx
