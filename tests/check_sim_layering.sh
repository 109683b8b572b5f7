#!/usr/bin/env bash
# Fails if the simulator's history checker (tools/sim/history*), or a runtime
# header it includes, includes CAF, LevelDB or Boost: it is a plain library.
# The simulator itself (simulator.*, crash_env.*, main.cpp) runs actors on
# LevelDB and is not checked here.
set -u
cd "${1:-.}" || exit 2
files="tools/sim/history.hpp tools/sim/history_checker.hpp tools/sim/history_checker.cpp"
files="$files $(grep -hoE '#include "runtime/[a-z_]+\.hpp"' $files | sort -u | sed 's/#include "//; s/"//')"
if grep -lE '#include *[<"](caf|leveldb|boost)/' $files; then
  echo "the history checker includes CAF, LevelDB or Boost (above)" >&2
  exit 1
fi
echo "history checker layering ok"
