"""Shared pieces of the Kubernetes end-to-end tests (e2e.py, e2e_services.py):
the check log, a `berth serve --kubeconfig` process, stand-in kubelets, and
what is bound where."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request

from kubeapi import gpus_used_by_node, wait_until  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTROL_PLANE = os.path.join(ROOT, "scripts", "kube-control-plane.sh")

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print("%s: %s%s" % ("PASS" if ok else "FAIL", name, (" (" + detail + ")") if detail else ""), flush=True)
    return ok


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Berth:
    """One `berth serve --kubeconfig` process, started and stopped by PID."""

    def __init__(self, binary, api, workdir, extra=(), name="berth"):
        self.binary, self.api, self.workdir, self.extra, self.name = binary, api, workdir, list(extra), name
        self.proc = None
        self.port = None
        self.runs = 0

    def start(self):
        self.port = free_port()
        self.runs += 1
        log = open(os.path.join(self.workdir, "%s-%d.log" % (self.name, self.runs)), "w")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--kubeconfig", self.api.kubeconfig, "--listen", "127.0.0.1:%d" % self.port,
             "--catalog", os.path.join(ROOT, "data", "accelerators.yaml")] + self.extra,
            stdout=log, stderr=log, cwd=ROOT)
        ok = wait_until(lambda: self.get("/readyz") is not None, 30)
        if not ok:
            raise RuntimeError("berth did not become ready; see " + log.name)

    def get(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=5) as r:
                text = r.read().decode()
                return json.loads(text) if path.startswith("/v1/") else text
        except Exception:
            return None

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def gpus_by_node(self):
        nodes = self.get("/v1/nodes")
        if nodes is None:
            return None
        return {n["name"]: n["gpus_used_milli"] // 1000 for n in nodes["nodes"] if n["gpus_used_milli"]}


class Kubelets(threading.Thread):
    """Stands in for kubelets: a pod being deleted on a node is gone at once
    (a real kubelet would stop its containers first)."""

    def __init__(self, api):
        super().__init__(daemon=True)
        self.api, self.stop = api, False

    def run(self):
        while not self.stop:
            try:
                for p in self.api.pods():
                    md = p["metadata"]
                    if md.get("deletionTimestamp") and p["spec"].get("nodeName"):
                        self.api.delete_pod(md["namespace"], md["name"], grace=0)
            except Exception:
                pass
            time.sleep(0.5)


def leaf_of(api, node, cache={}):
    if node not in cache:
        n = api.get("/api/v1/nodes/" + node)
        cache[node] = n["metadata"]["labels"].get("fabric.topograph.run/tier-0")
    return cache[node]


def bound(api, ns, names):
    out = {}
    for n in names:
        p = api.pod(ns, n)
        if p and p["spec"].get("nodeName"):
            out[n] = p["spec"]["nodeName"]
    return out if len(out) == len(names) else None


def counts_agree(api, berth):
    k = gpus_used_by_node(api.pods())
    b = berth.gpus_by_node()
    return (k == b), k, b
