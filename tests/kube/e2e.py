#!/usr/bin/env python3
"""End-to-end tests of `berth serve --kubeconfig` on a real control plane
(kube-apiserver v1.20.2 + etcd from scripts/kube-control-plane.sh; nodes are
API objects without kubelets, so a pod's end is written by the test).

  tests/kube/e2e.py --berth build/release/apps/berth/berth [--keep DIR] [--only basic,launch]

Prints one line per check and closes with "N passed, M failed"."""
import argparse
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeapi import Api, gpus_used_by_node, pod_gpus, wait_until  # noqa: E402
from e2e_util import (CONTROL_PLANE, ROOT, Berth, Kubelets, bound, check, counts_agree,  # noqa: E402
                      free_port, leaf_of, results)
from e2e_services import scenario_services, scenario_services_autoscale  # noqa: E402


def make_gang(api, ns, prefix, n, gpus, style, extra_annotations=None):
    names = ["%s-%d" % (prefix, i) for i in range(n)]
    for name in names:
        labels, ann = {}, dict(extra_annotations or {})
        if style == "berth":
            labels["berth.dev/pod-group"] = prefix
            ann["berth.dev/min-member"] = str(n)
        elif style == "volcano":
            ann["scheduling.k8s.io/group-name"] = prefix
        elif style == "kueue":
            labels["kueue.x-k8s.io/pod-group-name"] = prefix
            ann["kueue.x-k8s.io/pod-group-total-count"] = str(n)
        api.make_pod(ns, name, gpus=gpus, labels=labels, annotations=ann)
    return names


VOLCANO_PODGROUP_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.volcano.sh"},
    "spec": {"group": "scheduling.volcano.sh", "scope": "Namespaced",
             "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup", "shortNames": ["pg"]},
             "versions": [{"name": "v1beta1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}


def scenario_basic(api, berth, ns):
    # Lone pods.
    singles = ["single-%d" % i for i in range(3)]
    for s in singles:
        api.make_pod(ns, s, gpus=1)
    b = wait_until(lambda: bound(api, ns, singles), 30)
    check("single pods are bound", b, str(b))
    p = api.pod(ns, singles[0])
    check("binding carries the GPU indexes", p and p["metadata"].get("annotations", {}).get("berth.dev/gpus"),
          str(p and p["metadata"].get("annotations")))
    ann = (p and p["metadata"].get("annotations")) or {}
    check("binding carries the launch spec (rank, world size, master)",
          ann.get("berth.dev/rank") == "0" and ann.get("berth.dev/world-size") == "1" and
          ":" in ann.get("berth.dev/master", ""), str(ann))

    # Gangs of 4 x 8 GPUs in three styles, each whole in one leaf.
    api.post("/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % ns,
             {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "vol", "namespace": ns}, "spec": {"minMember": 4}})
    api.post("/apis/berth.dev/v1alpha1/namespaces/%s/podgroups" % ns,
             {"apiVersion": "berth.dev/v1alpha1", "kind": "PodGroup",
              "metadata": {"name": "bg", "namespace": ns},
              "spec": {"minMember": 4, "topology": {"required": "leaf"}}})
    time.sleep(0.5)
    gangs = {}
    for style, prefix in (("berth", "bg"), ("volcano", "vol"), ("kueue", "kq")):
        gangs[prefix] = make_gang(api, ns, prefix, 4, 8, style)
    for prefix, names in gangs.items():
        b = wait_until(lambda: bound(api, ns, names), 30)
        leaves = {leaf_of(api, n) for n in (b or {}).values()}
        check("gang %s (4 x 8 GPUs) bound whole in one leaf" % prefix, b and len(leaves) == 1 and len(set(b.values())) == 4,
              "nodes=%s leaves=%s" % (b and sorted(b.values()), leaves))

    def group_status():
        g = api.get("/apis/berth.dev/v1alpha1/namespaces/%s/podgroups/bg" % ns)
        st = g.get("status", {})
        return st if st.get("phase") == "Running" and st.get("scheduled") == 4 else None
    st = wait_until(group_status, 10)
    check("the Berth PodGroup's status says Running, 4 scheduled", st, str(st))

    # A gang that must sit in one leaf and cannot fit waits, with Berth's
    # reason in the pod condition.
    big = make_gang(api, ns, "big", 4, 8, "berth", {"berth.dev/required-level": "leaf"})

    def reason():
        p = api.pod(ns, big[0])
        for c in (p or {}).get("status", {}).get("conditions", []):
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and "berth" in c.get("message", ""):
                return c["message"]
        return None
    msg = wait_until(reason, 20)
    check("a gang that cannot fit waits with its reason in PodScheduled", msg and not bound(api, ns, big), str(msg))
    ok, k, b = wait_until(lambda: counts_agree(api, berth)[0] and counts_agree(api, berth), 10) or counts_agree(api, berth)
    check("Berth's GPU count equals Kubernetes' on every node", ok, "k8s=%s berth=%s" % (k, b))

    # Deleting a gang's pods frees its GPUs; the waiting gang binds.
    t0 = time.time()
    for n in gangs["kq"]:
        api.delete_pod(ns, n)
    b = wait_until(lambda: bound(api, ns, big), 30, interval=0.02)
    waited = time.time() - t0
    leaves = {leaf_of(api, n) for n in (b or {}).values()}
    check("deleting a gang frees its GPUs and the waiting gang binds in one leaf", b and len(leaves) == 1,
          "%.2f s after the delete; leaves=%s" % (waited, leaves))

    # Completing pods frees GPUs too.
    api.finish_pod(ns, singles[1], "Succeeded")
    api.finish_pod(ns, singles[2], "Failed")
    ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
    check("completed pods (Succeeded, Failed) release their GPUs", ok, str(counts_agree(api, berth)[1:]))

    # Same-name re-creation (StatefulSet style).
    api.delete_pod(ns, singles[0])
    wait_until(lambda: api.pod(ns, singles[0]) is None, 10)
    api.make_pod(ns, singles[0], gpus=1)
    b = wait_until(lambda: bound(api, ns, [singles[0]]), 20)
    check("a pod re-created under the same name is bound again", b, str(b))
    ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
    check("no GPU leaks after re-creation", ok, str(counts_agree(api, berth)[1:]))


def scenario_node_health(api, berth, ns):
    """Node conditions and taints as health: NotReady or an untolerated NoExecute taint takes the node out and
    evicts every pod of the gangs there; a NoSchedule taint only keeps new pods away; back when healthy."""
    def usable(node):
        for n in (berth.get("/v1/nodes") or {}).get("nodes", []):
            if n["name"] == node:
                return n.get("usable")
        return None

    def gone(names):
        return all(api.pod(ns, n) is None for n in names)

    cases = (("notready", lambda node: api.set_node_status(node, ready=False),
              lambda node: api.set_node_status(node, ready=True), True),
             ("noexecute", lambda node: api.patch("/api/v1/nodes/" + node, {"spec": {"taints": [
                 {"key": "gpu-health", "value": "xid-79", "effect": "NoExecute"}]}}),
              lambda node: api.patch("/api/v1/nodes/" + node, {"spec": {"taints": None}}), True),
             ("noschedule", lambda node: api.patch("/api/v1/nodes/" + node, {"spec": {"taints": [
                 {"key": "gpu-health", "effect": "NoSchedule"}]}}),
              lambda node: api.patch("/api/v1/nodes/" + node, {"spec": {"taints": None}}), False))
    for name, fail, heal, evicts in cases:
        gang = make_gang(api, ns, "h" + name, 2, 8, "berth")
        b = wait_until(lambda: bound(api, ns, gang), 30)
        check("health %s: the gang binds" % name, b, str(b))
        if not b:
            continue
        node = b[gang[0]]
        fail(node)
        out = wait_until(lambda: usable(node) is False, 20)
        check("health %s: node %s is taken out" % (name, node), out, str(usable(node)))
        if evicts:
            ok = wait_until(lambda: gone(gang), 30)
            check("health %s: every pod of the gang is evicted" % name, ok,
                  str([n for n in gang if api.pod(ns, n)]))
        else:
            time.sleep(2)
            check("health %s: the running gang keeps its pods" % name, bound(api, ns, gang), str(gang))
        heal(node)
        back = wait_until(lambda: usable(node) is True, 20)
        check("health %s: node %s is back once healthy" % (name, node), back, str(usable(node)))
        for n in gang:
            api.delete_pod(ns, n)
        wait_until(lambda: gone(gang), 30)


def scenario_launch_config(api, berth, ns):
    """A gang's launch spec as a ConfigMap: written when Berth binds the gang
    (replacing a stale one of the same name), consistent with the pods'
    annotations, owned by the pods, and deleted when the gang ends."""
    name = "berth-launch-lc"
    path = "/api/v1/namespaces/%s/configmaps/%s" % (ns, name)
    # A stale ConfigMap of the same name (an earlier gang): it is replaced.
    api.post("/api/v1/namespaces/%s/configmaps" % ns,
             {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
              "data": {"world-size": "9", "stale": "x"}})
    pods = make_gang(api, ns, "lc", 2, 8, "berth", {"berth.dev/launcher": "tf"})
    b = wait_until(lambda: bound(api, ns, pods), 30)
    check("launch config: the tf gang is bound", b, str(b))

    def current():
        cm = api.get(path, ok404=True)
        return cm if cm and cm.get("data", {}).get("world-size") == "2" else None
    cm = wait_until(current, 10)
    check("launch config: ConfigMap %s written (the stale one replaced)" % name,
          cm and "stale" not in cm["data"], str(cm and sorted(cm["data"])))
    if not cm:
        return
    d = cm["data"]
    ann = {n: api.pod(ns, n)["metadata"]["annotations"] for n in pods}
    by_rank = {int(a["berth.dev/rank"]): n for n, a in ann.items()}
    lines = [l.split() for l in d["pods"].splitlines()]
    check("launch config: its rank table matches the pods' berth.dev/rank and nodes",
          all(by_rank[int(r)] == p and b[p] == node for r, p, node in lines) and len(lines) == 2, d["pods"])
    hosts = [l.split()[0] for l in d["hostfile"].splitlines()]
    check("launch config: the MPI host file lists the nodes in rank order",
          hosts == [b[by_rank[0]], b[by_rank[1]]], d["hostfile"])
    master = ann[by_rank[0]]["berth.dev/master"]
    tf0 = json.loads(d.get("rank-0.tf-config", "{}"))
    check("launch config: master, env per rank and TF_CONFIG agree with the annotations",
          d["master"] == master and "RANK=1\n" in d.get("rank-1.env", "") and
          tf0.get("task", {}).get("index") == 0 and len(tf0.get("cluster", {}).get("worker", [])) == 2 and
          "nccl-topo-%s.xml" % b[by_rank[0]] in d, "master=%s keys=%s" % (d["master"], sorted(d)))
    owners = sorted(o["uid"] for o in cm["metadata"].get("ownerReferences", []))
    uids = sorted(api.pod(ns, n)["metadata"]["uid"] for n in pods)
    check("launch config: owned by every pod of the gang; pods name it (berth.dev/launch-config)",
          owners == uids and all(a.get("berth.dev/launch-config") == name for a in ann.values()), str(owners))
    for n in pods:
        api.delete_pod(ns, n)
    gone = wait_until(lambda: api.get(path, ok404=True) is None, 20)
    check("launch config: deleted when the gang ends", gone)
    # The same gang again: a new ConfigMap.
    pods = make_gang(api, ns, "lc", 2, 8, "berth", {"berth.dev/launcher": "tf"})
    b = wait_until(lambda: bound(api, ns, pods), 30)
    cm2 = wait_until(current, 10)
    check("launch config: a new gang of the same group gets a new ConfigMap",
          b and cm2 and cm2["metadata"]["uid"] != cm["metadata"]["uid"])
    # A gang with a bad launcher waits and says why.
    bad = make_gang(api, ns, "lcbad", 2, 1, "berth", {"berth.dev/launcher": "jax"})
    msg = wait_until(lambda: condition_message(api, ns, bad[0]), 20)
    check("launch config: a bad berth.dev/launcher is refused, naming the annotation",
          msg and "berth.dev/launcher" in msg and not bound(api, ns, bad), str(msg))
    for n in pods + bad:
        api.delete_pod(ns, n)
    wait_until(lambda: api.get(path, ok404=True) is None and not api.pods(ns), 20)


def scenario_restart(api, berth, ns, count):
    """SIGKILL Berth in the middle of a burst of pod creations, restart it."""
    names = ["burst-%d" % i for i in range(count)]
    done = threading.Event()

    def create():
        for n in names:
            api.make_pod(ns, n, gpus=1, cpu="100m", memory="64Mi")
        done.set()
    t = threading.Thread(target=create)
    t.start()
    # Kill once some are bound.
    wait_until(lambda: sum(1 for p in api.pods(ns) if p["spec"].get("nodeName")) >= count // 4, 60)
    berth.kill(signal.SIGKILL)
    killed_at = sum(1 for p in api.pods(ns) if p["spec"].get("nodeName"))
    time.sleep(1)
    berth.start()
    t.join()
    b = wait_until(lambda: bound(api, ns, names), 120, interval=0.5)
    check("after SIGKILL mid-burst and a restart every pod is bound", b,
          "%d of %d were bound at the kill" % (killed_at, count))
    pods = api.pods(ns)
    used = gpus_used_by_node(pods)
    over = {n: u for n, u in used.items() if u > 8}
    check("no node holds more GPUs than it has (no pod bound twice)", not over, str(over))
    ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
    check("after the restart Berth's GPU count equals Kubernetes'", ok,
          "" if ok else str(counts_agree(api, berth)[1:]))
    for n in names:
        api.delete_pod(ns, n)
    ok = wait_until(lambda: counts_agree(api, berth)[0] and not any(True for _ in api.pods(ns)), 30)
    check("deleting the burst frees every GPU", ok)


def make_certs(d):
    """A CA, Berth's serving certificate (IP 127.0.0.1) and kube-scheduler's
    client certificate, made with the openssl command."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for cmd in (
            "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=berth-e2e-ca -keyout ca.key -out ca.crt",
            "openssl req -newkey rsa:2048 -nodes -subj /CN=berth -keyout server.key -out server.csr",
            "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext"
            " -out server.crt",
            "openssl req -newkey rsa:2048 -nodes -subj /CN=kube-scheduler -keyout client.key -out client.csr",
            "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile client.ext"
            " -out client.crt"):
        subprocess.run(cmd.split(), cwd=d, check=True, capture_output=True)
    return {k: os.path.join(d, k) for k in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


def scenario_extender(api, binary, work, cp, ns):
    """The real kube-scheduler 1.20 calls `berth serve --extender` over HTTPS
    with a client certificate (enableHTTPS, tlsConfig); Berth binds (bindVerb)
    and learns of deletions from its pod watch. Without the certificate the
    extender verbs are refused."""
    tls = make_certs(os.path.join(work, "tls"))
    # Berth's cluster: one leaf of the 8 nodes gpu-00..07.
    cluster = os.path.join(work, "ext-cluster.yaml")
    with open(cluster, "w") as f:
        f.write("regions:\n- name: r0\n  clusters:\n  - name: c0\n    spines:\n    - name: spine-0\n      leaves:\n"
                "      - name: leaf-0\n        nodes:\n")
        for i in range(8):
            f.write("        - {name: gpu-%02d, gpus: 8, type: H100, cpu: 128, memory_gib: 1024}\n" % i)
    port = free_port()
    log = open(os.path.join(work, "berth-extender.log"), "w")
    proc = subprocess.Popen([binary, "serve", "--extender", "--kubeconfig", api.kubeconfig, "--cluster", cluster,
                             "--scheduler-name", "default-scheduler",
                             "--store", "sqlite:" + os.path.join(work, "ext.db"),
                             "--listen", "127.0.0.1:%d" % port, "--tls-cert", tls["server.crt"],
                             "--tls-key", tls["server.key"], "--tls-client-ca", tls["ca.crt"]],
                            stdout=log, stderr=log, cwd=ROOT)
    config = os.path.join(work, "kube-scheduler-extender.yaml")
    with open(config, "w") as f:
        f.write("""apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %s}
profiles:
  - schedulerName: default-scheduler
extenders:
  - urlPrefix: "https://127.0.0.1:%d/v1/extender"
    enableHTTPS: true
    tlsConfig: {certFile: %s, keyFile: %s, caFile: %s}
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    weight: 5
    nodeCacheCapable: true
    ignorable: false
    managedResources:
      - {name: nvidia.com/gpu, ignoredByScheduler: false}
""" % (api.kubeconfig, port, tls["client.crt"], tls["client.key"], tls["ca.crt"]))
    try:
        ok = wait_until(lambda: subprocess.run(["curl", "-sf", "--cacert", tls["ca.crt"],
                                                "https://127.0.0.1:%d/readyz" % port],
                                               capture_output=True).returncode == 0, 30)
        check("berth serve --extender is ready over HTTPS", ok)
        anon = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", tls["ca.crt"],
                               "-X", "POST", "-d", "{}", "https://127.0.0.1:%d/v1/extender/filter" % port],
                              capture_output=True, text=True).stdout
        check("the extender verbs without a client certificate: 401", anon == "401", anon)
        for g in ("ea", "eb", "ec"):  # Volcano's PodGroups (the CRD is installed): their minMember is the size
            api.post("/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % ns,
                     {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                      "metadata": {"name": g, "namespace": ns}, "spec": {"minMember": 4}})
        extender_refuses_fakes(api, port, proc.pid, ns, tls)
        subprocess.run([CONTROL_PLANE, "scheduler", cp, config], check=True)
        gangs = {}
        for g in ("ea", "eb", "ec"):
            names = ["%s-%d" % (g, i) for i in range(4)]
            for n in names:
                api.make_pod(ns, n, gpus=8, scheduler="default-scheduler",
                             annotations={"scheduling.k8s.io/group-name": g, "berth.dev/min-member": "4"})
            gangs[g] = names
            if g != "ec":
                b = wait_until(lambda: bound(api, ns, names), 60)
                check("kube-scheduler + extender bind gang %s whole on Berth's nodes (bindVerb)" % g,
                      b and len(set(b.values())) == 4 and all(int(v[4:]) < 8 for v in b.values()), str(b))
        time.sleep(3)
        check("a third gang waits while the leaf is full", not bound(api, ns, gangs["ec"]))
        for n in gangs["ea"]:
            api.delete_pod(ns, n)
        t0 = time.time()
        b = wait_until(lambda: bound(api, ns, gangs["ec"]), 90, interval=0.2)
        check("deleting a gang's pods frees them in the extender; the waiting gang binds", b,
              "%.1f s after the delete (kube-scheduler's retry backoff)" % (time.time() - t0))
    finally:
        pidfile = os.path.join(cp, "kube-scheduler.pid")
        if os.path.exists(pidfile):
            with open(pidfile) as f:
                pid = int(f.read().strip())
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            os.remove(pidfile)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])


def client_tls(tls):
    """An SSL context holding the client certificate kube-scheduler uses: the
    requests below come from a caller that passed authentication."""
    ctx = ssl.create_default_context(cafile=tls["ca.crt"])
    ctx.load_cert_chain(tls["client.crt"], tls["client.key"])
    return ctx


def extender_filter(port, pod, nodes, ctx):
    body = json.dumps({"Pod": pod, "NodeNames": nodes}).encode()
    req = urllib.request.Request("https://127.0.0.1:%d/v1/extender/filter" % port, data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
        return json.loads(r.read())


def fake_pod(ns, name, uid, gpus=8, annotations=None, priority=0):
    return {"metadata": {"name": name, "namespace": ns, "uid": uid, "annotations": annotations or {}},
            "spec": {"schedulerName": "default-scheduler", "priority": priority,
                     "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


def extender_refuses_fakes(api, port, pid, ns, tls):
    """Requests the API server cannot back take nothing, even from a caller
    holding a valid client certificate: made-up pods, a real gang's name, a
    pod of another scheduler, a group without its PodGroup, huge names; and
    Berth's memory stays flat."""
    ctx = client_tls(tls)
    nodes = ["gpu-%02d" % i for i in range(8)]

    def refused(answer, words):
        failed = answer.get("failedNodes") or {}
        passed = answer.get("nodenames") or []
        return not passed and len(failed) == len(nodes) and all(words in v for v in failed.values()), failed

    ok, why = True, ""
    for i in range(50):
        a = extender_filter(port, fake_pod(ns, "fake-%d" % i, "uid-fake-%d" % i), nodes, ctx)
        r, failed = refused(a, "does not exist in the API server")
        if not r:
            ok, why = False, str(failed)[:300]
    jobs = (json.loads(urllib.request.urlopen("https://127.0.0.1:%d/v1/jobs" % port, timeout=10, context=ctx).read())
            .get("jobs", []))
    check("extender: 50 made-up pods (8 GPUs each) are refused and take nothing", ok and not jobs,
          why or "%d jobs" % len(jobs))
    real = api.make_pod(ns, "ea-0", gpus=8, scheduler="default-scheduler",
                        annotations={"scheduling.k8s.io/group-name": "ea", "berth.dev/min-member": "4"})
    a = extender_filter(port, fake_pod(ns, "ea-0", "not-the-uid", annotations={
        "scheduling.k8s.io/group-name": "ea", "berth.dev/min-member": "1"}, priority=2 ** 31 - 1), nodes, ctx)
    r, failed = refused(a, "in the API server, not 'not-the-uid'")
    check("extender: a real gang pod's name with another uid is refused", r, str(failed)[:300])
    api.delete_pod(ns, "ea-0")
    wait_until(lambda: api.pod(ns, "ea-0") is None, 30)
    other = api.make_pod(ns, "other-0", gpus=8, scheduler="other-scheduler")
    a = extender_filter(port, fake_pod(ns, "other-0", other["metadata"]["uid"]), nodes, ctx)
    r, failed = refused(a, "names scheduler 'other-scheduler'")
    check("extender: a pod of another scheduler is refused", r, str(failed)[:300])
    api.delete_pod(ns, "other-0")
    lone = api.make_pod(ns, "nogroup-0", gpus=8, scheduler="default-scheduler",
                        annotations={"scheduling.k8s.io/group-name": "nopg", "berth.dev/min-member": "2"})
    a = extender_filter(port, fake_pod(ns, "nogroup-0", lone["metadata"]["uid"]), nodes, ctx)
    r, failed = refused(a, "its PodGroup does not exist")
    check("extender: a pod naming a Volcano group without its PodGroup is refused", r, str(failed)[:300])
    api.delete_pod(ns, "nogroup-0")
    before = rss_mib(pid)
    ok = True
    for i in range(200):
        try:  # refused by the strict parser (400), or by the verbs (every node failed)
            a = extender_filter(port, fake_pod(ns, "big-%d" % i, "uid-big-%d" % i, annotations={
                "scheduling.k8s.io/group-name": ("g%d-" % i) + "x" * 500000}), nodes, ctx)
            ok = ok and refused(a, "characters long")[0]
        except urllib.error.HTTPError as e:
            ok = ok and e.code == 400 and "longer than 253" in e.read().decode("utf-8", "replace")
    after = rss_mib(pid)
    check("extender: 200 requests with 500 KB group names are refused; RSS %d -> %d MiB" % (before, after),
          ok and after - before < 100, "%d -> %d MiB" % (before, after))


def condition_message(api, ns, name):
    p = api.pod(ns, name)
    for c in (p or {}).get("status", {}).get("conditions", []):
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("message")
    return None


def scenario_queues(api, berth, ns):
    """Queue objects (berth.dev/v1alpha1) make the queue tree: a guarantee and
    a borrowing limit are enforced, and the waiting pod says which."""
    for name, spec in (("default", {}),
                       ("team-a", {"tenants": [ns], "quotas": {"*": {"guarantee": 16, "borrowLimit": 8}}})):
        api.post("/apis/berth.dev/v1alpha1/queues", {"apiVersion": "berth.dev/v1alpha1", "kind": "Queue",
                                                      "metadata": {"name": name}, "spec": spec})
    time.sleep(1)
    names = ["qa-%d" % i for i in range(4)]
    for n in names:
        api.make_pod(ns, n, gpus=8)
    b = wait_until(lambda: (lambda d: d if len(d) == 3 else None)(
        {n: p for n, p in ((n, api.pod(ns, n)) for n in names) if p and p["spec"].get("nodeName")}), 30)
    msg = wait_until(lambda: next((condition_message(api, ns, n) for n in names
                                   if not api.pod(ns, n)["spec"].get("nodeName") and condition_message(api, ns, n)),
                                  None), 20)
    check("a Queue's guarantee plus its borrowing limit bound 3 of 4 pods (24 GPUs)", b, str(b and sorted(b)))
    check("the pod over the borrowing limit waits, naming the queue", msg and "team-a" in msg, str(msg))
    api.delete_pod(ns, names[0])
    b = wait_until(lambda: bound(api, ns, names[1:]), 30)
    check("when a pod of the queue ends the waiting one starts", b)
    for n in names:
        api.delete_pod(ns, n)
    for name in ("team-a", "default"):
        api.delete("/apis/berth.dev/v1alpha1/queues/" + name)
    wait_until(lambda: not api.pods(ns), 20)


def scenario_queues_normalized(api, berth, ns):
    """Normalized units on Kubernetes: Queues in V100-equivalents charge an
    8-GPU pod on the H100 nodes its GPUs times the H100's speed, so a limit of
    40 V100-equivalents admits one such pod where raw GPUs would admit all three;
    GET /v1/queues and /metrics show the charge in the tree's unit."""
    api.ensure_namespace(ns)
    for name, spec in (("default", {"unit": "normalized", "reference": "V100"}),
                       ("team-n", {"tenants": [ns], "unit": "normalized", "reference": "V100",
                                   "quotas": {"*": {"guarantee": 0, "limit": 40}}})):
        api.post("/apis/berth.dev/v1alpha1/queues", {"apiVersion": "berth.dev/v1alpha1", "kind": "Queue",
                                                      "metadata": {"name": name}, "spec": spec})
    ok = wait_until(lambda: (berth.get("/v1/queues") or {}).get("unit") == "normalized", 20)
    check("normalized: Queue objects with spec.unit make the tree count V100-equivalents", ok,
          str(berth.get("/v1/queues")))
    names = ["qn-%d" % i for i in range(3)]
    for n in names:
        api.make_pod(ns, n, gpus=8)
    wait_until(lambda: any((api.pod(ns, n) or {}).get("spec", {}).get("nodeName") for n in names), 30)
    time.sleep(3)
    placed = [n for n in names if api.pod(ns, n)["spec"].get("nodeName")]
    check("normalized: a limit of 40 V100-equivalents admits one 8-GPU H100 pod of three", len(placed) == 1,
          str(placed))
    msg = wait_until(lambda: next((condition_message(api, ns, n) for n in names
                                   if n not in placed and condition_message(api, ns, n)), None), 20)
    check("normalized: the pods over the limit wait, naming the queue", msg and "team-n" in msg, str(msg))
    q = berth.get("/v1/queues") or {}
    team = next((x for x in q.get("queues", []) if x.get("name") == "team-n"), {})
    usage = team.get("usage_gpus", 0)
    check("normalized: GET /v1/queues charges the pod 8 GPUs x the H100's speed in V100s (unit, reference, jobs)",
          q.get("reference") == "V100" and usage > 12 and team.get("running") == 1 and team.get("pending") == 2,
          "usage %s running %s pending %s reference %s" % (usage, team.get("running"), team.get("pending"),
                                                           q.get("reference")))
    metrics = berth.get("/metrics") or ""
    check("normalized: /metrics has the queue's usage gauge",
          'berth_queue_used_gpus{queue="team-n",gpu_type="*"}' in metrics, metrics[-300:])
    for n in names:
        api.delete_pod(ns, n)
    for name in ("team-n", "default"):
        api.delete("/apis/berth.dev/v1alpha1/queues/" + name)
    wait_until(lambda: not api.pods(ns), 20)


def metric(text, name):
    for line in (text or "").splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def scenario_repair(api, binary, work, ns):
    """In-place repair (--repair in-place): a NotReady node evicts only the gang's pod there; the pod made again
    under its name is bound to a free node of the same leaf; no room in the leaf, or a gang annotated
    berth.dev/repair: requeue, evicts the whole gang."""
    berth = Berth(binary, api, work, ["--repair", "in-place", "--repair-timeout", "2m"], name="berth-repair")
    berth.start()

    def uids(names):
        out = {}
        for n in names:
            p = api.pod(ns, n)
            out[n] = p and (p["metadata"]["uid"], p["spec"].get("nodeName"))
        return out

    def gone(names):
        return all(api.pod(ns, n) is None for n in names)

    def lose(node):
        api.set_node_status(node, ready=False)
        return wait_until(lambda: any(n["name"] == node and n.get("usable") is False
                                      for n in (berth.get("/v1/nodes") or {}).get("nodes", [])), 20)

    def heal(node):
        api.set_node_status(node, ready=True)
        wait_until(lambda: any(n["name"] == node and n.get("usable") is True
                               for n in (berth.get("/v1/nodes") or {}).get("nodes", [])), 20)

    def cleanup(names):
        for n in names:
            api.delete_pod(ns, n)
        wait_until(lambda: gone(names), 30)
    try:
        # A 2 x 8 gang: one pod per node, in one leaf.
        gang = make_gang(api, ns, "rp", 2, 8, "berth")
        b = wait_until(lambda: bound(api, ns, gang), 30)
        check("repair: the 2-pod gang binds, one pod per node in one leaf",
              b and b[gang[0]] != b[gang[1]] and leaf_of(api, b[gang[0]]) == leaf_of(api, b[gang[1]]), str(b))
        if b:
            lost, kept = b[gang[0]], b[gang[1]]
            before = uids(gang)
            old_rank = ((api.pod(ns, gang[0]) or {}).get("metadata", {}).get("annotations") or {}).get("berth.dev/rank")
            check("repair: node %s is taken out" % lost, lose(lost))
            ok = wait_until(lambda: api.pod(ns, gang[0]) is None, 30)
            time.sleep(1)
            after = uids(gang)
            check("repair: only the pod on the NotReady node is evicted; the other keeps its uid and node %s" % kept,
                  ok and after[gang[1]] == before[gang[1]], "before=%s after=%s" % (before, after))
            # The owner makes the pod again under its name (as a StatefulSet does).
            labels = {"berth.dev/pod-group": "rp"}
            api.make_pod(ns, gang[0], gpus=8, labels=labels, annotations={"berth.dev/min-member": "2"})
            nb = wait_until(lambda: bound(api, ns, [gang[0]]), 30)
            target = nb and nb[gang[0]]
            check("repair: the re-created pod is bound to another node of the same leaf",
                  target and target not in (lost, kept) and leaf_of(api, target) == leaf_of(api, lost),
                  "lost=%s kept=%s target=%s" % (lost, kept, target))
            p0 = api.pod(ns, gang[0]) or {}
            rank = p0.get("metadata", {}).get("annotations", {}).get("berth.dev/rank")
            check("repair: the replacement takes the freed rank", rank is not None and rank == old_rank,
                  "old=%s new=%s" % (old_rank, rank))
            text = berth.get("/metrics")
            check("repair: /metrics counts one repair and no fallback",
                  metric(text, "berth_gang_repairs_total") == 1 and metric(text, "berth_repair_fallbacks_total") == 0,
                  "repairs=%s fallbacks=%s" % (metric(text, "berth_gang_repairs_total"),
                                               metric(text, "berth_repair_fallbacks_total")))
            ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
            check("repair: Berth's GPU count equals Kubernetes' after the repair", ok, str(counts_agree(api, berth)[1:]))
            heal(lost)
        cleanup(gang)

        # A gang annotated berth.dev/repair: requeue is requeued whole despite the flag.
        gang = make_gang(api, ns, "rq", 2, 8, "berth", {"berth.dev/repair": "requeue"})
        b = wait_until(lambda: bound(api, ns, gang), 30)
        check("repair: the requeue-annotated gang binds", b, str(b))
        if b:
            lost = b[gang[0]]
            check("repair: node %s is taken out" % lost, lose(lost))
            ok = wait_until(lambda: gone(gang), 30)
            check("repair: berth.dev/repair: requeue evicts every pod of the gang", ok,
                  str([n for n in gang if api.pod(ns, n)]))
            heal(lost)
        cleanup(gang)

        # No room: a gang of 8 x 8 fills its leaf; losing one node evicts the whole gang.
        gang = make_gang(api, ns, "full", 8, 8, "berth", {"berth.dev/required-level": "leaf"})
        b = wait_until(lambda: bound(api, ns, gang), 30)
        check("repair: an 8-pod gang fills one leaf", b and len({leaf_of(api, n) for n in b.values()}) == 1, str(b))
        if b:
            lost = b[gang[3]]
            check("repair: node %s is taken out" % lost, lose(lost))
            ok = wait_until(lambda: gone(gang), 30)
            check("repair: without room in the leaf every pod of the gang is evicted", ok,
                  str([n for n in gang if api.pod(ns, n)]))
            text = berth.get("/metrics")
            check("repair: /metrics counts the fallback", metric(text, "berth_repair_fallbacks_total") == 1 and
                  metric(text, "berth_gang_repairs_total") == 1,
                  "repairs=%s fallbacks=%s" % (metric(text, "berth_gang_repairs_total"),
                                               metric(text, "berth_repair_fallbacks_total")))
            heal(lost)
        cleanup(gang)
        ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
        check("repair: an emptied namespace leaves no GPU held in Berth", ok, str(counts_agree(api, berth)[1:]))
    finally:
        berth.kill(signal.SIGTERM)
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])


def scenario_repair_spares(api, binary, work, ns):
    """--spares leaf:1: the highest-named node of each leaf is kept idle; a NoExecute GPU-health taint on a gang's
    node moves that pod's task to its leaf's spare, where the re-created pod is bound."""
    berth = Berth(binary, api, work, ["--spares", "leaf:1"], name="berth-spares")
    berth.start()
    taint = {"spec": {"taints": [{"key": "gpu-health", "value": "xid-79", "effect": "NoExecute"}]}}
    try:
        def spares():
            return sorted(n["name"] for n in (berth.get("/v1/nodes") or {}).get("nodes", []) if n.get("spare"))
        ok = wait_until(lambda: len(spares()) == 8, 20)
        check("spares: one spare per leaf, the highest name", ok and all(int(n.split("-")[1]) % 8 == 7 for n in spares()),
              str(spares()))
        gang = make_gang(api, ns, "sp", 2, 8, "berth")
        b = wait_until(lambda: bound(api, ns, gang), 30)
        check("spares: the gang binds beside the spares", b and not set(b.values()) & set(spares()), str(b))
        if b:
            lost, kept = b[gang[0]], b[gang[1]]
            spare = [n for n in spares() if leaf_of(api, n) == leaf_of(api, lost)]
            kept_uid = api.pod(ns, gang[1])["metadata"]["uid"]
            api.patch("/api/v1/nodes/" + lost, taint)
            ok = wait_until(lambda: api.pod(ns, gang[0]) is None, 30)
            time.sleep(1)
            p1 = api.pod(ns, gang[1]) or {}
            check("spares: a NoExecute taint evicts only the pod on %s" % lost,
                  ok and p1.get("metadata", {}).get("uid") == kept_uid and p1["spec"].get("nodeName") == kept,
                  str(p1.get("spec", {}).get("nodeName")))
            api.make_pod(ns, gang[0], gpus=8, labels={"berth.dev/pod-group": "sp"},
                         annotations={"berth.dev/min-member": "2"})
            nb = wait_until(lambda: bound(api, ns, [gang[0]]), 30)
            check("spares: the re-created pod is bound to the leaf's spare %s" % spare,
                  nb and [nb[gang[0]]] == spare, str(nb))
            text = berth.get("/metrics")
            check("spares: /metrics counts the spare used", metric(text, "berth_spares_used_total") == 1 and
                  metric(text, "berth_gang_repairs_total") == 1, str(metric(text, "berth_spares_used_total")))
            api.patch("/api/v1/nodes/" + lost, {"spec": {"taints": None}})
        for n in gang:
            api.delete_pod(ns, n)
        ok = wait_until(lambda: counts_agree(api, berth)[0] and not api.pods(ns), 30)
        check("spares: an emptied namespace leaves no GPU held in Berth", ok, str(counts_agree(api, berth)[1:]))
    finally:
        berth.kill(signal.SIGTERM)
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])


def scenario_preemption(api, binary, work, ns):
    """Priority preemption through the Eviction API: one minimal set evicted,
    the preemptor placed on what it freed, no further evictions."""
    berth = Berth(binary, api, work, ["--policy", "priority-preempt", "--min-runtime", "0s"], name="berth-preempt")
    berth.start()
    try:
        api.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                 {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 1000})
        fill = ["low-%02d" % i for i in range(64)]
        for n in fill:
            api.make_pod(ns, n, gpus=8)
        b = wait_until(lambda: bound(api, ns, fill), 60)
        check("64 low-priority 8-GPU pods fill the cluster", b)
        api.make_pod(ns, "urgent", gpus=8, priority_class="high")
        b = wait_until(lambda: bound(api, ns, ["urgent"]), 60)
        time.sleep(2)
        evicted = [n for n in fill if api.pod(ns, n) is None]
        check("a priority-1000 pod preempts exactly one 8-GPU pod and is bound", b and len(evicted) == 1,
              "bound=%s evicted=%s" % (b, evicted))
        ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
        check("after the preemption Berth's GPU count equals Kubernetes'", ok, str(counts_agree(api, berth)[1:]))
    finally:
        berth.kill(signal.SIGTERM)
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one, removed)")
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--only", help="run only these scenarios (comma-separated: basic, launch, health, queues, "
                                   "restart, repair, extender, preemption, services)")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None

    def wanted(name):
        return only is None or name in only
    work = args.keep or tempfile.mkdtemp(prefix="berth-kube-")
    os.makedirs(work, exist_ok=True)
    cp = os.path.join(work, "cp")
    r = subprocess.run([CONTROL_PLANE, "start", cp])
    if r.returncode != 0:
        print("control plane did not start")
        print("0 passed, 1 failed")
        return 1
    berth = None
    kubelets = None
    try:
        api = Api(os.path.join(cp, "env"))
        api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", VOLCANO_PODGROUP_CRD)
        crds = os.path.join(ROOT, "deploy", "crds")
        for f in sorted(os.listdir(crds)):
            with open(os.path.join(crds, f)) as fh:
                api.apply_yaml("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", fh.read())
        # 16 nodes x 8 GPUs to start: 2 leaves of 8 nodes in one spine.
        def add_nodes(first, last):
            for i in range(first, last):
                api.make_node("gpu-%02d" % i, gpus=8, labels={
                    "fabric.topograph.run/tier-0": "leaf-%d" % (i // 8),
                    "fabric.topograph.run/tier-1": "spine-%d" % (i // 32)})
        add_nodes(0, 16)
        for ns in ("ml", "burst", "ext", "qa", "prio", "svc", "rep"):
            api.ensure_namespace(ns)
        for path in ("/apis/scheduling.volcano.sh/v1beta1/podgroups", "/apis/berth.dev/v1alpha1/queues"):
            wait_until(lambda: api.get(path, ok404=True) is not None, 20)
        kubelets = Kubelets(api)
        kubelets.start()
        berth = Berth(args.berth, api, work)
        berth.start()
        if wanted("basic"):
            scenario_basic(api, berth, "ml")
        for p in api.pods("ml"):
            api.delete_pod("ml", p["metadata"]["name"])
        ok = wait_until(lambda: counts_agree(api, berth)[0] and not api.pods("ml"), 30)
        check("an emptied cluster has no GPU held in Berth", ok, str(counts_agree(api, berth)[1:]))
        if wanted("launch"):
            scenario_launch_config(api, berth, "ml")
        if wanted("health"):
            scenario_node_health(api, berth, "ml")
        # The cluster grows to 64 nodes (8 leaves, 2 spines) while Berth runs.
        add_nodes(16, 64)
        ok = wait_until(lambda: len((berth.get("/v1/nodes") or {}).get("nodes", [])) == 64, 30)
        check("nodes added while Berth runs join its cluster model", ok)
        if wanted("queues"):
            scenario_queues(api, berth, "qa")
            scenario_queues_normalized(api, berth, "qn")
        if wanted("restart"):
            scenario_restart(api, berth, "burst", args.burst)
        berth.kill(signal.SIGTERM)
        berth = None
        if wanted("repair"):
            scenario_repair(api, args.berth, work, "rep")
            scenario_repair_spares(api, args.berth, work, "rep")
        api.ensure_namespace("ext")
        if wanted("extender"):
            scenario_extender(api, args.berth, work, cp, "ext")
        if wanted("preemption"):
            scenario_preemption(api, args.berth, work, "prio")
        if wanted("services"):
            scenario_services(api, args.berth, work, "svc")
            scenario_services_autoscale(api, args.berth, work, "svc")
    except Exception as e:  # a broken step fails the run, with what broke
        check("no unexpected error", False, repr(e))
    finally:
        if kubelets:
            kubelets.stop = True
        if berth:
            berth.kill(signal.SIGTERM)
        subprocess.run([CONTROL_PLANE, "stop", cp])
    passed = sum(1 for _, ok in results if ok)
    failed = len(results) - passed
    print("%d passed, %d failed" % (passed, failed))
    if failed == 0 and not args.keep:
        subprocess.run(["rm", "-rf", work])
    else:
        print("logs kept in " + work)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
