// Kafka's consumer protocol, the bytes a group coordinator passes along
// without reading them (protocol type "consumer"): a member's subscription
// (ConsumerProtocolSubscription) in JoinGroup and its assignment
// (ConsumerProtocolAssignment) in SyncGroup, and the two classic assignors
// the group's leader runs, range and roundrobin (Kafka's RangeAssignor and
// RoundRobinAssignor). The same bytes as Kafka's Java client and
// librdkafka, so their consumers and caftx's can share a group.
// docs/consumer-groups.md. Pure: no CAF.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ids.hpp"
#include "runtime/status.hpp"

namespace caftx::consumer_protocol {

/// ConsumerProtocolSubscription v0 encoded: int16 version 0, the topics,
/// null user data. Readers of later versions read its first fields.
std::string encode_subscription(const std::vector<std::string>& topics);

/// The topics of a subscription of any version (v1+ add owned partitions
/// and more after the v0 fields, which are skipped). INVALID_REQUEST for
/// bytes that do not parse.
status_or<std::vector<std::string>> decode_subscription(const std::string& bytes);

/// ConsumerProtocolAssignment v0 encoded: int16 version 0, per topic its
/// partitions (topics in name order), null user data.
std::string encode_assignment(const std::vector<topic_partition>& partitions);

/// The partitions of an assignment of any version; empty bytes (a member
/// the leader gave nothing) are an empty assignment. INVALID_REQUEST for
/// bytes that do not parse.
status_or<std::vector<topic_partition>> decode_assignment(const std::string& bytes);

/// Members' subscriptions by member id; partition counts by topic (a topic
/// missing there is not assigned).
using subscriptions = std::map<std::string, std::vector<std::string>>;
using assignments = std::map<std::string, std::vector<topic_partition>>;

/// Kafka's RangeAssignor: per topic, its subscribers in member id order get
/// consecutive ranges, partitions / subscribers each and one more for the
/// first partitions % subscribers. Every member has an entry.
assignments assign_range(const subscriptions& members,
                         const std::map<std::string, int32_t>& partition_counts);

/// Kafka's RoundRobinAssignor: every subscribed partition in (topic,
/// partition) order, dealt to the members in member id order, skipping
/// members not subscribed to its topic. Every member has an entry.
assignments assign_roundrobin(const subscriptions& members,
                              const std::map<std::string, int32_t>& partition_counts);

} // namespace caftx::consumer_protocol
