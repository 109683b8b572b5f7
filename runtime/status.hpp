// status and status_or<T>: a Kafka error code plus a message, LevelDB style.
// Value types; thread-compatible.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/error_code.hpp"

namespace caftx {

/// The outcome of an operation: ok, or a Kafka error code with a message.
class [[nodiscard]] status {
public:
  status() = default;
  status(error_code code, std::string message) : code_(code), message_(std::move(message)) {}
  static status ok_status() { return {}; }
  bool ok() const { return code_ == error_code::none; }
  error_code code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "PRODUCER_FENCED: <message>", or "OK".
  std::string to_string() const {
    if (ok())
      return "OK";
    return std::string(caftx::to_string(code_)) + (message_.empty() ? "" : ": " + message_);
  }

private:
  error_code code_ = error_code::none;
  std::string message_;
};

/// Thrown by status_or<T>::value() on an error: what() is the error's
/// to_string() ("KAFKA_STORAGE_ERROR: cannot open data directory ..."),
/// status() the code and message.
class status_error : public std::runtime_error {
public:
  explicit status_error(caftx::status st) : std::runtime_error(st.to_string()), status_(std::move(st)) {}
  const caftx::status& status() const { return status_; }
  error_code code() const { return status_.code(); }

private:
  caftx::status status_;
};

/// A value or a non-ok status. value() throws status_error when there is
/// no value; operator* and operator-> must only be used after ok().
template <class T>
class [[nodiscard]] status_or {
public:
  status_or(T value) : value_(std::move(value)) {}
  status_or(status st) : status_(std::move(st)) {}
  bool ok() const { return value_.has_value(); }
  const status& error() const { return status_; }
  T& value() & { return checked(); }
  const T& value() const& { return checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

private:
  T& checked() {
    if (!value_)
      throw status_error(status_);
    return *value_;
  }
  const T& checked() const {
    if (!value_)
      throw status_error(status_);
    return *value_;
  }

  std::optional<T> value_;
  status status_;
};

} // namespace caftx
