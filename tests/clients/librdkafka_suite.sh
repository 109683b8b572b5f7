#!/usr/bin/env bash
# librdkafka's own integration tests against a 3-node caftx cluster.
#
#   librdkafka_suite.sh prepare DIR
#       Fetches librdkafka 2.0.2's source from Debian's source packages
#       (apt-get source; tools/install-deps.sh adds the deb-src entry) into
#       DIR and builds its test runner there (DIR/src/tests/test-runner).
#       Does nothing when DIR already has a built runner.
#   librdkafka_suite.sh run DIR TEST [-P]
#       Starts ZooKeeper and three caftx nodes (tools/local-cluster.sh) on
#       free 127.0.0.1 ports, runs librdkafka test TEST (e.g. 0103) with
#       DIR's runner, then stops every process it started and removes the
#       cluster's files. -P runs the test with enable.idempotence=true on
#       every producer (librdkafka's runner option). Tests that talk only
#       to librdkafka's own mock cluster are left out (the runner's -L).
#       0113 runs subtest by subtest, without the ones skipped_0113 names.
#
# The exit status is the runner's: 0 when every test (and subtest) that
# ran passed. Needs CAFTX_NODE (the caftx-node binary).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
project=$(cd "$here/../.." && pwd)
export CAFTX_NODE=${CAFTX_NODE:-$project/build/caftx-node}
version=2.0.2

die() { echo "librdkafka-suite: $*" >&2; exit 2; }

# 0113's subtests against a broker, in its main's order.
subtests_0113=(a_assign_tests b_subscribe_with_cb_test c_subscribe_no_cb_test
  d_change_subscription_add_topic e_change_subscription_remove_topic
  f_assign_call_cooperative g_incremental_assign_call_eager h_delete_topic
  i_delete_topic_2 j_delete_topic_no_rb_callback k_add_partition l_unsubscribe
  m_unsubscribe_2 n_wildcard o_java_interop s_subscribe_when_rebalancing
  t_max_poll_interval_exceeded u_multiple_subscription_changes
  v_commit_during_rebalance x_incremental_rebalances)
# Not run unless CAFTX_LIBRDKAFKA_SKIP_0113 says otherwise (a space-separated
# list; empty: run all), for the reasons README's "librdkafka's test suite"
# gives: h, i, j and n hang in the client's close after a topic they
# consume was deleted; u passes but takes about 6 minutes.
skipped_0113=(${CAFTX_LIBRDKAFKA_SKIP_0113-h_delete_topic i_delete_topic_2 j_delete_topic_no_rb_callback
  n_wildcard u_multiple_subscription_changes})

prepare() {
  local dir=$1
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ -x "$dir/src/tests/test-runner" ]]; then
    echo "librdkafka $version test runner already built in $dir"
    return 0
  fi
  command -v dpkg-source > /dev/null || die "dpkg-source not found: tools/install-deps.sh installs dpkg-dev"
  rm -rf "$dir/src" "$dir"/librdkafka_*
  (cd "$dir" && apt-get source -qq --download-only librdkafka) \
    || die "apt-get source librdkafka failed: tools/install-deps.sh adds a deb-src entry for Debian's archive"
  local dsc
  dsc=$(ls "$dir"/librdkafka_"$version"-*.dsc 2> /dev/null | head -n 1)
  [[ -n "$dsc" ]] || die "apt's librdkafka source is not $version: $(ls "$dir"/librdkafka_*.dsc 2> /dev/null)"
  # (apt checked the files against the archive's signed index; dpkg-source
  # notes that it has no key for the .dsc's own signature.)
  (cd "$dir" && dpkg-source -q -x "$dsc" src > "$dir/extract.log" 2>&1) \
    || die "dpkg-source -x $dsc failed (see $dir/extract.log)"
  # TLS, SASL and curl are not what the tests named here exercise; the
  # compression codecs are (Debian's zlib, zstd, lz4; bundled snappy).
  (cd "$dir/src" && ./configure --disable-ssl --disable-sasl --disable-gssapi --disable-curl \
      > "$dir/configure.log" 2>&1) || die "configure failed (see $dir/configure.log)"
  (cd "$dir/src" && make -j"$(nproc)" libs > "$dir/make.log" 2>&1) \
    || die "building librdkafka failed (see $dir/make.log)"
  (cd "$dir/src/tests" && make -j"$(nproc)" test-runner >> "$dir/make.log" 2>&1) \
    || die "building the test runner failed (see $dir/make.log)"
  echo "built librdkafka $version's test runner in $dir/src/tests"
}

# A port nobody listens on, with $1 - 1 free ports after it, below
# Linux's ephemeral range (32768 on), where outgoing connections (and
# tests that let the OS pick) take theirs.
free_ports() {
  local span=$1 base p ok
  for _ in $(seq 1 200); do
    base=$((20000 + RANDOM % 12000))
    ok=1
    for ((p = base; p < base + span; ++p)); do
      if { exec 3<> "/dev/tcp/127.0.0.1/$p"; } 2> /dev/null; then
        exec 3>&-
        ok=0
        break
      fi
    done
    [[ $ok == 1 ]] && { echo "$base"; return 0; }
  done
  die "no free ports found"
}

# True while process $1 runs (a killed one its parent has not reaped yet
# is a zombie: not running; the nodes' parent, local-cluster.sh, is gone).
alive() {
  kill -0 "$1" 2> /dev/null && [[ "$(ps -o stat= -p "$1" 2> /dev/null)" != Z* ]]
}

# Every process the cluster started, by the PIDs local-cluster.sh
# recorded: SIGKILL (nothing in it needs to survive the test), then its
# files. On a failure the nodes' warnings and last lines are printed first.
stop_cluster() {
  local f p
  [[ -n "${cluster:-}" && -d "$cluster" ]] || return 0
  if [[ ${status:-0} != 0 ]]; then
    for f in "$cluster"/nodes/node*.log; do
      [[ -f "$f" ]] || continue
      echo "--- $(basename "$f"): warnings and errors" >&2
      grep -E '\] (warn|error|critical) ' "$f" | tail -n 40 >&2 || true
      echo "--- $(basename "$f"): its last lines" >&2
      tail -n 10 "$f" >&2
    done
  fi
  for f in "$cluster"/nodes/node*.pid "$cluster"/nodes/zookeeper.pid; do
    [[ -f "$f" ]] || continue
    p=$(cat "$f")
    kill -KILL "$p" 2> /dev/null || true
    for _ in $(seq 1 100); do alive "$p" || break; sleep 0.05; done
  done
  rm -rf "$cluster"
}

run() {
  local dir=$1 test=$2
  shift 2
  dir=$(cd "$dir" 2> /dev/null && pwd) || die "no directory $dir: run '$0 prepare DIR' first"
  local runner_dir="$dir/src/tests"
  [[ -x "$runner_dir/test-runner" ]] || die "no test runner in $runner_dir: run '$0 prepare $dir' first"
  [[ "$test" =~ ^[0-9]{4}$ ]] || die "TEST must be a 4-digit librdkafka test number, not '$test'"
  # Globals: the EXIT trap reads them after run() returned. A nonzero
  # status makes stop_cluster print the nodes' logs.
  status=0
  cluster=$(mktemp -d /tmp/caftx-librdkafka.XXXXXX)
  trap stop_cluster EXIT
  trap 'exit 143' TERM INT
  # Seven consecutive free ports: ZooKeeper, three nodes, three Kafka
  # listeners (drawn once, so the three ranges cannot overlap).
  local base
  base=$(free_ports 7)
  export CAFTX_ZK_PORT=$base CAFTX_BASE_PORT=$((base + 1)) CAFTX_KAFKA_PORT=$((base + 4))
  export CAFTX_METRICS_PORT=0 CAFTX_NODE_PROPERTIES="$cluster/extra.properties"
  # librdkafka's tests produce to topics they never create: Kafka's
  # default (auto.create.topics.enable=true, 4 partitions here, as its
  # test cluster has), with every partition on three replicas.
  printf '%s\n' auto.create.topics.enable=true num.partitions=4 default.replication.factor=3 \
    > "$CAFTX_NODE_PROPERTIES"
  if ! "$project/tools/local-cluster.sh" start 3 "$cluster/nodes" > "$cluster/start.log" 2>&1; then
    cat "$cluster/start.log" >&2
    status=1
    die "the cluster did not start"
  fi
  local k=$CAFTX_KAFKA_PORT port ready
  # A node answers Metadata once the controller's first UpdateMetadata
  # reached it (before, it closes the connection, which the runner counts
  # as a failure): wait until every node lists all three.
  for port in "$k" $((k + 1)) $((k + 2)); do
    ready=0
    for _ in $(seq 1 300); do
      if kcat -L -b "127.0.0.1:$port" -m 2 2> /dev/null | grep -q '^ 3 brokers:'; then
        ready=1
        break
      fi
      sleep 0.2
    done
    if [[ $ready != 1 ]]; then
      status=1
      die "node at 127.0.0.1:$port does not serve Metadata after 60 s"
    fi
  done
  printf 'metadata.broker.list=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d\n' "$k" $((k + 1)) $((k + 2)) \
    > "$cluster/test.conf"
  # Slow CI machines: the runner multiplies its test timeouts by this.
  echo test.timeout.multiplier=3 >> "$cluster/test.conf"
  local -a subtests=("")
  [[ $test == 0113 ]] && subtests=("${subtests_0113[@]}")
  # The broker version the runner assumes where tests differ by version:
  # caftx answers KIP-360 (InitProducerId v3+ bumps the epoch) and KIP-447
  # (TxnOffsetCommit v3, OffsetFetch v7), as Kafka 2.5 does.
  export TEST_KAFKA_VERSION=2.5.0
  # One budget for the whole run (seconds since this script started),
  # below ctest's TIMEOUT of 900 s: ctest kills a test that overruns with
  # SIGKILL, which no trap sees, and the nodes (children of
  # local-cluster.sh, which has exited) would outlive it.
  local budget=${CAFTX_LIBRDKAFKA_TIMEOUT:-840} s left
  for s in "${subtests[@]}"; do
    if [[ -n "$s" && ${#skipped_0113[@]} -gt 0 ]] && printf '%s\n' "${skipped_0113[@]}" | grep -qx "$s"; then
      echo "librdkafka-suite: $test subtest $s not run (see README)"
      continue
    fi
    left=$((budget - SECONDS))
    if ((left < 10)); then
      echo "librdkafka-suite: the ${budget} s budget is used up before ${s:-$test}" >&2
      status=124
      break
    fi
    # In the cluster's directory: the runner's stats files go with it.
    # --foreground: a Ctrl-C reaches the runner too.
    (cd "$cluster" && env LD_LIBRARY_PATH="$dir/src/src:$dir/src/src-cpp" \
        RDKAFKA_TEST_CONF="$cluster/test.conf" TESTS="$test" SUBTESTS="$s" \
        timeout --foreground -k 10 "$left" "$runner_dir/test-runner" -p1 -L "$@") \
      || status=$?
  done
  return $status
}

case "${1:-}" in
  prepare) [[ $# == 2 ]] || die "usage: $0 prepare DIR"; prepare "$2" ;;
  run) [[ $# -ge 3 ]] || die "usage: $0 run DIR TEST [-P]"; shift; run "$@" ;;
  *) die "usage: $0 prepare DIR | run DIR TEST [-P]" ;;
esac
