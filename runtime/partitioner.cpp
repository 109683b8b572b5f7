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

int32_t partition_for_key(std::string_view key, int32_t partition_count) {
  return partition_for(key, partition_count);
}

} // namespace caftx
