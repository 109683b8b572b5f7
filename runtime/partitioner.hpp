// Java String.hashCode and Kafka's Utils.abs-based partition choice for
// transactional ids and group ids (reference §4.3).
#pragma once

#include <cstdint>
#include <string_view>

namespace caftx {

/// Java's String.hashCode of a UTF-8 string: h = 31*h + u over its UTF-16
/// code units (a non-BMP character contributes its two surrogates), with
/// 32-bit wrap-around. Invalid UTF-8 bytes count as U+FFFD.
int32_t java_string_hash(std::string_view utf8);

/// Kafka's Utils.abs: |n|, except Integer.MIN_VALUE maps to 0.
int32_t kafka_abs(int32_t n);

/// Partition of `__transaction_state` (or `__consumer_offsets`) owning `key`:
/// Utils.abs(key.hashCode()) % partition_count.
int32_t partition_for(std::string_view key, int32_t partition_count);

/// Partition for a record key when the producer names none: a stable hash
/// of the key (Java String.hashCode of the key bytes), so one key always
/// lands on one partition. Kafka's Java client uses murmur2 here.
int32_t partition_for_key(std::string_view key, int32_t partition_count);

} // namespace caftx
