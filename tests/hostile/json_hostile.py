#!/usr/bin/env python3
"""Hostile input against a real `berth serve` on loopback (python3 stdlib only).

Every case of the input-hardening work as a regression test: deeply nested
JSON to each extender verb and to POST /v1/jobs, duplicate keys, huge
integers, bad quantities, control and bidirectional characters, gangs that
can never run (1,000,000 tasks; 1,000,000 x 1 milli-GPU), submit_time_s.
Each gets its expected status; after every case the daemon still serves and
the jobs accepted before are intact.

Bounded: one daemon on a free port, every request with a timeout, the daemon
stopped by its PID.  Usage: json_hostile.py --berth PATH
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from daemon import TOKEN, ServeDaemon  # noqa: E402  (beside this script)


class Daemon(ServeDaemon):
    def __init__(self, berth, work):
        super().__init__(berth, work, ["--virtual-nodes"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.request("GET", "/readyz")[0] == 200:
                return
            time.sleep(0.05)
        raise SystemExit("FAIL: berth serve not ready")

    def request(self, method, path, body=None, timeout=60):
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method)
        req.add_header("Authorization", "Bearer " + TOKEN)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            if data is not None and len(data) > (1 << 20):
                return self.raw_request(method, path, data, timeout)
            return None, str(e)

    def raw_request(self, method, path, data, timeout=60):
        """A large body over a plain socket: the server may answer (413) and
        close before the body is sent, which urllib reports as a broken pipe;
        here the answer is read whatever happened to the send."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as c:
            head = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                    "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                    % (method, path, TOKEN, len(data)))
            try:
                c.sendall(head.encode() + data)
            except (BrokenPipeError, ConnectionResetError):
                pass
            answer = b""
            try:
                while True:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
            except (ConnectionResetError, TimeoutError, socket.timeout):
                pass
        m = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
        if not m:
            return None, "no answer"
        return int(m.group(1)), answer.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace")


def pod(name="p", gpus="1", priority=0, group=None, containers=None):
    md = {"name": name, "namespace": "ml", "uid": "uid-" + name}
    if group is not None:
        md["annotations"] = {"scheduling.k8s.io/group-name": group}
    cs = containers or [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]
    return {"metadata": md, "spec": {"priority": priority, "containers": cs}}


def filter_body(p):
    return json.dumps({"Pod": p, "NodeNames": ["node-0"]})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as work:
        d = Daemon(args.berth, work)
        try:
            # Jobs accepted before the attacks; they must stay intact.
            kept = {}
            for name in ("kept-a", "kept-b"):
                code, text = d.request("POST", "/v1/jobs", json.dumps(
                    {"name": name, "duration_s": 3600, "groups": [{"count": 1, "gpus": 1}]}))
                if code not in (200, 201):
                    raise SystemExit("FAIL: baseline job %s: %s %s" % (name, code, text))
                kept[json.loads(text)["id"]] = name

            deep = "[" * 250000 + "]" * 250000
            deep_open = "[" * 250000
            deep_pod = '{"Pod":{"metadata":{"name":"p"},"x":' + deep + '},"NodeNames":["node-0"]}'
            big = 2 ** 62
            cases = [
                # (what, method, path, body, expected status, text the answer must hold)
                ("job: 250,000 levels", "POST", "/v1/jobs", deep, 400, "nesting deeper than 64"),
                ("job: 250,000 levels in a field", "POST", "/v1/jobs",
                 '{"name":' + deep + ',"groups":[{"count":1}]}', 400, "nesting deeper than 64"),
                ("job: 250,000 unclosed levels", "POST", "/v1/jobs", deep_open, 400, "nesting deeper"),
            ]
            for verb in ("filter", "prioritize", "preempt", "bind"):
                cases.append(("%s: 250,000 levels" % verb, "POST", "/v1/extender/" + verb, deep, 400, "nesting"))
                cases.append(("%s: 250,000 levels in the pod" % verb, "POST", "/v1/extender/" + verb, deep_pod,
                              400, "nesting"))
            cases += [
                ("job: duplicate groups", "POST", "/v1/jobs",
                 '{"name":"d","groups":[{"count":1}],"groups":[{"count":2}]}', 400, 'duplicate key \\"groups\\"'),
                ("extender: duplicate key", "POST", "/v1/extender/filter",
                 '{"Pod":{"metadata":{"name":"p","name":"q"}},"NodeNames":["node-0"]}', 400, "duplicate key"),
                ("job: priority 2^63", "POST", "/v1/jobs",
                 '{"name":"h","priority":9223372036854775808,"groups":[{"count":1}]}', 400, "priority"),
                ("job: priority 2^31", "POST", "/v1/jobs",
                 '{"name":"h","priority":2147483648,"groups":[{"count":1}]}', 400, "priority"),
                ("job: count 2^64-1", "POST", "/v1/jobs",
                 '{"name":"h","groups":[{"count":18446744073709551615}]}', 400, "groups[0].count"),
                ("extender: priority 2^63", "POST", "/v1/extender/filter",
                 filter_body(pod(priority=2 ** 63)), 400, "pod.spec.priority"),
                ("extender: 2 x 2^62 GPUs", "POST", "/v1/extender/filter", filter_body(pod(containers=[
                    {"name": "a", "resources": {"limits": {"nvidia.com/gpu": str(big)}}},
                    {"name": "b", "resources": {"limits": {"nvidia.com/gpu": str(big)}}}])), 400, "overflows"),
            ]
            for q in ("1e-", "1e+-1", "7" * 5000, "1.2.3", "12Q"):
                cases.append(("extender: quantity %.12s" % q, "POST", "/v1/extender/filter",
                              filter_body(pod(gpus=q)), 400, "quantity" if q != "7" * 5000 else "digits"))
            cases += [
                ("job: NUL in name", "POST", "/v1/jobs", '{"name":"a\\u0000b","groups":[{"count":1}]}', 400,
                 "U+0000"),
                ("job: RLO in name", "POST", "/v1/jobs", '{"name":"a\\u202eb","groups":[{"count":1}]}', 400,
                 "U+202E"),
                ("job: isolate in tenant", "POST", "/v1/jobs",
                 '{"name":"a","tenant":"t\\u2067","groups":[{"count":1}]}', 400, "U+2067"),
                ("job: ESC in group name", "POST", "/v1/jobs",
                 '{"name":"a","groups":[{"name":"\\u001b[31m","count":1}]}', 400, "U+001B"),
                ("extender: NUL in pod name", "POST", "/v1/extender/filter", filter_body(pod(name="p\u0000")), 400,
                 "U+0000"),
                ("extender: RLO in group", "POST", "/v1/extender/filter",
                 filter_body(pod(group="g\u202e")), 400, "U+202E"),
                ("extender: 500 KB group name", "POST", "/v1/extender/filter",
                 filter_body(pod(group="g" * 500000)), 400, "longer than 253"),
                ("job: 1,000,000-task gang", "POST", "/v1/jobs",
                 '{"name":"z","duration_s":1,"groups":[{"count":1000000,"gpus":0}]}', 422, "--max-tasks-per-job"),
                ("job: 1,000,000 x 1 milli-GPU", "POST", "/v1/jobs",
                 '{"name":"m","groups":[{"count":1000000,"gpus":1,"milli_per_gpu":1}]}', 422, "--max-tasks-per-job"),
                ("job: 40,000 x 1 milli-GPU on 32 GPUs", "POST", "/v1/jobs",
                 '{"name":"m","groups":[{"count":40000,"gpus":1,"milli_per_gpu":1}]}', 422, "milli-GPU"),
                ("job: submit_time_s", "POST", "/v1/jobs",
                 '{"name":"s","submit_time_s":5,"groups":[{"count":1}]}', 400, "submit_time_s"),
                ("job: body over the parser's limit", "POST", "/v1/jobs",
                 '{"name":"' + "x" * (17 << 20) + '"}', 413, ""),
            ]
            for what, method, path, body, want, mention in cases:
                code, text = d.request(method, path, body)
                ok = code == want and mention in text
                if want == 413 and code in (400, 413):  # the HTTP layer or the parser: either refuses
                    ok = True
                if not ok:
                    failures.append("%s: got %s %s, expected %s mentioning %r" % (what, code, text[:200], want,
                                                                                    mention))
                if d.proc.poll() is not None:
                    failures.append("%s: the daemon died (exit %s)" % (what, d.proc.returncode))
                    break
                hc, _ = d.request("GET", "/healthz", timeout=10)
                if hc != 200:
                    failures.append("%s: /healthz answered %s afterwards" % (what, hc))
                for jid, name in kept.items():
                    jc, jt = d.request("GET", "/v1/jobs/%d" % jid, timeout=10)
                    if jc != 200 or json.loads(jt).get("spec", json.loads(jt)).get("name", name) != name:
                        failures.append("%s: job %d (%s) not intact: %s %s" % (what, jid, name, jc, jt[:200]))
                print("ok  " if ok else "FAIL", what, "->", code, flush=True)
            # Still accepting: a good job and a good extender pod.
            code, text = d.request("POST", "/v1/jobs", json.dumps({"name": "after", "groups": [{"count": 1}]}))
            if code not in (200, 201):
                failures.append("a good job after the attacks: %s %s" % (code, text[:200]))
            code, text = d.request("POST", "/v1/extender/filter", filter_body(pod(name="good")))
            if code != 200:
                failures.append("a good filter call after the attacks: %s %s" % (code, text[:200]))
        finally:
            d.stop()
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        return 1
    print("json_hostile: all cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
