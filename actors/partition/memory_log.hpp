// Stored batches in memory, read through a batch_reader as a partition
// leader reads LevelDB: for the cores' tests, benchmarks and tools that run
// a partition_core without a node. Not thread-safe.
#pragma once

#include <map>
#include <string>

#include "actors/partition/partition_core.hpp"

namespace caftx {

class memory_log {
public:
  /// Stores a batch's RecordBatch v2 bytes under its base offset.
  void put(int64_t base_offset, std::string bytes) { batches_[base_offset] = std::move(bytes); }
  /// Removes the batch at `base_offset` (the cleaner deleted it).
  void erase(int64_t base_offset) { batches_.erase(base_offset); }

  /// Reads from the batch holding `offset` on (the reader stays valid as
  /// long as this log does).
  batch_reader reader() const {
    return [this](int64_t offset,
                  const std::function<bool(const v2::batch_header&, std::string_view)>& fn) {
      auto i = batches_.upper_bound(offset);
      if (i != batches_.begin())
        --i;
      for (; i != batches_.end(); ++i) {
        auto h = v2::read_header(i->second);
        if (!h.ok())
          return h.error();
        if (!fn(*h, i->second))
          break;
      }
      return status{};
    };
  }

  /// The stored bytes by base offset.
  const std::map<int64_t, std::string>& batches() const { return batches_; }

private:
  std::map<int64_t, std::string> batches_;
};

} // namespace caftx
