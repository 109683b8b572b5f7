// Committed consumer offsets: value types.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "runtime/ids.hpp"

namespace caftx {

/// One committed offset: the next offset the group will read.
struct offset_and_metadata {
  int64_t offset = -1;
  std::string metadata;
  friend bool operator==(const offset_and_metadata& a, const offset_and_metadata& b) {
    return a.offset == b.offset && a.metadata == b.metadata;
  }
};

/// Key of a committed offset.
struct group_offset_key {
  std::string group;
  topic_partition tp;
  friend bool operator<(const group_offset_key& a, const group_offset_key& b) {
    return std::tie(a.group, a.tp) < std::tie(b.group, b.tp);
  }
  friend bool operator==(const group_offset_key& a, const group_offset_key& b) {
    return a.group == b.group && a.tp == b.tp;
  }
};

} // namespace caftx
