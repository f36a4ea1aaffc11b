#!/usr/bin/env python3
"""Hostile HTTP input against a real `berth serve` on loopback (stdlib only).

Every case expects a status and, after it, the daemon still serving and a job
accepted at the start intact:
  - a chunked upload over the body limit: 413 while the client still sends
    (nothing buffered beyond the limit: the daemon's peak RSS stays bounded);
  - a negative, malformed or huge Content-Length: 400/413 at once;
  - a 1 MiB body to routes that take none (DELETE, GET, admin, no route):
    413 before it is read; a 200 KiB submission: accepted;
  - a 100 KB header: 431;  the auth scheme in lower case: accepted;
  - wrong methods: 405 with Allow;  the extender verbs without credentials: 401;
  - the per-client connection limit: 429 past it, other clients unaffected;
  - TLS (a second daemon with --tls-cert/--tls-key/--tls-client-ca, certificates
    made with openssl): the extender verbs with a verified client certificate
    pass, without one 401; a handshake with a certificate from another CA is
    refused; plain HTTP and a stalled handshake on the TLS port do not stop it
    serving; `berth status --server https://... --ca-cert` works; with
    --tls-require-client-cert every connection without a verified
    certificate is refused at the handshake and the CLI works with
    --client-cert/--client-key;
  - --extender-allow-anonymous with a non-loopback --listen: refused at start;
  - slowloris: --slowloris connections (default 256, from 127.0.0.2...)
    sending a header line every 2 s for --duration seconds while /healthz is
    probed from 127.0.0.1; prints the probe latencies (max, p99). Only a
    generous liveness timeout is asserted, never a latency.

  python3 tests/hostile/http_hostile.py --berth build/release/apps/berth/berth [--duration 60]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

LIVENESS_S = 8.0  # a request not answered in this long is a failure (the old server waited 10 s)
from daemon import TOKEN, ServeDaemon  # noqa: E402  (beside this script)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


class Daemon(ServeDaemon):
    pass


def request(port, method, path, body=None, headers=None, source="127.0.0.1"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=LIVENESS_S, source_address=(source, 0))
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        c.close()


def raw(port, data, source="127.0.0.1"):
    """Sends bytes, returns (status, seconds until the answer's first line)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=LIVENESS_S, source_address=(source, 0))
    t0 = time.monotonic()
    try:
        s.sendall(data)
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        dt = time.monotonic() - t0
        m = re.match(rb"HTTP/1\.1 (\d{3})", buf)
        return (int(m.group(1)) if m else 0), dt
    except OSError:  # a timeout, or the server reset the connection
        return 0, time.monotonic() - t0
    finally:
        s.close()


def auth():
    return {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}


class Invariant:
    """A job accepted at the start must survive every case unchanged."""

    def __init__(self, d):
        self.d = d
        st, _, body = request(d.port, "POST", "/v1/jobs", json.dumps(
            {"name": "keeper", "duration_s": 100000, "groups": [{"count": 1, "gpus": 8}]}), auth())
        check(st == 201, "a job accepted before the cases (%d)" % st)
        self.id = json.loads(body)["id"]

    def verify(self, case):
        alive = self.d.proc.poll() is None
        ok = False
        if alive:
            try:
                st, _, body = request(self.d.port, "GET", "/v1/jobs/%d" % self.id)
                job = json.loads(body)
                hs, _, _ = request(self.d.port, "GET", "/healthz")
                ok = st == 200 and job.get("name") == "keeper" and job.get("state") not in ("failed", "cancelled") \
                    and hs == 200
            except (OSError, ValueError, http.client.HTTPException):
                ok = False
        check(alive and ok, "after %s: daemon serving, the accepted job intact" % case)


def case_chunked(d, limit):
    """Chunked upload up to 4x the limit, stopping when the answer arrives."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=LIVENESS_S)
    rss0 = d.rss_peak_kb()
    t0 = time.monotonic()
    s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
              b"\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n")
    chunk = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"
    sent = 0
    pending = b""
    s.setblocking(False)
    buf = b""
    while time.monotonic() - t0 < LIVENESS_S:
        try:
            part = s.recv(4096)
            if part:
                buf += part
                if b"\r\n" in buf:
                    break
            else:
                break
        except BlockingIOError:
            pass
        except OSError:
            break
        if sent < 4 * limit:
            try:
                if not pending:
                    pending = chunk
                n = s.send(pending)  # partial sends keep the chunk framing
                pending = pending[n:]
                sent += n
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                time.sleep(0.01)
        else:
            time.sleep(0.01)
    dt = time.monotonic() - t0
    s.close()
    m = re.match(rb"HTTP/1\.1 (\d{3})", buf)
    status = int(m.group(1)) if m else 0
    grown_mb = (d.rss_peak_kb() - rss0) / 1024.0
    print("     chunked: answer %d after %.3f s, %.1f MiB sent, peak RSS grew %.1f MiB" %
          (status, dt, sent / 2**20, grown_mb))
    check(status == 413, "chunked upload over the %d MiB limit: 413 (%d)" % (limit >> 20, status))
    check(sent < 4 * limit, "chunked: answered before the client finished sending")
    check(grown_mb < 3 * (limit >> 20) + 32, "chunked: nothing buffered far beyond the limit")
    return dt


def case_content_length(d, limit):
    times = {}
    for label, value, want in [("negative", b"-1", 400), ("malformed", b"12abc", 400),
                               ("huge", b"99999999999999999999999", 413), ("over", str(limit + 1).encode(), 413)]:
        st, dt = raw(d.port, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: " + value + b"\r\n\r\n")
        times[label] = dt
        print("     Content-Length %s: %d in %.4f s" % (value.decode(), st, dt))
        check(st == want, "Content-Length %s: %d (%d)" % (label, want, st))
    return times


def case_route_limits(d):
    """Routes that take no body read at most 64 KiB of one (POST /v1/jobs takes 16 MiB)."""
    big = str(1 << 20).encode()
    for head in (b"DELETE /v1/jobs/1", b"GET /v1/jobs/1", b"POST /v1/admin/nodes/node-0/unquarantine",
                 b"POST /no/such/route"):
        st, dt = raw(d.port, head + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " + big + b"\r\n\r\n")
        check(st == 413, "%s with a 1 MiB body: 413 before it is read (%d)" % (head.decode(), st))
    body = b'{"name": "padded",' + b" " * (200 << 10) + b'"groups": [{"count": 1, "gpus": 1}]}'
    st, _, text = request(d.port, "POST", "/v1/jobs", body, auth())
    check(st == 201, "POST /v1/jobs with a 200 KiB body: accepted (%d %s)" % (st, text[:200]))


def case_header(d):
    st, _ = raw(d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 << 10) + b"\r\n\r\n")
    check(st == 431, "100 KB header: 431 (%d)" % st)


def case_bearer(d):
    st, _, _ = request(d.port, "POST", "/v1/jobs", json.dumps({"name": "lower", "groups": [{"count": 1, "gpus": 1}]}),
                       {"Authorization": "bearer " + TOKEN, "Content-Type": "application/json"})
    check(st == 201, "lowercase 'bearer' scheme accepted (%d)" % st)


def case_405(d):
    for method, path in [("PUT", "/v1/jobs/1"), ("DELETE", "/v1/queues"), ("GET", "/v1/extender/filter"),
                         ("PATCH", "/healthz"), ("POST", "/v1/nodes"), ("DELETE", "/v1/jobs")]:
        st, headers, _ = request(d.port, method, path, body=b"" if method in ("PUT", "PATCH", "POST") else None,
                                 headers=auth())
        allow = dict((k.lower(), v) for k, v in headers).get("allow", "")
        check(st == 405 and allow, "%s %s: 405 with Allow '%s' (%d)" % (method, path, allow, st))


def case_extender(d):
    for verb in ("filter", "prioritize", "preempt", "bind"):
        st, _, _ = request(d.port, "POST", "/v1/extender/" + verb, b"{}", {"Content-Type": "application/json"})
        check(st == 401, "extender %s without credentials: 401 (%d)" % (verb, st))
    st, _, _ = request(d.port, "POST", "/v1/extender/filter", b"{}", auth())
    check(st != 401, "extender filter with the token: past authentication (%d)" % st)


def case_client_limit(d, limit=64):
    held = []
    source = "127.0.0.9"
    try:
        for _ in range(limit):
            held.append(socket.create_connection(("127.0.0.1", d.port), timeout=LIVENESS_S,
                                                 source_address=(source, 0)))
        time.sleep(0.3)  # let the server accept them
        st, _ = raw(d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", source=source)
        check(st == 429, "connection %d from one client: 429 (%d)" % (limit + 1, st))
        st, _ = raw(d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.1")
        check(st == 200, "another client meanwhile: 200 (%d)" % st)
    finally:
        for s in held:
            s.close()


def make_certs(d):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    cmds = []
    for ca in ("ca", "other-ca"):
        cmds.append("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=%s -keyout %s.key -out %s.crt" %
                    (ca, ca, ca))
    for name, ca, ext in (("server", "ca", " -extfile server.ext"), ("client", "ca", ""), ("stranger", "other-ca", "")):
        cmds.append("openssl req -newkey rsa:2048 -nodes -subj /CN=%s -keyout %s.key -out %s.csr" % (name, name, name))
        cmds.append("openssl x509 -req -in %s.csr -CA %s.crt -CAkey %s.key -CAcreateserial -days 1%s -out %s.crt" %
                    (name, ca, ca, ext, name))
    for c in cmds:
        subprocess.run(c.split(), cwd=d, check=True, capture_output=True)
    return lambda n: os.path.join(d, n)


def case_tls(binary, work):
    if shutil.which("openssl") is None:
        print("     skipped: no openssl command")
        return
    f = make_certs(os.path.join(work, "tls"))
    tw = os.path.join(work, "tls-daemon")
    os.makedirs(tw)
    d = Daemon(binary, tw, ["--tls-cert", f("server.crt"), "--tls-key", f("server.key"),
                            "--tls-client-ca", f("ca.crt")])
    try:
        def call(path, cert=None, body=b"{}", method="POST", headers=None):
            ctx = ssl.create_default_context(cafile=f("ca.crt"))
            if cert:
                ctx.load_cert_chain(f(cert + ".crt"), f(cert + ".key"))
            c = http.client.HTTPSConnection("127.0.0.1", d.port, timeout=LIVENESS_S, context=ctx)
            try:
                c.request(method, path, body=body if method == "POST" else None,
                          headers=headers or {"Content-Type": "application/json"})
                r = c.getresponse()
                return r.status, r.read()
            finally:
                c.close()
        st, _ = call("/v1/extender/filter", cert="client")
        check(st == 400, "TLS: extender filter with a verified client certificate passes authentication (%d)" % st)
        st, _ = call("/v1/extender/bind")
        check(st == 401, "TLS: extender bind without a client certificate: 401 (%d)" % st)
        try:
            st, _ = call("/v1/extender/filter", cert="stranger")
        except (ssl.SSLError, OSError):
            st = -1
        check(st in (-1, 401), "TLS: a certificate from another CA is refused (%d)" % st)
        plain, _ = raw(d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        check(plain != 200, "TLS: plain HTTP on the TLS port is not served (%d)" % plain)
        stalled = socket.create_connection(("127.0.0.1", d.port))
        stalled.sendall(b"\x16\x03\x01")  # a handshake that never completes
        st, _ = call("/healthz", method="GET")
        check(st == 200, "TLS: /healthz answers beside a stalled handshake (%d)" % st)
        stalled.close()
        env = dict(os.environ, BERTH_SERVER="https://127.0.0.1:%d" % d.port)
        out = subprocess.run([binary, "nodes", "--ca-cert", f("ca.crt")], env=env, capture_output=True, text=True,
                             timeout=30)
        check(out.returncode == 0 and "node-0" in out.stdout,
              "TLS: berth nodes --server https://... --ca-cert works (%d %s)" % (out.returncode, out.stderr.strip()))
        out = subprocess.run([binary, "nodes"], env=env, capture_output=True, text=True, timeout=30)
        check(out.returncode != 0, "TLS: without the CA the client refuses the server's certificate")
        check(d.proc.poll() is None, "TLS: the daemon still runs")
    finally:
        d.stop()
    # Client certificates required for every connection (mutual TLS).
    tw = os.path.join(work, "mtls-daemon")
    os.makedirs(tw)
    d = Daemon(binary, tw, ["--tls-cert", f("server.crt"), "--tls-key", f("server.key"),
                            "--tls-client-ca", f("ca.crt"), "--tls-require-client-cert"])
    try:
        env = dict(os.environ, BERTH_SERVER="https://127.0.0.1:%d" % d.port, BERTH_CA_CERT=f("ca.crt"))
        out = subprocess.run([binary, "nodes", "--client-cert", f("client.crt"), "--client-key", f("client.key")],
                             env=env, capture_output=True, text=True, timeout=30)
        check(out.returncode == 0 and "node-0" in out.stdout,
              "mTLS: berth nodes with --client-cert/--client-key works (%d %s)" % (out.returncode, out.stderr.strip()))
        out = subprocess.run([binary, "nodes"], env=env, capture_output=True, text=True, timeout=30)
        check(out.returncode != 0, "mTLS: berth nodes without a client certificate is refused")
        for cert in (None, "stranger"):
            ctx = ssl.create_default_context(cafile=f("ca.crt"))
            if cert:
                ctx.load_cert_chain(f(cert + ".crt"), f(cert + ".key"))
            try:
                c = http.client.HTTPSConnection("127.0.0.1", d.port, timeout=LIVENESS_S, context=ctx)
                c.request("GET", "/healthz")
                st = c.getresponse().status
                c.close()
            except (ssl.SSLError, OSError):
                st = -1
            check(st == -1, "mTLS: /healthz with %s is refused at the handshake (%d)" % (cert or "no certificate", st))
        out = subprocess.run([binary, "serve", "--listen", "127.0.0.1:0", "--tls-cert", f("server.crt"), "--tls-key",
                              f("server.key"), "--tls-require-client-cert", "--store",
                              "sqlite:" + os.path.join(work, "mtls-noca.db")], capture_output=True, text=True, timeout=30)
        check(out.returncode != 0 and "--tls-client-ca" in out.stdout + out.stderr,
              "--tls-require-client-cert without --tls-client-ca is refused at start (%d)" % out.returncode)
        check(d.proc.poll() is None, "mTLS: the daemon still runs")
    finally:
        d.stop()


def case_anonymous_flag(binary, work):
    out = subprocess.run([binary, "serve", "--listen", "0.0.0.0:0", "--extender-allow-anonymous", "--store",
                          "sqlite:" + os.path.join(work, "anon.db")], capture_output=True, text=True, timeout=30)
    check(out.returncode != 0 and "loopback" in out.stdout + out.stderr,
          "--extender-allow-anonymous with a non-loopback --listen is refused at start (%d)" % out.returncode)


def case_slowloris(d, count, duration):
    """count connections, 60 per source address, a header line every 2 s."""
    stop = threading.Event()
    sockets = [None] * count
    opened = [0]
    closed_by_server = [0]
    peak = [0]

    def connect(i):
        src = "127.0.0.%d" % (2 + i // 60)
        try:
            s = socket.create_connection(("127.0.0.1", d.port), timeout=2, source_address=(src, 0))
            s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n")
            opened[0] += 1
            return s
        except OSError:
            return None

    def slow():
        for i in range(count):
            sockets[i] = connect(i)
        while not stop.is_set():
            live = 0
            for i in range(count):
                s = sockets[i]
                if s is not None:
                    try:
                        s.sendall(b"X-Slow-%d: x\r\n" % i)
                        live += 1
                        continue
                    except OSError:
                        closed_by_server[0] += 1
                        s.close()
                sockets[i] = connect(i)  # closed (408): come back
            peak[0] = max(peak[0], live)
            stop.wait(2.0)

    t = threading.Thread(target=slow, daemon=True)
    t.start()
    time.sleep(1.0)
    lat = []
    errors = 0
    end = time.monotonic() + duration
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            st, _, _ = request(d.port, "GET", "/healthz")
            if st != 200:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
        lat.append(time.monotonic() - t0)
        time.sleep(0.05)
    stop.set()
    t.join(timeout=10)
    for s in sockets:
        if s is not None:
            s.close()
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0
    p50 = lat[len(lat) // 2] if lat else 0
    print("     slowloris: %d connections (peak %d open, %d closed by the server and reopened) for %.0f s; "
          "/healthz %d probes, %d errors, latency p50 %.2f ms p99 %.2f ms max %.2f ms" %
          (count, peak[0], closed_by_server[0], duration, len(lat), errors, p50 * 1e3, p99 * 1e3,
           (lat[-1] if lat else 0) * 1e3), flush=True)
    check(errors == 0 and lat, "slowloris: every /healthz probe answered 200 (%d errors)" % errors)
    check(peak[0] >= count * 0.9, "slowloris: the slow connections were held open (%d of %d)" % (peak[0], count))
    return {"probes": len(lat), "p50_ms": p50 * 1e3, "p99_ms": p99 * 1e3, "max_ms": (lat[-1] if lat else 0) * 1e3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    ap.add_argument("--slowloris", type=int, default=256)
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of slowloris")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="berth-hostile-")
    d = Daemon(args.berth, work)
    limit = 16 << 20
    try:
        inv = Invariant(d)
        for name, fn in [("chunked", lambda: case_chunked(d, limit)),
                         ("content-length", lambda: case_content_length(d, limit)),
                         ("route-limits", lambda: case_route_limits(d)),
                         ("header", lambda: case_header(d)), ("bearer", lambda: case_bearer(d)),
                         ("405", lambda: case_405(d)), ("extender", lambda: case_extender(d)),
                         ("client-limit", lambda: case_client_limit(d)),
                         ("tls", lambda: case_tls(args.berth, work)),
                         ("anonymous-flag", lambda: case_anonymous_flag(args.berth, work)),
                         ("slowloris", lambda: case_slowloris(d, args.slowloris, args.duration))]:
            print("case " + name, flush=True)
            fn()
            inv.verify(name)
    finally:
        d.stop()
        if failures:
            print(open(os.path.join(work, "serve.log")).read()[-4000:])
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all hostile cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
