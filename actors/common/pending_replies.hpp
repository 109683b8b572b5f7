// The replies a shell owes, each answered exactly once: by deliver(), or
// with request_receiver_down when the owning actor dies (its state, which
// holds this, is destroyed). A crash between a durable write and its reply
// then fails the request at once, so the requester retries now instead of
// after its request timeout. The shell keeps only the ticket in its
// continuations, never a copy of the promise. A reply may carry the
// timer of its request (docs/metrics.md §Requests), observed when it is
// answered either way. Owned by one actor; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include <caf/response_promise.hpp>
#include <caf/sec.hpp>

#include "runtime/metrics.hpp"

namespace caftx {

class pending_replies {
public:
  using ticket = uint64_t;

  pending_replies() = default;
  pending_replies(pending_replies&&) = default;
  pending_replies& operator=(pending_replies&&) = default;
  ~pending_replies() {
    for (auto& [t, owed] : owed_) {
      owed.second.observe();
      owed.first.deliver(caf::make_error(caf::sec::request_receiver_down));
    }
  }

  ticket add(caf::response_promise rp, metrics::request_timer timer = {}) {
    auto t = next_++;
    owed_.emplace(t, std::make_pair(std::move(rp), std::move(timer)));
    return t;
  }

  /// Answers `t` with `xs...`; false if it was answered already.
  template <class... Ts>
  bool deliver(ticket t, Ts&&... xs) {
    auto i = owed_.find(t);
    if (i == owed_.end())
      return false;
    auto [rp, timer] = std::move(i->second);
    owed_.erase(i);
    timer.observe();
    rp.deliver(std::forward<Ts>(xs)...);
    return true;
  }

  size_t size() const { return owed_.size(); }

private:
  ticket next_ = 1;
  std::map<ticket, std::pair<caf::response_promise, metrics::request_timer>> owed_;
};

} // namespace caftx
