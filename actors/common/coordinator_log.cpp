#include "actors/common/coordinator_log.hpp"

#include <caf/typed_event_based_actor.hpp>

#include "actors/common/partition_replay.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/txn_coordinator_messages.hpp"

namespace caftx {

namespace {

status actor_error(const coordinator_log& log, const caf::error& e) {
  return {error_code::coordinator_not_available,
          "partition " + to_string(log.tp) + " did not answer: " + caf::to_string(e)};
}

} // namespace

template <class... Sigs>
void elect(caf::typed_event_based_actor<Sigs...>* self, coordinator_log& log,
           std::function<void(const status&, const become_leader_response&)> then) {
  self->request(log.partition, log.timeout, become_leader_request{})
    .then(
      [&log, then](const become_leader_response& r) {
        if (r.error == error_code::none) {
          log.leader_epoch = r.leader_epoch;
          log.load_generation = r.load_generation;
        }
        then(status{r.error, r.message}, r);
      },
      [&log, then](const caf::error& e) { then(actor_error(log, e), {}); });
}

template <class... Sigs>
void append(caf::typed_event_based_actor<Sigs...>* self, const coordinator_log& log,
            std::string records,
            std::function<void(const status&, int64_t base_offset)> then) {
  produce_request req;
  req.tp = log.tp;
  req.records = std::move(records);
  req.from_coordinator = true;
  req.leader_epoch = log.leader_epoch;
  req.load_generation = log.load_generation;
  self->request(log.partition, log.timeout, std::move(req))
    .then([then](const produce_response& r) { then(status{r.error, r.message}, r.base_offset); },
          [then, log](const caf::error& e) { then(actor_error(log, e), -1); });
}

template <class... Sigs>
void read(caf::typed_event_based_actor<Sigs...>* self, const coordinator_log& log, int64_t offset,
          int32_t max_bytes, std::function<void(status_or<fetch_response>)> then) {
  fetch_request req;
  req.tp = log.tp;
  req.fetch_offset = offset;
  req.max_bytes = max_bytes;
  req.load_generation = log.load_generation;
  self->request(log.partition, log.timeout, std::move(req))
    .then(
      [then](fetch_response& r) {
        if (r.error != error_code::none)
          then(status{r.error, r.message});
        else
          then(std::move(r));
      },
      [then, log](const caf::error& e) { then(actor_error(log, e)); });
}

template <class... Sigs>
void elect_for_load(caf::typed_event_based_actor<Sigs...>* self, coordinator_log& log,
                    std::optional<status>& load_error,
                    std::function<void(const become_leader_response&)> elected) {
  elect(self, log, [self, &log, &load_error, elected = std::move(elected)](
                     const status& s, const become_leader_response& r) {
    if (!s.ok()) {
      load_error = status{s.code(), "partition " + to_string(log.tp) + ": " + s.message()};
      self->delayed_send(self, std::chrono::seconds(1), coordinator_load_chunk{});
      return;
    }
    load_error.reset();
    elected(r);
  });
}

template <class... Sigs>
void load_step(caf::typed_event_based_actor<Sigs...>* self, const coordinator_log& log,
               partition_replay& loader, std::function<status_or<bool>()> replay,
               std::function<void()> next_step, std::function<void(const status&, bool)> fail,
               std::function<void()> finished) {
  auto used_up = replay();
  if (!used_up.ok()) {
    fail(used_up.error(), true);
    return;
  }
  if (!used_up.value()) {
    next_step();
    return;
  }
  if (loader.done()) {
    finished();
    return;
  }
  read(self, log, loader.next_offset(), load_fetch_bytes,
       [self, &log, &loader, replay = std::move(replay), next_step = std::move(next_step),
        fail = std::move(fail), finished = std::move(finished)](status_or<fetch_response> r) mutable {
         if (!r.ok()) {
           fail(r.error(), r.error().code() == error_code::kafka_storage_error);
           return;
         }
         if (r->records.empty()) {
           // Nothing committed past the offset yet: a restarted replica's
           // high watermark is below the log end the election reported
           // until its followers fetch (or the ISR shrinks to it). The
           // load reads committed records only, so it waits for them.
           self->delayed_send(self, load_wait, coordinator_load_chunk{});
           return;
         }
         loader.feed(std::move(r->records));
         load_step(self, log, loader, std::move(replay), std::move(next_step), std::move(fail),
                   std::move(finished));
       });
}

#define CAFTX_COORDINATOR_LOG_FOR(Self)                                                            \
  template void elect(Self*, coordinator_log&,                                                     \
                      std::function<void(const status&, const become_leader_response&)>);          \
  template void append(Self*, const coordinator_log&, std::string,                                 \
                       std::function<void(const status&, int64_t)>);                               \
  template void read(Self*, const coordinator_log&, int64_t, int32_t,                              \
                     std::function<void(status_or<fetch_response>)>);                              \
  template void elect_for_load(Self*, coordinator_log&, std::optional<status>&,                    \
                               std::function<void(const become_leader_response&)>);                \
  template void load_step(Self*, const coordinator_log&, partition_replay&,                        \
                          std::function<status_or<bool>()>, std::function<void()>,                 \
                          std::function<void(const status&, bool)>, std::function<void()>);

CAFTX_COORDINATOR_LOG_FOR(txn_coordinator_impl_actor::base)
CAFTX_COORDINATOR_LOG_FOR(group_coordinator_impl_actor::base)

#undef CAFTX_COORDINATOR_LOG_FOR

} // namespace caftx
