#include "protocol/kafka_wire.hpp"

namespace caftx::kafka {

void reader::fail(const std::string& why) {
  if (error_.empty())
    error_ = why;
  pos_ = data_.size();
}

bool reader::need(size_t n) {
  if (!error_.empty())
    return false;
  if (data_.size() - pos_ < n) {
    fail("truncated: " + std::to_string(n) + " bytes needed at byte " + std::to_string(pos_)
         + ", " + std::to_string(data_.size() - pos_) + " left");
    return false;
  }
  return true;
}

namespace {

template <class T>
T read_be(std::string_view data, size_t pos) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v = (v << 8) | static_cast<uint8_t>(data[pos + i]);
  return static_cast<T>(v);
}

template <class T>
void write_be(std::string& out, T v) {
  auto u = static_cast<uint64_t>(v);
  for (size_t i = sizeof(T); i-- > 0;)
    out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

} // namespace

int8_t reader::int8() {
  if (!need(1))
    return 0;
  return static_cast<int8_t>(data_[pos_++]);
}

template <class T>
T reader::fixed() {
  if (!need(sizeof(T)))
    return 0;
  auto v = read_be<T>(data_, pos_);
  pos_ += sizeof(T);
  return v;
}

int16_t reader::int16() {
  return fixed<int16_t>();
}

int32_t reader::int32() {
  return fixed<int32_t>();
}

int64_t reader::int64() {
  return fixed<int64_t>();
}

uint32_t reader::uvarint() {
  uint32_t v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (!need(1))
      return 0;
    auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0)
      return v;
  }
  fail("varint longer than 5 bytes");
  return 0;
}

int32_t reader::varint() {
  auto u = uvarint();
  return static_cast<int32_t>((u >> 1) ^ -(u & 1));
}

int64_t reader::varlong() {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (!need(1))
      return 0;
    auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0)
      return static_cast<int64_t>((v >> 1) ^ -(v & 1));
  }
  fail("varlong longer than 10 bytes");
  return 0;
}

std::string reader::required(std::optional<std::string> s) {
  if (!s) {
    fail("null where a string is required");
    return {};
  }
  return std::move(*s);
}

std::string reader::string() {
  return required(nullable_string());
}

std::optional<std::string> reader::sized(int64_t n, const char* what) {
  if (!ok() || n == -1)
    return std::nullopt;
  if (n < 0) {
    fail(std::string(what) + " length " + std::to_string(n));
    return std::nullopt;
  }
  if (!need(static_cast<size_t>(n)))
    return std::nullopt;
  std::string s{data_.substr(pos_, static_cast<size_t>(n))};
  pos_ += static_cast<size_t>(n);
  return s;
}

std::optional<std::string> reader::nullable_string() {
  return sized(int16(), "string");
}

std::optional<std::string> reader::compact_nullable_string() {
  return sized(static_cast<int64_t>(uvarint()) - 1, "string");
}

std::string reader::compact_string() {
  return required(compact_nullable_string());
}

std::optional<std::string> reader::nullable_bytes() {
  return sized(int32(), "bytes");
}

std::optional<std::string> reader::compact_nullable_bytes() {
  return compact_nullable_string();
}

std::optional<int32_t> reader::array_length(bool compact) {
  int64_t n = compact ? static_cast<int64_t>(uvarint()) - 1 : int32();
  if (!ok() || n == -1)
    return std::nullopt;
  if (n < 0) {
    fail("array length " + std::to_string(n));
    return std::nullopt;
  }
  // Every element takes at least one byte.
  if (static_cast<uint64_t>(n) > remaining()) {
    fail("array length " + std::to_string(n) + " above the " + std::to_string(remaining())
         + " bytes left");
    return std::nullopt;
  }
  return static_cast<int32_t>(n);
}

void reader::skip_tagged_fields() {
  auto count = uvarint();
  for (uint32_t i = 0; ok() && i < count; ++i) {
    uvarint(); // tag
    auto size = uvarint();
    if (need(size))
      pos_ += size;
  }
}

void writer::int16(int16_t v) {
  write_be(out_, v);
}

void writer::int32(int32_t v) {
  write_be(out_, v);
}

void writer::int64(int64_t v) {
  write_be(out_, v);
}

void writer::uvarint(uint32_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void writer::varint(int32_t v) {
  uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

void writer::string(std::string_view s) {
  int16(static_cast<int16_t>(s.size()));
  raw(s);
}

void writer::nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    int16(-1);
    return;
  }
  string(*s);
}

void writer::compact_string(std::string_view s) {
  uvarint(static_cast<uint32_t>(s.size() + 1));
  raw(s);
}

void writer::compact_nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    uvarint(0);
    return;
  }
  compact_string(*s);
}

void writer::nullable_bytes(const std::optional<std::string>& b) {
  if (!b) {
    int32(-1);
    return;
  }
  int32(static_cast<int32_t>(b->size()));
  raw(*b);
}

void writer::compact_nullable_bytes(const std::optional<std::string>& b) {
  compact_nullable_string(b);
}

void writer::array_length(int32_t n, bool compact) {
  if (compact)
    uvarint(static_cast<uint32_t>(n + 1));
  else
    int32(n);
}

} // namespace caftx::kafka
