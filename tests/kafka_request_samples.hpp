// Every Kafka request a node serves, as test material: its body reader
// and a valid body at the highest version served (one topic or group with
// two partitions where the API has them). Used by the codec's property
// tests and the listener's mutation test.
#pragma once

#include <functional>
#include <string>

#include "protocol/kafka_admin_api.hpp"
#include "protocol/kafka_api.hpp"
#include "protocol/kafka_data_api.hpp"
#include "protocol/kafka_group_api.hpp"
#include "protocol/kafka_txn_admin_api.hpp"
#include "protocol/kafka_txn_api.hpp"

namespace caftx::kafka::testing {

using read_fn = std::function<void(reader&, int16_t)>;

// The body reader of `api_key`.
inline read_fn reader_of(int16_t api_key) {
  switch (api_key) {
    case api::produce: return [](reader& r, int16_t v) { read_produce_request(r, v); };
    case api::fetch: return [](reader& r, int16_t v) { read_fetch_request(r, v); };
    case api::list_offsets: return [](reader& r, int16_t v) { read_list_offsets_request(r, v); };
    case api::metadata: return [](reader& r, int16_t v) { read_metadata_request(r, v); };
    case api::offset_commit: return [](reader& r, int16_t v) { read_offset_commit_request(r, v); };
    case api::offset_fetch: return [](reader& r, int16_t v) { read_offset_fetch_request(r, v); };
    case api::find_coordinator:
      return [](reader& r, int16_t v) { read_find_coordinator_request(r, v); };
    case api::api_versions: return [](reader& r, int16_t v) { read_api_versions_request(r, v); };
    case api::create_topics: return [](reader& r, int16_t v) { read_create_topics_request(r, v); };
    case api::delete_topics: return [](reader& r, int16_t v) { read_delete_topics_request(r, v); };
    case api::delete_records:
      return [](reader& r, int16_t v) { read_delete_records_request(r, v); };
    case api::create_partitions:
      return [](reader& r, int16_t v) { read_create_partitions_request(r, v); };
    case api::describe_configs:
      return [](reader& r, int16_t v) { read_describe_configs_request(r, v); };
    case api::describe_producers:
      return [](reader& r, int16_t v) { read_describe_producers_request(r, v); };
    case api::write_txn_markers:
      return [](reader& r, int16_t v) { read_write_txn_markers_request(r, v); };
    case api::describe_transactions:
      return [](reader& r, int16_t v) { read_describe_transactions_request(r, v); };
    case api::list_transactions:
      return [](reader& r, int16_t v) { read_list_transactions_request(r, v); };
    case api::init_producer_id:
      return [](reader& r, int16_t v) { read_init_producer_id_request(r, v); };
    case api::add_partitions_to_txn:
      return [](reader& r, int16_t v) { read_add_partitions_to_txn_request(r, v); };
    case api::add_offsets_to_txn:
      return [](reader& r, int16_t v) { read_add_offsets_to_txn_request(r, v); };
    case api::end_txn: return [](reader& r, int16_t v) { read_end_txn_request(r, v); };
    case api::txn_offset_commit:
      return [](reader& r, int16_t v) { read_txn_offset_commit_request(r, v); };
    case api::join_group: return [](reader& r, int16_t v) { read_join_group_request(r, v); };
    case api::sync_group: return [](reader& r, int16_t v) { read_sync_group_request(r, v); };
    case api::heartbeat: return [](reader& r, int16_t v) { read_heartbeat_request(r, v); };
    case api::leave_group: return [](reader& r, int16_t v) { read_leave_group_request(r, v); };
    case api::describe_groups:
      return [](reader& r, int16_t v) { read_describe_groups_request(r, v); };
    case api::list_groups: return [](reader& r, int16_t v) { read_list_groups_request(r, v); };
    case api::delete_groups:
      return [](reader& r, int16_t v) { read_delete_groups_request(r, v); };
    default: return {};
  }
}

// A valid request body of `api_key` at the highest version served, one
// topic (or group) with two partitions where the API has them. ListGroups
// (v0-2) has an empty body.
inline std::string valid_body(int16_t api_key) {
  writer w;
  auto topic_with = [&w](auto&& per_partition) {
    w.int32(1);
    w.string("orders");
    w.int32(2);
    per_partition(0);
    per_partition(1);
  };
  // A flexible topic entry: "orders", partitions 0 and 1, no tagged fields.
  auto flexible_orders = [&w] {
    w.compact_string("orders");
    w.array_length(2, true);
    w.int32(0);
    w.int32(1);
    w.no_tagged_fields();
  };
  switch (api_key) {
    case api::produce: // v7
      w.nullable_string(std::string("tx"));
      w.int16(-1);
      w.int32(30000);
      topic_with([&w](int32_t p) {
        w.int32(p);
        w.nullable_bytes(std::string(70, 'r'));
      });
      break;
    case api::fetch: // v11
      for (int32_t x : {-1, 500, 1, 1 << 20})
        w.int32(x);
      w.int8(1);
      w.int32(0);
      w.int32(-1);
      topic_with([&w](int32_t p) {
        w.int32(p);
        w.int32(-1);
        w.int64(5);
        w.int64(-1);
        w.int32(1 << 20);
      });
      w.int32(1); // forgotten topics
      w.string("old");
      w.int32(1);
      w.int32(3);
      w.string("rack");
      break;
    case api::list_offsets: // v3
      w.int32(-1);
      w.int8(1);
      topic_with([&w](int32_t p) {
        w.int32(p);
        w.int64(-1);
      });
      break;
    case api::metadata: // v4
      w.int32(1);
      w.string("orders");
      w.boolean(true);
      break;
    case api::offset_commit: // v7
      w.string("group");
      w.int32(-1);
      w.string("");
      w.nullable_string(std::nullopt);
      topic_with([&w](int32_t p) {
        w.int32(p);
        w.int64(9);
        w.int32(-1);
        w.nullable_string(std::string("md"));
      });
      break;
    case api::offset_fetch: // v7, flexible
      w.compact_string("group");
      w.array_length(1, true);
      w.compact_string("orders");
      w.array_length(2, true);
      w.int32(0);
      w.int32(1);
      w.no_tagged_fields();
      w.boolean(true);
      w.no_tagged_fields();
      break;
    case api::find_coordinator: // v2
      w.string("tx");
      w.int8(1);
      break;
    case api::api_versions: // v3
      w.compact_string("librdkafka");
      w.compact_string("2.0.2");
      w.no_tagged_fields();
      break;
    case api::create_topics: // v4
      w.int32(1);
      w.string("orders");
      w.int32(3);
      w.int16(3);
      w.int32(0); // assignments
      w.int32(1);
      w.string("retention.ms");
      w.nullable_string(std::string("1000"));
      w.int32(30000);
      w.boolean(false);
      break;
    case api::delete_topics: // v1
      w.int32(2);
      w.string("a");
      w.string("b");
      w.int32(5000);
      break;
    case api::write_txn_markers: // v1, flexible: an abort for a producer never seen
      w.array_length(1, true);
      w.int64(123456789);
      w.int16(0);
      w.boolean(false);
      w.array_length(1, true);
      flexible_orders();
      w.int32(0);
      w.no_tagged_fields();
      w.no_tagged_fields();
      break;
    case api::describe_producers: // v0, flexible
      w.array_length(1, true);
      flexible_orders();
      w.no_tagged_fields();
      break;
    case api::describe_transactions: // v0, flexible
      w.array_length(2, true);
      w.compact_string("tx");
      w.compact_string("other");
      w.no_tagged_fields();
      break;
    case api::list_transactions: // v1, flexible
      w.array_length(1, true);
      w.compact_string("Ongoing");
      w.array_length(1, true);
      w.int64(7);
      w.int64(60000);
      w.no_tagged_fields();
      break;
    case api::describe_configs: // v2: a topic with two keys, a broker with all
      w.int32(2);
      w.int8(2);
      w.string("orders");
      w.int32(2);
      w.string("retention.ms");
      w.string("cleanup.policy");
      w.int8(4);
      w.string("1");
      w.int32(-1);
      w.boolean(true);
      break;
    case api::create_partitions: // v1, validate_only: a mutation creates nothing
      w.int32(1);
      w.string("orders");
      w.int32(3);
      w.int32(1); // one new partition's replicas
      w.int32(1);
      w.int32(1);
      w.int32(5000);
      w.boolean(true);
      break;
    case api::delete_records: // v1
      topic_with([&w](int32_t p) {
        w.int32(p);
        w.int64(2);
      });
      w.int32(5000);
      break;
    case api::init_producer_id: // v4, flexible
      w.compact_nullable_string(std::string("tx"));
      w.int32(60000);
      w.int64(5000);
      w.int16(3);
      w.no_tagged_fields();
      break;
    case api::add_partitions_to_txn: // v1
      w.string("tx");
      w.int64(5000);
      w.int16(0);
      topic_with([&w](int32_t p) { w.int32(p); });
      break;
    case api::add_offsets_to_txn: // v1
      w.string("tx");
      w.int64(5000);
      w.int16(0);
      w.string("group");
      break;
    case api::end_txn: // v1
      w.string("tx");
      w.int64(5000);
      w.int16(0);
      w.boolean(true);
      break;
    case api::txn_offset_commit: // v3, flexible
      w.compact_string("tx");
      w.compact_string("group");
      w.int64(5000);
      w.int16(0);
      w.int32(3);
      w.compact_string("member-1");
      w.compact_nullable_string(std::nullopt);
      w.array_length(1, true);
      w.compact_string("orders");
      w.array_length(2, true);
      for (int32_t p : {0, 1}) {
        w.int32(p);
        w.int64(9);
        w.int32(-1);
        w.compact_nullable_string(std::nullopt);
        w.no_tagged_fields();
      }
      w.no_tagged_fields();
      w.no_tagged_fields();
      break;
    case api::join_group: // v5: a static member
      w.string("group");
      w.int32(10000);
      w.int32(30000);
      w.string("");
      w.nullable_string(std::string("instance-1"));
      w.string("consumer");
      w.int32(2);
      w.string("range");
      w.nullable_bytes(std::string("\0\1\0\0\0\1\0\6orders\0\0\0\0", 18));
      w.string("roundrobin");
      w.nullable_bytes(std::string("sub"));
      break;
    case api::sync_group: // v3
      w.string("group");
      w.int32(1);
      w.string("member-1");
      w.nullable_string(std::nullopt);
      w.int32(2);
      w.string("member-1");
      w.nullable_bytes(std::string("assignment-1"));
      w.string("member-2");
      w.nullable_bytes(std::string(""));
      break;
    case api::heartbeat: // v3
      w.string("group");
      w.int32(1);
      w.string("member-1");
      w.nullable_string(std::nullopt);
      break;
    case api::leave_group: // v3
      w.string("group");
      w.int32(2);
      w.string("member-1");
      w.nullable_string(std::nullopt);
      w.string("member-2");
      w.nullable_string(std::string("instance-2"));
      break;
    case api::describe_groups: // v4
      w.int32(2);
      w.string("group");
      w.string("other");
      w.boolean(false);
      break;
    case api::list_groups: // v2: no fields
      break;
    case api::delete_groups: // v1
      w.int32(2);
      w.string("group");
      w.string("other");
      break;
    default:
      break;
  }
  return w.take();
}

} // namespace caftx::kafka::testing
