// Java String.hashCode and Kafka's Utils.abs-based partition choice for
// transactional ids and group ids (docs/hashing.md §Rule); Kafka's murmur2-based
// default partitioner for keyed records (docs/partitioning.md).
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

/// Kafka's Utils.murmur2 of `bytes` (MurmurHash2, seed 0x9747b28c, bytes
/// read as unsigned, little-endian 4-byte blocks), as a signed 32-bit value
/// equal to Java's. Example: murmur2("foobar") == -790332482.
int32_t murmur2(std::string_view bytes);

/// Kafka's Utils.toPositive: n & 0x7fffffff (not |n|; -1 maps to INT32_MAX).
int32_t to_positive(int32_t n);

/// Partition, in [0, partition_count), for a record whose key is `key` (the
/// key bytes as sent) when the producer names none: Kafka's
/// BuiltInPartitioner.partitionForKey, Utils.toPositive(Utils.murmur2(key))
/// % partition_count, so a key lands where the Java client puts it
/// (librdkafka: partitioner=murmur2_random). partition_count must be > 0.
/// Callers send empty keys round-robin instead (docs/partitioning.md).
int32_t partition_for_key(std::string_view key, int32_t partition_count);

} // namespace caftx
