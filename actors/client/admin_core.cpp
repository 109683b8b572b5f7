#include "actors/client/admin_core.hpp"

#include <algorithm>

namespace caftx {

const char* to_string(hanging_reason r) {
  switch (r) {
    case hanging_reason::no_transactional_id: return "no_transactional_id";
    case hanging_reason::transactional_id_not_found: return "transactional_id_not_found";
    case hanging_reason::partition_not_in_transaction: return "partition_not_in_transaction";
  }
  return "no_transactional_id";
}

std::vector<open_transaction> hanging_candidates(const topic_partition& tp,
                                                 const std::vector<active_producer>& producers,
                                                 int64_t now_ms,
                                                 int64_t max_transaction_timeout_ms) {
  std::vector<open_transaction> result;
  for (auto& p : producers)
    if (p.current_txn_start_offset >= 0
        && now_ms - p.last_timestamp_ms > max_transaction_timeout_ms)
      result.push_back({tp, p});
  return result;
}

std::vector<hanging_transaction>
filter_hanging(const std::vector<open_transaction>& candidates,
               const std::vector<transaction_listing>& listings,
               const std::map<std::string, std::optional<std::vector<topic_partition>>>&
                 partitions_by_id) {
  std::map<producer_id, std::string> id_of;
  for (auto& l : listings)
    id_of[l.pid] = l.transactional_id;
  std::vector<hanging_transaction> result;
  for (auto& c : candidates) {
    auto& p = c.producer;
    hanging_transaction h{c.tp, p.pid, p.epoch, p.coordinator_epoch,
                          p.current_txn_start_offset, p.last_timestamp_ms, {},
                          hanging_reason::no_transactional_id};
    auto i = id_of.find(p.pid);
    if (i == id_of.end()) {
      result.push_back(std::move(h));
      continue;
    }
    h.transactional_id = i->second;
    auto d = partitions_by_id.find(i->second);
    if (d == partitions_by_id.end() || !d->second) {
      h.reason = hanging_reason::transactional_id_not_found;
      result.push_back(std::move(h));
      continue;
    }
    auto& tps = *d->second;
    if (std::find(tps.begin(), tps.end(), c.tp) == tps.end()) {
      h.reason = hanging_reason::partition_not_in_transaction;
      result.push_back(std::move(h));
    }
  }
  return result;
}

std::optional<active_producer> open_transaction_at(const std::vector<active_producer>& producers,
                                                   int64_t start_offset) {
  for (auto& p : producers)
    if (p.current_txn_start_offset >= 0 && p.current_txn_start_offset == start_offset)
      return p;
  return std::nullopt;
}

} // namespace caftx
