// The bytes of a partition's producer-state snapshot and of one
// aborted-index entry (storage/FORMAT.md, "Producer-state snapshots"), as
// Kafka's ProducerStateManager snapshot file: a version, a CRC-32C, then the
// entries. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "actors/partition/leader_epoch_cache.hpp"
#include "actors/partition/partition_core.hpp"
#include "runtime/status.hpp"

namespace caftx::snapshot_codec {

/// Snapshot value version written now.
inline constexpr uint8_t version = 2;

/// Encodes `s` as version 2: version uint8, CRC-32C uint32 of the rest,
/// offset int64, log start offset int64, log start and end positions int64
/// (bytes ever appended before them), flags uint8 (bit 0:
/// producer_state_dropped; the others 0), producer count uint32, then per
/// producer (in producer id order) pid int64, epoch int16, coordinator
/// epoch int32, last timestamp int64, open transaction's first offset int64
/// (-1: none), batch count uint8 (<= 5) and per batch (oldest first) first
/// sequence int32, base offset int64, last offset int64; integers
/// little-endian.
std::string encode(const producer_snapshot& s);

/// Reads versions 2 and 1. Version 1 is version 2 without the flags byte;
/// it cannot tell whether producer state was dropped, so it reads as
/// producer_state_dropped = true (the partition keeps accepting producers
/// it has no state for at any sequence, as before version 2).
/// Errors (KAFKA_STORAGE_ERROR naming what is wrong): unknown version,
/// CRC mismatch, unknown flags, a value cut short or with bytes left over,
/// more than 5 batches for a producer.
status_or<producer_snapshot> decode(std::string_view bytes);

/// The persisted log start (`logstart/` key): version uint8 (1), log start
/// offset int64, log start position int64 (little-endian).
std::string encode_log_start(int64_t offset, int64_t position);
status_or<std::pair<int64_t, int64_t>> decode_log_start(std::string_view bytes);

/// One entry of the leader-epoch checkpoint (Kafka's LeaderEpochFileCache:
/// epoch and the first offset written in it).
using epoch_entry = caftx::epoch_entry;

/// The leader-epoch checkpoint (`epoch/` key): version uint8 (1), count
/// uint32, then per entry epoch int32 and start offset int64, little-endian,
/// oldest first. Errors (KAFKA_STORAGE_ERROR): unknown version, wrong
/// length, epochs not increasing.
std::string encode_epochs(const std::vector<epoch_entry>& entries);
status_or<std::vector<epoch_entry>> decode_epochs(std::string_view bytes);

/// An aborted-index entry: version uint8 (1), pid int64, first offset
/// int64, marker offset int64, recorded LSO int64 (little-endian).
std::string encode(const aborted_txn_entry& e);
status_or<aborted_txn_entry> decode_aborted(std::string_view bytes);

} // namespace caftx::snapshot_codec
