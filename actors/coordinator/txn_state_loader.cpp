#include "actors/coordinator/txn_state_loader.hpp"

#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx {

namespace {

status_or<int64_t> read_counter(const node_store& store, const std::string& key,
                                int64_t missing) {
  auto v = store.get(key);
  if (!v)
    return missing;
  auto x = codec::decode_int64(*v);
  if (!x.ok())
    return status{x.error().code(), "key " + key + ": " + x.error().message()};
  return x;
}

} // namespace

status_or<txn_shard_meta> read_txn_shard_meta(const node_store& store, int32_t shard) {
  txn_shard_meta meta;
  auto epoch = read_counter(store, keys::coordinator_epoch(shard), -1);
  if (!epoch.ok())
    return epoch.error();
  meta.coordinator_epoch = epoch.value();
  auto counter = read_counter(store, keys::next_pid(shard), 0);
  if (!counter.ok())
    return counter.error();
  meta.next_pid_counter = counter.value();
  return meta;
}

txn_state_loader::txn_state_loader(const node_store& store, int32_t shard)
  : store_(&store), prefix_(keys::card_prefix(shard)) {
}

status_or<bool> txn_state_loader::next_chunk(txn_coordinator_core& core, size_t max_cards) {
  chunk_.clear();
  chunk_.reserve(max_cards);
  status bad;
  auto visited = store_->scan_after(prefix_, last_key_, max_cards,
                                    [&](std::string_view key, std::string_view value) {
                                      if (!bad.ok())
                                        return;
                                      auto card = codec::decode_card(value);
                                      if (!card.ok()) {
                                        bad = status{card.error().code(),
                                                     "key " + std::string(key) + ": "
                                                       + card.error().message()};
                                        return;
                                      }
                                      if (key.substr(prefix_.size()) != card->transactional_id) {
                                        bad = status{error_code::kafka_storage_error,
                                                     "key " + std::string(key)
                                                       + ": card of transactional id "
                                                       + card->transactional_id};
                                        return;
                                      }
                                      chunk_.push_back(std::move(card).value());
                                    });
  if (!bad.ok())
    return bad;
  if (!chunk_.empty())
    last_key_ = prefix_ + chunk_.back().transactional_id;
  loaded_ += chunk_.size();
  core.install(chunk_, in_prepare_);
  return visited < max_cards;
}

} // namespace caftx
