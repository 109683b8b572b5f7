#include "actors/controller/znodes.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace caftx::controller {

namespace {

using ordered = nlohmann::ordered_json;
using json = nlohmann::json;

/// Thrown inside the decoders, turned into a status naming the path.
struct malformed {
  std::string what;
};

status malformed_status(const std::string& path, const std::string& what) {
  return {error_code::unknown_server_error, "malformed znode " + path + ": " + what};
}

json parse_versioned(std::string_view data) {
  auto j = json::parse(data.begin(), data.end(), nullptr, false);
  if (j.is_discarded())
    throw malformed{"not JSON"};
  if (!j.is_object())
    throw malformed{"not a JSON object"};
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer())
    throw malformed{"no \"version\""};
  if (v->get<int64_t>() != 1)
    throw malformed{"unsupported version " + v->dump()};
  return j;
}

const json& field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end())
    throw malformed{std::string("no \"") + key + "\""};
  return *it;
}

int64_t integer(const json& j, const char* key, int64_t lo, int64_t hi) {
  const auto& f = field(j, key);
  if (!f.is_number_integer())
    throw malformed{std::string("\"") + key + "\" is not an integer"};
  auto v = f.get<int64_t>();
  if (v < lo || v > hi)
    throw malformed{std::string("\"") + key + "\" out of range: " + std::to_string(v)};
  return v;
}

std::string text(const json& j, const char* key) {
  const auto& f = field(j, key);
  if (!f.is_string())
    throw malformed{std::string("\"") + key + "\" is not a string"};
  return f.get<std::string>();
}

/// An int64 written as a decimal string (Kafka's ProducerIdBlockZNode and
/// ControllerZNode's timestamp).
int64_t decimal_text(const json& j, const char* key) {
  auto s = text(j, key);
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (...) {
    used = 0;
  }
  if (s.empty() || used != s.size())
    throw malformed{std::string("\"") + key + "\" is not a decimal number: \"" + s + "\""};
  return v;
}

std::vector<node_id> id_list(const json& j, const char* key) {
  const auto& f = field(j, key);
  if (!f.is_array())
    throw malformed{std::string("\"") + key + "\" is not an array"};
  std::vector<node_id> out;
  std::set<node_id> seen;
  for (const auto& e : f) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0
        || e.get<int64_t>() > std::numeric_limits<node_id>::max())
      throw malformed{std::string("\"") + key + "\" holds a bad node id " + e.dump()};
    auto id = e.get<node_id>();
    if (!seen.insert(id).second)
      throw malformed{std::string("\"") + key + "\" names node " + std::to_string(id) + " twice"};
    out.push_back(id);
  }
  return out;
}

template <class F>
auto decoded(const std::string& path, F&& f) -> status_or<decltype(f())> {
  try {
    return f();
  } catch (const malformed& m) {
    return malformed_status(path, m.what);
  }
}

constexpr int64_t int32_max = std::numeric_limits<int32_t>::max();

} // namespace

std::string node_path(node_id id) {
  return nodes_path + "/" + std::to_string(id);
}

std::string topic_path(std::string_view topic) {
  return topics_path + "/" + std::string(topic);
}

std::string delete_topic_path(std::string_view topic) {
  return delete_topics_path + "/" + std::string(topic);
}

std::string partition_path(const topic_partition& tp) {
  return topic_path(tp.topic) + "/" + std::to_string(tp.partition);
}

std::string partition_state_path(const topic_partition& tp) {
  return partition_path(tp) + "/state";
}

std::string encode_node(const node_registration& reg) {
  ordered j;
  j["version"] = 1;
  j["host"] = reg.ep.host;
  j["port"] = reg.ep.port;
  if (!reg.rack.empty())
    j["rack"] = reg.rack;
  j["caftx_build"] = reg.caftx_build;
  j["started_ms"] = reg.started_ms;
  if (reg.kafka.port != 0)
    j["endpoints"] = {"PLAINTEXT://" + reg.kafka.host + ":" + std::to_string(reg.kafka.port)};
  return j.dump();
}

status_or<node_registration> decode_node(const std::string& path, std::string_view data) {
  return decoded(path, [&] {
    auto j = parse_versioned(data);
    node_registration reg;
    reg.ep.host = text(j, "host");
    if (reg.ep.host.empty())
      throw malformed{"empty \"host\""};
    // Port 0: no listener; the embedded node, a cluster of one, is reached
    // only inside its own process.
    reg.ep.port = static_cast<uint16_t>(integer(j, "port", 0, 65535));
    if (j.contains("rack"))
      reg.rack = text(j, "rack");
    reg.caftx_build = text(j, "caftx_build");
    reg.started_ms = integer(j, "started_ms", 0, std::numeric_limits<int64_t>::max());
    if (j.contains("endpoints")) {
      if (!j["endpoints"].is_array())
        throw malformed{"\"endpoints\" is not an array"};
      for (auto& e : j["endpoints"]) {
        if (!e.is_string())
          throw malformed{"an \"endpoints\" entry is not a string"};
        auto s = e.get<std::string>();
        const std::string scheme = "PLAINTEXT://";
        if (s.rfind(scheme, 0) != 0)
          continue; // another listener kind: not served by caftx
        auto colon = s.rfind(':');
        char* end = nullptr;
        auto port = colon == std::string::npos || colon < scheme.size()
                      ? 0
                      : std::strtol(s.c_str() + colon + 1, &end, 10);
        if (port < 1 || port > 65535 || (end && *end != '\0'))
          throw malformed{"\"endpoints\" entry '" + s + "' is not PLAINTEXT://host:port"};
        reg.kafka = endpoint{s.substr(scheme.size(), colon - scheme.size()),
                             static_cast<uint16_t>(port)};
      }
    }
    return reg;
  });
}

live_node to_live_node(node_id id, int64_t node_epoch, const node_registration& reg) {
  return live_node{id, node_epoch, reg.ep, reg.rack, reg.kafka};
}

std::string encode_controller(node_id id, int64_t timestamp_ms) {
  ordered j;
  j["version"] = 1;
  j["node_id"] = id;
  j["timestamp"] = std::to_string(timestamp_ms);
  return j.dump();
}

status_or<node_id> decode_controller(std::string_view data) {
  return decoded(controller_path, [&] {
    auto j = parse_versioned(data);
    decimal_text(j, "timestamp");
    return static_cast<node_id>(integer(j, "node_id", 0, int32_max));
  });
}

std::string encode_controller_epoch(int32_t epoch) {
  ordered j;
  j["version"] = 1;
  j["epoch"] = epoch;
  return j.dump();
}

status_or<int32_t> decode_controller_epoch(std::string_view data) {
  return decoded(controller_epoch_path, [&] {
    auto j = parse_versioned(data);
    return static_cast<int32_t>(integer(j, "epoch", 0, int32_max));
  });
}

std::string encode_topic(const topic_assignment& topic) {
  ordered j;
  j["version"] = 1;
  ordered parts = ordered::object();
  for (const auto& [p, replicas] : topic.partitions)
    parts[std::to_string(p)] = replicas;
  j["partitions"] = parts;
  ordered cfg = ordered::object();
  for (const auto& [k, v] : topic.configs)
    cfg[k] = v;
  j["config"] = cfg;
  return j.dump();
}

status_or<topic_assignment> decode_topic(const std::string& name, std::string_view data) {
  return decoded(topic_path(name), [&] {
    auto j = parse_versioned(data);
    topic_assignment t;
    t.name = name;
    const auto& parts = field(j, "partitions");
    if (!parts.is_object() || parts.empty())
      throw malformed{"\"partitions\" is not a non-empty object"};
    for (auto it = parts.begin(); it != parts.end(); ++it) {
      const auto& key = it.key();
      if (key.empty() || key.size() > 9 || (key.size() > 1 && key[0] == '0')
          || !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw malformed{"partition key \"" + key + "\" is not a partition number"};
      auto replicas = id_list(parts, key.c_str());
      if (replicas.empty())
        throw malformed{"partition " + key + " has no replicas"};
      t.partitions[std::stoi(key)] = std::move(replicas);
    }
    if (t.partitions.rbegin()->first != static_cast<int32_t>(t.partitions.size()) - 1)
      throw malformed{"partitions are not numbered 0.." + std::to_string(t.partitions.size() - 1)};
    const auto& cfg = field(j, "config");
    if (!cfg.is_object())
      throw malformed{"\"config\" is not an object"};
    for (auto it = cfg.begin(); it != cfg.end(); ++it) {
      if (!it.value().is_string())
        throw malformed{"config \"" + it.key() + "\" is not a string"};
      t.configs[it.key()] = it.value().get<std::string>();
    }
    return t;
  });
}

std::string encode_partition_state(const partition_state& st) {
  ordered j;
  j["version"] = 1;
  j["leader"] = st.leader;
  j["leader_epoch"] = st.leader_epoch;
  j["controller_epoch"] = st.controller_epoch;
  j["isr"] = st.isr;
  return j.dump();
}

status_or<partition_state> decode_partition_state(const std::string& path, std::string_view data,
                                                  int32_t version) {
  return decoded(path, [&] {
    auto j = parse_versioned(data);
    partition_state st;
    st.leader = static_cast<node_id>(integer(j, "leader", no_leader, int32_max));
    st.leader_epoch = static_cast<int32_t>(integer(j, "leader_epoch", 0, int32_max));
    st.controller_epoch = static_cast<int32_t>(integer(j, "controller_epoch", 0, int32_max));
    st.isr = id_list(j, "isr");
    if (st.isr.empty())
      throw malformed{"empty \"isr\""};
    if (st.leader != no_leader && std::find(st.isr.begin(), st.isr.end(), st.leader) == st.isr.end())
      throw malformed{"leader " + std::to_string(st.leader) + " not in \"isr\""};
    st.partition_epoch = version;
    return st;
  });
}

std::string encode_producer_id_block(const producer_id_block& block) {
  ordered j;
  j["version"] = 1;
  j["node_id"] = block.owner;
  j["block_start"] = std::to_string(block.block_start);
  j["block_end"] = std::to_string(block.block_end);
  return j.dump();
}

status_or<producer_id_block> decode_producer_id_block(std::string_view data) {
  return decoded(producer_id_block_path, [&] {
    auto j = parse_versioned(data);
    producer_id_block b;
    b.owner = static_cast<node_id>(integer(j, "node_id", 0, int32_max));
    b.block_start = decimal_text(j, "block_start");
    b.block_end = decimal_text(j, "block_end");
    if (b.block_start < 0 || b.block_end < b.block_start)
      throw malformed{"bad block [" + std::to_string(b.block_start) + ", "
                      + std::to_string(b.block_end) + "]"};
    return b;
  });
}

std::string encode_cluster_id(std::string_view id) {
  ordered j;
  j["version"] = 1;
  j["id"] = std::string(id);
  return j.dump();
}

status_or<std::string> decode_cluster_id(std::string_view data) {
  return decoded(cluster_id_path, [&] {
    auto j = parse_versioned(data);
    auto id = text(j, "id");
    if (id.empty())
      throw malformed{"empty \"id\""};
    return id;
  });
}

} // namespace caftx::controller
