#!/usr/bin/env bash
# A standby federation dispatcher over etcd, real processes on loopback: one
# etcd member, three member `berth serve --virtual-nodes` (SQLite each;
# examples/federation/loopback.yaml) and two `berth serve --federation
# --store etcd:...` dispatchers over them, every port chosen free, every
# process stopped by its PID. Checks:
#   1. A leads; B is a standby: /healthz 200, /readyz 503 naming A, a
#      submission 503 naming A;
#   2. a burst through A, SIGKILL of A mid-burst: B takes the term (the
#      seconds are printed), rebuilds from etcd and carries on; every job A
#      acknowledged is present once at B, and after a client retries the whole
#      burst at B every burst job has exactly one copy over all members, under
#      the key of its first assignment (fed-<id>-1);
#   3. A restarted (A2) is a standby naming B. SIGSTOP of B past its lease:
#      A2 takes over; SIGCONT: B has lost its term, steps down and exits with
#      status 3, and still every job has one copy over the members.
# Prints the figures of docs/results/federation.md ("A standby dispatcher").
# Without etcd this fails, unless BERTH_SKIP_ETCD=1 (then it skips: status 77).
# Usage: federation_standby.sh BERTH LOADGEN REPO
set -euo pipefail
BERTH="$1"
LOADGEN="$2"
REPO="$3"
FED="$REPO/examples/federation/loopback.yaml"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill -CONT "$p" 2>/dev/null || true
    kill "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }; done
  exit 1
}
source "$(dirname "$0")/etcd_cluster.sh"
require_etcd
echo "fed-token-$$" > "$WORK/token"
TOKEN="$(cat "$WORK/token")"
export BERTH_TOKEN_FILE="$WORK/token"
SECONDS_LIMIT=$((SECONDS + 200))  # the whole test, bounded
now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
wait_until() {  # $1: description; $2: command that succeeds when done
  while ! eval "$2"; do
    [ "$SECONDS" -lt "$SECONDS_LIMIT" ] || fail "timed out waiting for: $1"
    sleep 0.05
  done
}
port_of() {  # $1: log file
  local port="" i
  for i in $(seq 1 400); do
    port=$(grep '"event":"listening"' "$1" 2>/dev/null | grep -o '"port":[0-9]*' | head -1 | cut -d: -f2 || true)
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.05
  done
  echo "no listening line in $1" >&2; return 1
}

start_etcd_cluster 1
echo "etcd: $ENDPOINTS"

declare -A SPEC=([east-h100]="4x8:H100/leaf=2" [west-a100]="8x8:A100/leaf=4" [south-v100]="2x4:V100")
declare -A MURL
for m in east-h100 west-a100 south-v100; do
  "$BERTH" serve --listen 127.0.0.1:0 --store "sqlite:$WORK/$m/berth.db" --cluster "${SPEC[$m]}" \
    --virtual-nodes --token-file "$WORK/token" --require-federation-lease 2> "$WORK/$m.log" &
  PIDS+=("$!")
  MURL[$m]="http://127.0.0.1:$(port_of "$WORK/$m.log")"
done
for m in east-h100 west-a100 south-v100; do wait_ready "${MURL[$m]}" 30 || fail "member $m not ready"; done

# A dispatcher on the etcd store: sets PID_<name>, URL_<name>; log $WORK/<name>.log.
start_dispatcher() {
  local name="$1" log="$WORK/$1.log"
  "$BERTH" serve --federation "$FED" --listen 127.0.0.1:0 --store "etcd:$ENDPOINTS" \
    --token-file "$WORK/token" --member-token-file "$WORK/token" --dispatch-policy global \
    --member "east-h100=${MURL[east-h100]}" --member "west-a100=${MURL[west-a100]}" \
    --member "south-v100=${MURL[south-v100]}" --poll-interval 0.2s --member-timeout 1.5s \
    --requeue-running-after 10m 2> "$log" &
  local pid=$!
  PIDS+=("$pid")
  printf -v "PID_$name" '%s' "$pid"
  printf -v "URL_$name" '%s' "http://127.0.0.1:$(port_of "$log")"
}
code_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }
submit_to() {  # URL NAME -> HTTP status (body in $WORK/submit.json)
  curl -s -o "$WORK/submit.json" -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $TOKEN" -X POST \
    -d "{\"name\":\"$2\",\"idempotency_key\":\"$2\",\"duration_s\":60,\"groups\":[{\"count\":1,\"gpus\":1}]}" \
    "$1/v1/jobs" || true
}

# --- 1. A leads, B waits
start_dispatcher A
wait_ready "$URL_A" 30 || fail "A did not become ready"
start_dispatcher B
wait_until "B serving" '[ "$(code_of "$URL_B/healthz")" = 200 ]'
[ "$(readyz "$URL_B")" = 503 ] || fail "standby B answers readyz $(readyz "$URL_B"), expected 503"
curl -s "$URL_B/readyz" | grep -q "\"role\":\"standby\"" || fail "B is not a standby: $(curl -s "$URL_B/readyz")"
curl -s "$URL_B/readyz" | grep -q "$URL_A" ||
  fail "standby B does not name the leader $URL_A: $(curl -s "$URL_B/readyz")"
[ "$(submit_to "$URL_B" to-standby)" = 503 ] || fail "a submission to standby B was not refused with 503"
grep -q "the leader is $URL_A" "$WORK/submit.json" || fail "B's 503 does not name A: $(cat "$WORK/submit.json")"
[ "$(code_of "$URL_B/v1/jobs")" = 503 ] || fail "B lists jobs while a standby"
echo "A leads at $URL_A; B is a standby at $URL_B (readyz: $(curl -s "$URL_B/readyz"))"

# --- 2. a burst through A, SIGKILL of A mid-burst
COUNT=2000
"$LOADGEN" --server "$URL_A" --token "$TOKEN" --count "$COUNT" --concurrency 8 --prefix burst --acked "$WORK/acked" \
  --max-seconds 60 --max-conn-errors 5 > "$WORK/load1.json" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
wait_until "300 acknowledged by A" '[ -f "$WORK/acked" ] && [ "$(wc -l < "$WORK/acked")" -ge 300 ]'
kill -9 "$PID_A"
T_KILL=$(now)
wait "$PID_A" 2>/dev/null || true
wait "$LOAD_PID" || true
ACKED=$(wc -l < "$WORK/acked")
[ "$ACKED" -lt "$COUNT" ] || fail "the kill came after the burst ended; nothing was tested"
wait_ready "$URL_B" 30 || fail "B did not take over within 30 s of the SIGKILL"
TAKEOVER=$(seconds_since "$T_KILL")
echo "burst before the kill: $(cat "$WORK/load1.json")"
echo "SIGKILL of leader A after $ACKED acknowledged submissions: B ready after $TAKEOVER s (etcd lease TTL 4 s)"
python3 - "$WORK/B.log" "$T_KILL" <<'EOF'
import json, sys, datetime
def ts(e): return datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
t_kill, rec, lead, first = float(sys.argv[2]), None, None, None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "recovered": rec = (ts(e), e)
    if e.get("event") == "leading": lead = ts(e)
    if e.get("event") == "job_dispatched" and first is None and lead is not None: first = ts(e)
r = rec[1]
print(f"  B: leading {lead - t_kill:.2f} s after the kill (recovered {r['jobs']} jobs, {r['assignments']} assignments, "
      f"{r['to_dispatch']} to dispatch); first forward {first - t_kill:.2f} s after the kill")
EOF
# Every job A acknowledged is at B once; a client retrying the whole burst at B
# gets the same ids, and B then holds each burst job once.
"$LOADGEN" --server "$URL_B" --token "$TOKEN" --verify --count "$COUNT" --prefix burst --acked "$WORK/acked" \
  > "$WORK/verify.json" || fail "acknowledged jobs lost or duplicated after the takeover: $(cat "$WORK/verify.json")"
echo "verify at B: $(cat "$WORK/verify.json")"
all_sent() {  # $1: the leader's URL
  curl -sf -H "Authorization: Bearer $TOKEN" "$1/v1/jobs?limit=10000" | python3 -c "
import json,sys
live = [j for j in json.load(sys.stdin)['jobs'] if j['state'] in ('pending','running')]
sys.exit(0 if all(j['member_job'] is not None for j in live) else 1)"
}
wait_until "every burst job at a member" 'all_sent "$URL_B"'
T_SENT=$(seconds_since "$T_KILL")
echo "every one of the $COUNT burst jobs acknowledged by a member $T_SENT s after the kill"
once_at_members() {  # $1: the leader's URL; checks each burst job has one copy over all members, key fed-<id>-1
  local m
  for m in east-h100 west-a100 south-v100; do
    curl -sf -H "Authorization: Bearer $TOKEN" "${MURL[$m]}/v1/jobs?limit=10000" > "$WORK/m-$m.json"
  done
  curl -sf -H "Authorization: Bearer $TOKEN" "$1/v1/jobs?limit=10000" > "$WORK/fed-jobs.json"
  python3 - "$WORK" "$COUNT" "$TOKEN" "${MURL[east-h100]}" "${MURL[west-a100]}" "${MURL[south-v100]}" <<'EOF'
import json, sys, collections, urllib.request
w, count, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
url = dict(zip(("east-h100", "west-a100", "south-v100"), sys.argv[4:7]))
copies = collections.Counter()
where = {}
for m in ("east-h100", "west-a100", "south-v100"):
    for j in json.load(open(f"{w}/m-{m}.json"))["jobs"]:
        if j["name"].startswith("burst-"):
            copies[j["name"]] += 1
            where[j["name"]] = (m, j["id"])
fed = {j["name"]: j for j in json.load(open(f"{w}/fed-jobs.json"))["jobs"] if j["name"].startswith("burst-")}
assert len(fed) == count, f"{len(fed)} burst jobs at the dispatcher, expected {count}"
twice = [n for n, c in copies.items() if c > 1]
assert not twice, f"jobs with two copies over the members: {twice[:5]}"
missing = [n for n in fed if copies[n] != 1]
assert not missing, f"jobs with no copy at any member: {missing[:5]}"
wrong = [n for n, j in fed.items() if (j["member"], j["member_job"]) != where[n]]
assert not wrong, f"jobs whose dispatcher record differs from their copy: {wrong[:5]}"
def key_at(m, i):
    req = urllib.request.Request(f"{url[m]}/v1/jobs/{i}", headers={"Authorization": f"Bearer {token}"})
    return json.load(urllib.request.urlopen(req, timeout=10))["idempotency_key"]
later = [n for n, j in fed.items() if key_at(*where[n]) != f"fed-{j['id']}-1"]
assert not later, f"jobs whose copy is not their first assignment: {later[:5]}"
print(f"{count} burst jobs, each with exactly one copy over the 3 members (its first assignment, attempt 1)")
EOF
}
once_at_members "$URL_B" || fail "a burst job is missing or doubled at the members"

# --- 3. A back as a standby; B stopped past its lease, resumed: it steps down
start_dispatcher A2
wait_until "A2 serving" '[ "$(code_of "$URL_A2/healthz")" = 200 ]'
wait_until "A2 a standby naming B" 'curl -s "$URL_A2/readyz" | grep -q "$URL_B"'
kill -STOP "$PID_B"
T_STOP=$(now)
wait_ready "$URL_A2" 30 || fail "A2 did not take over from the stopped B"
echo "SIGSTOP of leader B: A2 ready after $(seconds_since "$T_STOP") s"
kill -CONT "$PID_B"
T_CONT=$(now)
rc=0
wait "$PID_B" || rc=$?
[ "$rc" = 3 ] || fail "the deposed B exited with status $rc, expected 3 (stepped down)"
grep -q '"event":"stepped_down"' "$WORK/B.log" || fail "B logged no stepped_down"
echo "B resumed without its term: stepped down, exit status 3 after $(seconds_since "$T_CONT") s"
echo "  B's log: $(grep -o '"event":"stepped_down".*' "$WORK/B.log" | head -1)"
wait_until "every burst job at a member (A2)" 'all_sent "$URL_A2"'
once_at_members "$URL_A2" || fail "a burst job is missing or doubled after the second takeover"
code=$(submit_to "$URL_A2" after-takeover)
[ "$code" = 201 ] || fail "A2 refused a new job: $code $(cat "$WORK/submit.json")"
echo "federation standby: OK ($ACKED acknowledged before the leader's SIGKILL; every job dispatched once;" \
  "takeover $TAKEOVER s)"
