#!/usr/bin/env bash
# Fails unless the fault point names used in the actor shells are exactly
# the list in runtime/fault_point.cpp (what the simulator reports on), and
# unless no protocol core holds a fault point.
set -u
cd "${1:-.}" || exit 2
used=$(grep -rhoE '"(partition|txn_coordinator|group_coordinator)\.[a-z_]+"' actors --include='*_actor.cpp' | sort -u)
listed=$(sed -n '/static const std::vector<std::string> points/,/};/p' runtime/fault_point.cpp \
  | grep -oE '"[a-z_]+\.[a-z_]+"' | sort -u)
if [ "$used" != "$listed" ]; then
  echo "fault points used in actors/ and listed in runtime/fault_point.cpp differ:" >&2
  diff <(echo "$used") <(echo "$listed") >&2
  exit 1
fi
if grep -lE 'CAFTX_FAULT_POINT|fault_point\.hpp' actors/*/*_core.* 2>/dev/null; then
  echo "a protocol core holds a fault point (above)" >&2
  exit 1
fi
echo "fault points ok: $(echo "$used" | wc -l)"
