#include "actors/group/group_offsets_loader.hpp"

#include <optional>
#include <utility>
#include <vector>

#include "runtime/coordinator_records.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {

namespace {

// One decoded record of a data batch: an offset, or a group's record.
struct offset_entry {
  group_offset_key key;
  offset_and_metadata value;
  int64_t commit_timestamp_ms = -1;
  bool null_value = false;
  int64_t log_offset = -1;
  std::optional<group_metadata_record> group{}; // a group record (its group id if null)
};

} // namespace

status_or<bool> group_offsets_loader::next_chunk(group_coordinator_core& core,
                                                 group_membership_core& members,
                                                 size_t max_records) {
  constexpr const char* what = "__consumer_offsets";
  size_t read = 0;
  v2::batch_header h;
  std::string_view bytes;
  while (read < max_records) {
    auto more = next_batch(what, h, bytes);
    if (!more.ok())
      return more.error();
    if (!*more)
      break;
    auto b = v2::decode(bytes);
    if (!b.ok())
      return bad(what, h.base_offset, b.error().message());
    if (b->is_control()) {
      auto marker = parse_control_batch(*b);
      if (!marker)
        return bad(what, h.base_offset, "control batch without a marker record");
      core.apply_marker(b->pid, b->epoch, marker->type, h.max_timestamp);
      replayed(h, 1);
      ++read;
      continue;
    }
    // The whole batch decodes before any of it is applied.
    std::vector<offset_entry> entries;
    for (size_t i = 0; i < b->records.size(); ++i) {
      auto& r = b->records[i];
      // Its offset in the log (a cleaned batch keeps its records' offsets).
      int64_t offset = h.base_offset + (r.offset_delta >= 0 ? r.offset_delta : static_cast<int64_t>(i));
      if (coordinator_records::is_group_key(r.key)) {
        // In any data batch, as Kafka's loadGroupsAndOffsets reads them
        // (caftx writes them in plain batches only).
        auto group = coordinator_records::decode_group_key(r.key);
        if (!group.ok())
          return bad(what, offset, group.error().message());
        offset_entry e;
        e.null_value = r.null_value;
        e.log_offset = offset;
        if (r.null_value) {
          e.group = group_metadata_record{};
          e.group->group_id = std::move(group).value();
        } else {
          auto v = coordinator_records::decode_group_value(std::move(group).value(), r.value);
          if (!v.ok())
            return bad(what, offset, v.error().message());
          e.group = std::move(v).value();
        }
        entries.push_back(std::move(e));
        continue;
      }
      auto key = coordinator_records::decode_offset_key(r.key);
      if (!key.ok())
        return bad(what, offset, key.error().message());
      offset_entry e{std::move(key).value(), {}, -1, r.null_value, offset};
      if (!r.null_value) {
        auto v = coordinator_records::decode_offset_value(r.value, &e.commit_timestamp_ms);
        if (!v.ok())
          return bad(what, offset, v.error().message());
        e.value = std::move(v).value();
      }
      entries.push_back(std::move(e));
    }
    for (auto& e : entries) {
      if (e.group) {
        if (e.null_value)
          members.load_tombstone(e.group->group_id);
        else
          members.load_record(*e.group);
      } else if (b->is_transactional()) {
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
    replayed(h, entries.size());
  }
  return used_up();
}

} // namespace caftx
