#include "actors/common/durable_queue.hpp"

#include <caf/send.hpp>
#include <leveldb/write_batch.h>

namespace caftx {

durable_queue::~durable_queue() {
  for (auto& [ticket, w] : pending_)
    if (w.waiting)
      w.waiting->deliver(caf::make_error(caf::sec::request_receiver_down));
}

void durable_queue::submit(const caf::actor& self, leveldb::WriteBatch batch, continuation then,
                           std::optional<caf::response_promise> waiting) {
  auto ticket = next_ticket_++;
  pending_.emplace(ticket, pending_write{std::move(then), std::move(waiting)});
  store_->write(std::move(batch), [self, ticket](const status& st) {
    caf::anon_send(self, storage_done{ticket, st.code(), st.message()});
  });
}

bool durable_queue::complete(const storage_done& done) {
  auto i = pending_.find(done.ticket);
  if (i == pending_.end())
    return false;
  auto fn = std::move(i->second.then);
  pending_.erase(i);
  fn(status{done.error, done.message});
  return true;
}

} // namespace caftx
