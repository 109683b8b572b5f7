// Shared helpers of the unit tests: readable printing of caftx value types
// in GoogleTest failure messages, per-test temporary directories. Header
// only; not a test file itself.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>

#include <unistd.h>

#include "runtime/error_code.hpp"
#include "runtime/ids.hpp"
#include "runtime/txn_card.hpp"

namespace caftx {

/// Lower-case hex of `bytes`, and back (golden-bytes tests).
inline std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 0xf]);
  }
  return out;
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

inline void PrintTo(error_code code, std::ostream* os) {
  *os << to_string(code) << " (" << static_cast<int>(code) << ")";
}

inline void PrintTo(txn_state s, std::ostream* os) {
  *os << to_string(s);
}

inline void PrintTo(const topic_partition& tp, std::ostream* os) {
  *os << to_string(tp);
}

inline void PrintTo(const txn_card& c, std::ostream* os) {
  *os << "{" << c.transactional_id << " " << to_string(c.state) << " pid " << c.pid
      << " prev " << c.previous_pid << " epoch " << c.epoch << " timeout " << c.txn_timeout_ms
      << " partitions [";
  for (auto& tp : c.partitions)
    *os << to_string(tp) << " ";
  *os << "] start " << c.txn_start_ms << " update " << c.last_update_ms << " next "
      << c.next_pid << " ended_by " << c.ended_by_pid << "/" << c.ended_by_epoch << " last "
      << c.last_epoch << "}";
}

/// `<gtest temp dir>/caftx-<what>-<current test name>-<pid>`: a path of
/// the running test's own, removed first so that the test starts empty.
inline std::string fresh_test_dir(const std::string& what) {
  auto info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = (std::filesystem::path(::testing::TempDir())
              / ("caftx-" + what + "-" + std::string(info->name()) + "-"
                 + std::to_string(::getpid())))
               .string();
  std::filesystem::remove_all(dir);
  return dir;
}

} // namespace caftx
