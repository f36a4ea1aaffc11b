#!/usr/bin/env python3
"""`berth serve --queues FILE --node-token-file F` with real node agents.

The queue tree is resolved against the nodes that registered (two agents of
4 fake H100 each): team-a (alice) is limited to 4 H100 (a typed quota, which
a start with no nodes cannot resolve), team-b (bob) has a
limit only for A100, which no node has (that quota waits for a node of the
type; the server logs queue_quotas_waiting). alice's two 4-GPU jobs run one
after the other although 8 GPUs are free; bob's 4-GPU job runs beside
alice's first; `GET /v1/queues` shows team-a's usage; every job succeeds.

Bounded like e2e.py (free ports, deadlines, stopped by PID).
Usage: queues_e2e.py --berth PATH
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Harness, fail, wait  # noqa: E402

QUEUES = """\
queues:
  - name: team-a
    tenants: [alice]
    quotas:
      "*": {guarantee: 4}
      H100: {limit: 4}
  - name: team-b
    tenants: [bob]
    quotas:
      A100: {limit: 2}
"""


def run(h):
    path = os.path.join(h.work, "queues.yaml")
    with open(path, "w") as f:
        f.write(QUEUES)
    h.server_args = ["--queues", path]
    h.start_server()
    h.start_agent("a1")
    h.start_agent("a2")
    h.wait_nodes(["a1", "a2"])

    def job(name, tenant, seconds):
        return {"name": name, "tenant": tenant, "groups": [{"name": "w", "count": 1, "gpus": 4}],
                "command": ["/bin/sh", "-c", "echo %s; sleep %s" % (name, seconds)]}
    first = h.submit(job("a-first", "alice", 3))
    h.wait_state(first, "running")
    second = h.submit(job("a-second", "alice", 0))
    other = h.submit(job("b-one", "bob", 3))
    h.wait_state(other, "running")
    j = h.job(second)
    if j["state"] != "pending":
        fail("team-a's limit of 4 H100 holds its second job while the first runs: %s" % j)
    code, body = h.request("GET", "/v1/queues")
    if code != 200:
        fail("GET /v1/queues: %s %s" % (code, body))
    qs = {q["name"]: q for q in body["queues"]}
    if qs.get("team-a", {}).get("usage_gpus") != 4 or qs.get("team-b", {}).get("usage_gpus") != 4:
        fail("queue usage: %s" % json.dumps(body)[:2000])
    why = j.get("why") or j.get("reason") or ""
    if "H100" not in why:
        fail("the second job waits for team-a's H100 limit: %s" % j)
    print("queues: team-a uses %s GPUs (H100 limit 4), team-b %s; job %d waits: %s" %
          (qs["team-a"]["usage_gpus"], qs["team-b"]["usage_gpus"], second, why))
    for jid in (first, other, second):
        h.wait_state(jid, "succeeded", 90)
    j1, j2 = h.job(first), h.job(second)
    if j2["started_at"] < j1["finished_at"]:
        fail("team-a's second job started before its first ended: %s %s" % (j1, j2))
    log = open(os.path.join(h.work, "serve.log")).read()
    if "queue_quotas_waiting" not in log or "A100" not in log:
        fail("the server says which quotas wait for a node of their type")
    print("jobs %d, %d, %d succeeded; team-a's ran one after the other; the A100 quota waits for an A100 node" %
          (first, other, second))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="berth-queues-e2e-")
    os.makedirs(os.path.join(work, "data"))
    h = Harness(os.path.abspath(args.berth), work)
    try:
        run(h)
        print("PASS: queues with node agents (%s)" % work)
    finally:
        h.stop_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
