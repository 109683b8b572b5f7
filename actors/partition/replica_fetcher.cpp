#include "actors/partition/replica_fetcher.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <map>

#include "actors/broker/node_context.hpp"
#include "actors/common/lost_connection.hpp"
#include "runtime/partition_messages.hpp"

namespace caftx {

namespace {

struct followed {
  partition_actor local;
  int32_t leader_epoch = -1;
  uint64_t generation = 0;
  replica_position position;
};

struct fetcher_state {
  std::shared_ptr<const node_context> ctx;
  int32_t leader = -1;
  uint64_t next_generation = 1;
  std::map<topic_partition, followed> partitions;
  static inline const char* name = "caftx.replica_fetcher";
};

using fetcher_ptr = replica_fetcher_actor::stateful_pointer<fetcher_state>;

// The loop of `tp` if it is still generation `g`.
followed* current(fetcher_ptr self, const topic_partition& tp, uint64_t g) {
  auto i = self->state.partitions.find(tp);
  return i == self->state.partitions.end() || i->second.generation != g ? nullptr : &i->second;
}

void retry_later(fetcher_ptr self, const topic_partition& tp, uint64_t g, bool restart,
                 int32_t delay_ms) {
  self->delayed_send(self, std::chrono::milliseconds(delay_ms), fetcher_retry{tp, g, restart});
}

void fetch(fetcher_ptr self, const topic_partition& tp, uint64_t g);

// The local replica's answer to become_follower, an append or a truncation.
void on_position(fetcher_ptr self, const topic_partition& tp, uint64_t g, replica_position p) {
  auto* f = current(self, tp, g);
  if (!f)
    return;
  auto& cfg = self->state.ctx->config;
  if (p.error != error_code::none) {
    // The replica restarted, or is being made leader: start over.
    retry_later(self, tp, g, true, cfg.replica_fetch_backoff_ms);
    return;
  }
  f->position = p;
  fetch(self, tp, g);
}

template <class Request>
void ask_local(fetcher_ptr self, const topic_partition& tp, uint64_t g, Request req) {
  auto* f = current(self, tp, g);
  if (!f)
    return;
  auto timeout = std::chrono::milliseconds(self->state.ctx->config.request_timeout_ms);
  self->request(f->local, timeout, std::move(req))
    .then([self, tp, g](replica_position& p) { on_position(self, tp, g, std::move(p)); },
          [self, tp, g](caf::error&) {
            if (current(self, tp, g))
              retry_later(self, tp, g, true, self->state.ctx->config.replica_fetch_backoff_ms);
          });
}

void start(fetcher_ptr self, const topic_partition& tp, uint64_t g) {
  auto* f = current(self, tp, g);
  if (!f)
    return;
  ask_local(self, tp, g, become_follower_request{self->state.leader, f->leader_epoch});
}

void fetch(fetcher_ptr self, const topic_partition& tp, uint64_t g) {
  auto* f = current(self, tp, g);
  if (!f)
    return;
  auto& st = self->state;
  auto& cfg = st.ctx->config;
  partition_actor leader;
  if (auto t = st.ctx->directory->topic(tp.topic);
      t && tp.partition < static_cast<int32_t>(t->size()))
    leader = (*t)[tp.partition];
  if (!leader) { // the broker has not resolved the leader's handle yet
    retry_later(self, tp, g, false, 100);
    return;
  }
  replica_fetch_request req{tp,
                            st.ctx->node_id,
                            f->position.log_end_offset,
                            f->position.last_fetched_epoch,
                            f->leader_epoch,
                            f->position.high_watermark,
                            cfg.replica_fetch_max_bytes,
                            cfg.replica_fetch_wait_max_ms};
  auto timeout = std::chrono::milliseconds(int64_t{cfg.replica_fetch_wait_max_ms}
                                           + cfg.request_timeout_ms);
  // Watched: the handle may be the previous leader's, on a node that
  // stops while the fetch is held there; the fetch then ends at once and
  // the retry takes the handle the broker resolved meanwhile, instead of
  // waiting request.timeout.ms with the partition out of step.
  auto h = self->request(leader, timeout, std::move(req));
  h.then(
      [self, tp, g, w = watch_connection(self, h.id(), leader)](replica_fetch_response& r) {
        auto* f = current(self, tp, g);
        if (!f)
          return;
        if (r.error != error_code::none) {
          retry_later(self, tp, g, false, self->state.ctx->config.replica_fetch_backoff_ms);
          return;
        }
        if (r.diverging) {
          ask_local(self, tp, g,
                    replica_truncate_request{f->leader_epoch, r.diverging_epoch,
                                             r.diverging_end_offset});
          return;
        }
        if (!r.records.empty() || r.high_watermark > f->position.high_watermark) {
          ask_local(self, tp, g,
                    replica_append_request{f->leader_epoch, std::move(r.records),
                                           r.high_watermark});
          return;
        }
        fetch(self, tp, g);
      },
      [self, tp, g](caf::error&) {
        if (current(self, tp, g))
          retry_later(self, tp, g, false, self->state.ctx->config.replica_fetch_backoff_ms);
      });
}

replica_fetcher_actor::behavior_type fetcher_fn(fetcher_ptr self,
                                                std::shared_ptr<const node_context> ctx,
                                                int32_t leader) {
  self->state.ctx = std::move(ctx);
  self->state.leader = leader;
  return {
    [=](fetcher_assign& a) {
      auto& st = self->state;
      auto g = st.next_generation++;
      st.partitions[a.tp] = followed{std::move(a.local), a.leader_epoch, g, {}};
      start(self, a.tp, g);
    },
    [=](const fetcher_remove& r) { self->state.partitions.erase(r.tp); },
    [=](const fetcher_retry& r) {
      if (r.restart)
        start(self, r.tp, r.generation);
      else
        fetch(self, r.tp, r.generation);
    },
  };
}

} // namespace

replica_fetcher_actor spawn_replica_fetcher(caf::actor_system& sys,
                                            std::shared_ptr<const node_context> ctx,
                                            int32_t leader) {
  return sys.spawn(fetcher_fn, std::move(ctx), leader);
}

} // namespace caftx
