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

} // namespace boost::serialization

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

std::string high_watermark(const topic_partition& tp) {
  return tp_prefix("hw", tp);
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


std::string next_pid(int32_t shard) {
  return "txnmeta/" + padded(shard, 2) + "/next_pid";
}

} // namespace caftx::keys
