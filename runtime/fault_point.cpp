#include "runtime/fault_point.hpp"

#include <caf/exit_reason.hpp>
#include <caf/scheduled_actor.hpp>

namespace caftx::fault {

namespace {

handler& current() {
  static handler h;
  return h;
}

} // namespace

void set_handler(handler h) {
  current() = std::move(h);
}

bool enabled() {
#ifdef CAFTX_FAULT_POINTS
  return true;
#else
  return false;
#endif
}

const std::vector<std::string>& all_points() {
  // Kept equal to the CAFTX_FAULT_POINT names in actors/ by
  // tests/check_fault_points.sh.
  static const std::vector<std::string> points = enabled() ? std::vector<std::string>{
    "group_coordinator.write_durable",
    "partition.append_durable",
    "partition.follower_append_durable",
    "partition.high_watermark_moved",
    "partition.truncated",
    "txn_coordinator.between_markers",
    "txn_coordinator.card_durable",
    "txn_coordinator.complete_durable",
    "txn_coordinator.loaded",
    "txn_coordinator.prepare_durable",
  } : std::vector<std::string>{};
  return points;
}

bool replication_point(std::string_view point) {
  return point == "partition.follower_append_durable" || point == "partition.high_watermark_moved"
         || point == "partition.truncated" || point == "txn_coordinator.loaded";
}

void hit(caf::scheduled_actor* self, const char* point, const void* detail) {
  auto& h = current();
  if (!h || h(point, detail) != action::crash_here)
    return;
  self->set_exception_handler(
    [](std::exception_ptr&) -> caf::error { return caf::make_error(caf::exit_reason::kill); });
  throw injected_crash{point};
}

} // namespace caftx::fault
