// What a coordinator's load shares whatever its records are: the fetched
// bytes of its partition walked batch by batch in offset order, up to the
// log end offset its election reported, resuming across fetches (a fetch
// may start with the batch holding the offset asked for). The loaders of
// the transaction coordinator (txn_state_loader) and of the group
// coordinator (group_offsets_loader) derive from it. No CAF; not
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/record_batch_v2.hpp"
#include "runtime/status.hpp"

namespace caftx {

class partition_replay {
public:
  /// Replays the records below `end_offset` only.
  explicit partition_replay(int64_t end_offset) : end_offset_(end_offset) {}

  /// Hands over the next fetched bytes (whole RecordBatch v2 batches,
  /// concatenated); the ones fed before must have been consumed.
  void feed(std::string records) {
    fed_ = std::move(records);
    pos_ = 0;
  }

  /// The offset to read next: one past the last batch replayed.
  int64_t next_offset() const { return next_offset_; }
  void set_next_offset(int64_t offset) { next_offset_ = offset; }
  /// True once every record below the end offset was replayed.
  bool done() const { return next_offset_ >= end_offset_; }
  /// Records read so far.
  size_t loaded() const { return loaded_; }
  /// Offsets still to replay (an upper bound of the records left: a
  /// compacted partition has gaps).
  int64_t remaining() const { return done() ? 0 : end_offset_ - next_offset_; }

protected:
  /// The next batch of the fed bytes not yet replayed (its header and
  /// bytes), skipping one that ends before next_offset(); false once the
  /// fed bytes ended or the end offset was reached. The caller replays it
  /// and then calls replayed(). Errors: the header's, as
  /// KAFKA_STORAGE_ERROR naming the offset, prefixed with `what`.
  status_or<bool> next_batch(const char* what, v2::batch_header& h, std::string_view& bytes) {
    std::string_view all{fed_};
    while (pos_ < all.size() && !done()) {
      auto header = v2::read_header(all.substr(pos_));
      if (!header.ok())
        return bad(what, next_offset_, header.error().message());
      bytes = all.substr(pos_, static_cast<size_t>(header->size()));
      pos_ += bytes.size();
      if (header->last_offset() < next_offset_)
        continue; // the batch holding the offset a fetch started before
      h = *header;
      return true;
    }
    return false;
  }

  /// The batch `h` was replayed: `records` more records read.
  void replayed(const v2::batch_header& h, size_t records) {
    next_offset_ = h.last_offset() + 1;
    loaded_ += records;
  }

  /// True once the fed bytes are used up or the end offset reached.
  bool used_up() const { return pos_ >= fed_.size() || done(); }

  static status bad(const char* what, int64_t offset, const std::string& why) {
    return {error_code::kafka_storage_error,
            std::string(what) + " record at offset " + std::to_string(offset) + ": " + why};
  }

private:
  int64_t end_offset_;
  int64_t next_offset_ = 0;
  std::string fed_;
  size_t pos_ = 0;
  size_t loaded_ = 0;
};

} // namespace caftx
