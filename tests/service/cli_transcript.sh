#!/usr/bin/env bash
# The berth CLI against a real `berth serve` (loopback, embedded store, a
# queue tree): version and help, usage errors exit 2, BERTH_SERVER with a
# trailing slash, submit / status (columns, --state, the leaf queue) / cancel /
# queues (guarantee, usage, borrowing), 405 for other methods, the queue in
# the job_accepted log line, and `simulate --json -` on standard output.
# Usage: cli_transcript.sh BERTH SOURCE_DIR
set -euo pipefail
BERTH="$1"
SRC="$2"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect CODE CMD...: runs CMD, checks its exit status; output in $WORK/out, $WORK/err.
expect() {
  local want="$1"; shift
  local got=0
  "$@" > "$WORK/out" 2> "$WORK/err" || got=$?
  [ "$got" = "$want" ] || { cat "$WORK/out" "$WORK/err"; fail "'$*' exited $got, expected $want"; }
}
has() { grep -q -- "$2" "$WORK/$1" || { cat "$WORK/$1"; fail "$1 lacks '$2'"; }; }

# Version and help.
expect 0 "$BERTH" --version;            has out '^berth [0-9][0-9.]* (commit .*, .* build)$'
expect 0 "$BERTH" version;              has out '^berth [0-9]'
expect 0 "$BERTH" version --json;       has out '"version":'
expect 0 "$BERTH" help;                 has out 'cancel'
expect 0 "$BERTH" help status;          has out '--state'
expect 0 "$BERTH" status --help;        has out '--tenant'
expect 0 "$BERTH" policies;             has out '^  hetero-speed  '; has out '^  gavel-las  '; has out '^  fairshare  '
# Usage errors: exit 2 with the message.
expect 2 "$BERTH";                      has err 'a command is required'
expect 2 "$BERTH" frobnicate;           has err "unknown command 'frobnicate'"
expect 2 "$BERTH" help frobnicate;      has err "unknown command 'frobnicate'"
expect 2 "$BERTH" submit;               has err 'FILE is required'
expect 2 "$BERTH" status --state bogus; has err 'not a job state'
expect 2 "$BERTH" cancel;               has err 'ID is required'
expect 2 "$BERTH" cancel x1;            has err "job id 'x1'"
expect 2 "$BERTH" status --bogus;       has err 'bogus'
expect 2 "$BERTH" status --server ftp://127.0.0.1:1; has err 'or https://HOST:PORT'
BERTH_SERVER=http://127.0.0.1:1/v1 expect 2 "$BERTH" queues; has err 'BERTH_SERVER'

# The service, with a queue tree whose leaves are not named after tenants.
"$BERTH" serve --listen 127.0.0.1:0 --store "sqlite:$WORK/data/berth.db" --cluster "4x8:H100/leaf=2" \
  --virtual-nodes --queues "$SRC/examples/queues/research.yaml" 2> "$WORK/serve.log" &
SERVER_PID=$!
port=""
for _ in $(seq 1 200); do
  port=$(grep -o '"event":"listening"[^}]*' "$WORK/serve.log" 2>/dev/null | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$WORK/serve.log"; fail "server did not start"; }
export BERTH_SERVER="http://127.0.0.1:$port/"   # a trailing slash works
for _ in $(seq 1 100); do curl -sf "${BERTH_SERVER}readyz" > /dev/null && break; sleep 0.05; done

echo '{"name":"big","tenant":"alice","duration_s":3600,"groups":[{"count":2,"gpus":8}]}' > "$WORK/a.json"
echo '{"name":"huge","tenant":"bob","duration_s":3600,"groups":[{"count":4,"gpus":8}]}' > "$WORK/b.json"
expect 0 "$BERTH" submit "$WORK/a.json"; has out '^1$'
expect 0 "$BERTH" submit "$WORK/b.json"; has out '^2$'
for _ in $(seq 1 100); do
  "$BERTH" status 1 | grep -q 'state=running' && break
  sleep 0.05
done
expect 0 "$BERTH" status
has out '^ID  *NAME  *TENANT  *QUEUE  *STATE  *AGE  *GPUS  *NODELIST(REASON)$'
has out '^1  *big  *alice  *research-nlp  *running  *[0-9]*s  *16  *node'
has out '^2  *huge  *bob  *research-vision  *pending .*(.*)$'
expect 0 "$BERTH" status --state running
has out '^1 '; grep -q '^2 ' "$WORK/out" && fail "--state running listed a pending job"
expect 0 "$BERTH" status --tenant bob
has out '^2 '; grep -q '^1 ' "$WORK/out" && fail "--tenant bob listed alice's job"
expect 0 "$BERTH" status --queue research-nlp; has out '^1 '
# Paging: one job per request still lists every job, in order.
expect 0 "$BERTH" status --chunk-size 1; has out '^1  *big'; has out '^2  *huge'
expect 2 "$BERTH" status --chunk-size 0; has err 'chunk-size'
expect 0 "$BERTH" status 1; has out 'tenant=alice  queue=research-nlp'
grep -q '"event":"job_accepted".*"queue":"research-nlp"' "$WORK/serve.log" || { cat "$WORK/serve.log"; fail "job_accepted lacks the queue"; }

expect 0 "$BERTH" queues
has out '^QUEUE  *PARENT  *GUARANTEE  *LIMIT  *USAGE  *BORROWED  *PENDING  *RUNNING  *PEND_GPU$'
has out '^research  *-  *16  *24  *16  *0 '
has out '^research-nlp  *research  *8  *-  *16  *8 '
has out '^  H100 '

code=$(curl -s -o "$WORK/put" -D "$WORK/put.h" -w '%{http_code}' -X PUT -d '{}' "${BERTH_SERVER}v1/jobs/2")
[ "$code" = 405 ] || fail "PUT /v1/jobs/2 answered $code, expected 405"
grep -qi '^Allow: GET, DELETE' "$WORK/put.h" || { cat "$WORK/put.h"; fail "no Allow header"; }

expect 0 "$BERTH" cancel 1 2; has out '^1 cancelled$'; has out '^2 cancelled$'

# Kubernetes forms in the job document: a PriorityClass name, quantities, a GPU product name (a catalog alias).
echo '{"name":"k8s","tenant":"alice","priority_class":"train","duration_s":60,"groups":[{"count":1,"gpus":"8","cpu":"500m","memory":"64Gi","gpu_types":["NVIDIA-H100-80GB-HBM3"]}]}' > "$WORK/k.json"
expect 0 "$BERTH" submit "$WORK/k.json"; has out '^3$'
curl -s "${BERTH_SERVER}v1/jobs/3" > "$WORK/k3"
has k3 '"priority":50'; has k3 '"cpu_milli":500'; has k3 '"memory_mib":65536'
echo '{"name":"k9","priority_class":"urgent","groups":[{"count":1}]}' > "$WORK/k9.json"
expect 1 "$BERTH" submit "$WORK/k9.json"; has err "priority_class: 'urgent' is not a known class"
echo '{"name":"k10","groups":[{"count":1,"memory_mib":"64Gi"}]}' > "$WORK/k10.json"
expect 1 "$BERTH" submit "$WORK/k10.json"; has err 'use "memory"'
expect 0 "$BERTH" cancel 3
expect 0 "$BERTH" status 2; has out 'state=cancelled'
expect 1 "$BERTH" cancel 99; has err 'no job 99'

# simulate --json -: the JSON alone on stdout, the summary on stderr.
printf '%s\n' '{"name":"j1","submit_time_s":0,"duration_s":60,"groups":[{"count":1,"gpus":1}]}' \
  '{"name":"j2","submit_time_s":5,"duration_s":60,"groups":[{"count":1,"gpus":2}]}' > "$WORK/t.jsonl"
"$BERTH" simulate --cluster 1x8:H100 --trace "$WORK/t.jsonl" --mode replay --policy fifo --json - --quiet \
  > "$WORK/sim.json" 2> "$WORK/sim.err" || { cat "$WORK/sim.err"; fail "simulate failed"; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "fifo" in json.dumps(d)' "$WORK/sim.json" ||
  { cat "$WORK/sim.json"; fail "simulate --json - is not JSON"; }
[ ! -e ./- ] || fail "simulate --json - wrote a file named -"
# The heterogeneity-aware policies, on the spec-based model.
expect 0 "$BERTH" simulate --cluster 1x4:V100+1x4:K80 --trace "$WORK/t.jsonl" --mode replay \
  --policy hetero-speed,hetero-cost --catalog "$SRC/data/accelerators.yaml" --throughputs "" --quiet
has out 'hetero-speed'; has out 'hetero-cost'
expect 0 "$BERTH" simulate --cluster 1x8:H100 --trace "$WORK/t.jsonl" --mode replay --policy fairshare \
  --min-runtime 5m --preemption-grace 30s --quiet
expect 1 "$BERTH" simulate --cluster 1x8:H100 --trace "$WORK/t.jsonl" --mode replay --policy bestfit \
  --min-runtime 5m --quiet
has err "policy 'bestfit' does not preempt"
expect 2 "$BERTH" serve --min-runtime soon; has err '--min-runtime'
expect 2 "$BERTH" serve --preemption-grace=-3s; has err '--preemption-grace'
expect 2 "$BERTH" serve --restore-cost 5x; has err '--restore-cost'
expect 1 "$BERTH" serve --listen 127.0.0.1:0 --store "sqlite:$WORK/d2/berth.db" --policy bestfit --min-runtime 1m
has err "policy 'bestfit' does not preempt"
echo "cli transcript: ok"
