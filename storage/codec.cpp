#include "storage/codec.hpp"

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>
#include <boost/serialization/version.hpp>

#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>

namespace boost::serialization {

template <class Archive, class Tag, class Rep>
void serialize(Archive& ar, caftx::strong_id<Tag, Rep>& x, unsigned) {
  ar & x.value;
}

template <class Archive>
void serialize(Archive& ar, caftx::topic_partition& x, unsigned) {
  ar & x.topic & x.partition;
}

// Class version 0: the fields of value version 1 as first written.
// Class version 1 appends next_pid, ended_by_pid, ended_by_epoch (the
// end-of-transaction epoch bump, KIP-890 part 2); a version 0 card reads
// them as -1.
template <class Archive>
void serialize(Archive& ar, caftx::txn_card& x, unsigned version) {
  auto state = static_cast<int8_t>(x.state);
  ar & x.transactional_id & x.pid & x.previous_pid & x.epoch & x.txn_timeout_ms & state
    & x.partitions & x.txn_start_ms & x.last_update_ms;
  x.state = static_cast<caftx::txn_state>(state);
  if (version >= 1)
    ar & x.next_pid & x.ended_by_pid & x.ended_by_epoch;
}

} // namespace boost::serialization

BOOST_CLASS_VERSION(caftx::txn_card, 1)

namespace caftx::codec {

namespace {

template <class... Ts>
std::string encode_values(Ts&... xs) {
  std::ostringstream os;
  os.put(static_cast<char>(value_version));
  {
    boost::archive::binary_oarchive oa{os, boost::archive::no_header | boost::archive::no_codecvt};
    (oa << ... << xs);
  }
  return os.str();
}

template <class... Ts>
status decode_values(std::string_view bytes, const char* what, Ts&... xs) {
  if (bytes.empty())
    return {error_code::kafka_storage_error, std::string("empty ") + what + " value"};
  auto version = static_cast<uint8_t>(bytes[0]);
  if (version != value_version)
    return {error_code::kafka_storage_error,
            std::string("unknown ") + what + " value version " + std::to_string(version)};
  try {
    std::istringstream is{std::string(bytes.substr(1))};
    boost::archive::binary_iarchive ia{is, boost::archive::no_header | boost::archive::no_codecvt};
    (ia >> ... >> xs);
  } catch (const std::exception& e) {
    return {error_code::kafka_storage_error, std::string("corrupt ") + what + " value: " + e.what()};
  }
  return {};
}

template <class T>
status_or<T> decode_one(std::string_view bytes, const char* what) {
  T x{};
  if (auto st = decode_values(bytes, what, x); !st.ok())
    return st;
  return x;
}

} // namespace

namespace {

// Reads a card's archive as Boost's binary_iarchive lays it out
// (storage/FORMAT.md) without building an archive: the coordinator's load
// decodes every card of a shard, and an archive per card costs several
// times the LevelDB scan. Anything but the layout class versions 0 and 1
// write (a tracking flag set, an unknown class version, a short or longer
// value) gives nullopt, and the archive then decides.
class card_reader {
public:
  explicit card_reader(std::string_view bytes) : p_(bytes.data()), end_(p_ + bytes.size()) {}

  std::optional<txn_card> read() {
    txn_card c;
    uint32_t card_version = 0;
    auto state = static_cast<int8_t>(c.state);
    bool ok = class_info(card_version) && card_version <= 1 && string(c.transactional_id)
              && class_info_v0() && raw(c.pid.value) && raw(c.previous_pid.value)
              && class_info_v0() && raw(c.epoch.value) && raw(c.txn_timeout_ms) && raw(state)
              && partitions(c.partitions) && raw(c.txn_start_ms) && raw(c.last_update_ms)
              && (card_version == 0
                  || (raw(c.next_pid.value) && raw(c.ended_by_pid.value)
                      && raw(c.ended_by_epoch.value)))
              && p_ == end_;
    if (!ok)
      return std::nullopt;
    c.state = static_cast<txn_state>(state);
    return c;
  }

private:
  template <class T>
  bool raw(T& x) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T))
      return false;
    std::memcpy(&x, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }

  // An untracked class's first appearance: tracking flag 0, then version.
  bool class_info(uint32_t& version) {
    uint8_t tracking = 1;
    return raw(tracking) && tracking == 0 && raw(version);
  }

  bool class_info_v0() {
    uint32_t version = 1;
    return class_info(version) && version == 0;
  }

  bool string(std::string& s) {
    uint64_t n = 0;
    if (!raw(n) || n > static_cast<uint64_t>(end_ - p_))
      return false;
    s = std::string(p_, n);
    p_ += n;
    return true;
  }

  // vector: its class info, count, item version 0; topic_partition's class
  // info before the first element only.
  bool partitions(std::vector<topic_partition>& tps) {
    uint64_t count = 0;
    uint32_t item_version = 1;
    if (!class_info_v0() || !raw(count) || !raw(item_version) || item_version != 0)
      return false;
    // An element takes 12 bytes at least: no allocation beyond the input.
    if (count > static_cast<uint64_t>(end_ - p_) / 12)
      return false;
    if (count == 0)
      return true;
    if (!class_info_v0())
      return false;
    tps.resize(count);
    for (auto& tp : tps)
      if (!string(tp.topic) || !raw(tp.partition))
        return false;
    return true;
  }

  const char* p_;
  const char* end_;
};

} // namespace

std::string encode(const txn_card& card) {
  return encode_values(const_cast<txn_card&>(card));
}

std::optional<txn_card> read_card_layout(std::string_view bytes) {
  if (bytes.empty() || static_cast<uint8_t>(bytes[0]) != value_version)
    return std::nullopt;
  return card_reader{bytes.substr(1)}.read();
}

status_or<txn_card> decode_card(std::string_view bytes) {
  auto direct = read_card_layout(bytes);
  auto card = direct ? status_or<txn_card>(std::move(*direct))
                     : decode_one<txn_card>(bytes, "transaction state card");
  // Dead and PrepareEpochFence are never persisted (docs/transactions.md §States).
  if (card.ok() && (static_cast<int8_t>(card->state) < 0
                    || static_cast<int8_t>(card->state) > static_cast<int8_t>(txn_state::complete_abort)))
    return status{error_code::kafka_storage_error,
                  "transaction state card with invalid state "
                    + std::to_string(static_cast<int>(card->state))};
  return card;
}

std::string encode(const topic_record& topic) {
  auto t = topic;
  return encode_values(t.name, t.partitions, t.configs);
}

status_or<topic_record> decode_topic(std::string_view bytes) {
  topic_record r;
  if (auto st = decode_values(bytes, "topic", r.name, r.partitions, r.configs); !st.ok())
    return st;
  return r;
}

std::string encode_int64(int64_t v) {
  return encode_values(v);
}

status_or<int64_t> decode_int64(std::string_view bytes) {
  return decode_one<int64_t>(bytes, "counter");
}

} // namespace caftx::codec

namespace caftx::keys {

namespace {

std::string padded(int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*lld", width, static_cast<long long>(v));
  return buf;
}

// `<kind>/<topic>\0<partition:010>/`
std::string tp_prefix(const char* kind, const topic_partition& tp) {
  return kind + ("/" + tp.topic) + std::string(1, '\0') + padded(tp.partition, 10) + "/";
}

} // namespace

std::string log_prefix(const topic_partition& tp) {
  return tp_prefix("log", tp);
}

std::string log_entry(const topic_partition& tp, int64_t offset) {
  return log_prefix(tp) + padded(offset, 20);
}

std::string producer_snapshot_prefix(const topic_partition& tp) {
  return tp_prefix("pstate", tp);
}

std::string producer_snapshot(const topic_partition& tp, int64_t offset) {
  return producer_snapshot_prefix(tp) + padded(offset, 20);
}

std::string log_start(const topic_partition& tp) {
  return tp_prefix("logstart", tp);
}

std::string leader_epochs(const topic_partition& tp) {
  return tp_prefix("epoch", tp);
}

std::string cleaner_checkpoint(const topic_partition& tp) {
  return tp_prefix("cleaner", tp);
}

std::string aborted_txn_prefix(const topic_partition& tp) {
  return tp_prefix("aborted", tp);
}

std::string aborted_txn(const topic_partition& tp, int64_t marker_offset) {
  return aborted_txn_prefix(tp) + padded(marker_offset, 20);
}

int64_t offset_of(std::string_view key) {
  if (key.size() < 20)
    return -1;
  int64_t v = 0;
  for (char c : key.substr(key.size() - 20)) {
    if (c < '0' || c > '9')
      return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string topic(const std::string& name) {
  return topic_prefix + name;
}

std::string card_prefix(int32_t shard) {
  return "txn/" + padded(shard, 2) + "/";
}

std::string card(int32_t shard, const std::string& transactional_id) {
  return card_prefix(shard) + transactional_id;
}

std::string coordinator_epoch(int32_t shard) {
  return "txnmeta/" + padded(shard, 2) + "/coordinator_epoch";
}

std::string next_pid(int32_t shard) {
  return "txnmeta/" + padded(shard, 2) + "/next_pid";
}

} // namespace caftx::keys
