"""The `services` scenarios of tests/kube/e2e.py: a Deployment's pods as
service replicas (preemption, reserved Nodes, adoption after a restart), the
wake at a victim's min-runtime guard, and Berth's autoscaler writing the
Deployments' scale subresource."""
import json
import os
import signal
import time
import urllib.error
import urllib.request

from e2e_util import Berth, bound, check, counts_agree
from kubeapi import wait_until


def make_deployment(api, ns, name, replicas, gpus, annotations=None, deployment_annotations=None):
    """A Deployment and what its controllers would make of it (there is no
    kube-controller-manager here): its ReplicaSet NAME-HASH, owned by the
    Deployment, and the ReplicaSet's pods NAME-HASH-i, owned by it, with the
    pod-template-hash label. `deployment_annotations` go on the Deployment
    itself (berth.dev/autoscale, ...). Returns the pod names."""
    tmpl_hash = "5d8f7c"
    labels = {"app": name}
    template = {"metadata": {"labels": labels, "annotations": annotations or {}},
                "spec": {"schedulerName": "berth", "containers": [{"name": "main", "image": "busybox"}]}}
    dep = api.post("/apis/apps/v1/namespaces/%s/deployments" % ns,
                   {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": ns, "annotations": deployment_annotations or {}},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})
    rs_name = "%s-%s" % (name, tmpl_hash)
    rs_labels = dict(labels, **{"pod-template-hash": tmpl_hash})
    rs_template = {"metadata": {"labels": rs_labels}, "spec": template["spec"]}
    rs = api.post("/apis/apps/v1/namespaces/%s/replicasets" % ns,
                  {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": rs_name, "namespace": ns, "labels": rs_labels,
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                     "uid": dep["metadata"]["uid"], "controller": True}]},
                   "spec": {"replicas": replicas, "selector": {"matchLabels": rs_labels}, "template": rs_template}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    names = ["%s-%d" % (rs_name, i) for i in range(replicas)]
    for n in names:
        api.make_pod(ns, n, gpus=gpus, labels=rs_labels, annotations=annotations, owner=owner)
    return names


def scale_replicaset(api, ns, name, replicas, gpus, annotations=None):
    """What the Deployment and ReplicaSet controllers do when a Deployment's
    spec.replicas grows: the ReplicaSet NAME-HASH gets the new count and the
    missing pods NAME-HASH-i are created. Returns the new pods' names."""
    tmpl_hash = "5d8f7c"
    rs_name = "%s-%s" % (name, tmpl_hash)
    rs = api.patch("/apis/apps/v1/namespaces/%s/replicasets/%s" % (ns, rs_name), {"spec": {"replicas": replicas}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    rs_labels = {"app": name, "pod-template-hash": tmpl_hash}
    made = []
    for i in range(replicas):
        n = "%s-%d" % (rs_name, i)
        if api.pod(ns, n) is None:
            api.make_pod(ns, n, gpus=gpus, labels=rs_labels, annotations=annotations, owner=owner)
            made.append(n)
    return made


def deployment_replicas(api, ns, name):
    d = api.get("/apis/apps/v1/namespaces/%s/deployments/%s" % (ns, name), ok404=True)
    return d["spec"].get("replicas") if d else None


def post_json(port, path, body, token=None):
    """POST to Berth's HTTP API (with a bearer token when given); returns (status, answer)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(),
                                 method="POST", headers=headers)
    def answer(text):
        try:
            return json.loads(text or b"null")
        except ValueError:
            return {"text": text.decode(errors="replace")}
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, answer(r.read())
    except urllib.error.HTTPError as e:
        return e.code, answer(e.read())


def scenario_services_autoscale(api, binary, work, ns):
    """A replica waiting for its victims' min-runtime guard is bound when the
    guard expires, with no other event; Berth's autoscaler sizes Deployments
    that opt in (berth.dev/autoscale) through their scale subresource, and
    binds the pods made for the new count; others keep their spec.replicas."""
    nodes = len(api.get("/api/v1/nodes")["items"])
    fill = ["batch-%02d" % i for i in range(nodes)]
    guard = 15
    token = "load-reports-%d" % os.getpid()
    token_file = os.path.join(work, "berth-svc-token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    berth = Berth(binary, api, work, ["--policy", "priority-preempt", "--min-runtime", "%ds" % guard,
                                      "--token-file", token_file], name="berth-svc-guard")
    berth.start()
    try:
        t0 = time.time()
        for n in fill:
            api.make_pod(ns, n, gpus=8)
        b = wait_until(lambda: bound(api, ns, fill), 60)
        t1 = time.time()
        check("services: %d batch pods fill the cluster under a %d s min-runtime guard" % (nodes, guard), b)
        web = make_deployment(api, ns, "web", 1, 8)
        time.sleep(2)
        check("services: the replica waits while every batch pod is inside its guard", not bound(api, ns, web))
        got = wait_until(lambda: bound(api, ns, web), guard + 20)
        t2 = time.time()
        time.sleep(1)
        evicted = [n for n in fill if api.pod(ns, n) is None]
        # The first batch pod was placed between t0 and t1: its guard expires
        # between t0 + guard and t1 + guard, and nothing else happens meanwhile.
        check("services: the replica evicts one batch pod and is bound right after the guard expires",
              got and len(evicted) == 1 and t0 + guard - 0.5 <= t2 <= t1 + guard + 3,
              "bound %.1f s after the fill began, guard expiry %.1f..%.1f s, evicted=%s"
              % (t2 - t0, guard, t1 - t0 + guard, evicted))
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])
        delete_deployment(api, ns, "web")
        wait_until(lambda: not api.pods(ns), 30)

        # Autoscaling. "api": load reported through Berth's API; "ann": load
        # from its annotation (as a metrics adapter writes it); "quiet": no
        # berth.dev/autoscale; "bad": a malformed annotation.
        auto = {"berth.dev/autoscale": "true", "berth.dev/min-replicas": "1", "berth.dev/max-replicas": "4",
                "berth.dev/target-requests-per-s": "10"}
        api_pods = make_deployment(api, ns, "api", 1, 1, deployment_annotations=dict(
            auto, **{"berth.dev/scale-down-stabilization-s": "0"}))
        ann_pods = make_deployment(api, ns, "ann", 1, 1, deployment_annotations=dict(
            auto, **{"berth.dev/max-replicas": "3", "berth.dev/load-requests-per-s": "25"}))
        quiet_pods = make_deployment(api, ns, "quiet", 1, 1)
        bad_pods = make_deployment(api, ns, "bad", 1, 1, deployment_annotations=dict(
            auto, **{"berth.dev/max-replicas": "lots"}))
        b = wait_until(lambda: bound(api, ns, api_pods + ann_pods + quiet_pods + bad_pods), 30)
        check("services: four one-replica Deployments are bound", b)
        ok = wait_until(lambda: deployment_replicas(api, ns, "ann") == 3, 10)
        check("services: a Deployment whose annotation reports 25 requests/s at 10 per replica is scaled to 3",
              ok, "spec.replicas=%s" % deployment_replicas(api, ns, "ann"))
        code, answer = post_json(berth.port, "/v1/services/%s/api/load" % ns, {"requests_per_s": 35})
        check("services: with --token-file a load report without the bearer token is refused (401)",
              code == 401 and "missing bearer token" in answer.get("error", ""), "%s %s" % (code, answer))
        code, answer = post_json(berth.port, "/v1/services/%s/api/load" % ns, {"requests_per_s": 35}, "wrong")
        check("services: a load report with a wrong token is refused (401)",
              code == 401 and "invalid bearer token" in answer.get("error", ""), "%s %s" % (code, answer))
        t3 = time.time()
        code, answer = post_json(berth.port, "/v1/services/%s/api/load" % ns, {"requests_per_s": 35}, token)
        check("services: POST /v1/services/NS/NAME/load takes the load of an autoscaled Deployment",
              code == 200 and answer.get("requests_per_s") == 35, "%s %s" % (code, answer))
        code, answer = post_json(berth.port, "/v1/services/%s/quiet/load" % ns, {"requests_per_s": 35}, token)
        check("services: a load report for a Deployment without berth.dev/autoscale is refused (404)", code == 404,
              "%s %s" % (code, answer))
        code, answer = post_json(berth.port, "/v1/services/%s/api/load" % ns, {"rps": 35}, token)
        check("services: a malformed load report is refused (400)", code == 400, "%s %s" % (code, answer))
        ok = wait_until(lambda: deployment_replicas(api, ns, "api") == 4, 25)
        check("services: 35 requests/s at 10 per replica scale the Deployment to 4 at the next evaluation",
              ok, "spec.replicas=%s after %.1f s" % (deployment_replicas(api, ns, "api"), time.time() - t3))
        svc = berth.get("/v1/services/%s/bad" % ns) or {}
        check("services: a malformed annotation is reported, naming it", "berth.dev/max-replicas" in
              svc.get("error", ""), str(svc))
        check("services: Deployments without the annotation, or with a malformed one, keep spec.replicas",
              deployment_replicas(api, ns, "quiet") == 1 and deployment_replicas(api, ns, "bad") == 1)
        # The ReplicaSet controller's part: the pods for the new counts.
        new = scale_replicaset(api, ns, "api", 4, 1) + scale_replicaset(api, ns, "ann", 3, 1)
        got = wait_until(lambda: bound(api, ns, new), 30)
        pods = {p["name"]: p for p in (berth.get("/v1/pods") or {}).get("pods", [])}
        check("services: Berth binds the pods made for the new counts, as replicas of their Deployment",
              got and len(new) == 5 and all(pods.get(n, {}).get("service", "").startswith(ns + "/") for n in new),
              "bound=%s" % got)
        svc = berth.get("/v1/services/%s/api" % ns) or {}
        check("services: /v1/services shows the Deployment's count, load and bound pods",
              svc.get("replicas") == 4 and svc.get("requests_per_s") == 35 and svc.get("pods_bound") == 4,
              str(svc))
        listed = sorted(s["name"] for s in (berth.get("/v1/services") or {}).get("services", []))
        check("services: /v1/services lists the Deployments that opt in", listed == ["ann", "api", "bad"], str(listed))
        metrics = berth.get("/metrics") or ""
        check("services: /metrics counts the scale writes",
              'berth_kube_scale_writes_total{result="ok"} 2' in metrics)
        # Scale-down: with berth.dev/scale-down-stabilization-s 0, 5 requests/s
        # at 10 per replica bring "api" from 4 to 1 at the next evaluation.
        t4 = time.time()
        code, answer = post_json(berth.port, "/v1/services/%s/api/load" % ns, {"requests_per_s": 5}, token)
        ok = code == 200 and wait_until(lambda: deployment_replicas(api, ns, "api") == 1, 25)
        check("services: 5 requests/s scale the Deployment down from 4 to 1 (no down-stabilization window)",
              ok, "%s spec.replicas=%s after %.1f s" % (code, deployment_replicas(api, ns, "api"), time.time() - t4))
        # The ReplicaSet controller's part: it deletes three of the four pods.
        api_now = sorted(p["metadata"]["name"] for p in api.pods(ns)
                         if p["metadata"]["name"].startswith("api-"))
        for n in api_now[1:]:
            api.delete_pod(ns, n, grace=0)
        freed = wait_until(lambda: (berth.get("/v1/services/%s/api" % ns) or {}).get("pods_bound") == 1, 20)
        svc = berth.get("/v1/services/%s/api" % ns) or {}
        known = {p["name"] for p in (berth.get("/v1/pods") or {}).get("pods", [])}
        check("services: after the scale-down Berth counts one bound replica and holds nothing for the others",
              freed and svc.get("replicas") == 1 and svc.get("requests_per_s") == 5 and
              not known & set(api_now[1:]), "%s; still held: %s" % (svc, sorted(known & set(api_now[1:]))))
    finally:
        berth.kill(signal.SIGTERM)
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])
        for name in ("web", "api", "ann", "quiet", "bad"):
            delete_deployment(api, ns, name)
        wait_until(lambda: not api.pods(ns), 30)


def delete_deployment(api, ns, name):
    api.delete("/apis/apps/v1/namespaces/%s/deployments/%s" % (ns, name))
    api.delete("/apis/apps/v1/namespaces/%s/replicasets/%s-5d8f7c" % (ns, name))


def scenario_services(api, binary, work, ns):
    """A Deployment's pods are service replicas: on a full cluster they evict
    batch pods of the same pod priority (a plain pod does not) and are bound;
    with --reserved-nodes they go to the reserved Nodes and take them back from
    the batch pods that borrowed them, inside the default min-runtime guard."""
    nodes = len(api.get("/api/v1/nodes")["items"])
    fill = ["batch-%02d" % i for i in range(nodes)]

    def fill_cluster():
        for n in fill:
            api.make_pod(ns, n, gpus=8)
        return wait_until(lambda: bound(api, ns, fill), 60)

    def cleanup():
        for p in api.pods(ns):
            api.delete_pod(ns, p["metadata"]["name"])
        delete_deployment(api, ns, "web")
        wait_until(lambda: not api.pods(ns), 30)

    # Without a reservation (the guard at 0 s, as batch preemption needs it).
    berth = Berth(binary, api, work, ["--policy", "priority-preempt", "--min-runtime", "0s"], name="berth-svc")
    berth.start()
    try:
        b = fill_cluster()
        check("services: %d batch 8-GPU pods fill the cluster" % nodes, b)
        api.make_pod(ns, "plain", gpus=8)
        web = make_deployment(api, ns, "web", 1, 8)
        got = wait_until(lambda: bound(api, ns, web), 60)
        time.sleep(2)
        evicted = [n for n in fill if api.pod(ns, n) is None]
        check("services: a Deployment's pod (same pod priority as batch) evicts exactly one batch pod and is bound",
              got and len(evicted) == 1, "bound=%s evicted=%s" % (got, evicted))
        plain = api.pod(ns, "plain")
        check("services: a plain pod of the same shape and priority still waits",
              plain is not None and not plain["spec"].get("nodeName"))
        pods = {p["name"]: p for p in (berth.get("/v1/pods") or {}).get("pods", [])}
        check("services: /v1/pods names the pod's service", pods.get(web[0], {}).get("service") == ns + "/web",
              str(pods.get(web[0])))
        ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
        check("services: Berth's GPU count equals Kubernetes'", ok, str(counts_agree(api, berth)[1:]))
    finally:
        berth.kill(signal.SIGTERM)
        cleanup()

    # Reserved nodes with --kube; the guard at its default (600 s).
    reserved = ["gpu-00", "gpu-01"]
    berth = Berth(binary, api, work, ["--policy", "priority-preempt", "--reserved-nodes", ",".join(reserved)],
                  name="berth-svc-reserved")
    berth.start()
    try:
        b = fill_cluster()
        check("services: batch pods borrow the idle reserved nodes too", b and all(
            n in b.values() for n in reserved), "reserved=%s" % [k for k, v in (b or {}).items() if v in reserved])
        t0 = time.time()
        web = make_deployment(api, ns, "web", 2, 8)
        got = wait_until(lambda: bound(api, ns, web), 60)
        took = time.time() - t0
        time.sleep(2)
        evicted = sorted(n for n in fill if api.pod(ns, n) is None)
        on_reserved = sorted(k for k, v in (b or {}).items() if v in reserved)
        check("services: the Deployment's 2 pods are bound on the reserved nodes",
              got and sorted(got.values()) == reserved, "bound=%s" % got)
        check("services: they evicted exactly the batch pods on the reserved nodes, seconds into their run",
              evicted == on_reserved, "evicted=%s on_reserved=%s in %.1f s" % (evicted, on_reserved, took))
        ok = wait_until(lambda: counts_agree(api, berth)[0], 10)
        check("services: Berth's GPU count equals Kubernetes' with reserved nodes", ok,
              str(counts_agree(api, berth)[1:]))
        # After a restart the bound pods are adopted as replicas of their service, where they run.
        berth.kill(signal.SIGTERM)
        berth.start()

        def adopted():
            pods = {p["name"]: p for p in (berth.get("/v1/pods") or {}).get("pods", [])}
            return all(pods.get(n, {}).get("service") == ns + "/web" and pods[n]["job"] >= 0 for n in web)
        ok = wait_until(adopted, 30)
        check("services: after a restart the Deployment's pods are adopted as replicas and keep their nodes",
              ok and bound(api, ns, web) == got, "adopted=%s bound=%s" % (ok, bound(api, ns, web)))
    finally:
        berth.kill(signal.SIGTERM)
        cleanup()
