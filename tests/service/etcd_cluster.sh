# Sourced by the etcd service tests: start an etcd cluster of N members on
# loopback, on random free ports, with data in $WORK.
# The caller defines WORK (a temp folder), PIDS (an array: every process
# started, killed by the caller's cleanup) and fail MESSAGE.
#
#   source etcd_cluster.sh
#   require_etcd            # exits 1 (or 77 with BERTH_SKIP_ETCD=1) without etcd
#   start_etcd_cluster 3    # sets ENDPOINTS=http://127.0.0.1:P1,... and ETCD_PIDS (member order)
#   start_replica NAME      # a `berth serve` on $REPLICA_STORE and $REPLICA_CLUSTER: sets PID_NAME,
#                           # URL_NAME (log in $WORK/NAME.log)
#   readyz URL; wait_ready URL SECONDS
# ETCD_TIMING overrides the members' raft timing flags (default: fast
# elections, "--heartbeat-interval 50 --election-timeout 500").

require_etcd() {
  ETCD="${BERTH_ETCD:-$(command -v etcd || true)}"
  ETCDCTL="$(command -v etcdctl || true)"
  if [ -z "$ETCD" ] || [ -z "$ETCDCTL" ]; then
    if [ "${BERTH_SKIP_ETCD:-}" = 1 ]; then
      echo "etcd is not installed: skipped (BERTH_SKIP_ETCD=1)"
      exit 77
    fi
    echo "FAIL: etcd or etcdctl is not installed (scripts/install-deps.sh installs etcd-server and etcd-client);" \
      "BERTH_SKIP_ETCD=1 skips this test"
    exit 1
  fi
}

# A loopback port nobody listens on (sets FREE), below the kernel's range
# for outgoing connections (32768 and up by default).
TAKEN=" "
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    case "$TAKEN" in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      TAKEN+="$p "
      FREE=$p
      return 0
    fi
  done
  fail "no free port found"
}

ETCD_CLUSTERS=0
start_etcd_cluster() {  # MEMBERS; retries on other ports if a member does not come up
  local attempt
  for attempt in 1 2 3; do
    try_etcd_cluster "$1" && return 0
    echo "etcd cluster did not come up (attempt $attempt); retrying on other ports"
  done
  fail "etcd cluster of $1 did not come up"
}

try_etcd_cluster() {
  local n="$1" i initial="" ok started=()
  local -a cp pp
  ETCD_CLUSTERS=$((ETCD_CLUSTERS + 1))
  ENDPOINTS=""
  ETCD_PIDS=()
  for ((i = 0; i < n; i++)); do
    free_port; cp[$i]=$FREE
    free_port; pp[$i]=$FREE
    initial+="${initial:+,}e$i=http://127.0.0.1:${pp[$i]}"
    ENDPOINTS+="${ENDPOINTS:+,}http://127.0.0.1:${cp[$i]}"
  done
  for ((i = 0; i < n; i++)); do
    "$ETCD" --name "e$i" --data-dir "$WORK/etcd$ETCD_CLUSTERS-$i" \
      --listen-client-urls "http://127.0.0.1:${cp[$i]}" --advertise-client-urls "http://127.0.0.1:${cp[$i]}" \
      --listen-peer-urls "http://127.0.0.1:${pp[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${pp[$i]}" \
      --initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token "berth-$$-$ETCD_CLUSTERS" \
      ${ETCD_TIMING:---heartbeat-interval 50 --election-timeout 500} > "$WORK/etcd$ETCD_CLUSTERS-$i.log" 2>&1 &
    started+=($!)
    ETCD_PIDS+=($!)
    PIDS+=($!)
  done
  for ((i = 0; i < n; i++)); do
    ok=""
    for _ in $(seq 1 150); do
      if curl -sf "http://127.0.0.1:${cp[$i]}/health" | grep -q '"health":"true"'; then ok=1; break; fi
      kill -0 "${started[$i]}" 2>/dev/null || break  # exited (a port taken?)
      sleep 0.1
    done
    if [ -z "$ok" ]; then
      tail -n 3 "$WORK/etcd$ETCD_CLUSTERS-$i.log"
      local p q keep=()
      for p in "${started[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
      for q in "${PIDS[@]}"; do
        case " ${started[*]} " in *" $q "*) ;; *) keep+=("$q") ;; esac
      done
      PIDS=("${keep[@]}")
      return 1
    fi
  done
}

# Replicas of `berth serve` on the etcd store $REPLICA_STORE (endpoints) for
# the cluster $REPLICA_CLUSTER; BERTH is the binary.
start_replica() {
  local name="$1" log="$WORK/$1.log" port=""
  "$BERTH" serve --listen 127.0.0.1:0 --store "etcd:$REPLICA_STORE" --cluster "$REPLICA_CLUSTER" 2> "$log" &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 200); do
    port=$(grep -o '"event":"listening"[^}]*' "$log" 2>/dev/null | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || fail "replica $name did not start"
  printf -v "PID_$name" '%s' "$pid"
  printf -v "URL_$name" '%s' "http://127.0.0.1:$port"
}
readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1/readyz" || true; }
wait_ready() {  # URL SECONDS
  local deadline=$(( $(date +%s) + $2 ))
  while [ "$(date +%s)" -le "$deadline" ]; do
    [ "$(readyz "$1")" = 200 ] && return 0
    sleep 0.05
  done
  return 1
}
