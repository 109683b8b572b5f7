#include "actors/group/group_offsets_loader.hpp"

#include <utility>
#include <vector>

#include "runtime/coordinator_records.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {

void group_offsets_loader::feed(std::string records) {
  fed_ = std::move(records);
  pos_ = 0;
}

namespace {

// One decoded offset record of a data batch.
struct offset_entry {
  group_offset_key key;
  offset_and_metadata value;
  int64_t commit_timestamp_ms = -1;
  bool null_value = false;
  int64_t log_offset = -1;
};

} // namespace

status_or<bool> group_offsets_loader::next_chunk(group_coordinator_core& core,
                                                 size_t max_records) {
  auto bad = [&](int64_t offset, const std::string& what) {
    return status{error_code::kafka_storage_error, "__consumer_offsets record at offset "
                                                     + std::to_string(offset) + ": " + what};
  };
  size_t read = 0;
  std::string_view all{fed_};
  while (pos_ < all.size() && read < max_records && !done()) {
    auto h = v2::read_header(all.substr(pos_));
    if (!h.ok())
      return bad(next_offset_, h.error().message());
    auto bytes = all.substr(pos_, static_cast<size_t>(h->size()));
    pos_ += bytes.size();
    if (h->last_offset() < next_offset_)
      continue; // the batch holding the offset a fetch started before
    auto b = v2::decode(bytes);
    if (!b.ok())
      return bad(h->base_offset, b.error().message());
    if (b->is_control()) {
      auto marker = parse_control_batch(*b);
      if (!marker)
        return bad(h->base_offset, "control batch without a marker record");
      core.apply_marker(b->pid, b->epoch, marker->type, h->max_timestamp);
      next_offset_ = h->last_offset() + 1;
      ++read;
      ++loaded_;
      continue;
    }
    // The whole batch decodes before any of it is applied.
    std::vector<offset_entry> entries;
    int64_t offset = h->base_offset;
    for (auto& r : b->records) {
      auto key = coordinator_records::decode_offset_key(r.key);
      if (!key.ok())
        return bad(offset, key.error().message());
      offset_entry e{std::move(key).value(), {}, -1, r.null_value, offset};
      if (!r.null_value) {
        auto v = coordinator_records::decode_offset_value(r.value, &e.commit_timestamp_ms);
        if (!v.ok())
          return bad(offset, v.error().message());
        e.value = std::move(v).value();
      }
      entries.push_back(std::move(e));
      ++offset;
    }
    for (auto& e : entries) {
      if (b->is_transactional()) {
        // A transaction's offsets are never tombstones (Kafka writes none).
        if (!e.null_value)
          core.apply_txn_offset_commit(b->pid, b->epoch, e.key, e.value, e.commit_timestamp_ms,
                                       e.log_offset);
      } else if (e.null_value) {
        core.apply_tombstone(e.key);
      } else {
        core.apply_commit(e.key, e.value, e.commit_timestamp_ms, e.log_offset);
      }
    }
    read += entries.size();
    loaded_ += entries.size();
    next_offset_ = h->last_offset() + 1;
  }
  return pos_ >= all.size() || done();
}

} // namespace caftx
