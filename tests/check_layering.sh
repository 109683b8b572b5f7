#!/usr/bin/env bash
# Fails if a layer includes what it must not (README, How it is built): storage/ and
# config/ never include CAF; the pure cores (*_core.*, transaction_manager,
# read_committed_filter, log_cleaner, leader_epoch_cache, actors/controller/ but its actor shell) include neither CAF,
# LevelDB nor Boost.
set -u
root=${1:-.}
cd "$root" || exit 2
bad=0
if grep -rlE '#include *[<"]caf/' storage config; then
  echo "storage/ or config/ includes CAF" >&2; bad=1
fi
cores=$(ls actors/*/*_core.hpp actors/*/*_core.cpp actors/client/transaction_manager.* actors/client/record_accumulator.* \
           actors/client/read_committed_filter.* actors/partition/log_cleaner.* actors/partition/leader_epoch_cache.* 2>/dev/null)
# actors/controller/ is pure except its actor shell (controller_actor.*).
cores="$cores $(ls actors/controller/* 2>/dev/null | grep -v '/controller_actor\.')"
if grep -lE '#include *[<"](caf|leveldb|boost)/' $cores; then
  echo "a pure core includes CAF, LevelDB or Boost" >&2; bad=1
fi
# Headers reachable from the cores must be pure too.
for h in $(grep -hoE '#include "runtime/[a-z_]+\.hpp"' $cores | sort -u | sed 's/#include "//; s/"//'); do
  if grep -lE '#include *[<"](caf|leveldb|boost)/' "$h"; then
    echo "$h (used by a pure core) includes CAF, LevelDB or Boost" >&2; bad=1
  fi
done
# Each actor shell sees only the messages of the kinds it talks to
# (runtime/*_messages.hpp), never all of them (runtime/messages.hpp).
shells="actors/partition/partition_actor.cpp actors/coordinator/txn_coordinator_actor.cpp
        actors/group/group_coordinator_actor.cpp actors/broker/broker_actor.cpp
        actors/controller/controller_actor.cpp actors/common/coordinator_log.cpp
        actors/common/verification.cpp"
for f in $shells; do
  [ -f "$f" ] || continue
  if grep -q '#include "runtime/messages.hpp"' "$f" "${f%.cpp}.hpp" 2>/dev/null; then
    echo "$f includes runtime/messages.hpp instead of its kinds' message headers" >&2; bad=1
  fi
done
[ $bad -eq 0 ] && echo "layering ok"
exit $bad
