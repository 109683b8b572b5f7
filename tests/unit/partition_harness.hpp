// A partition_core with its log in memory, as the tests of the core need it:
// batches go through the core and their RecordBatch v2 bytes into a map the
// core's fetch() and list_offset() read through a batch_reader, so a fetch
// returns what the partition actor would send (then decoded for checking).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "actors/partition/memory_log.hpp"
#include "actors/partition/partition_core.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx::testing {

/// A fetch's answer with its records decoded.
struct decoded_fetch {
  int64_t high_watermark = 0;
  int64_t last_stable_offset = 0;
  int64_t log_start_offset = 0;
  std::vector<record_batch> batches;
  std::vector<aborted_transaction> aborted;
};

class logged_partition : public partition_core {
public:
  using partition_core::partition_core;

  using partition_core::validate_produce;
  status_or<produce_decision> validate_produce(const record_batch& b) const {
    return partition_core::validate_produce(info_of(b));
  }
  bool needs_verification(const record_batch& b) const {
    return partition_core::needs_verification(info_of(b));
  }

  /// Appends a client batch (already validated) and stores its bytes.
  record_batch append(record_batch b, int64_t) {
    auto r = partition_core::append(sized_info(b));
    b.base_offset = r.base_offset;
    log_.put(b.base_offset, v2::encode(b, 0));
    return b;
  }

  /// info_of(b) with the size of its encoding (what a leader counts).
  static batch_info sized_info(const record_batch& b) {
    auto i = info_of(b);
    i.size_bytes = static_cast<int32_t>(v2::encode(b, 0).size());
    return i;
  }

  record_batch append_marker(producer_id pid, producer_epoch epoch, end_txn_marker m,
                             int64_t now_ms) {
    auto [batch, r] = partition_core::append_marker(pid, epoch, m, now_ms);
    log_.put(batch.base_offset, v2::encode(batch, 0));
    return batch;
  }

  /// Replays a batch read back from storage and stores it.
  status replay(const record_batch& b) {
    auto st = partition_core::replay(sized_info(b));
    if (st.ok())
      log_.put(b.base_offset, v2::encode(b, 0));
    return st;
  }

  /// Appends a batch fetched from the leader and stores it.
  status_or<append_result> append_replica(const record_batch& b) {
    auto r = partition_core::append_replica(sized_info(b));
    if (r.ok())
      log_.put(b.base_offset, v2::encode(b, 0));
    return r;
  }

  batch_reader reader() const { return log_.reader(); }
  /// The stored batches (the cleaner's tests rewrite them).
  memory_log& stored() { return log_; }
  const memory_log& stored() const { return log_; }

  status_or<decoded_fetch> fetch(int64_t offset, int32_t max_bytes, isolation_level iso) const {
    auto r = partition_core::fetch(reader(), offset, max_bytes, iso);
    if (!r.ok())
      return r.error();
    auto batches = v2::decode_all(r->records);
    if (!batches.ok())
      return batches.error();
    return decoded_fetch{r->high_watermark, r->last_stable_offset, r->log_start_offset,
                         std::move(batches).value(), std::move(r->aborted)};
  }

  int64_t list_offset(int64_t timestamp, isolation_level iso) const {
    auto r = partition_core::list_offset(reader(), timestamp, iso);
    return r.ok() ? *r : -100;
  }

private:
  memory_log log_;
};

} // namespace caftx::testing
