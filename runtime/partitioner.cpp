#include "runtime/partitioner.hpp"

#include <limits>

namespace caftx {

namespace {

// Decodes one code point at `i`, advancing `i`; U+FFFD on malformed input.
uint32_t next_code_point(std::string_view s, size_t& i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : -1;
  if (extra < 0 || i + extra >= s.size() + (extra == 0 ? 1 : 0)) {
    ++i;
    return 0xfffd;
  }
  if (extra == 0) {
    ++i;
    return c;
  }
  uint32_t cp = c & (0x3f >> extra);
  for (int k = 1; k <= extra; ++k) {
    if (i + k >= s.size() || (byte(i + k) & 0xc0) != 0x80) {
      ++i;
      return 0xfffd;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  i += extra + 1;
  return cp;
}

} // namespace

int32_t java_string_hash(std::string_view utf8) {
  uint32_t h = 0;
  size_t i = 0;
  while (i < utf8.size()) {
    uint32_t cp = next_code_point(utf8, i);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      h = 31 * h + (0xd800 + (cp >> 10));
      h = 31 * h + (0xdc00 + (cp & 0x3ff));
    } else {
      h = 31 * h + cp;
    }
  }
  return static_cast<int32_t>(h);
}

int32_t kafka_abs(int32_t n) {
  return n == std::numeric_limits<int32_t>::min() ? 0 : (n < 0 ? -n : n);
}

int32_t partition_for(std::string_view key, int32_t partition_count) {
  return kafka_abs(java_string_hash(key)) % partition_count;
}

int32_t murmur2(std::string_view bytes) {
  // Kafka's Utils.murmur2. Java reads each byte as a signed byte and masks
  // it with 0xff, so every byte is taken as unsigned here; the arithmetic
  // is done on uint32_t, where Java's int wraps the same way, and `>>` on
  // uint32_t is Java's `>>>`.
  constexpr uint32_t seed = 0x9747b28c;
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
  const size_t length = bytes.size();
  uint32_t h = seed ^ static_cast<uint32_t>(length);
  for (size_t i4 = 0; i4 + 4 <= length; i4 += 4) {
    uint32_t k = byte(i4) | (byte(i4 + 1) << 8) | (byte(i4 + 2) << 16) | (byte(i4 + 3) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const size_t tail = length & ~size_t{3};
  switch (length % 4) {
  case 3:
    h ^= byte(tail + 2) << 16;
    [[fallthrough]];
  case 2:
    h ^= byte(tail + 1) << 8;
    [[fallthrough]];
  case 1:
    h ^= byte(tail);
    h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

int32_t to_positive(int32_t n) {
  return n & 0x7fffffff;
}

int32_t partition_for_key(std::string_view key, int32_t partition_count) {
  return to_positive(murmur2(key)) % partition_count;
}

} // namespace caftx
