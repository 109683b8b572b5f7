// Named fault points in the actor shells, for the deterministic simulator
// (tools/sim/) and failure drills. A shell marks a place where a crash is
// interesting — a card persisted but its markers not yet sent, a batch
// durable but not yet acknowledged — with CAFTX_FAULT_POINT(self, "name").
// Protocol cores never hold one.
//
// With CAFTX_FAULT_POINTS defined (every build type except Release and
// MinSizeRel; CMake option CAFTX_FAULT_POINTS), a hit calls the process's
// handler if one is installed; without it the macro compiles to nothing.
// The handler may return crash_here: the point then kills its actor at that
// place (exit_reason::kill, without running the rest of the handler), and
// the actor's supervisor restarts it, as after any crash. The handler runs
// on the hitting actor's thread; install it before any actor runs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/ids.hpp"

namespace caf {
class scheduled_actor;
}

namespace caftx::fault {

/// What a point carries besides its name. Points of batches appended by a
/// partition leader carry an `append_detail`; the others nothing.
struct append_detail {
  topic_partition tp;
  int64_t base_offset = -1;
  int64_t last_offset = -1;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  bool transactional = false;
  bool control = false;
};

enum class action : uint8_t { proceed, crash_here };

/// `detail` is nullptr or points at the point's detail type (above), valid
/// during the call only.
using handler = std::function<action(const char* point, const void* detail)>;

/// Installs `h` for the process (an empty function uninstalls).
void set_handler(handler h);

/// Every point compiled into the shells, in a fixed order (empty when
/// built without CAFTX_FAULT_POINTS).
const std::vector<std::string>& all_points();

/// The points of replication and leader moves: a follower's append
/// synced but not yet acknowledged to its leader, a leader's high
/// watermark moved but the replies it releases not yet sent, a follower's
/// truncation synced but its log not yet reloaded, a coordinator loaded
/// but the markers of its PrepareCommit/PrepareAbort cards not yet sent.
/// The simulator fires them in its cluster runs only.
bool replication_point(std::string_view point);

/// True when this build has fault points.
bool enabled();

/// Thrown by a point whose handler asked for crash_here; the actor's
/// exception handler (installed by hit()) turns it into exit_reason::kill.
struct injected_crash {
  const char* point;
};

/// Calls the handler; on crash_here makes `self` die here. Use the macro.
void hit(caf::scheduled_actor* self, const char* point, const void* detail);

} // namespace caftx::fault

#ifdef CAFTX_FAULT_POINTS
#define CAFTX_FAULT_POINT(self, name) ::caftx::fault::hit((self), (name), nullptr)
#define CAFTX_FAULT_POINT_DETAIL(self, name, detail) ::caftx::fault::hit((self), (name), (detail))
#else
#define CAFTX_FAULT_POINT(self, name) ((void) 0)
#define CAFTX_FAULT_POINT_DETAIL(self, name, detail) ((void) 0)
#endif
