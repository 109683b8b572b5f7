// One sample of every registered message type, with non-default values in
// every field: the round trips through CAF's binary serializer
// (messages_test.cpp) and across a real middleman between two processes
// (tests/node/) compare what arrives with these.
#pragma once

#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <vector>

#include "runtime/controller_messages.hpp"
#include "runtime/coordination_messages.hpp"
#include "runtime/messages.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx::testing {

inline record_batch sample_batch() {
  record_batch b;
  b.base_offset = 17;
  b.pid = producer_id{4000};
  b.epoch = producer_epoch{3};
  b.base_sequence = 2147483646;
  b.attributes = attr_transactional;
  b.records.push_back({"key", std::string("v\0al", 4), {{"h", "x"}}, 1700000000000});
  b.records.push_back({"", "second", {}, -1});
  return b;
}

inline std::vector<caf::message> samples() {
  topic_partition tp{"orders", 2};
  auto b = sample_batch();
  return {
    caf::make_message(tp),
    caf::make_message(record_header{"h", "v"}),
    caf::make_message(b.records.front()),
    caf::make_message(aborted_transaction{producer_id{7}, 12}),
    caf::make_message(create_topic_request{"orders", 3, {{"retention.ms", "1000"}}, 3}),
    caf::make_message(delete_topic_request{"orders", 5000}),
    caf::make_message(create_partitions_request{"orders", 5, {{2, 1}, {3, 2}}, true, 5000}),
    caf::make_message(config_synonym{"log.retention.ms", "1000", config_source::static_broker_config}),
    caf::make_message(config_entry{"retention.ms", "5", false, config_source::dynamic_topic_config,
                                   {{"retention.ms", "5", config_source::dynamic_topic_config}}}),
    caf::make_message(describe_configs_request{4, "2"}),
    caf::make_message(describe_configs_response{
      error_code::none, "", {config_entry{"num.partitions", "3", true, config_source::default_config, {}}}}),
    caf::make_message(kafka_cluster_request{}),
    caf::make_message(kafka_broker_info{2, "h", 9092, "r1"}),
    caf::make_message(kafka_cluster_response{{{1, "h1", 9092, ""}, {2, "h2", 9093, "r1"}}, 2, "c"}),
    caf::make_message(kafka_coordinator_request{1, "tx"}),
    caf::make_message(kafka_coordinator_response{error_code::none, "m", 3, 2, "h2", 9093}),
    caf::make_message(partition_description{1, 3, 2, {3, 1}, {3}}),
    caf::make_message(topic_description{"__transaction_state", error_code::none, true, {}}),
    caf::make_message(describe_topics_request{{"orders"}}),
    caf::make_message(describe_topics_response{
      {{"orders", error_code::none, false, {{0, 2, 4, {2, 1, 3}, {2, 3}}}},
       {"nope", error_code::unknown_topic_or_partition, false, {}}}}),
    caf::make_message(topic_metadata{"orders", error_code::unknown_topic_or_partition, {}}),
    caf::make_message(metadata_request{{"a", "b"}}),
    caf::make_message(metadata_response{{topic_metadata{"a", error_code::none, {}}}}),
    caf::make_message(find_coordinator_request{1, "order-processor"}),
    caf::make_message(find_coordinator_response{error_code::not_coordinator, "m", 17, {}}),
    caf::make_message(init_producer_id_request{true, "tx", 60000, producer_id{5}, producer_epoch{6}}),
    caf::make_message(init_producer_id_response{error_code::none, "", producer_id{5}, producer_epoch{7}}),
    caf::make_message(add_partitions_to_txn_request{"tx", producer_id{5}, producer_epoch{7}, {tp}, true}),
    caf::make_message(add_offsets_to_txn_request{"tx", producer_id{5}, producer_epoch{7}, "g"}),
    caf::make_message(end_txn_request{"tx", producer_id{5}, producer_epoch{7}, true, 1}),
    caf::make_message(end_txn_response{error_code::none, "", producer_id{5}, producer_epoch{8}}),
    caf::make_message(txn_response{error_code::producer_fenced, "fenced"}),
    caf::make_message(describe_transaction_request{"tx"}),
    caf::make_message(describe_transaction_response{error_code::none, "Ongoing", producer_id{5},
                                                    producer_epoch{7}, {tp}, 3, 45000,
                                                    1700000000000}),
    caf::make_message(produce_request{tp, "tx", v2::encode(b)}),
    caf::make_message(produce_response{error_code::out_of_order_sequence_number, "gap", -1, 0}),
    caf::make_message(fetch_request{tp, 10, 4096, isolation_level::read_committed}),
    caf::make_message(fetch_response{error_code::none, "", 20, 18, 0,
                                     {aborted_transaction{producer_id{7}, 12}}, v2::encode(b)}),
    caf::make_message(node_fetch_request{
      {fetch_request{tp, 10, 4096, isolation_level::read_committed}}, 500, 1, 52428800}),
    caf::make_message(node_fetch_response{{fetch_response{error_code::offset_out_of_range, "below",
                                                          20, 18, 3, {}, ""}}}),
    caf::make_message(list_offsets_request{tp, -2, isolation_level::read_committed}),
    caf::make_message(list_offsets_response{error_code::none, 42, 1700000000000}),
    caf::make_message(delete_records_request{tp, 40}),
    caf::make_message(delete_records_response{error_code::offset_out_of_range, "above", 7}),
    caf::make_message(write_txn_marker_request{producer_id{5}, producer_epoch{7}, 3, true, tp, 1}),
    caf::make_message(txn_offset_commit_request{"tx", "g", producer_id{5}, producer_epoch{7}, {tp}, {45}, {"md"}, 3, "m-1", "i-1"}),
    caf::make_message(offset_commit_request{"g", {tp}, {45}, {"md"}, 3, "m-1", "i-1"}),
    caf::make_message(offset_fetch_request{"g", {tp}, true}),
    caf::make_message(offset_fetch_response{error_code::unstable_offset_commit, {-1, 45}, {tp, tp}, {"", "md"}, {tp}}),
    caf::make_message(group_membership_tick{1700000000000}),
    caf::make_message(join_group_request{"g", 10000, 30000, "m-1", "consumer",
                                         {group_protocol{"range", std::string("\0\1", 2)}},
                                         "client", "/127.0.0.1", true, "i-1"}),
    caf::make_message(join_group_response{error_code::member_id_required, 4, "range", "m-0", "m-1",
                                          {join_group_member{"m-0", "sub", "i-0"}}}),
    caf::make_message(sync_group_request{"g", 4, "m-0", {group_assignment{"m-1", "bytes"}}, "i-0"}),
    caf::make_message(sync_group_response{error_code::rebalance_in_progress, "bytes"}),
    caf::make_message(heartbeat_request{"g", 4, "m-1", "i-1"}),
    caf::make_message(leave_group_request{"g", {"m-1", ""}, {"", "i-2"}}),
    caf::make_message(leave_group_response{error_code::not_coordinator, {error_code::unknown_member_id}}),
    caf::make_message(describe_groups_request{{"g", "h"}}),
    caf::make_message(describe_groups_response{{group_description{
      "g", error_code::none, "Stable", "consumer", "range",
      {group_member_description{"m-1", "i-1", "client", "/127.0.0.1", "sub", "assigned"}}}}}),
    caf::make_message(list_groups_request{}),
    caf::make_message(list_groups_response{error_code::coordinator_load_in_progress,
                                           {listed_group{"g", "consumer", "Empty"}}}),
    caf::make_message(delete_groups_request{{"g", "h"}}),
    caf::make_message(delete_groups_response{{error_code::non_empty_group, error_code::group_id_not_found}}),
    caf::make_message(storage_done{9, error_code::kafka_storage_error, "disk"}),
    caf::make_message(coordinator_tick{}),
    caf::make_message(txn_expiration_tick{}),
    caf::make_message(coordinator_load_chunk{}),
    caf::make_message(marker_retry{"tx"}),
    caf::make_message(parked_request_expired{"tx", 3}),
    caf::make_message(fetch_wait_expired{4}),
    caf::make_message(fetch_request{tp, 10, 4096, isolation_level::read_uncommitted, 500}),
    caf::make_message(producer_expiration_tick{}),
    caf::make_message(isr_expiration_tick{}),
    caf::make_message(alter_isr_retry{3}),
    caf::make_message(offsets_retention_tick{}),
    caf::make_message(offsets_topics_deleted{{"orders", "refunds"}}),
    caf::make_message(retention_tick{}),
    caf::make_message(cleaner_tick{}),
    caf::make_message(cleaner_step{}),
    caf::make_message(write_snapshot_request{}),
    caf::make_message(become_leader_request{}),
    caf::make_message(become_leader_response{error_code::none, "ok", 3, 10, 20, 7}),
    caf::make_message(replica_fetch_request{tp, 2, 40, 3, 4, 38, 65536, 500}),
    caf::make_message(replica_fetch_response{error_code::none, "", 38, 0, 41, true, 3, 39, "batch"}),
    caf::make_message(become_follower_request{1, 4}),
    caf::make_message(replica_append_request{4, "batch", 38}),
    caf::make_message(replica_truncate_request{4, 3, 39}),
    caf::make_message(replica_position{error_code::none, "", 39, 3, 38, false}),
    caf::make_message(supervisor_stats_request{}),
    caf::make_message(supervisor_stats{3, true}),
    caf::make_message(supervisor_settled{}),
    caf::make_message(kill_child_request{}),
    caf::make_message(session_identity{producer_id{5}, producer_epoch{7}}),
    caf::make_message(session_record{3, tp, {}, b.records.front(), true}),
    caf::make_message(session_completion{3, error_code::none, "", 12}),
    caf::make_message(session_completion{4, error_code::producer_fenced, "fenced", -1, true}),
    caf::make_message(session_flush{true}),
    caf::make_message(session_flush_result{{session_completion{3, error_code::none, "", 12}},
                                           producer_epoch{7}}),
    caf::make_message(session_linger{tp, 4}),
    caf::make_message(session_retry{}),
    caf::make_message(session_add_retry{6}),
    caf::make_message(list_transactions_filter{{"Ongoing", "Bogus"}, {producer_id{5}}, 60000}),
    caf::make_message(transaction_listing{"tx", producer_id{5}, "PrepareAbort"}),
    caf::make_message(active_producer{producer_id{5}, producer_epoch{7}, 12, 1700000000000, 3, 40}),
    caf::make_message(list_transactions_request{{{"Empty"}, {producer_id{5}, producer_id{6}}, -1}}),
    caf::make_message(list_transactions_response{error_code::none, "", {"Bogus"},
                                                 {transaction_listing{"tx", producer_id{5}, "Ongoing"}}}),
    caf::make_message(describe_producers_request{tp}),
    caf::make_message(describe_producers_response{
      error_code::unknown_topic_or_partition, "m",
      {active_producer{producer_id{5}, producer_epoch{7}, -1, 17, -1, -1}}}),
    caf::make_message(znode_stat{3, 4, 5, 1700000000000, 1700000000001, 2, 1, 0, 77, 6, 1}),
    caf::make_message(coord_op::set_data("/controller_epoch", "2", 1)),
    caf::make_message(coord_op_result{zrc::ZBADVERSION, "", {}}),
    caf::make_message(coord_create_request{"/nodes/1", "{}", znode_ephemeral}),
    caf::make_message(coord_create_response{zrc::ZOK, "/s/n-0000000003", {3, 3, 3, 1, 1}}),
    caf::make_message(coord_get_request{"/controller", true}),
    caf::make_message(coord_get_response{zrc::ZNONODE, "", {}}),
    caf::make_message(coord_exists_request{"/controller", true}),
    caf::make_message(coord_set_request{"/topics/t", "{}", 4}),
    caf::make_message(coord_stat_response{zrc::ZOK, {1, 9, 1, 0, 0, 4}}),
    caf::make_message(coord_delete_request{"/controller", -1}),
    caf::make_message(coord_get_children_request{"/nodes", true}),
    caf::make_message(coord_children_response{zrc::ZOK, {"1", "2"}, {}}),
    caf::make_message(coord_multi_request{{coord_op::check_version("/controller_epoch", 3),
                                           coord_op::create_node("/controller", "{}",
                                                                 znode_ephemeral)}}),
    caf::make_message(coord_multi_response{
      zrc::ZBADVERSION,
      {coord_op_result{zrc::ZBADVERSION, "", {}},
       coord_op_result{zrc::ZRUNTIMEINCONSISTENCY, "", {}}}}),
    caf::make_message(coord_sync_request{"/"}),
    caf::make_message(coord_rc_response{zrc::ZCONNECTIONLOSS}),
    caf::make_message(coord_session_request{}),
    caf::make_message(coord_session_response{session_state::connected, 72057594037927936,
                                             std::string(16, 'p')}),
    caf::make_message(coord_close_request{}),
    caf::make_message(coord_watch_event{watch_event_type::child, "/nodes"}),
    caf::make_message(coord_session_event{session_state::expired, 5}),
    caf::make_message(controller::endpoint{"node2.example.com", 9192}),
    caf::make_message(controller::live_node{2, 4294967297, {"10.0.0.2", 9192}, "rack-b", {"b2", 9092}}),
    caf::make_message(controller::partition_info{tp, 4, 2, 7, {2, 3}, 9, {2, 3, 1}, true}),
    caf::make_message(controller::leader_and_isr_request{
      1, 4, 4294967297, {controller::partition_info{tp, 4, 2, 7, {2, 3}, 9, {2, 3, 1}, true}}}),
    caf::make_message(controller::update_metadata_request{
      1, 4, 4294967297, {controller::partition_info{tp, 4, 2, 7, {2}, 10, {2, 3}, false}},
      {controller::live_node{2, 4294967297, {"10.0.0.2", 9192}, "", {}},
       controller::live_node{3, 8589934593, {"10.0.0.3", 9192}, "rack-c", {}}}}),
    caf::make_message(controller::stop_replica_partition{tp, 7, true}),
    caf::make_message(controller::stop_replica_request{
      1, 4, 4294967297, {controller::stop_replica_partition{tp, 7, false}}}),
    caf::make_message(partition_handle{tp, 3, {}, {}}),
    caf::make_message(node_handles_request{{tp, {"__transaction_state", 7}}}),
    caf::make_message(node_handles_response{2, {partition_handle{tp, 3, {}, {}}}}),
    caf::make_message(controller_create_topic_request{"orders", 6, 1, {{"retention.ms", "1000"}}}),
    caf::make_message(controller_delete_topic_request{"orders"}),
    caf::make_message(controller_create_partitions_request{"orders", 5, {{2, 1}, {3, 2}}, true}),
    caf::make_message(replicas_deleted{2, {{"orders", 0}, {"orders", 5}}, true}),
    caf::make_message(controller_topic_request{"orders"}),
    caf::make_message(controlled_shutdown_request{2, 4294967297}),
    caf::make_message(alter_isr_request{2, 4294967297, tp, 3, {2, 1}, 7, true}),
    caf::make_message(alter_isr_response{error_code::invalid_update_version, "v", 3, {2}, 8}),
    caf::make_message(controlled_shutdown_response{error_code::none, "", {tp}}),
    caf::make_message(cluster_nodes_request{}),
    caf::make_message(producer_id_block_request{}),
    caf::make_message(producer_id_block_response{error_code::none, "", 3000, 3999}),
    caf::make_message(cluster_nodes_response{{"10.0.0.2:9192", "10.0.0.3:9192"}}),
    caf::make_message(drill_network_request{true, {2, 3}, true, true}),
    caf::make_message(drill_fault_request{"partition.append_durable", "orders", 1, true, false}),
    caf::make_message(drill_fault_response{error_code::invalid_request, "unknown fault point"}),
    caf::make_message(elect_leaders_request{{{"orders", 1}}, true}),
    caf::make_message(elect_leaders_result{{"orders", 2}, error_code::election_not_needed, "led"}),
    caf::make_message(elect_leaders_response{{{{"orders", 1}, error_code::none, ""}}}),
    caf::make_message(drill_network_response{error_code::invalid_request, "drills are disabled",
                                             {2}, true}),
    caf::make_message(controller_topic_response{error_code::none, "", 6, {{"retention.ms", "1000"}}}),
    caf::make_message(cluster_hello_request{1, "cluster-a", 3, "caftx/0.1.0/abc"}),
    caf::make_message(cluster_hello_response{error_code::inconsistent_cluster_id, "other", "cluster-b",
                                             4, "127.0.0.1:9092", "caftx/0.1.0/abc"}),
  };
}

} // namespace caftx::testing
