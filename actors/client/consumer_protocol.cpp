#include "actors/client/consumer_protocol.hpp"

#include <algorithm>
#include <set>

#include "protocol/kafka_wire.hpp"

namespace caftx::consumer_protocol {

namespace {

status malformed(const std::string& what, const kafka::reader& r) {
  return {error_code::invalid_request, what + " does not parse: " + r.what()};
}

} // namespace

std::string encode_subscription(const std::vector<std::string>& topics) {
  kafka::writer w;
  w.int16(0);
  kafka::write_array(w, topics, [](kafka::writer& w, const std::string& t) { w.string(t); });
  w.nullable_bytes(std::nullopt);
  return w.take();
}

status_or<std::vector<std::string>> decode_subscription(const std::string& bytes) {
  kafka::reader r{bytes};
  auto version = r.int16();
  auto topics = kafka::read_array(r, [](kafka::reader& r) { return r.string(); });
  r.nullable_bytes();
  if (!r.ok() || version < 0)
    return malformed("a consumer subscription", r);
  return topics;
}

std::string encode_assignment(const std::vector<topic_partition>& partitions) {
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (auto& tp : partitions)
    by_topic[tp.topic].push_back(tp.partition);
  kafka::writer w;
  w.int16(0);
  w.array_length(static_cast<int32_t>(by_topic.size()), false);
  for (auto& [topic, ps] : by_topic) {
    w.string(topic);
    kafka::write_array(w, ps, [](kafka::writer& w, int32_t p) { w.int32(p); });
  }
  w.nullable_bytes(std::nullopt);
  return w.take();
}

status_or<std::vector<topic_partition>> decode_assignment(const std::string& bytes) {
  std::vector<topic_partition> out;
  if (bytes.empty())
    return out;
  kafka::reader r{bytes};
  auto version = r.int16();
  auto topics = kafka::read_array(r, [](kafka::reader& r) {
    auto topic = r.string();
    auto partitions = kafka::read_array(r, [](kafka::reader& r) { return r.int32(); });
    return std::make_pair(topic, partitions);
  });
  r.nullable_bytes();
  if (!r.ok() || version < 0)
    return malformed("a consumer assignment", r);
  for (auto& [topic, partitions] : topics)
    for (auto p : partitions)
      out.push_back({topic, p});
  return out;
}

assignments assign_range(const subscriptions& members,
                         const std::map<std::string, int32_t>& partition_counts) {
  assignments out;
  std::map<std::string, std::vector<std::string>> subscribers; // topic -> members, in id order
  for (auto& [member, topics] : members) {
    out[member];
    for (auto& t : std::set<std::string>(topics.begin(), topics.end()))
      subscribers[t].push_back(member);
  }
  for (auto& [topic, ms] : subscribers) {
    auto it = partition_counts.find(topic);
    if (it == partition_counts.end())
      continue;
    auto n = it->second;
    auto m = static_cast<int32_t>(ms.size());
    int32_t per = n / m, extra = n % m, next = 0;
    for (int32_t i = 0; i < m; ++i) {
      int32_t count = per + (i < extra ? 1 : 0);
      for (int32_t k = 0; k < count; ++k)
        out[ms[static_cast<size_t>(i)]].push_back({topic, next++});
    }
  }
  return out;
}

assignments assign_roundrobin(const subscriptions& members,
                              const std::map<std::string, int32_t>& partition_counts) {
  assignments out;
  std::set<std::string> all_topics;
  std::map<std::string, std::set<std::string>> subscribed; // member -> topics
  for (auto& [member, topics] : members) {
    out[member];
    subscribed[member] = std::set<std::string>(topics.begin(), topics.end());
    all_topics.insert(topics.begin(), topics.end());
  }
  if (members.empty())
    return out;
  std::vector<std::string> order;
  for (auto& [member, _] : members)
    order.push_back(member);
  size_t next = 0;
  for (auto& topic : all_topics) {
    auto it = partition_counts.find(topic);
    if (it == partition_counts.end())
      continue;
    for (int32_t p = 0; p < it->second; ++p) {
      // The next member (cyclically) subscribed to the topic.
      for (size_t tried = 0; tried < order.size(); ++tried, next = (next + 1) % order.size())
        if (subscribed[order[next]].count(topic))
          break;
      out[order[next]].push_back({topic, p});
      next = (next + 1) % order.size();
    }
  }
  return out;
}

} // namespace caftx::consumer_protocol
