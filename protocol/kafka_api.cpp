#include "protocol/kafka_api.hpp"


namespace caftx::kafka {

const std::vector<version_range>& supported_apis() {
  static const std::vector<version_range> apis{
    {api::produce, 0, 7},
    {api::fetch, 4, 11},
    {api::list_offsets, 0, 3},
    {api::metadata, 0, 4},
    {api::offset_commit, 2, 7},
    {api::offset_fetch, 1, 7},
    {api::find_coordinator, 0, 2},
    {api::join_group, 0, 5},
    {api::heartbeat, 0, 3},
    {api::leave_group, 0, 3},
    {api::sync_group, 0, 3},
    {api::describe_groups, 0, 4},
    {api::list_groups, 0, 2},
    {api::api_versions, 0, 3},
    {api::create_topics, 0, 4},
    {api::delete_topics, 0, 1},
    {api::delete_records, 0, 1},
    {api::init_producer_id, 0, 4},
    {api::add_partitions_to_txn, 0, 1},
    {api::add_offsets_to_txn, 0, 1},
    {api::end_txn, 0, 1},
    {api::write_txn_markers, 0, 1},
    {api::txn_offset_commit, 0, 3},
    {api::describe_configs, 0, 2},
    {api::create_partitions, 0, 1},
    {api::delete_groups, 0, 1},
    {api::describe_producers, 0, 0},
    {api::describe_transactions, 0, 0},
    {api::list_transactions, 0, 1},
  };
  return apis;
}

std::optional<version_range> supported(int16_t api_key) {
  for (const auto& r : supported_apis())
    if (r.api_key == api_key)
      return r;
  return std::nullopt;
}

bool is_flexible(int16_t api_key, int16_t version) {
  // "flexibleVersions" of Kafka's message schemas.
  switch (api_key) {
    case api::produce: return version >= 9;
    case api::fetch: return version >= 12;
    case api::list_offsets: return version >= 6;
    case api::metadata: return version >= 9;
    case api::api_versions: return version >= 3;
    case api::find_coordinator: return version >= 3;
    case api::offset_commit: return version >= 8;
    case api::offset_fetch: return version >= 6;
    case api::create_topics: return version >= 5;
    case api::delete_topics: return version >= 4;
    case api::delete_records: return version >= 2;
    case api::init_producer_id: return version >= 2;
    case api::add_partitions_to_txn:
    case api::add_offsets_to_txn:
    case api::end_txn:
    case api::txn_offset_commit: return version >= 3;
    case api::join_group: return version >= 6;
    case api::heartbeat:
    case api::leave_group:
    case api::sync_group: return version >= 4;
    case api::describe_groups: return version >= 5;
    case api::list_groups: return version >= 3;
    case api::create_partitions:
    case api::delete_groups: return version >= 2;
    case api::describe_configs: return version >= 4;
    case api::write_txn_markers: return version >= 1;
    case api::describe_producers:
    case api::describe_transactions:
    case api::list_transactions: return true;
    default: return false;
  }
}

int16_t wire_error(error_code code) {
  return code == error_code::unknown_server_error ? int16_t{-1}
                                                  : static_cast<int16_t>(code);
}

request_header read_request_header(reader& r) {
  request_header h;
  h.api_key = r.int16();
  h.api_version = r.int16();
  h.correlation_id = r.int32();
  h.client_id = r.nullable_string();
  if (r.ok() && supported(h.api_key) && is_flexible(h.api_key, h.api_version))
    r.skip_tagged_fields();
  return h;
}

void write_response_header(writer& w, const request_header& h) {
  w.int32(h.correlation_id);
  if (h.api_key != api::api_versions && is_flexible(h.api_key, h.api_version))
    w.no_tagged_fields();
}

std::string frame_response(const request_header& h, const std::string& body) {
  writer head;
  write_response_header(head, h);
  writer out;
  out.int32(static_cast<int32_t>(head.size() + body.size()));
  out.raw(head.bytes());
  out.raw(body);
  return out.take();
}

api_versions_request read_api_versions_request(reader& r, int16_t version) {
  api_versions_request req;
  if (version >= 3) {
    req.client_software_name = r.compact_string();
    req.client_software_version = r.compact_string();
    r.skip_tagged_fields();
  }
  return req;
}

std::string encode_api_versions_response(int16_t version, int16_t error,
                                         const std::vector<version_range>& apis,
                                         int32_t throttle_time_ms) {
  const bool flexible = version >= 3;
  writer w;
  w.int16(error);
  w.array_length(static_cast<int32_t>(apis.size()), flexible);
  for (const auto& a : apis) {
    w.int16(a.api_key);
    w.int16(a.min_version);
    w.int16(a.max_version);
    if (flexible)
      w.no_tagged_fields();
  }
  if (version >= 1)
    w.int32(throttle_time_ms);
  if (flexible)
    w.no_tagged_fields();
  return w.take();
}

metadata_request read_metadata_request(reader& r, int16_t version) {
  metadata_request req;
  auto n = r.array_length(false);
  if (n) {
    std::vector<std::string> topics;
    for (int32_t i = 0; i < *n && r.ok(); ++i)
      topics.push_back(r.string());
    // v0: an empty array asks for every topic.
    if (!(version == 0 && topics.empty()))
      req.topics = std::move(topics);
  } else if (version == 0) {
    r.fail("null topics array in Metadata v0");
  }
  if (version >= 4)
    req.allow_auto_topic_creation = r.boolean();
  return req;
}

namespace {

void write_ids(writer& w, const std::vector<int32_t>& ids) {
  w.array_length(static_cast<int32_t>(ids.size()), false);
  for (auto id : ids)
    w.int32(id);
}

} // namespace

std::string encode_metadata_response(const metadata_response& m, int16_t version) {
  writer w;
  if (version >= 3)
    w.int32(m.throttle_time_ms);
  w.array_length(static_cast<int32_t>(m.brokers.size()), false);
  for (const auto& b : m.brokers) {
    w.int32(b.node_id);
    w.string(b.host);
    w.int32(b.port);
    if (version >= 1)
      w.nullable_string(b.rack);
  }
  if (version >= 2)
    w.nullable_string(m.cluster_id);
  if (version >= 1)
    w.int32(m.controller_id);
  w.array_length(static_cast<int32_t>(m.topics.size()), false);
  for (const auto& t : m.topics) {
    w.int16(t.error);
    w.string(t.name);
    if (version >= 1)
      w.boolean(t.internal);
    w.array_length(static_cast<int32_t>(t.partitions.size()), false);
    for (const auto& p : t.partitions) {
      w.int16(p.error);
      w.int32(p.index);
      w.int32(p.leader);
      write_ids(w, p.replicas);
      write_ids(w, p.isr);
    }
  }
  return w.take();
}

} // namespace caftx::kafka
