#!/usr/bin/env python3
"""In-place gang repair with real node agents on loopback (docs/failures.md,
"In-place repair in the service").

`berth serve --spares leaf:1 --repair in-place` and three `berth agent`s of 4
fake GPUs in one leaf: one node is kept as a hot spare, a 2 x 4 job runs on
the other two. Its node's agent is SIGKILLed mid-run together with the task's
processes (the machine is gone). After the heartbeat timeout only that task
starts again, as attempt 1 of the same run with the same rank, on the spare;
the other task keeps its process (one start, its pid alive throughout) and
finds the new peer in its peers.json. The job succeeds with 1 start, 0
requeues and 1 repair. The killed agent, started again, reports its old
attempt, which the server no longer wants. Prints the time from the kill to
the restarted task running, and the tasks restarted.

Bounded like e2e.py (free ports, deadlines, stopped by PID).
Usage: repair_e2e.py --berth PATH [--keep]
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Harness, fail, pid_alive, wait  # noqa: E402

# Each task ticks for about 12 s, then prints the peers it was last told of.
SCRIPT = ("for i in $(seq 1 60); do echo tick $i; sleep 0.2; done; "
          "echo peers: $(cat \"$BERTH_PEERS_FILE\" | tr -d ' \\n'); echo rank $RANK attempt $BERTH_TASK_ATTEMPT")


def agent_events(h, name, event):
    out = []
    for line in open(h.agents[name][2]):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == event:
            out.append(e)
    return out


def run(h):
    h.server_args = ["--spares", "leaf:1", "--repair", "in-place"]
    h.start_server()
    names = ["r1", "r2", "r3"]
    for n in names:
        h.start_agent(n)
    h.wait_nodes(names)

    def spare_node():
        code, body = h.request("GET", "/v1/nodes")
        spares = [n["name"] for n in body["nodes"] if n.get("spare")] if code == 200 else []
        return spares[0] if len(spares) == 1 else None
    spare = wait(spare_node, "one node of the leaf kept as a spare", 30)
    print("spare: %s" % spare)

    jid = h.submit({"name": "pair", "groups": [{"name": "w", "count": 2, "gpus": 4}],
                    "command": ["/bin/sh", "-c", SCRIPT]})
    j = h.wait_state(jid, "running")
    where = {p["task"]: p["node"] for p in j["placements"]}
    if spare in where.values():
        fail("the gang avoids the spare: %s" % j["placements"])

    def dirs_with_pid():
        ds = [(a, t, d) for a, _, t, d in h.task_dirs(jid) if os.path.exists(os.path.join(d, "pid"))]
        return ds if len(ds) == 2 else None
    started = wait(dirs_with_pid, "both tasks to start", 60)
    victim = where[0]
    survivor = where[1]
    survivor_dir = [d for a, t, d in started if a == survivor][0]
    survivor_pid = int(open(os.path.join(survivor_dir, "pid")).read())
    victim_dir = [d for a, t, d in started if a == victim][0]
    victim_pid = int(open(os.path.join(victim_dir, "pid")).read())
    launch0 = h.request("GET", "/v1/jobs/%d/launch" % jid)[1]
    rank0 = [t["rank"] for t in launch0["tasks"] if t["task"] == 0][0]
    time.sleep(1.0)

    # The machine of task 0 dies: its agent and the task's processes.
    p = h.agents[victim][0]
    killed_at = time.time()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    try:
        os.killpg(victim_pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    print("SIGKILLed agent %s and task 0 (pid %d) of job %d" % (victim, victim_pid, jid))

    def restarted():
        ev = [e for e in agent_events(h, spare, "task_started") if e["job"] == jid]
        return ev[0] if ev else None
    ev = wait(restarted, "task 0 to start again on the spare", 60)
    if ev["task"] != 0 or ev.get("attempt") != 1 or ev["generation"] != 1:
        fail("the spare runs task 0 as attempt 1 of run 1: %s" % ev)
    restart_s = ev["ts_ms"] / 1000.0 - killed_at
    down_at = None
    for line in open(os.path.join(h.work, "serve.log")):
        if '"event":"node_down"' in line:
            ts = json.loads(line)["ts"]
            down_at = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
    if down_at is None:
        fail("the server logs node_down for %s" % victim)
    down_to_start_s = ev["ts_ms"] / 1000.0 - down_at
    j = h.job(jid)
    if j["state"] != "running" or j["requeues"] != 0 or j["repairs"] != 1 or j["starts"] != 1:
        fail("repaired in place, not requeued: %s" % j)
    launch1 = h.request("GET", "/v1/jobs/%d/launch" % jid)[1]
    moved = [t for t in launch1["tasks"] if t["task"] == 0][0]
    if moved["rank"] != rank0 or moved["node"] != spare:
        fail("task 0 keeps rank %d on the spare: %s" % (rank0, moved))
    if not pid_alive(survivor_pid):
        fail("task 1 keeps running through the repair")
    print("task 0 running again on %s as attempt 1, rank %d, %.2f s after the kill (heartbeat timeout %s)" %
          (spare, rank0, restart_s, h.hb_timeout))

    # The killed agent comes back: its old attempt is not wanted.
    h.start_agent(victim)
    j = h.wait_state(jid, "succeeded", 120)
    if j["requeues"] != 0 or j["starts"] != 1 or j["repairs"] != 1:
        fail("the job finished in its first run: %s" % j)
    starts = [(e["task"], e.get("attempt", 0)) for n in names for e in agent_events(h, n, "task_started")
              if e["job"] == jid]
    if sorted(starts) != [(0, 0), (0, 1), (1, 0)]:
        fail("only task 0 started again: %s" % starts)
    code, text = h.logs(jid, 1)
    if code != 200 or "tick 60" not in text or spare not in text.split("peers:")[-1]:
        fail("task 1 ran through and was told of its new peer %s: %s %r" % (spare, code, text[-400:]))
    code, text0 = h.logs(jid, 0)
    if code != 200 or "attempt 1" not in text0 or ("rank %d" % rank0) not in text0:
        fail("task 0's log is its attempt 1's, with rank %d: %s %r" % (rank0, code, text0[-300:]))
    code, metrics = h.request("GET", "/metrics", raw=True)
    for line in ("berth_gang_repairs_total 1", "berth_tasks_repaired_total 1", "berth_spares_used_total 1"):
        if line not in metrics:
            fail("metrics: %s missing" % line)
    print("job %d succeeded: 1 start, 0 requeues, 1 repair; tasks restarted: 1 of 2 (starts %s); task 1 "
          "saw the new peer" % (jid, sorted(starts)))
    print("FIGURES: kill_to_restarted_task_started_s=%.2f node_down_to_restarted_task_started_s=%.3f "
          "tasks_restarted=1 heartbeat_timeout=%s" % (restart_s, down_to_start_s, h.hb_timeout))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="berth-repair-e2e-")
    os.makedirs(os.path.join(work, "data"))
    h = Harness(os.path.abspath(args.berth), work)
    # Only the killed agent may go silent: a timeout long enough that the
    # others' heartbeats never lapse on a loaded machine (each lapse would be
    # one more repair).
    h.hb_timeout = "3s"
    try:
        run(h)
        print("PASS: in-place repair with node agents (%s)" % work)
    finally:
        h.stop_all()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
