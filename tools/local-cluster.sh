#!/usr/bin/env bash
# A caftx cluster on this machine in one command: ZooKeeper and N caftx-node
# processes on 127.0.0.1, each with its config, data directory and log under
# one directory (docs/node.md §A local cluster).
#
#   tools/local-cluster.sh start [N] [DIR]   # N nodes (default 3), DIR default ./local-cluster
#   tools/local-cluster.sh stop [DIR]        # SIGTERM to every node, then ZooKeeper
#   tools/local-cluster.sh status [DIR]
#
# Ports: ZooKeeper ${CAFTX_ZK_PORT:-2181}, node i on $((${CAFTX_BASE_PORT:-9192} + i - 1))
# and its Prometheus metrics on $((${CAFTX_METRICS_PORT:-9404} + i - 1)) (CAFTX_METRICS_PORT=0:
# ports the OS picks, logged by each node), and Kafka's wire protocol for
# Kafka clients (kcat, librdkafka, KafkaJS) on PLAINTEXT://127.0.0.1:$((${CAFTX_KAFKA_PORT:-9092} + i - 1))
# (CAFTX_KAFKA_PORT=off: none).
# The node binary is ${CAFTX_NODE:-build/caftx-node}. Every start writes the
# nodes' properties anew; the lines of the file ${CAFTX_NODE_PROPERTIES}
# (if set: e.g. default.replication.factor=3) are added to each. A second
# start on the same DIR resumes the nodes on their data; remove DIR for a
# fresh cluster. stop sends SIGTERM to one node after the other (a
# controlled shutdown each: its leaderships move to the nodes still up) and
# SIGKILLs a node that has not stopped within 30 s.
set -euo pipefail

cmd=${1:-}
node_bin=${CAFTX_NODE:-build/caftx-node}
zk_port=${CAFTX_ZK_PORT:-2181}
base_port=${CAFTX_BASE_PORT:-9192}
metrics_port=${CAFTX_METRICS_PORT:-9404}
kafka_port=${CAFTX_KAFKA_PORT:-9092}
zk_jar=/usr/share/java/zookeeper.jar

die() { echo "local-cluster: $*" >&2; exit 2; }

# True while the process in pid file $1 lives (a killed one not yet reaped
# by its parent is a zombie: not running).
running() {
  [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null \
    && [[ "$(ps -o stat= -p "$(cat "$1")" 2>/dev/null)" != Z* ]]
}

# ZooKeeper's four-letter word: "imok" once it serves.
zk_ok() {
  local reply=""
  { exec 3<> "/dev/tcp/127.0.0.1/$zk_port"; } 2> /dev/null || return 1
  echo ruok >&3
  read -r -t 2 reply <&3 || true
  exec 3>&-
  [[ "$reply" == imok* ]]
}

wait_for() { # file pattern seconds [from-byte pid-file]
  # Looks only at what the log got from byte $4 on (a restart appends to
  # the log of the run before), and gives up at once if the process in
  # $5 has exited.
  local i from=${4:-0}
  for ((i = 0; i < $3 * 10; ++i)); do
    tail -c +$((from + 1)) "$1" 2>/dev/null | grep -q "$2" && return 0
    [[ -n "${5:-}" ]] && ! running "$5" && return 1
    sleep 0.1
  done
  return 1
}

start() {
  local n=${1:-3} dir=${2:-local-cluster}
  local -a log_from=()
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number, not '$n'"
  [[ -x "$node_bin" ]] || die "$node_bin not found: build first (cmake --build build), or set CAFTX_NODE"
  [[ -f "$zk_jar" ]] || die "$zk_jar not found: tools/install-deps.sh installs ZooKeeper"
  command -v java > /dev/null || die "java not found: tools/install-deps.sh installs a Java runtime"
  mkdir -p "$dir/zookeeper"
  dir=$(cd "$dir" && pwd)
  if running "$dir/zookeeper.pid"; then
    echo "ZooKeeper already runs (pid $(cat "$dir/zookeeper.pid"))"
  else
    cat > "$dir/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/zookeeper
clientPortAddress=127.0.0.1
clientPort=$zk_port
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
EOF
    java -Xmx256m -cp "$zk_jar" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
      > "$dir/zookeeper.log" 2>&1 &
    echo $! > "$dir/zookeeper.pid"
    local ok=0
    for ((i = 0; i < 300; ++i)); do
      if zk_ok; then ok=1; break; fi
      running "$dir/zookeeper.pid" || break
      sleep 0.1
    done
    [[ $ok == 1 ]] || die "ZooKeeper did not start on 127.0.0.1:$zk_port (see $dir/zookeeper.log)"
    echo "ZooKeeper on 127.0.0.1:$zk_port (pid $(cat "$dir/zookeeper.pid"))"
  fi
  local servers=""
  # Kafka's internal-topic defaults (3 replicas, min ISR 2), scaled down
  # for a smaller local cluster, which would otherwise wait for more nodes.
  local internal_rf=$((n < 3 ? n : 3)) internal_min_isr=$((n < 2 ? 1 : 2))
  local extra=${CAFTX_NODE_PROPERTIES:-}
  [[ -z "$extra" || -r "$extra" ]] || die "CAFTX_NODE_PROPERTIES: cannot read $extra"
  [[ $kafka_port == off || $kafka_port =~ ^[0-9]+$ ]] \
    || die "CAFTX_KAFKA_PORT: '$kafka_port' is neither a port nor off"
  local kafka_servers=""
  for ((i = 1; i <= n; ++i)); do
    local port=$((base_port + i - 1))
    servers+="${servers:+,}127.0.0.1:$port"
    [[ $kafka_port == off ]] || kafka_servers+="${kafka_servers:+,}127.0.0.1:$((kafka_port + i - 1))"
    log_from[$i]=0
    if running "$dir/node$i.pid"; then
      echo "node $i already runs (pid $(cat "$dir/node$i.pid"))"
      continue
    fi
    log_from[$i]=$(stat -c %s "$dir/node$i.log" 2>/dev/null || echo 0)
    local listeners="caftx://127.0.0.1:$port"
    if [[ $kafka_port != off ]]; then
      listeners+=",PLAINTEXT://127.0.0.1:$((kafka_port + i - 1))"
    fi
    cat > "$dir/node$i.properties" <<EOF
node.id=$i
listeners=$listeners
log.dirs=$dir/data$i
zookeeper.connect=127.0.0.1:$zk_port/caftx
EOF
    # The internal topics' defaults unless the extra file sets them.
    local key value
    for key in transaction.state.log.replication.factor transaction.state.log.min.isr \
               offsets.topic.replication.factor metrics.listeners; do
      [[ -n "$extra" ]] && grep -qE "^[[:space:]]*$key[[:space:]]*[=:]" "$extra" && continue
      value=$internal_rf
      [[ $key == transaction.state.log.min.isr ]] && value=$internal_min_isr
      if [[ $key == metrics.listeners ]]; then
        value=http://127.0.0.1:$((metrics_port == 0 ? 0 : metrics_port + i - 1))
      fi
      echo "$key=$value" >> "$dir/node$i.properties"
    done
    if [[ -n "$extra" ]]; then cat "$extra" >> "$dir/node$i.properties"; fi
    "$node_bin" --config "$dir/node$i.properties" >> "$dir/node$i.log" 2>&1 &
    echo $! > "$dir/node$i.pid"
  done
  for ((i = 1; i <= n; ++i)); do
    wait_for "$dir/node$i.log" "registered with node epoch" 60 "${log_from[$i]}" "$dir/node$i.pid" \
      || die "node $i did not register (see $dir/node$i.log)"
    echo "node $i on 127.0.0.1:$((base_port + i - 1)) (pid $(cat "$dir/node$i.pid"), log $dir/node$i.log," \
      "metrics $(sed -n 's/^metrics.listeners=//p' "$dir/node$i.properties" | tail -1)/metrics)"
  done
  echo "bootstrap.servers=$servers"
  [[ -z "$kafka_servers" ]] || echo "Kafka clients: bootstrap.servers=$kafka_servers"
}

stop() {
  local dir=${1:-local-cluster}
  [[ -d "$dir" ]] || die "no cluster directory $dir"
  for f in "$dir"/node*.pid; do
    [[ -f "$f" ]] || continue
    if running "$f"; then
      local p i=0
      p=$(cat "$f")
      kill -TERM "$p"
      while running "$f" && ((i++ < 300)); do sleep 0.1; done # up to 30 s each
      if running "$f"; then
        kill -KILL "$p" 2> /dev/null || true
        i=0
        while running "$f" && ((i++ < 50)); do sleep 0.1; done
        echo "$(basename "$f" .pid) did not stop within 30 s: killed (SIGKILL)"
      fi
    fi
    rm -f "$f"
  done
  if running "$dir/zookeeper.pid"; then
    local zk
    zk=$(cat "$dir/zookeeper.pid")
    kill -TERM "$zk"
    local i=0
    while kill -0 "$zk" 2> /dev/null && ((i++ < 300)); do sleep 0.1; done
  fi
  rm -f "$dir/zookeeper.pid"
  echo "stopped"
}

status() {
  local dir=${1:-local-cluster}
  for f in "$dir"/zookeeper.pid "$dir"/node*.pid; do
    [[ -f "$f" ]] || continue
    local name
    name=$(basename "$f" .pid)
    if running "$f"; then echo "$name: running (pid $(cat "$f"))"; else echo "$name: stopped"; fi
  done
}

case "$cmd" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  status) shift; status "$@" ;;
  -h|--help|help) echo "usage: $0 start [N] [DIR] | stop [DIR] | status [DIR]"; sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "usage: $0 start [N] [DIR] | stop [DIR] | status [DIR]" ;;
esac
