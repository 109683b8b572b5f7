#include "actors/client/read_committed_filter.hpp"

#include <algorithm>
#include <set>

namespace caftx {

filtered_fetch filter_fetched(const topic_partition& tp, int64_t fetch_offset,
                              const std::vector<record_batch>& batches,
                              const std::vector<aborted_transaction>& aborted,
                              isolation_level isolation, size_t max_records) {
  filtered_fetch out;
  out.next_offset = fetch_offset;
  // Aborted transactions by first offset; a producer id is "aborted" from
  // its first offset until its ABORT marker.
  std::vector<aborted_transaction> heap = aborted;
  std::sort(heap.begin(), heap.end(), [](auto& a, auto& b) { return a.first_offset < b.first_offset; });
  size_t next_aborted = 0;
  std::set<producer_id> aborted_pids;
  size_t at_most = 0;
  for (auto& b : batches)
    if (!b.is_control() && b.last_offset() >= fetch_offset)
      at_most += b.records.size();
  out.records.reserve(std::min(at_most, max_records));
  for (auto& b : batches) {
    if (b.last_offset() < fetch_offset)
      continue;
    if (isolation == isolation_level::read_committed && b.pid != no_producer_id) {
      while (next_aborted < heap.size() && heap[next_aborted].first_offset <= b.last_offset())
        aborted_pids.insert(heap[next_aborted++].pid);
      if (b.is_control()) {
        auto m = parse_control_batch(b);
        if (m && m->type == control_type::abort)
          aborted_pids.erase(b.pid);
        out.next_offset = b.last_offset() + 1;
        continue;
      }
      if (b.is_transactional() && aborted_pids.count(b.pid)) {
        out.next_offset = b.last_offset() + 1;
        continue;
      }
    }
    if (b.is_control()) {
      out.next_offset = b.last_offset() + 1;
      continue;
    }
    for (size_t k = 0; k < b.records.size(); ++k) {
      int64_t off = b.offset_of(k); // a cleaned batch's offsets have gaps
      if (off < fetch_offset)
        continue;
      if (out.records.size() == max_records)
        return out;
      auto& r = b.records[k];
      out.records.push_back({tp.topic, tp.partition, off, r.timestamp_ms, r.key, r.value, r.headers,
                             r.null_value});
      out.next_offset = off + 1;
    }
    // Past the batch's last offset also where the cleaner removed its last
    // records (or all of them: an empty batch kept for its producer).
    out.next_offset = std::max(out.next_offset, b.last_offset() + 1);
  }
  return out;
}

} // namespace caftx
