// The consumer's side of read_committed (docs/producer-state.md §read_committed, Kafka's
// CompletedFetch): turns fetched batches into the records an application
// sees. Control batches are never delivered; under read_committed, batches
// of aborted transactions are skipped. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/record_batch.hpp"

namespace caftx {

/// A record as a consumer application receives it.
struct consumer_record {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;
  int64_t timestamp_ms = -1;
  std::string key;
  std::string value;
  std::vector<record_header> headers;
  /// Kafka's null value (`value` is then empty): a tombstone.
  bool null_value = false;
};

struct filtered_fetch {
  std::vector<consumer_record> records;
  /// The position after the last batch looked at (delivered or skipped).
  int64_t next_offset = 0;
};

/// Filters `batches` (in offset order, starting at or before `fetch_offset`)
/// with the aborted-transaction list of the fetch response. Records below
/// `fetch_offset` are dropped; at most `max_records` are returned, and
/// next_offset stops right after the last returned record in that case.
filtered_fetch filter_fetched(const topic_partition& tp, int64_t fetch_offset,
                              const std::vector<record_batch>& batches,
                              const std::vector<aborted_transaction>& aborted,
                              isolation_level isolation, size_t max_records);

} // namespace caftx
