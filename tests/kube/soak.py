#!/usr/bin/env python3
"""Soak test of `berth serve --kubeconfig` on a real control plane: on 200 fake
nodes, lone pods and small gangs are created, completed (status phase
Succeeded or Failed), deleted (one pod, a whole gang, or one member of a
waiting gang) and re-created under the same name, at random (seeded) for a
bounded time. Then, once the cluster is quiet, Berth's GPU count per node
(GET /v1/nodes: gpus_used_milli) must equal Kubernetes' (non-terminal bound
pods' nvidia.com/gpu) exactly on every node, no node may hold more GPUs than it
has, and after every pod is deleted Berth must count no GPU anywhere.

  tests/kube/soak.py --berth build/release/apps/berth/berth [--duration 180] [--seed 1] [--rate 20]

Prints one line per check, a JSON summary, and "N passed, M failed"."""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeapi import Api, gpus_used_by_node, pod_gpus, wait_until  # noqa: E402
from e2e_util import Berth  # noqa: E402
from throughput import GPUS_PER_NODE, delete_all, make_nodes  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTROL_PLANE = os.path.join(ROOT, "scripts", "kube-control-plane.sh")
NS = "soak"

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print("%s: %s%s" % ("PASS" if ok else "FAIL", name, (" (" + detail + ")") if detail else ""), flush=True)
    return ok


class Snapshot(threading.Thread):
    """The namespace's pods, listed about once a second: name -> pod."""

    def __init__(self, api):
        super().__init__(daemon=True)
        self.api, self.stop = api, False
        self.pods = {}
        self.lock = threading.Lock()

    def refresh(self):
        items = self.api.pods(NS)
        with self.lock:
            self.pods = {p["metadata"]["name"]: p for p in items}

    def run(self):
        while not self.stop:
            try:
                self.refresh()
            except Exception:
                pass
            time.sleep(1)

    def get(self):
        with self.lock:
            return dict(self.pods)


class Workload:
    """The random operations, decided by one seeded generator."""

    def __init__(self, api, snap, rng, capacity):
        self.api, self.snap, self.rng, self.capacity = api, snap, rng, capacity
        self.serial = 0
        self.gangs = {}      # gang name -> member pod names (as created)
        self.deleted = []    # names deleted, candidates for re-creation
        self.gone = set()    # deleted since the snapshot was taken (it may still list them)
        self.stats = {"lone_created": 0, "gangs_created": 0, "gang_pods_created": 0, "completed": 0,
                      "deleted": 0, "gangs_deleted": 0, "gang_members_deleted": 0, "recreated": 0,
                      "raced": 0, "errors": 0}

    def requested(self, pods):
        return sum(pod_gpus(p) for p in pods.values() if p.get("status", {}).get("phase") not in ("Succeeded", "Failed"))

    def create_lone(self, name=None):
        if name is None:
            self.serial += 1
            name = "lone-%d" % self.serial
        self.api.make_pod(NS, name, gpus=self.rng.choice([1, 1, 1, 2, 4, 8]), cpu="100m", memory="64Mi")
        self.stats["lone_created"] += 1

    def create_gang(self):
        self.serial += 1
        gang = "gang-%d" % self.serial
        size = self.rng.choice([2, 3, 4])
        gpus = self.rng.choice([2, 4, 8])
        names = ["%s-%d" % (gang, r) for r in range(size)]
        for n in names:
            self.api.make_pod(NS, n, gpus=gpus, labels={"berth.dev/pod-group": gang},
                              annotations={"berth.dev/min-member": str(size)}, cpu="100m", memory="64Mi")
        self.gangs[gang] = names
        self.stats["gangs_created"] += 1
        self.stats["gang_pods_created"] += size

    def delete(self, name):
        self.api.delete_pod(NS, name)
        self.gone.add(name)

    def step(self):
        pods = self.snap.get()
        self.gone &= set(pods)  # once the snapshot no longer lists a pod it need not be remembered
        for n in self.gone:
            pods.pop(n, None)
        load = self.requested(pods) / self.capacity
        bound = sorted(n for n, p in pods.items() if p["spec"].get("nodeName")
                       and p.get("status", {}).get("phase") not in ("Succeeded", "Failed"))
        r = self.rng.random()
        create_weight = 0.55 if load < 1.2 else 0.15
        if r < create_weight:
            if self.rng.random() < 0.7:
                self.create_lone()
            else:
                self.create_gang()
        elif r < create_weight + 0.2 and bound:
            name = self.rng.choice(bound)
            try:
                self.api.finish_pod(NS, name, self.rng.choice(["Succeeded", "Failed"]))
                self.stats["completed"] += 1
            except RuntimeError as e:
                if "HTTP 404" not in str(e):
                    raise
                self.stats["raced"] += 1  # deleted by an earlier operation the snapshot did not show yet
        elif r < create_weight + 0.35 and pods:
            name = self.rng.choice(sorted(pods))
            self.delete(name)
            self.deleted.append(name)
            self.stats["deleted"] += 1
        elif r < create_weight + 0.4 and self.gangs:
            gang = self.rng.choice(sorted(self.gangs))
            for n in self.gangs.pop(gang):
                self.delete(n)
            self.stats["gangs_deleted"] += 1
        elif r < create_weight + 0.43 and self.gangs:
            # One member of a gang leaves (a waiting gang then lacks its minimum).
            gang = self.rng.choice(sorted(self.gangs))
            n = self.rng.choice(self.gangs[gang])
            self.delete(n)
            self.stats["gang_members_deleted"] += 1
        elif self.deleted:
            # Same-name re-creation of a lone pod (StatefulSet style).
            name = self.deleted.pop(self.rng.randrange(len(self.deleted)))
            if name.startswith("lone-") and name not in pods:
                try:
                    self.create_lone(name)
                    self.gone.discard(name)
                    self.stats["recreated"] += 1
                except RuntimeError as e:
                    if "HTTP 409" not in str(e):
                        raise


def berth_by_node(berth):
    nodes = berth.get("/v1/nodes")
    if nodes is None:
        return None
    return {n["name"]: n["gpus_used_milli"] for n in nodes["nodes"]}


def compare(api, berth, node_names):
    """(equal, differences) between Berth's and Kubernetes' GPUs per node, in milli-GPUs."""
    k = gpus_used_by_node(api.pods())
    b = berth_by_node(berth)
    if b is None:
        return False, {"berth": "no answer"}
    diff = {}
    for n in sorted(set(node_names) | set(b) | set(k)):
        kv, bv = k.get(n, 0) * 1000, b.get(n, 0)
        if kv != bv:
            diff[n] = {"kubernetes": kv, "berth": bv}
    return not diff, diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--berth", required=True)
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--duration", type=float, default=180, help="seconds of random operations")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=20, help="operations per second (at most)")
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one, removed on success)")
    ap.add_argument("--output", help="also write the JSON summary here")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="berth-kube-soak-")
    os.makedirs(work, exist_ok=True)
    cp = os.path.join(work, "cp")
    if subprocess.run([CONTROL_PLANE, "start", cp]).returncode != 0:
        print("control plane did not start")
        print("0 passed, 1 failed")
        return 1
    berth = snap = None
    summary = {"nodes": args.nodes, "duration_s": args.duration, "seed": args.seed, "rate": args.rate}
    try:
        api = Api(os.path.join(cp, "env"))
        make_nodes(api, args.nodes, 8)
        node_names = ["node-%04d" % i for i in range(args.nodes)]
        api.ensure_namespace(NS)
        berth = Berth(args.berth, api, work, ["--leader-elect", "false"])
        berth.start()
        ok = wait_until(lambda: len((berth.get("/v1/nodes") or {}).get("nodes", [])) == args.nodes, 60)
        check("Berth sees the %d nodes" % args.nodes, ok)
        snap = Snapshot(api)
        snap.refresh()
        snap.start()
        w = Workload(api, snap, random.Random(args.seed), args.nodes * GPUS_PER_NODE)
        t0 = time.time()
        ops = 0
        most_pods = 0
        while time.time() - t0 < args.duration:
            t = time.time()
            try:
                w.step()
            except RuntimeError as e:
                w.stats["errors"] += 1
                if w.stats["errors"] <= 5:
                    print("operation failed: %s" % e, file=sys.stderr)
            ops += 1
            most_pods = max(most_pods, len(snap.get()))
            time.sleep(max(0.0, 1.0 / args.rate - (time.time() - t)))
        summary["operations"] = ops
        summary["ops_per_s"] = round(ops / (time.time() - t0), 1)
        summary.update(w.stats)
        summary["most_pods_at_once"] = most_pods
        snap.stop = True
        check("operations ran without API errors", w.stats["errors"] == 0, "%d errors" % w.stats["errors"])

        # Quiet: the pods' placements stop changing and the counts agree.
        def quiet():
            a = [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in api.pods(NS)]
            time.sleep(3)
            b = [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in api.pods(NS)]
            return a == b and compare(api, berth, node_names)[0]
        t = time.time()
        wait_until(quiet, 120, interval=0.5)
        summary["quiescence_s"] = round(time.time() - t, 1)
        ok, diff = compare(api, berth, node_names)
        check("Berth's GPU count equals Kubernetes' on every node", ok,
              "%d nodes differ: %s" % (len(diff), json.dumps(dict(list(diff.items())[:5]))) if diff else
              "%d nodes compared" % len(node_names))
        pods = api.pods(NS)
        used = gpus_used_by_node(pods)
        over = {n: u for n, u in used.items() if u > GPUS_PER_NODE}
        check("no node holds more GPUs than it has", not over, json.dumps(over))
        live = [p for p in pods if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        pending = [p for p in live if not p["spec"].get("nodeName")]
        free = {n: GPUS_PER_NODE - used.get(n, 0) for n in node_names}
        lone_fit = [p["metadata"]["name"] for p in pending if "berth.dev/pod-group" not in p["metadata"].get("labels", {})
                    and pod_gpus(p) <= max(free.values())]
        summary.update({"pods_at_end": len(pods), "bound_at_end": len(live) - len(pending),
                        "pending_at_end": len(pending), "gpus_used_at_end": sum(used.values()),
                        "pending_lone_pods_that_fit_a_node": len(lone_fit)})
        m = berth.get("/metrics") or ""
        for line in m.splitlines():
            if line.startswith(("berth_kube_pods_bound_total", "berth_kube_bind_failures_total")):
                k, v = line.split()
                summary[k] = int(float(v))
        check("Berth process still running", berth.proc.poll() is None)
        # Everything deleted: nothing held anywhere.
        delete_all(api, NS)
        ok = wait_until(lambda: not api.pods(NS) and compare(api, berth, node_names)[0], 60, interval=0.5)
        b = berth_by_node(berth) or {}
        check("after every pod is deleted Berth counts no GPU", ok and not any(b.values()),
              "berth holds %d milli-GPUs" % sum(b.values()))
    except Exception as e:  # a broken step fails the run, with what broke
        check("no unexpected error", False, repr(e))
    finally:
        if snap:
            snap.stop = True
        if berth:
            berth.kill(signal.SIGTERM)
        subprocess.run([CONTROL_PLANE, "stop", cp])
    text = json.dumps(summary, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    passed = sum(1 for _, ok in results if ok)
    failed = len(results) - passed
    print("%d passed, %d failed" % (passed, failed))
    if failed == 0 and not args.keep:
        subprocess.run(["rm", "-rf", work])
    elif failed:
        print("logs kept in " + work)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
