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
    case api::init_producer_id:
      return [](reader& r, int16_t v) { read_init_producer_id_request(r, v); };
    case api::add_partitions_to_txn:
      return [](reader& r, int16_t v) { read_add_partitions_to_txn_request(r, v); };
    case api::add_offsets_to_txn:
      return [](reader& r, int16_t v) { read_add_offsets_to_txn_request(r, v); };
    case api::end_txn: return [](reader& r, int16_t v) { read_end_txn_request(r, v); };
    case api::txn_offset_commit:
      return [](reader& r, int16_t v) { read_txn_offset_commit_request(r, v); };
    default: return {};
  }
}

// A valid request body of `api_key` at the highest version served, one
// topic (or group) with two partitions where the API has them.
inline std::string valid_body(int16_t api_key) {
  writer w;
  auto topic_with = [&w](auto&& per_partition) {
    w.int32(1);
    w.string("orders");
    w.int32(2);
    per_partition(0);
    per_partition(1);
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
    case api::offset_fetch: // v5
      w.string("group");
      w.int32(1);
      w.string("orders");
      w.int32(2);
      w.int32(0);
      w.int32(1);
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
    case api::txn_offset_commit: // v2
      w.string("tx");
      w.string("group");
      w.int64(5000);
      w.int16(0);
      topic_with([&w](int32_t p) {
        w.int32(p);
        w.int64(9);
        w.int32(-1);
        w.nullable_string(std::nullopt);
      });
      break;
    default:
      break;
  }
  return w.take();
}

} // namespace caftx::kafka::testing
