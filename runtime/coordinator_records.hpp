// The records coordinators write to their own partitions, in Kafka's byte
// layouts (docs/coordinator-records.md):
//
// - `__transaction_state`: key TransactionLogKey v0 (the transactional id),
//   value TransactionLogValue v1 (the state card; flexible version, caftx's
//   extra card fields as tagged fields Kafka's readers skip), a null value
//   (tombstone) when the id expired;
// - `__consumer_offsets`: key OffsetCommitKey v1 (group, topic, partition),
//   value OffsetCommitValue v3 (offset, leader epoch, metadata, commit
//   timestamp), a null value when the offset was deleted or expired; and
//   key GroupMetadataKey v2 (group), value GroupMetadataValue v3 (the
//   group's generation, members and assignments), a null value when the
//   group was deleted.
//
// Integers are big-endian, strings length-prefixed, as Kafka's generated
// message classes write them. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/group_membership.hpp"
#include "runtime/group_offsets.hpp"
#include "runtime/status.hpp"
#include "runtime/txn_card.hpp"

namespace caftx::coordinator_records {

// -- __transaction_state -------------------------------------------------------

/// TransactionLogKey v0: int16 version 0, int16 length + the id's bytes.
std::string encode_txn_key(const std::string& transactional_id);

/// The transactional id of a TransactionLogKey. Errors: CORRUPT_MESSAGE for
/// a truncated key or a key version other than 0 (Kafka skips unknown key
/// versions at load; here the caller decides).
status_or<std::string> decode_txn_key(std::string_view key);

/// TransactionLogValue v1 of `card` (state Dead and PrepareEpochFence are
/// never written; the caller passes only persisted states). Tagged fields:
/// 0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion (2:
/// the coordinator bumps the epoch at every EndTxn, KIP-890 part 2), and
/// caftx's 100 EndedByProducerId, 101 EndedByProducerEpoch, 102
/// LastProducerEpoch, each only when not -1.
std::string encode_txn_value(const txn_card& card);

/// The card of `transactional_id` from a TransactionLogValue v0 or v1.
/// Errors: CORRUPT_MESSAGE naming the field for a truncated value, an
/// unknown version, a state id outside 0-5, or bytes after the value.
status_or<txn_card> decode_txn_value(std::string transactional_id, std::string_view value);

// -- __consumer_offsets --------------------------------------------------------

/// OffsetCommitKey v1: int16 version 1, group, topic (int16 length + bytes
/// each), int32 partition.
std::string encode_offset_key(const group_offset_key& key);

/// Errors: CORRUPT_MESSAGE for a truncated key; a key of version 2 (a
/// GroupMetadataKey: is_group_key) or above is CORRUPT_MESSAGE too, with
/// the version in the message.
status_or<group_offset_key> decode_offset_key(std::string_view key);

/// True for a key of version 2: Kafka's GroupMetadataKey.
bool is_group_key(std::string_view key);

/// GroupMetadataKey v2: int16 version 2, the group id (int16 length +
/// bytes).
std::string encode_group_key(const std::string& group);

/// The group id of a GroupMetadataKey. Errors: CORRUPT_MESSAGE for a
/// truncated key, another version, or bytes after the group id.
status_or<std::string> decode_group_key(std::string_view key);

/// GroupMetadataValue v3: int16 version 3, protocol type, int32
/// generation, protocol and leader (nullable: null when ""), int64 state
/// timestamp, then the members (int32 count), each: member id, instance id
/// (nullable), client id, client host, int32 rebalance timeout, int32
/// session timeout, subscription and assignment (int32 length + bytes).
std::string encode_group_value(const group_metadata_record& group);

/// A GroupMetadataValue of version 0-3 for `group` (v0 has no rebalance
/// timeout: the session timeout stands in; v0-1 no state timestamp; v0-2
/// no instance ids). Errors: CORRUPT_MESSAGE naming the field for a
/// truncated value, an unknown version, or bytes after the value.
status_or<group_metadata_record> decode_group_value(std::string group, std::string_view value);

/// OffsetCommitValue v3: int16 version 3, int64 offset, int32 leader epoch
/// (-1: unknown), metadata string, int64 commit timestamp (ms).
std::string encode_offset_value(const offset_and_metadata& value, int64_t commit_timestamp_ms,
                                int32_t leader_epoch = -1);

/// An offset commit value of version 0-3 (v1 also carries an expire
/// timestamp, ignored as by Kafka since KIP-211). `commit_timestamp_ms` gets
/// the commit timestamp when given. Errors: CORRUPT_MESSAGE.
status_or<offset_and_metadata> decode_offset_value(std::string_view value,
                                                   int64_t* commit_timestamp_ms = nullptr);

/// One line describing a record of `__transaction_state` or
/// `__consumer_offsets` (Kafka's TransactionLogMessageFormatter and
/// OffsetsMessageFormatter, for reading the internal topics):
/// "transactional.id=<id> producerId=... state=PrepareCommit partitions=[t-0,t-1] ..."
/// or "group=<g> topic=<t> partition=<p> offset=<o> metadata=<m>" or
/// "group=<g> generation=<n> protocolType=<t> protocol=<p> leader=<l>
/// members=[<member id>(instance=<i>),...]"; a null value prints as
/// "<null>". Undecodable bytes print the decoding error.
std::string describe(const std::string& topic, std::string_view key, std::string_view value,
                     bool null_value);

} // namespace caftx::coordinator_records
