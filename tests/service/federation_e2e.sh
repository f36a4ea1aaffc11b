#!/usr/bin/env bash
# The live federation dispatcher end to end, real processes on loopback:
# three member `berth serve --virtual-nodes` (examples/federation/loopback.yaml:
# H100 in us-east, A100 in eu-west, V100 in ap-south) and `berth serve
# --federation` over them (data-local dispatch), every port chosen free, every
# process stopped by its PID. Checks:
#   1. jobs submitted through the CLI land where the policy says (a dataset's
#      region; a region pin), a gang no member holds is refused (without
#      span_regions); with span_regions a 72-GPU gang runs as two parts on
#      members of two regions (names, ranks, launch spec) and succeeds;
#   2. SIGSTOP of the ap-south member (it hangs: connections accepted, nothing
#      answered): jobs for the other members are dispatched as before, its
#      queued job moves; SIGCONT with free GPUs: the fenced member starts
#      nothing, its copy is cancelled without ever starting;
#   3. SIGKILL of the eu-west member: its queued jobs move to other members,
#      its running ones stay (until --requeue-running-after); restarted, it
#      gets the moved copies cancelled (none runs twice);
#   4. a burst through the dispatcher, SIGKILL of the dispatcher mid-burst,
#      restart on its store: every acknowledged job present once, with the
#      same member assignment as before, and at most one live copy per job
#      over all members.
# Prints the figures of docs/results/federation.md ("The live service").
# Usage: federation_e2e.sh BERTH LOADGEN REPO
set -euo pipefail
BERTH="$1"
LOADGEN="$2"
REPO="$3"
FED="$REPO/examples/federation/loopback.yaml"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill -CONT "$p" 2>/dev/null || true  # a stopped member must run to take its SIGTERM
      kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
echo "fed-token-$$" > "$WORK/token"
export BERTH_TOKEN_FILE="$WORK/token"
SECONDS_LIMIT=$((SECONDS + 240))  # the whole test, bounded

port_of() {  # $1: log file
  local port="" i
  for i in $(seq 1 400); do
    port=$(grep '"event":"listening"' "$1" 2>/dev/null | grep -o '"port":[0-9]*' | head -1 | cut -d: -f2 || true)
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.05
  done
  echo "no listening line in $1" >&2; cat "$1" >&2; return 1
}
wait_ready() {  # $1: URL
  local i
  for i in $(seq 1 400); do
    curl -sf "$1/readyz" > /dev/null && return 0
    sleep 0.05
  done
  echo "$1 not ready" >&2; return 1
}

declare -A SPEC=([east-h100]="4x8:H100/leaf=2" [west-a100]="8x8:A100/leaf=4" [south-v100]="2x4:V100")
declare -A MPID MURL MLOG
start_member() {  # $1: name; $2: port (0: any)
  local name="$1" log="$WORK/$1.$(date +%s%N).log"
  "$BERTH" serve --listen "127.0.0.1:$2" --store "sqlite:$WORK/$name/berth.db" --cluster "${SPEC[$name]}" \
    --virtual-nodes --token-file "$WORK/token" --require-federation-lease 2> "$log" &
  MPID[$name]=$!
  MLOG[$name]="$log"
  PIDS+=("$!")
  local port; port=$(port_of "$log")
  MURL[$name]="http://127.0.0.1:$port"
  wait_ready "${MURL[$name]}"
}
FED_PID=""
start_dispatcher() {
  local log="$WORK/fed.$(date +%s%N).log"
  "$BERTH" serve --federation "$FED" --listen "127.0.0.1:0" --store "sqlite:$WORK/fed/berth.db" \
    --token-file "$WORK/token" --member-token-file "$WORK/token" --dispatch-policy data-local \
    --member "east-h100=${MURL[east-h100]}" --member "west-a100=${MURL[west-a100]}" \
    --member "south-v100=${MURL[south-v100]}" --poll-interval 0.2s --member-timeout 1.5s \
    --requeue-running-after 10m 2> "$log" &
  FED_PID=$!
  PIDS+=("$!")
  FEDLOG="$log"
  local port; port=$(port_of "$log")
  export BERTH_SERVER="http://127.0.0.1:$port"
  wait_ready "$BERTH_SERVER"
}
job() { curl -sf "$BERTH_SERVER/v1/jobs/$1"; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$2)" <<< "$1"; }
wait_until() {  # $1: description; $2: command that succeeds when done
  while ! eval "$2"; do
    [ "$SECONDS" -lt "$SECONDS_LIMIT" ] || { echo "timed out waiting for: $1"; exit 1; }
    sleep 0.05
  done
}

for m in east-h100 west-a100 south-v100; do start_member "$m" 0; done
start_dispatcher
echo "members: ${MURL[*]}; dispatcher $BERTH_SERVER"

# A write needs the token at the dispatcher too.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"name":"x","groups":[{"count":1}]}' "$BERTH_SERVER/v1/jobs")
[ "$code" = 401 ] || { echo "expected 401 without a token, got $code"; exit 1; }

# --- 1. landing ---
cat > "$WORK/land.jsonl" <<'EOF'
{"name":"crawl-0","duration_s":3600,"dataset":"web-crawl","groups":[{"count":1,"gpus":8}]}
{"name":"speech","duration_s":3600,"dataset":"speech","groups":[{"count":1,"gpus":4}]}
{"name":"pinned","duration_s":3600,"regions":["us-east"],"groups":[{"count":2,"gpus":8}]}
EOF
"$BERTH" submit "$WORK/land.jsonl" > "$WORK/land.ids"
mapfile -t IDS < "$WORK/land.ids"
ID_CRAWL=${IDS[0]}; ID_SPEECH=${IDS[1]}; ID_PINNED=${IDS[2]}
for pair in "$ID_CRAWL:west-a100" "$ID_SPEECH:south-v100" "$ID_PINNED:east-h100"; do
  id=${pair%%:*}; want=${pair#*:}
  wait_until "job $id running" '[ "$(field "$(job '"$id"')" "[\"state\"]")" = running ]'
  got=$(field "$(job "$id")" '["member"]')
  [ "$got" = "$want" ] || { echo "job $id went to $got, expected $want"; job "$id"; exit 1; }
done
echo "landing: crawl-0 -> west-a100 (web-crawl's region), speech -> south-v100, pinned -> east-h100"
"$BERTH" status "$ID_CRAWL" | head -3
# A gang larger than every member is refused whole (without span_regions it is never split).
if echo '{"name":"huge","duration_s":60,"groups":[{"count":10,"gpus":8}]}' | "$BERTH" submit - 2> "$WORK/huge.err"; then
  echo "an 80-GPU gang was accepted; no member holds it"; exit 1
fi
grep -q "422" "$WORK/huge.err" || { echo "expected a 422:"; cat "$WORK/huge.err"; exit 1; }

# --- 1b. a gang across regions ---
# 9 x 8 GPUs with span_regions: more than any member has (west-a100 has 64),
# so it runs as two parts: 7 tasks on west-a100 (crawl-0 holds its eighth
# node), 2 on east-h100 (pinned holds half of it).
ID_SPAN=$(echo '{"name":"span-gang","duration_s":8,"span_regions":true,"launcher":"torch","command":["train"],"env":{"MASTER_ADDR":"rdzv.example","MASTER_PORT":"29400"},"groups":[{"count":9,"gpus":8}]}' | "$BERTH" submit -)
wait_until "span-gang running" '[ "$(field "$(job "$ID_SPAN")" "[\"state\"]")" = running ]'
SPAN_DOC=$(job "$ID_SPAN")
python3 - "$SPAN_DOC" <<'EOF2'
import json, sys
d = json.loads(sys.argv[1])
parts = [(p["member"], p["tasks"], p["ranks"], p["state"]) for p in d["parts"]]
assert parts == [("west-a100", 7, [0, 6], "running"), ("east-h100", 2, [7, 8], "running")], parts
assert d["member"] is None and d["span"]["world_size"] == 9, d["span"]
print(f"span-gang split: {parts}; why: {d['span']['reason']}; estimated run {d['span']['run_s']:.1f} s")
EOF2
EAST_PART=$(field "$SPAN_DOC" '["parts"][1]["member_job"]')
auth() { curl -sf -H "Authorization: Bearer $(cat "$WORK/token")" "$@"; }
python3 - "$(auth "${MURL[east-h100]}/v1/jobs/$EAST_PART")" "$(auth "${MURL[east-h100]}/v1/jobs/$EAST_PART/launch")" <<'EOF2'
import json, sys
doc, launch = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert doc["name"] == "span-gang.part-1", doc["name"]
assert doc["spec"]["span_part"] == {"index": 1, "parts": 2, "world_size": 9, "rank_offset": 7}, doc["spec"]
env = launch["tasks"][0]["env"]
ranks = sorted(int(t["env"]["RANK"]) for t in launch["tasks"])
assert (launch["world_size"], ranks, env["WORLD_SIZE"], env["MASTER_ADDR"]) == (9, [7, 8], "9", "rdzv.example"), env
print("east-h100 runs span-gang.part-1: RANKs 7 and 8 of WORLD_SIZE 9, rendezvous at the job's MASTER_ADDR")
EOF2
"$BERTH" status "$ID_SPAN" | grep -q "part 1  east-h100" || { echo "berth status shows no parts"; "$BERTH" status "$ID_SPAN"; exit 1; }
wait_until "span-gang succeeded" '[ "$(field "$(job "$ID_SPAN")" "[\"state\"]")" = succeeded ]'
curl -sf "$BERTH_SERVER/v1/federation" | python3 -c "
import json,sys; c = json.load(sys.stdin)['counters']; assert (c['spanning_jobs'], c['spanning_parts']) == (1, 2), c
print('span-gang succeeded (every part); spanning_jobs 1, spanning_parts 2')"

# --- 2. a member hangs: SIGSTOP ---
# ap-south (8 V100s) runs speech (4 GPUs, an hour); sv-short takes the other 4
# for 10 s; sv-queued (4 GPUs, its data there; it may also run in us-east) queues
# behind them.
ID_SHORT=$(echo '{"name":"sv-short","duration_s":10,"dataset":"speech","groups":[{"count":1,"gpus":4}]}' | "$BERTH" submit -)
wait_until "sv-short running at south-v100" '[ "$(field "$(job "$ID_SHORT")" "[\"state\"]")" = running ]'
T_SHORT=$(date +%s.%N)
ID_SVQ=$(echo '{"name":"sv-queued","duration_s":3600,"dataset":"speech","regions":["ap-south","us-east"],"groups":[{"count":1,"gpus":4}]}' | "$BERTH" submit -)
wait_until "sv-queued queued at south-v100" '[ "$(field "$(job "$ID_SVQ")" "[\"member\"]")" = south-v100 ] && [ "$(field "$(job "$ID_SVQ")" "[\"member_job\"]")" != None ]'
SVQ_AT_SOUTH=$(field "$(job "$ID_SVQ")" '["member_job"]')
[ "$(field "$(job "$ID_SVQ")" '["state"]')" = pending ] || { echo "sv-queued started at once"; job "$ID_SVQ"; exit 1; }
kill -STOP "${MPID[south-v100]}"
T_STOP=$(date +%s.%N)
# While it hangs: 20 short jobs for us-east, each acknowledged there.
for i in $(seq 1 20); do
  echo "{\"name\":\"during-stop-$i\",\"duration_s\":2,\"regions\":[\"us-east\"],\"groups\":[{\"count\":1,\"gpus\":1}]}"
done > "$WORK/during.jsonl"
"$BERTH" submit "$WORK/during.jsonl" > "$WORK/during.ids"
during_acked() {
  curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys; sys.exit(0 if sum(1 for j in json.load(sys.stdin)['jobs'] if j['name'].startswith('during-stop') and j['member_job'] is not None) == 20 else 1)"
}
wait_until "the 20 jobs acknowledged by east-h100" during_acked
wait_until "sv-queued moved off the stopped member" '[ "$(field "$(job "$ID_SVQ")" "[\"member\"]")" != south-v100 ] && [ "$(field "$(job "$ID_SVQ")" "[\"member_job\"]")" != None ]'
T_SVQ=$(date +%s.%N)
curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys
lat = sorted(j['dispatched_at'] - j['submitted_at'] for j in json.load(sys.stdin)['jobs'] if j['name'].startswith('during-stop'))
print(f'while south-v100 hangs: 20 jobs for us-east acknowledged, dispatch latency p50 {1e3*lat[len(lat)//2]:.1f} ms, max {1e3*lat[-1]:.1f} ms')"
echo "sv-queued -> $(field "$(job "$ID_SVQ")" '["member"]') $(python3 -c "print(f'{$T_SVQ-$T_STOP:.2f}')") s after the SIGSTOP (member timeout 1.5 s)"
# sv-short's end passes while the member is stopped: it resumes with 4 GPUs
# free, then 8; its lease has lapsed, so it starts nothing.
wait_until "sv-short's end passed" 'python3 -c "import sys,time; sys.exit(0 if time.time() > $T_SHORT + 11 else 1)"'
kill -CONT "${MPID[south-v100]}"
T_CONT=$(date +%s.%N)
svq_copy() { curl -sf -H "Authorization: Bearer $(cat "$WORK/token")" "${MURL[south-v100]}/v1/jobs/$SVQ_AT_SOUTH"; }
wait_until "the copy of sv-queued on south-v100 cancelled" '[ "$(field "$(svq_copy)" "[\"state\"]")" = cancelled ]'
STARTS=$(field "$(svq_copy)" '["starts"]')
[ "$STARTS" = 0 ] || { echo "the moved copy started $STARTS times on the resumed member"; svq_copy; exit 1; }
grep -q '"event":"federation_fenced"' "${MLOG[south-v100]}" || { echo "south-v100 logged no federation_fenced"; exit 1; }
wait_until "south-v100 leased again" 'grep -q "\"event\":\"federation_lease_renewed\"" "${MLOG[south-v100]}"'
[ "$(field "$(job "$ID_PINNED")" '["state"]')" = running ] || { echo "pinned job stopped"; exit 1; }
[ "$(field "$(job "$ID_SPEECH")" '["member"]')" = south-v100 ] || { echo "speech moved (running jobs stay until --requeue-running-after)"; exit 1; }
echo "south-v100 resumed: fenced (no start), the moved copy cancelled $(python3 -c "print(f'{$(date +%s.%N)-$T_CONT:.2f}')") s after SIGCONT with 0 starts; speech kept running there"

during_done() {
  curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys; sys.exit(0 if all(j['state'] == 'succeeded' for j in json.load(sys.stdin)['jobs'] if j['name'].startswith('during-stop')) else 1)"
}
wait_until "the 20 short jobs done" during_done

# --- 3. a member SIGKILLed ---
# Fill eu-west: 7 more 8-GPU jobs run there (64 GPUs), 3 queue behind them.
for i in $(seq 1 10); do
  echo "{\"name\":\"crawl-$i\",\"duration_s\":3600,\"dataset\":\"web-crawl\",\"groups\":[{\"count\":1,\"gpus\":8}]}"
done > "$WORK/crawl.jsonl"
"$BERTH" submit "$WORK/crawl.jsonl" > "$WORK/crawl.ids"
count_at() {  # $1: member, $2: state
  curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys; print(sum(1 for j in json.load(sys.stdin)['jobs'] if j['member']=='$1' and j['state']=='$2' and j['member_job'] is not None))"
}
wait_until "8 running and 3 queued at west-a100" '[ "$(count_at west-a100 running)" = 8 ] && [ "$(count_at west-a100 pending)" = 3 ]'
QUEUED_AT_WEST=$(curl -sf "$BERTH_SERVER/v1/jobs?state=pending&limit=10000" | python3 -c "
import json,sys; print(' '.join(str(j['id']) for j in json.load(sys.stdin)['jobs'] if j['member']=='west-a100'))")
echo "queued at west-a100: $QUEUED_AT_WEST"
WEST_PORT=${MURL[west-a100]##*:}
kill -9 "${MPID[west-a100]}"; wait "${MPID[west-a100]}" 2>/dev/null || true
T_KILL=$(date +%s.%N)
moved() {
  local id
  for id in $QUEUED_AT_WEST; do
    local d; d=$(job "$id")
    [ "$(field "$d" '["member"]')" != west-a100 ] && [ "$(field "$d" '["member_job"]')" != None ] || return 1
  done
}
wait_until "west-a100's queued jobs moved" moved
T_MOVED=$(date +%s.%N)
MARKED=$(grep -o '"event":"member_down"' "$FEDLOG" | wc -l)
[ "$MARKED" -ge 1 ] || { echo "no member_down logged"; exit 1; }
[ "$(count_at west-a100 running)" = 8 ] || { echo "running jobs left west-a100 before --requeue-running-after"; exit 1; }
echo "redispatch after SIGKILL: $(python3 -c "print(f'{$T_MOVED-$T_KILL:.2f}')") s from the kill to all 3 queued jobs acknowledged elsewhere (member timeout 1.5 s)"
for id in $QUEUED_AT_WEST; do echo "  job $id -> $(field "$(job "$id")" '["member"]')"; done
# Where the time went, from the dispatcher's log: the kill -> member_down -> the last moved job acknowledged.
python3 - "$FEDLOG" "$T_KILL" $QUEUED_AT_WEST <<'EOF2'
import json, sys, datetime
log, t_kill, ids = sys.argv[1], float(sys.argv[2]), {int(x) for x in sys.argv[3:]}
def ts(e): return datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
down = acked = None
for line in open(log):
    e = json.loads(line)
    if e.get("event") == "member_down" and e.get("member") == "west-a100" and down is None and ts(e) >= t_kill: down = ts(e)
    if e.get("event") == "job_dispatched" and e.get("job") in ids and e.get("attempt", 0) >= 2: acked = ts(e)
print(f"  member_down logged {down - t_kill:.2f} s after the kill; last moved job acknowledged {acked - down:.3f} s later")
EOF2

# The member returns on its port and store: the moved copies are cancelled there
# (3 more cancellations than before it returned; earlier cases cancel some too).
DUPS_BEFORE=$(curl -sf "$BERTH_SERVER/v1/federation" | python3 -c "
import json,sys; print(json.load(sys.stdin)['counters']['duplicates_cancelled'])")
start_member west-a100 "$WEST_PORT"
dup_cancelled() {
  curl -sf "$BERTH_SERVER/v1/federation" | python3 -c "
import json,sys; sys.exit(0 if json.load(sys.stdin)['counters']['duplicates_cancelled'] >= $DUPS_BEFORE + 3 else 1)"
}
wait_until "the 3 copies on the returned west-a100 cancelled" dup_cancelled
LIVE_WEST=$(curl -sf "${MURL[west-a100]}/v1/jobs?limit=10000" | python3 -c "
import json,sys; print(sum(1 for j in json.load(sys.stdin)['jobs'] if j['state'] in ('pending','running')))")
[ "$LIVE_WEST" = 8 ] || { echo "west-a100 holds $LIVE_WEST live jobs after reconciling, expected its 8 running"; exit 1; }
echo "west-a100 back: 3 duplicate copies cancelled there, its 8 running jobs kept"

# --- 4. a burst, the dispatcher SIGKILLed mid-burst, restarted ---
curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys; [print(j['id'], j['member'], j['member_job']) for j in json.load(sys.stdin)['jobs']]" | sort > "$WORK/before.txt"
"$LOADGEN" --server "$BERTH_SERVER" --token "$(cat "$WORK/token")" --count 3000 --concurrency 8 --prefix burst \
  --acked "$WORK/acked" --max-seconds 60 --max-conn-errors 5 > "$WORK/load1.json" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
wait_until "300 acknowledged" '[ -f "$WORK/acked" ] && [ "$(wc -l < "$WORK/acked")" -ge 300 ]'
kill -9 "$FED_PID"; wait "$FED_PID" 2>/dev/null || true
wait "$LOAD_PID" || true
ACKED=$(wc -l < "$WORK/acked")
echo "burst before the kill: $(cat "$WORK/load1.json")"
start_dispatcher
grep -q '"event":"recovered"' "$FEDLOG" || { echo "no recovery logged"; exit 1; }
# Every earlier job keeps its member and member job.
curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys; [print(j['id'], j['member'], j['member_job']) for j in json.load(sys.stdin)['jobs'] if not j['name'].startswith('burst')]" \
  | sort > "$WORK/after.txt"
diff "$WORK/before.txt" "$WORK/after.txt" || { echo "assignments changed across the restart"; exit 1; }
"$LOADGEN" --server "$BERTH_SERVER" --token "$(cat "$WORK/token")" --verify --count 3000 --prefix burst --acked "$WORK/acked"
# Every burst job dispatched, and exactly one live copy of each over all members.
all_sent() {
  curl -sf "$BERTH_SERVER/v1/federation" | python3 -c "
import json,sys; sys.exit(0 if json.load(sys.stdin)['waiting'] == 0 else 1)" &&
  curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" | python3 -c "
import json,sys; sys.exit(0 if all(j['member_job'] is not None for j in json.load(sys.stdin)['jobs'] if j['state'] in ('pending','running')) else 1)"
}
wait_until "every burst job at a member" all_sent
sleep 1  # one more poll round: copies the dispatcher left behind are cancelled
for m in east-h100 west-a100 south-v100; do
  curl -sf "${MURL[$m]}/v1/jobs?limit=10000" > "$WORK/m-$m.json"
done
curl -sf "$BERTH_SERVER/v1/jobs?limit=10000" > "$WORK/fed-jobs.json"
python3 - "$WORK" <<'EOF'
import json, sys, collections
w = sys.argv[1]
live = collections.Counter()
for m in ("east-h100", "west-a100", "south-v100"):
    for j in json.load(open(f"{w}/m-{m}.json"))["jobs"]:
        if j["state"] in ("pending", "running") and j["name"].startswith("burst"):
            live[j["name"]] += 1
fed = [j for j in json.load(open(f"{w}/fed-jobs.json"))["jobs"] if j["name"].startswith("burst")]
twice = [n for n, c in live.items() if c > 1]
assert not twice, f"jobs live on two members: {twice[:5]}"
missing = [j["name"] for j in fed if j["state"] in ("pending", "running") and live[j["name"]] != 1]
assert not missing, f"jobs without a live copy: {missing[:5]}"
lat = sorted(j["dispatched_at"] - j["submitted_at"] for j in fed if j["dispatched_at"] is not None)
def q(p): return lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"burst: {len(fed)} jobs at the dispatcher, each live on exactly one member")
print(f"dispatch latency (accepted -> acknowledged by the member), burst jobs: mean {1e3*sum(lat)/len(lat):.1f} ms, "
      f"p50 {1e3*q(0.5):.1f} ms, p99 {1e3*q(0.99):.1f} ms over {len(lat)} jobs")
EOF
# Throughput through the restarted dispatcher, by itself (no kill).
"$LOADGEN" --server "$BERTH_SERVER" --token "$(cat "$WORK/token")" --count 2000 --concurrency 8 --prefix rate \
  --max-seconds 60 > "$WORK/load2.json"
echo "throughput: $(cat "$WORK/load2.json")"
t0=$(date +%s.%N)
wait_until "every rate job at a member" all_sent
t1=$(date +%s.%N)
echo "all 2000 rate jobs acknowledged by members $(python3 -c "print(f'{$t1-$t0:.2f}')") s after the last submission answered"
curl -sf "$BERTH_SERVER/v1/federation" | python3 -c "import json,sys; print('counters:', json.load(sys.stdin)['counters'])"
echo "federation e2e: OK ($ACKED acknowledged before the dispatcher's SIGKILL, each dispatched once)"
