#!/usr/bin/env python3
"""Scheduling throughput on a real control plane: Berth (`berth serve
--kubeconfig`) against the real kube-scheduler v1.20.2 (default profile), both
with the same client QPS and burst, on the same fake nodes.

  tests/kube/throughput.py --berth build/release/apps/berth/berth \\
      [--nodes 1000] [--pods 10000] [--gangs 250] [--qps 50] [--burst 100] [--quick]

Four runs, one after the other on one control plane, each in a namespace of its
own with no other pod left: N single-GPU pods by Berth, then by kube-scheduler;
G gangs of 4 x 8 GPUs by Berth (label berth.dev/pod-group, annotation
berth.dev/min-member), then by kube-scheduler (which has no gangs: partially
bound gangs are counted). Only the scheduler under test runs during its run.
Pods are created by several threads over kept-alive connections while the
scheduler runs; a watch on bound pods times each bind. A run ends when every
pod that fits is bound (10,000 single-GPU pods on 8,000 GPUs: 8,000 bind, the
rest wait). Rates: pods bound per
second from the first creation to the last bind, and the steady rate between
the 10% and the 90% bound marks. Checks: no node holds more GPUs than it has,
no pod seen on two nodes. Prints a JSON summary; exits 1 if a check fails.
Not a ctest test (minutes long); --quick (100 nodes, 1,000 pods, 25 gangs) is."""
import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeapi import Api, pod_gpus, wait_until  # noqa: E402
from e2e_util import Berth, free_port  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTROL_PLANE = os.path.join(ROOT, "scripts", "kube-control-plane.sh")
GPUS_PER_NODE = 8
NODES_PER_LEAF = 32
LEAVES_PER_SPINE = 8


def leaf_of_index(i):
    return "leaf-%d" % (i // NODES_PER_LEAF)


def make_nodes(api, count, threads):
    def one(i):
        name = "node-%04d" % i
        if api.get("/api/v1/nodes/" + name, ok404=True) is None:
            api.make_node(name, gpus=GPUS_PER_NODE, labels={
                "fabric.topograph.run/tier-0": leaf_of_index(i),
                "fabric.topograph.run/tier-1": "spine-%d" % (i // (NODES_PER_LEAF * LEAVES_PER_SPINE))})
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(one, range(count)))


class BindWatch(threading.Thread):
    """Watches the namespace's bound pods (fieldSelector spec.nodeName!=) and
    records when each was first seen bound, and where."""

    def __init__(self, api, ns):
        super().__init__(daemon=True)
        self.api, self.ns = api, ns
        self.bound = {}        # name -> (time, node)
        self.moved = []        # pods seen on two nodes
        self.lock = threading.Lock()
        self.stop = False
        self.started = threading.Event()

    def run(self):
        rv = ""
        while not self.stop:
            conn = http.client.HTTPSConnection(self.api.host, self.api.port, context=self.api.ctx, timeout=3600)
            path = ("/api/v1/namespaces/%s/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600"
                    "&fieldSelector=spec.nodeName%%21%%3D" % self.ns) + ("&resourceVersion=" + rv if rv else "")
            try:
                conn.request("GET", path, headers={"Authorization": "Bearer " + self.api.token})
                r = conn.getresponse()
                self.started.set()
                while not self.stop:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    md = obj.get("metadata", {})
                    if md.get("resourceVersion"):
                        rv = md["resourceVersion"]
                    if ev.get("type") not in ("ADDED", "MODIFIED"):
                        continue
                    node = obj.get("spec", {}).get("nodeName")
                    if not node:
                        continue
                    now = time.time()
                    with self.lock:
                        prev = self.bound.get(md["name"])
                        if prev is None:
                            self.bound[md["name"]] = (now, node)
                        elif prev[1] != node:
                            self.moved.append((md["name"], prev[1], node))
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.2)
            finally:
                conn.close()

    def count(self):
        with self.lock:
            return len(self.bound)


def create_pods(api, ns, specs, threads):
    """Creates the pods (name, gpus, labels, annotations, scheduler) with
    `threads` threads; returns (first start, last end, failures)."""
    times = []
    failures = []
    lock = threading.Lock()

    def one(spec):
        name, gpus, labels, ann, sched = spec
        t = time.time()
        try:
            api.make_pod(ns, name, gpus=gpus, scheduler=sched, labels=labels, annotations=ann,
                         cpu="100m", memory="64Mi")
        except RuntimeError as e:
            if "HTTP 409" not in str(e):  # a retried create that had landed
                with lock:
                    failures.append("%s: %s" % (name, e))
        with lock:
            times.append((t, time.time()))
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(one, specs))
    return min(t for t, _ in times), max(e for _, e in times), failures


def delete_all(api, ns, timeout=600):
    """Deletes every pod of `ns`. A collection of 10,000 pods takes longer than
    the API server's request timeout (504): the deletion goes on, ask again."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            api.call("DELETE", "/api/v1/namespaces/%s/pods" % ns, {"gracePeriodSeconds": 0}, ok404=True)
        except RuntimeError as e:
            if "HTTP 504" not in str(e):
                raise
        if not api.get("/api/v1/namespaces/%s/pods?limit=1" % ns)["items"]:
            return True
        time.sleep(1)
    return False


class KubeScheduler:
    """The real kube-scheduler, default profile, started and stopped by PID."""

    def __init__(self, cp, qps, burst):
        self.cp, self.qps, self.burst = cp, qps, burst

    def start(self):
        config = os.path.join(self.cp, "kube-scheduler-bench.yaml")
        with open(config, "w") as f:
            f.write("apiVersion: kubescheduler.config.k8s.io/v1beta1\n"
                    "kind: KubeSchedulerConfiguration\n"
                    "clientConnection:\n  kubeconfig: %s\n  qps: %s\n  burst: %d\n"
                    "leaderElection:\n  leaderElect: false\n"
                    "healthzBindAddress: 127.0.0.1:%d\nmetricsBindAddress: 127.0.0.1:%d\n"
                    "profiles:\n- schedulerName: default-scheduler\n"
                    % (os.path.join(self.cp, "kubeconfig"), self.qps, self.burst, free_port(), free_port()))
        subprocess.run([CONTROL_PLANE, "scheduler", self.cp, config], check=True)

    def stop(self):
        pid_file = os.path.join(self.cp, "kube-scheduler.pid")
        if not os.path.exists(pid_file):
            return
        pid = int(open(pid_file).read())
        try:
            os.kill(pid, 15)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.remove(pid_file)


def warm_up(api, scheduler_name, timeout=120):
    """One GPU-less pod in its own namespace, bound: the scheduler has synced."""
    api.ensure_namespace("warmup")
    name = "probe-%d" % int(time.time() * 1000)
    api.make_pod("warmup", name, gpus=0, scheduler=scheduler_name, cpu="10m", memory="16Mi")
    ok = wait_until(lambda: (api.pod("warmup", name) or {}).get("spec", {}).get("nodeName"), timeout, interval=0.2)
    api.delete_pod("warmup", name)
    return bool(ok)


def run_one(api, ns, specs, expected, threads, timeout, stall, gang_of=None):
    """Creates `specs`, waits until `expected` pods (those that fit) are bound
    (or no bind for `stall` seconds, or `timeout`), returns the figures."""
    api.ensure_namespace(ns)
    watch = BindWatch(api, ns)
    watch.start()
    watch.started.wait(30)
    first, created_by, failures = create_pods(api, ns, specs, threads)
    total = len(specs)
    deadline = time.time() + timeout
    last_count, last_change = -1, time.time()
    while True:
        c = watch.count()
        if c != last_count:
            last_count, last_change = c, time.time()
        if c >= expected or time.time() > deadline or time.time() - last_change > stall:
            break
        time.sleep(0.2)
    watch.stop = True
    with watch.lock:
        bound = dict(watch.bound)
        moved = list(watch.moved)
    times = sorted(t for t, _ in bound.values())
    out = {"pods": total, "fit": expected, "bound": len(bound), "create_failures": len(failures),
           "create_seconds": round(created_by - first, 2),
           "create_rate": round(total / max(1e-9, created_by - first), 1)}
    if times:
        out["first_create_to_last_bind_s"] = round(times[-1] - first, 2)
        out["pods_per_s"] = round(len(times) / max(1e-9, times[-1] - first), 1)
        lo, hi = int(0.1 * (len(times) - 1)), int(0.9 * (len(times) - 1))
        if hi > lo and times[hi] > times[lo]:
            out["steady_pods_per_s"] = round((hi - lo) / (times[hi] - times[lo]), 1)
        out["first_bind_after_s"] = round(times[0] - first, 2)
    # Capacity, from the API server's own list.
    pods = api.get("/api/v1/namespaces/%s/pods" % ns)["items"]
    used = {}
    for p in pods:
        n = p["spec"].get("nodeName")
        if n:
            used[n] = used.get(n, 0) + pod_gpus(p)
    over = {n: u for n, u in used.items() if u > GPUS_PER_NODE}
    out["nodes_over_capacity"] = len(over)
    out["pods_on_two_nodes"] = len(moved)
    if gang_of:
        gangs = {}
        for name, g in gang_of.items():
            gangs.setdefault(g, []).append(name)
        whole = partial = none = cross_leaf = 0
        leaf = {}
        for p in pods:
            n = p["spec"].get("nodeName")
            if n:
                leaf[p["metadata"]["name"]] = leaf_of_index(int(n.split("-")[1]))
        for g, names in gangs.items():
            b = [n for n in names if n in leaf]
            if len(b) == len(names):
                whole += 1
                if len({leaf[n] for n in b}) > 1:
                    cross_leaf += 1
            elif b:
                partial += 1
            else:
                none += 1
        # The most gangs partially bound at one moment, in bind order.
        seen = {}
        worst = now_partial = 0
        for name, (t, _) in sorted(bound.items(), key=lambda kv: kv[1][0]):
            g = gang_of[name]
            k = seen.get(g, 0) + 1
            seen[g] = k
            if k == 1 and k < len(gangs[g]):
                now_partial += 1
            if k == len(gangs[g]) and k > 1:
                now_partial -= 1
            worst = max(worst, now_partial)
        out.update({"gangs": len(gangs), "gangs_whole": whole, "gangs_partial_at_end": partial,
                    "gangs_unbound": none, "gangs_whole_across_leaves": cross_leaf,
                    "most_gangs_partial_at_once": worst})
    return out, over


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--berth", required=True)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10000, help="single-GPU pods per scheduler")
    ap.add_argument("--gangs", type=int, default=250, help="gangs of 4 x 8 GPUs per scheduler (0: none)")
    ap.add_argument("--qps", type=float, default=50, help="client QPS of both schedulers")
    ap.add_argument("--burst", type=int, default=100, help="client burst of both schedulers")
    ap.add_argument("--threads", type=int, default=8, help="pod-creating threads")
    ap.add_argument("--only", choices=("berth", "kube-scheduler"), help="run one scheduler only")
    ap.add_argument("--quick", action="store_true", help="100 nodes, 1,000 pods, 25 gangs")
    ap.add_argument("--timeout", type=float, default=900, help="longest wait per run (s)")
    ap.add_argument("--stall", type=float, default=60, help="end a run after this long without a bind (s)")
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one, removed on success)")
    ap.add_argument("--output", help="also write the JSON summary here")
    args = ap.parse_args()
    if args.quick:
        args.nodes, args.pods, args.gangs = 100, 1000, 25
    work = args.keep or tempfile.mkdtemp(prefix="berth-kube-tput-")
    os.makedirs(work, exist_ok=True)
    cp = os.path.join(work, "cp")
    if subprocess.run([CONTROL_PLANE, "start", cp]).returncode != 0:
        print("control plane did not start")
        return 1
    summary = {"nodes": args.nodes, "gpus": args.nodes * GPUS_PER_NODE, "qps": args.qps, "burst": args.burst,
               "create_threads": args.threads, "runs": {}}
    failed = []
    berth = kube = None
    try:
        api = Api(os.path.join(cp, "env"))
        t = time.time()
        make_nodes(api, args.nodes, args.threads)
        summary["node_setup_s"] = round(time.time() - t, 1)
        schedulers = [s for s in ("berth", "kube-scheduler") if args.only in (None, s)]
        workloads = [("single", args.pods)] + ([("gang", args.gangs)] if args.gangs > 0 else [])
        for workload, count in workloads:
            for sched in schedulers:
                name = "berth" if sched == "berth" else "default-scheduler"
                if workload == "single":
                    specs = [("p-%d" % i, 1, {}, {}, name) for i in range(count)]
                    gang_of = None
                    expected = min(count, args.nodes * GPUS_PER_NODE)  # the rest cannot fit
                else:
                    specs, gang_of = [], {}
                    for g in range(count):
                        for r in range(4):
                            pod = "g-%d-%d" % (g, r)
                            specs.append((pod, 8, {"berth.dev/pod-group": "g-%d" % g},
                                          {"berth.dev/min-member": "4"}, name))
                            gang_of[pod] = "g-%d" % g
                    expected = min(len(specs), args.nodes)  # one 8-GPU pod per node
                ns = "%s-%s" % (workload, "berth" if sched == "berth" else "kube")
                if sched == "berth":
                    berth = Berth(args.berth, api, work, ["--kube-qps", str(args.qps), "--kube-burst",
                                                          str(args.burst), "--leader-elect", "false"])
                    berth.start()
                else:
                    kube = KubeScheduler(cp, args.qps, args.burst)
                    kube.start()
                if not warm_up(api, name):
                    raise RuntimeError(sched + " did not bind the warm-up pod")
                print("run: %s pods, %s, %d pods" % (workload, sched, len(specs)), file=sys.stderr, flush=True)
                figures, over = run_one(api, ns, specs, expected, args.threads, args.timeout, args.stall, gang_of)
                if sched == "berth":
                    m = berth.get("/metrics") or ""
                    for line in m.splitlines():
                        if line.startswith(("berth_kube_bind_failures_total", "berth_kube_api_requests_total")):
                            k, v = line.split()
                            figures[k] = int(float(v))
                    berth.kill(15)
                    berth = None
                else:
                    kube.stop()
                    kube = None
                summary["runs"]["%s/%s" % (workload, sched)] = figures
                print(json.dumps({"%s/%s" % (workload, sched): figures}), file=sys.stderr, flush=True)
                if over:
                    failed.append("%s/%s: nodes over capacity %s" % (workload, sched, dict(list(over.items())[:5])))
                if figures["pods_on_two_nodes"]:
                    failed.append("%s/%s: pods seen on two nodes" % (workload, sched))
                if sched == "berth" and figures["bound"] != expected:
                    failed.append("%s/berth: %d of the %d pods that fit bound" % (workload, figures["bound"], expected))
                if sched == "berth" and workload == "gang" and figures.get("gangs_partial_at_end"):
                    failed.append("gang/berth: %d gangs partially bound" % figures["gangs_partial_at_end"])
                if not delete_all(api, ns):
                    raise RuntimeError("pods of %s not deleted" % ns)
        for workload, _ in workloads:
            b = summary["runs"].get("%s/berth" % workload, {})
            k = summary["runs"].get("%s/kube-scheduler" % workload, {})
            if b.get("pods_per_s") and k.get("pods_per_s"):
                summary["%s_speedup" % workload] = round(b["pods_per_s"] / k["pods_per_s"], 2)
    except Exception as e:  # a broken step fails the run, with what broke
        traceback.print_exc()
        failed.append(repr(e))
    finally:
        if berth:
            berth.kill(15)
        if kube:
            kube.stop()
        subprocess.run([CONTROL_PLANE, "stop", cp])
    summary["failures"] = failed
    text = json.dumps(summary, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    if failed:
        print("logs kept in " + work, file=sys.stderr)
        return 1
    if not args.keep:
        subprocess.run(["rm", "-rf", work])
    return 0


if __name__ == "__main__":
    sys.exit(main())
