// Strong types for Kafka's numbers and the (topic, partition) pair.
// Plain value types; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>

namespace caftx {

/// A number that cannot be mixed up with another kind of number: a producer
/// epoch is not an offset. Comparison and printing only; no arithmetic.
template <class Tag, class Rep>
struct strong_id {
  using rep_type = Rep;
  Rep value{};
  constexpr strong_id() = default;
  constexpr explicit strong_id(Rep v) : value(v) {}
  friend constexpr bool operator==(strong_id a, strong_id b) { return a.value == b.value; }
  friend constexpr bool operator!=(strong_id a, strong_id b) { return a.value != b.value; }
  friend constexpr bool operator<(strong_id a, strong_id b) { return a.value < b.value; }
  friend constexpr bool operator<=(strong_id a, strong_id b) { return a.value <= b.value; }
  friend constexpr bool operator>(strong_id a, strong_id b) { return a.value > b.value; }
  friend constexpr bool operator>=(strong_id a, strong_id b) { return a.value >= b.value; }
  friend std::ostream& operator<<(std::ostream& os, strong_id x) { return os << +x.value; }
};

/// Kafka's producer id (int64); NO_PRODUCER_ID is -1.
using producer_id = strong_id<struct producer_id_tag, int64_t>;
/// Kafka's producer epoch (int16); NO_PRODUCER_EPOCH is -1.
using producer_epoch = strong_id<struct producer_epoch_tag, int16_t>;
/// Leader epoch of the `__transaction_state` partition owning a
/// transactional id; stamped on every marker (docs/transactions.md §Identifiers).
using coordinator_epoch = strong_id<struct coordinator_epoch_tag, int32_t>;

inline constexpr producer_id no_producer_id{-1};
inline constexpr producer_epoch no_producer_epoch{-1};
inline constexpr int32_t no_sequence = -1;

/// An epoch is exhausted at Short.MAX - 1; 32767 stays in reserve so the
/// coordinator can always fence once more (docs/transactions.md §Identifiers).
inline constexpr bool is_epoch_exhausted(producer_epoch e) {
  return e.value >= std::numeric_limits<int16_t>::max() - 1;
}

/// A topic name and a partition index.
struct topic_partition {
  std::string topic;
  int32_t partition = 0;
  friend bool operator==(const topic_partition& a, const topic_partition& b) {
    return a.partition == b.partition && a.topic == b.topic;
  }
  friend bool operator!=(const topic_partition& a, const topic_partition& b) { return !(a == b); }
  friend bool operator<(const topic_partition& a, const topic_partition& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  }
};

inline std::string to_string(const topic_partition& tp) {
  return tp.topic + "-" + std::to_string(tp.partition);
}

/// Name of Kafka's internal topic holding consumer offsets.
inline const std::string consumer_offsets_topic = "__consumer_offsets";
/// Name of Kafka's internal topic holding transaction state cards.
inline const std::string transaction_state_topic = "__transaction_state";
/// True for the topics only coordinators write (Kafka's Topic.isInternal).
inline bool is_internal_topic(const std::string& topic) {
  return topic == consumer_offsets_topic || topic == transaction_state_topic;
}

} // namespace caftx
