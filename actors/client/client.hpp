// Types shared by the C++ producer and consumer: records, record metadata
// and the exception their calls throw.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/message_id.hpp>

#include "actors/client/read_committed_filter.hpp"
#include "runtime/error_code.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// A record to send. Without a partition, a non-empty key picks the
/// partition by Kafka's murmur2 of the key, as the Java client does (always
/// the same one for a key; docs/partitioning.md); an empty key picks
/// partitions round-robin.
struct producer_record {
  std::string topic;
  std::optional<int32_t> partition;
  std::string key;
  std::string value;
  std::vector<record_header> headers;
  int64_t timestamp_ms = -1; // -1: the producer stamps the current time
  /// Kafka's null value (`value` must then be empty): a tombstone, which
  /// on a compacted topic removes the key (docs/compaction.md).
  bool null_value = false;
};

/// Where a sent record landed.
struct record_metadata {
  topic_partition tp;
  int64_t offset = -1;
  int64_t timestamp_ms = -1;
};

/// A subscribed consumer's place in its group (Kafka's
/// ConsumerGroupMetadata), from consumer::group_metadata(): given to
/// producer::send_offsets_to_transaction so that the group coordinator
/// refuses the offsets of a member a rebalance has replaced (KIP-447:
/// ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, abortable; FENCED_INSTANCE_ID
/// for a static member whose instance another consumer took, KIP-345).
/// Generation -1 and an empty member id: no check (a consumer with manual
/// assignment).
struct consumer_group_metadata {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  /// The consumer's group.instance.id, "" if it has none.
  std::string group_instance_id{};
};

/// How a client waits and tells time. The default (every member empty) is
/// real time: deadlines on the steady clock, record timestamps from the
/// system clock, backoff by sleeping the calling thread. A driver for CAF's
/// deterministic test scheduler (the simulator, tests) replaces all three,
/// since there the calling thread is the one that runs the actors.
struct client_driver {
  /// Milliseconds for deadlines (delivery.timeout.ms, poll timeouts) and
  /// record timestamps.
  std::function<int64_t()> clock_ms;
  /// Waits `ms` milliseconds (retry.backoff.ms, an empty poll).
  std::function<void(int64_t ms)> sleep_ms;
  /// Called when a call is about to block for the message `reply` (the
  /// response id of its request) in `waiter`'s mailbox: must return once
  /// that reply, or its request's timeout, is first in the mailbox,
  /// dropping what is before it (replies to requests that timed out).
  std::function<void(caf::scoped_actor& waiter, caf::message_id reply)> await;
};

/// Thrown by producer and consumer calls. code() is Kafka's error; cls()
/// says what the application may do next (docs/errors.md §Classification):
///   fatal     - close the producer; every later call throws the same error
///   abortable - call abort_transaction(), then continue
///   retriable - the call may be repeated (it timed out or the cluster was
///               busy beyond the producer's retry budget)
class kafka_exception : public std::runtime_error {
public:
  kafka_exception(const status& st, error_class cls)
    : std::runtime_error(st.to_string() + " (" + to_string(cls) + ")"), code_(st.code()), cls_(cls) {}
  error_code code() const { return code_; }
  error_class cls() const { return cls_; }
  bool is_fatal() const { return cls_ == error_class::fatal; }
  bool is_abortable() const { return cls_ == error_class::abortable; }

private:
  error_code code_;
  error_class cls_;
};

} // namespace caftx
