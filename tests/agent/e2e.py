#!/usr/bin/env python3
"""Real processes on loopback: `berth serve --node-token-file` and `berth agent`s
declaring 4 fake GPUs each, jobs whose commands are real programs.

Cases, in order: bad input (a wrong node token, a duplicate node name, a
status for a task the node does not run, malformed bodies: 4xx, nothing
changed); a 2 x 4 job submitted through the CLI succeeds and its logs are
served (each task saw its CUDA_VISIBLE_DEVICES and BERTH_TASK_INDEX); a
failing command fails its job; cancel stops a gang (SIGTERM, then SIGKILL
after the grace for a task that ignores SIGTERM); SIGKILL of an agent during
a 1 x 4 run: its node goes down, the job is requeued and finishes on another
node; the killed agent restarted re-registers, reports the task it still
runs, which the server no longer wants (stopped); SIGKILL of the server
mid-run: the agents keep running, and the job finishes after the server
restarts on the same store. Every (job, run, task) is started once.

Bounded: free ports, every wait has a deadline, everything started is
stopped by its PID (task processes too, by the pids their supervisors wrote).
Usage: e2e.py --berth PATH
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

USER_TOKEN = "user-token-e2e"
NODE_TOKEN = "node-token-e2e"
HB_INTERVAL = "0.2s"
HB_TIMEOUT = "2s"
KILL_GRACE = "1s"


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def wait(pred, what, seconds=60, step=0.1):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    fail("timed out waiting for " + what)


class Harness:
    def __init__(self, berth, work):
        self.berth = berth
        self.work = work
        self.procs = []  # every process started, stopped by PID at the end
        self.port = 0
        self.server = None
        self.agents = {}
        self.server_args = []  # more `berth serve` flags (--queues FILE, ...)
        self.hb_timeout = HB_TIMEOUT  # --heartbeat-timeout of the server
        for name, tok in (("user.token", USER_TOKEN), ("node.token", NODE_TOKEN), ("wrong.token", "nope")):
            with open(os.path.join(work, name), "w") as f:
                f.write(tok + "\n")
        self.user_token = os.path.join(work, "user.token")
        self.node_token = os.path.join(work, "node.token")

    # ------------------------------------------------------------ processes
    def start_server(self):
        log_path = os.path.join(self.work, "serve.log")
        log = open(log_path, "a")
        start = os.path.getsize(log_path)
        self.server = subprocess.Popen(
            [self.berth, "serve", "--listen", "127.0.0.1:%d" % self.port,
             "--store", "sqlite:" + os.path.join(self.work, "data", "berth.db"),
             "--token-file", self.user_token, "--node-token-file", self.node_token,
             "--heartbeat-interval", HB_INTERVAL, "--heartbeat-timeout", self.hb_timeout, "--kill-grace", KILL_GRACE,
             *self.server_args],
            stdout=subprocess.DEVNULL, stderr=log)
        self.procs.append(self.server)

        def listening():
            if self.server.poll() is not None:
                fail("berth serve exited at start:\n" + open(log_path).read()[-3000:])
            with open(log_path) as f:
                f.seek(start)
                m = re.search(r'"event":"listening"[^\n]*"port":(\d+)', f.read())
            return int(m.group(1)) if m else None
        self.port = wait(listening, "the server to listen", 60)
        wait(lambda: self.request("GET", "/readyz")[0] == 200, "the server to be ready", 60)

    def kill_server(self):
        self.server.send_signal(signal.SIGKILL)
        self.server.wait(timeout=30)

    def node_yaml(self, name, leaf="leaf-0"):
        path = os.path.join(self.work, name + ".yaml")
        with open(path, "w") as f:
            f.write("name: %s\ncpu_milli: 8000\nmemory_mib: 16384\ngpus:\n" % name)
            for i in range(4):
                f.write("  - {index: %d, type: H100, memory_mib: 81920}\n" % i)
            f.write("labels: {leaf: %s}\n" % leaf)
        return path

    def start_agent(self, name, token=None, work_dir=None, node_name=None, address="127.0.0.1", leaf="leaf-0"):
        work_dir = work_dir or os.path.join(self.work, "agent-" + name)
        log_path = os.path.join(self.work, "agent-%s.log" % name)
        log = open(log_path, "a")
        cmd = [self.berth, "agent", "--server", "http://127.0.0.1:%d" % self.port,
               "--node-token-file", token or self.node_token, "--config", self.node_yaml(name, leaf),
               "--work-dir", work_dir, "--nvidia-smi", "", "--address", address]
        if node_name:
            cmd += ["--name", node_name]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        self.procs.append(p)
        self.agents[name] = (p, work_dir, log_path)
        return p

    def wait_nodes(self, names, up=True):
        def check():
            code, body = self.request("GET", "/v1/nodes")
            if code != 200:
                return False
            have = {n["name"]: n["up"] for n in body["nodes"]}
            return all(have.get(n) == up for n in names)
        wait(check, "nodes %s up=%s" % (names, up), 60)

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        # Task processes outlive their agents by design: stop them by the pids their supervisors wrote.
        for root, _, files in os.walk(self.work):
            if "pid" in files:
                try:
                    pid = int(open(os.path.join(root, "pid")).read().strip())
                    os.killpg(pid, signal.SIGKILL)
                except (ValueError, ProcessLookupError, PermissionError):
                    pass

    # ------------------------------------------------------------------ API
    def request(self, method, path, body=None, token=USER_TOKEN, raw=False, timeout=30):
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                return r.status, (text if raw else json.loads(text))
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text
        except (urllib.error.URLError, ConnectionError, OSError):
            return 0, None

    def submit(self, job):
        path = os.path.join(self.work, "job-%s.json" % job["name"])
        with open(path, "w") as f:
            json.dump(job, f)
        out = subprocess.run([self.berth, "submit", path, "--server", "http://127.0.0.1:%d" % self.port,
                              "--token-file", self.user_token], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            fail("berth submit: " + out.stdout + out.stderr)
        return int(out.stdout.split()[0])

    def job(self, jid):
        code, body = self.request("GET", "/v1/jobs/%d" % jid)
        return body if code == 200 else None

    def wait_state(self, jid, state, seconds=90):
        def check():
            j = self.job(jid)
            if j and j["state"] in ("succeeded", "failed", "cancelled") and j["state"] != state:
                fail("job %d ended %s (wanted %s): %s" % (jid, j["state"], state, j.get("reason")))
            return j if j and j["state"] == state else None
        return wait(check, "job %d %s" % (jid, state), seconds)

    def logs(self, jid, task):
        return self.request("GET", "/v1/jobs/%d/logs?task=%d" % (jid, task), raw=True)

    def task_dirs(self, jid):
        """(agent name, run, task, dir) of every task directory of job jid."""
        out = []
        for name, (_, wd, _) in self.agents.items():
            base = os.path.join(wd, "tasks", "job-%d" % jid)
            if not os.path.isdir(base):
                continue
            for run in sorted(os.listdir(base)):
                for task in sorted(os.listdir(os.path.join(base, run))):
                    out.append((name, run, task, os.path.join(base, run, task)))
        return out

    def starts(self):
        """task_started events of every agent log, as (job, generation, task) keys."""
        keys = []
        for name, (_, _, log_path) in self.agents.items():
            for line in open(log_path):
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("event") == "task_started":
                    keys.append((e["job"], e["generation"], e["task"]))
        return keys


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="berth-agent-e2e-")
    os.makedirs(os.path.join(work, "data"))
    h = Harness(os.path.abspath(args.berth), work)
    try:
        run(h)
        print("PASS: agent end-to-end (%s)" % work)
    finally:
        h.stop_all()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(h):
    h.start_server()
    code, body = h.request("GET", "/v1/nodes")
    if code != 200 or body["nodes"]:
        fail("with no agents the cluster is empty: %s %s" % (code, body))
    h.start_agent("a1")
    h.start_agent("a2")
    h.wait_nodes(["a1", "a2"])

    # --- bad input: 4xx, nothing changed
    bad = h.start_agent("bad", token=os.path.join(h.work, "wrong.token"))
    if bad.wait(timeout=60) == 0:
        fail("an agent with a wrong token must exit non-zero")
    if "401" not in open(h.agents["bad"][2]).read():
        fail("the wrong token's refusal names 401")
    dup = h.start_agent("dup", node_name="a1")
    if dup.wait(timeout=60) == 0:
        fail("an agent taking a live node's name must exit non-zero")
    if "409" not in open(h.agents["dup"][2]).read():
        fail("the duplicate name's refusal names 409")
    del h.agents["bad"], h.agents["dup"]
    agent_id = json.load(open(os.path.join(h.agents["a1"][1], "agent.json")))["agent_id"]
    for path, body, want in [
        ("/v1/agent/status", {"name": "a1", "agent_id": agent_id, "job": 999, "generation": 1, "task": 0,
                              "state": "exited", "exit_code": 0}, 404),
        ("/v1/agent/register", "{", 400),
        ("/v1/agent/register", {"name": "x", "agent_id": "y", "gpus": [{"index": 0}]}, 400),
        ("/v1/agent/heartbeat", {"name": "a1", "agent_id": agent_id, "tasks": "all"}, 400),
    ]:
        code, resp = h.request("POST", path, body if isinstance(body, str) else json.dumps(body), token=NODE_TOKEN)
        if code != want:
            fail("%s %s: got %s %s, wanted %d" % (path, body, code, resp, want))
    code, _ = h.request("POST", "/v1/agent/heartbeat", json.dumps({"name": "a1", "agent_id": agent_id}),
                        token=USER_TOKEN)
    if code != 401:
        fail("the user token must not open the node API (got %d)" % code)
    code, body = h.request("GET", "/v1/nodes")
    if sorted(n["name"] for n in body["nodes"]) != ["a1", "a2"]:
        fail("bad input changed the nodes: %s" % body)
    print("bad input: 401 wrong token, 409 duplicate name, 404 unknown task, 400 malformed; nodes unchanged")

    # --- a 2 x 4 job through the CLI
    gang = {"name": "gang", "groups": [{"name": "w", "count": 2, "gpus": 4}], "launcher": "torch",
            "command": ["/bin/sh", "-c", "echo task=$BERTH_TASK_INDEX of $BERTH_TASK_COUNT "
                                         "gpus=$CUDA_VISIBLE_DEVICES greeting=$GREETING; "
                                         "echo rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT; exit 0"],
            "env": {"GREETING": "hello"}}
    jid = h.submit(gang)
    j = h.wait_state(jid, "succeeded")
    nodes = sorted(name for name, _, _, _ in h.task_dirs(jid))
    for task in (0, 1):
        code, text = h.logs(jid, task)
        want = "task=%d of 2 gpus=0,1,2,3 greeting=hello" % task
        if code != 200 or want not in text:
            fail("logs of task %d: %s %r (wanted %r)" % (task, code, text, want))
        if not re.search(r"rank=[01] world=2 master=127\.0\.0\.1:\d+", text):
            fail("the launch spec's env reaches the task: %r" % text)
    print("2x4 job %d succeeded on %s; logs served: %r" % (jid, nodes, h.logs(jid, 0)[1].strip()))

    # --- a failing command fails the job
    bad_job = {"name": "failing", "groups": [{"name": "w", "count": 2, "gpus": 4}],
               "command": ["/bin/sh", "-c", "if [ $BERTH_TASK_INDEX = 1 ]; then echo boom; exit 3; fi; sleep 30"]}
    jid = h.submit(bad_job)
    j = h.wait_state(jid, "failed")
    if "exited with status 3" not in j.get("reason", ""):
        fail("the failed job says why: %s" % j)
    # The other rank is stopped once its job failed.
    wait(lambda: all(os.path.exists(os.path.join(d, "exit")) for _, _, _, d in h.task_dirs(jid)),
         "the failed job's other rank to be stopped", 30)
    print("failing job %d: %s" % (jid, j["reason"]))

    # --- cancel: SIGTERM, then SIGKILL after the grace for a task that ignores SIGTERM
    stubborn = {"name": "stubborn", "groups": [{"name": "w", "count": 2, "gpus": 4}],
                "command": ["/bin/sh", "-c", "trap 'echo got-term' TERM; echo started; "
                                             "while true; do sleep 0.1; done"]}
    jid = h.submit(stubborn)
    h.wait_state(jid, "running")
    wait(lambda: len(h.task_dirs(jid)) == 2 and all(os.path.exists(os.path.join(d, "pid")) and
                                                    "started" in open(os.path.join(d, "output.log")).read()
                                                    for _, _, _, d in h.task_dirs(jid)), "the gang to start", 60)
    pids = [int(open(os.path.join(d, "pid")).read()) for _, _, _, d in h.task_dirs(jid)]
    out = subprocess.run([h.berth, "cancel", str(jid), "--server", "http://127.0.0.1:%d" % h.port,
                          "--token-file", h.user_token], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        fail("berth cancel: " + out.stdout + out.stderr)
    wait(lambda: not any(pid_alive(p) for p in pids), "the cancelled gang's processes to end", 30)
    # The supervisor writes the exit file once it has reaped the task, a moment after the task ends.
    wait(lambda: all(os.path.exists(os.path.join(d, "exit")) for _, _, _, d in h.task_dirs(jid)),
         "the cancelled gang's exit codes to be recorded", 30)
    for _, _, _, d in h.task_dirs(jid):
        log = open(os.path.join(d, "output.log")).read()
        code = open(os.path.join(d, "exit")).read().strip()
        if "got-term" not in log or code != str(128 + signal.SIGKILL):
            fail("cancel: SIGTERM first, then SIGKILL (log %r, exit %s)" % (log, code))
    print("cancel of job %d: both ranks got SIGTERM, then SIGKILL after the grace (exit %d)" %
          (jid, 128 + signal.SIGKILL))

    # --- SIGKILL an agent during a 1 x 4 run: the node goes down, the job moves
    h.start_agent("a3")
    h.wait_nodes(["a1", "a2", "a3"])
    ticker = {"name": "ticker", "groups": [{"name": "w", "count": 1, "gpus": 4}],
              "command": ["/bin/sh", "-c", "for i in $(seq 1 30); do echo tick $i; sleep 0.2; done"]}
    jid = h.submit(ticker)
    j = h.wait_state(jid, "running")
    victim = j["placements"][0]["node"] if "placements" in j else j["nodes"][0]
    wait(lambda: h.task_dirs(jid), "the ticker to start", 30)
    old_dir = h.task_dirs(jid)[0][3]
    wait(lambda: os.path.exists(os.path.join(old_dir, "pid")), "the ticker's pid", 30)
    old_pid = int(open(os.path.join(old_dir, "pid")).read())
    t_kill = time.monotonic()
    h.agents[victim][0].send_signal(signal.SIGKILL)
    h.agents[victim][0].wait(timeout=30)
    h.wait_nodes([victim], up=False)
    down_after = time.monotonic() - t_kill

    def moved():
        j = h.job(jid)
        return j if j and j["state"] in ("running", "succeeded") and j["requeues"] >= 1 else None
    j = wait(moved, "the ticker to be requeued and restarted", 60)
    print("agent %s SIGKILLed: node down after %.1f s (timeout %s), job %d requeued (requeues=%d)" %
          (victim, down_after, HB_TIMEOUT, jid, j["requeues"]))
    if not pid_alive(old_pid):
        fail("the killed agent's task keeps running until its agent returns")
    # Restart the killed agent: it re-registers, reports the task it still runs; the server no longer
    # wants it, so it is stopped.
    log_path = h.agents[victim][2]
    h.start_agent(victim, work_dir=h.agents[victim][1])
    h.wait_nodes([victim])

    def reattached():
        for line in open(log_path):
            if '"agent_started"' in line and '"tasks_running":1' in line:
                return True
        return False
    wait(reattached, "the restarted agent to report the task it still runs", 30)
    wait(lambda: not pid_alive(old_pid), "the stale task to be stopped", 30)
    h.wait_state(jid, "succeeded")
    print("agent %s restarted: re-registered, re-attached 1 running task, stopped it (not wanted); job %d succeeded"
          % (victim, jid))

    # --- SIGKILL the server mid-run: the agents keep running, and reconcile with the restarted server
    longer = {"name": "longer", "groups": [{"name": "w", "count": 2, "gpus": 4}],
              "command": ["/bin/sh", "-c", "for i in $(seq 1 25); do echo tick $i; sleep 0.2; done"]}
    jid = h.submit(longer)
    h.wait_state(jid, "running")
    wait(lambda: len(h.task_dirs(jid)) == 2 and all(os.path.exists(os.path.join(d, "pid"))
                                                    for _, _, _, d in h.task_dirs(jid)), "the gang to start", 60)
    pids = [int(open(os.path.join(d, "pid")).read()) for _, _, _, d in h.task_dirs(jid)]
    h.kill_server()
    time.sleep(1.0)
    if not all(pid_alive(p) for p in pids):
        fail("tasks keep running while the server is down")
    h.start_server()
    j = h.wait_state(jid, "succeeded")
    if j["starts"] != 1:
        fail("the job ran once, across the server restart: %s" % j)
    code, text = h.logs(jid, 1)
    if code != 200 or "tick 25" not in text:
        fail("the whole log arrives after the restart: %s %r" % (code, text[-200:] if text else text))
    print("server SIGKILLed mid-run of job %d: tasks kept running, the restarted server saw them end: succeeded, "
          "started once" % jid)

    starts = h.starts()
    if len(starts) != len(set(starts)):
        fail("a task was started twice: %s" % starts)
    print("every (job, run, task) started once: %d starts" % len(starts))


if __name__ == "__main__":
    main()
