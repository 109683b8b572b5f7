// Encoding of every value caftx keeps in LevelDB, and the key layout.
// Values are one format-version byte followed by a Boost.Serialization
// binary archive (no header); storage/FORMAT.md writes the layout down and
// tests/storage_test.cpp locks it with golden bytes. Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx::codec {

/// Format version written in front of every value.
inline constexpr uint8_t value_version = 1;

// Record batches are stored as their RecordBatch v2 bytes
// (runtime/record_batch_v2.hpp), not through this codec.

/// A topic's metadata: its name, partition count and configs (CreateTopics
/// configs as given, e.g. retention.ms).
struct topic_record {
  std::string name;
  int32_t partitions = 0;
  std::map<std::string, std::string> configs;
};
std::string encode(const topic_record& topic);
status_or<topic_record> decode_topic(std::string_view bytes);

std::string encode_int64(int64_t v);
status_or<int64_t> decode_int64(std::string_view bytes);

} // namespace caftx::codec

namespace caftx::keys {

/// `log/<topic>\0<partition:010>/<offset:020>`: one record batch (its
/// RecordBatch v2 bytes) at that base offset.
std::string log_entry(const topic_partition& tp, int64_t offset);
std::string log_prefix(const topic_partition& tp);
/// `pstate/<topic>\0<partition:010>/<offset:020>`: the producer-state
/// snapshot covering the log below that offset (only the newest is kept).
std::string producer_snapshot(const topic_partition& tp, int64_t offset);
std::string producer_snapshot_prefix(const topic_partition& tp);
/// `aborted/<topic>\0<partition:010>/<offset:020>`: the aborted-index entry
/// of the ABORT marker at that offset.
std::string aborted_txn(const topic_partition& tp, int64_t marker_offset);
std::string aborted_txn_prefix(const topic_partition& tp);
/// `logstart/<topic>\0<partition:010>/`: the log start offset and its
/// position, once retention or DeleteRecords moved it (absent: 0).
std::string log_start(const topic_partition& tp);
/// `epoch/<topic>\0<partition:010>/`: the partition's leader-epoch
/// checkpoint (absent: never elected).
std::string leader_epochs(const topic_partition& tp);
/// `hw/<topic>\0<partition:010>/`: the high-watermark checkpoint of a
/// replicated partition (int64; absent: none written yet).
std::string high_watermark(const topic_partition& tp);
/// `cleaner/<topic>\0<partition:010>/`: the cleaner checkpoint of a
/// compacted partition (docs/compaction.md; absent: never cleaned).
std::string cleaner_checkpoint(const topic_partition& tp);
/// The offset in the last 20 characters of a log, snapshot or aborted key.
int64_t offset_of(std::string_view key);
/// `meta/storage_format`: the storage format of the data directory, a
/// decimal number (storage/FORMAT.md); absent in a directory of an older
/// caftx, which is refused.
inline const std::string storage_format = "meta/storage_format";
/// The storage format this build reads and writes.
inline constexpr int storage_format_version = 4;
/// `topic/<topic>`: topic metadata.
std::string topic(const std::string& name);
inline const std::string topic_prefix = "topic/";
/// `txnmeta/<shard:02>/next_pid`: the shard's producer id counter.
std::string next_pid(int32_t shard);

} // namespace caftx::keys
