"""A small client for the test control plane's API server (Python standard
library only; one kept-alive connection per thread), and helpers to make GPU nodes without kubelets."""
import http.client
import json
import ssl
import threading
import time
import urllib.parse


class Api:
    def __init__(self, env_file):
        env = {}
        with open(env_file) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    env[k] = v
        self.server = env["KUBE_SERVER"]
        self.token = env["KUBE_TOKEN"]
        self.kubeconfig = env["KUBECONFIG"]
        ca = self.kubeconfig.rsplit("/", 1)[0] + "/certs/apiserver.crt"
        self.ctx = ssl.create_default_context(cafile=ca)
        u = urllib.parse.urlsplit(self.server)
        self.host, self.port = u.hostname, u.port or 443
        self._local = threading.local()

    def _conn(self, fresh=False):
        """This thread's kept-alive connection to the API server."""
        c = getattr(self._local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
            self._local.conn = c
        return c

    def call(self, method, path, body=None, content_type="application/json", ok404=False):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(5):
            try:
                c = self._conn(fresh=attempt > 0)
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                text = r.read()
            except (http.client.HTTPException, OSError) as e:
                self._local.conn = None
                if attempt < 4:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise RuntimeError("%s %s: %r" % (method, path, e))
            if r.status < 300:
                return json.loads(text) if text else None
            if r.status == 404 and ok404:
                return None
            if r.status in (429, 500, 503) and attempt < 4:
                time.sleep(0.2 * (attempt + 1))
                continue
            raise RuntimeError("%s %s: HTTP %d: %s" % (method, path, r.status, text[:300]))

    def apply_yaml(self, path, text):
        """Creates an object from YAML text (the API server reads YAML)."""
        req = urllib.request.Request(self.server + path, data=text.encode(), method="POST")
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Content-Type", "application/yaml")
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 409:
                return None
            raise RuntimeError("POST %s: HTTP %d: %s" % (path, e.code, e.read()[:300]))

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body):
        return self.call("POST", path, body)

    def patch(self, path, body, kind="merge"):
        ct = {"merge": "application/merge-patch+json",
              "strategic": "application/strategic-merge-patch+json"}[kind]
        return self.call("PATCH", path, body, content_type=ct)

    def delete(self, path, body=None):
        return self.call("DELETE", path, body, ok404=True)

    # --- nodes without kubelets ---
    def make_node(self, name, gpus=8, labels=None, cpu="128", memory="1024Gi",
                  product="NVIDIA-H100-80GB-HBM3"):
        lab = {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": product}
        lab.update(labels or {})
        self.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                    "metadata": {"name": name, "labels": lab}, "spec": {}})
        self.set_node_status(name, gpus, cpu, memory, ready=True)
        self.patch("/api/v1/nodes/" + name, {"spec": {"taints": None}})

    def set_node_status(self, name, gpus=8, cpu="128", memory="1024Gi", ready=True):
        res = {"cpu": cpu, "memory": memory, "pods": "1000", "nvidia.com/gpu": str(gpus)}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.patch("/api/v1/nodes/%s/status" % name, {"status": {
            "capacity": res, "allocatable": res,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "KubeletNotReady",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, kind="strategic")

    # --- pods ---
    def make_pod(self, ns, name, gpus=1, scheduler="berth", labels=None, annotations=None,
                 priority_class=None, cpu="1", memory="1Gi", owner=None):
        spec = {"schedulerName": scheduler,
                "containers": [{"name": "main", "image": "busybox",
                                "resources": {"requests": {"cpu": cpu, "memory": memory},
                                              "limits": ({"nvidia.com/gpu": str(gpus)} if gpus else {})}}]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ns, "labels": labels or {},
                            "annotations": annotations or {}},
               "spec": spec}
        if owner:  # an ownerReference, e.g. the ReplicaSet that made the pod
            pod["metadata"]["ownerReferences"] = [owner]
        return self.post("/api/v1/namespaces/%s/pods" % ns, pod)

    def pods(self, ns=None):
        path = "/api/v1/pods" if ns is None else "/api/v1/namespaces/%s/pods" % ns
        return self.get(path)["items"]

    def pod(self, ns, name):
        return self.get("/api/v1/namespaces/%s/pods/%s" % (ns, name), ok404=True)

    def delete_pod(self, ns, name, grace=0):
        return self.delete("/api/v1/namespaces/%s/pods/%s" % (ns, name), {"gracePeriodSeconds": grace})

    def finish_pod(self, ns, name, phase="Succeeded"):
        self.patch("/api/v1/namespaces/%s/pods/%s/status" % (ns, name), {"status": {"phase": phase}})

    def ensure_namespace(self, ns):
        if self.get("/api/v1/namespaces/" + ns, ok404=True) is None:
            self.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def pod_gpus(pod):
    total = 0
    for c in pod["spec"].get("containers", []):
        r = c.get("resources", {})
        v = r.get("limits", {}).get("nvidia.com/gpu") or r.get("requests", {}).get("nvidia.com/gpu") or "0"
        total += int(v)
    return total


def gpus_used_by_node(pods):
    """What Kubernetes counts: non-terminal pods bound to each node."""
    used = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node or p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        used[node] = used.get(node, 0) + pod_gpus(p)
    return used


def wait_until(pred, timeout, interval=0.1):
    deadline = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > deadline:
            return v
        time.sleep(interval)
