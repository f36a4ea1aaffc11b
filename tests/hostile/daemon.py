"""One `berth serve` on a free loopback port for the hostile-input tests
(python3 stdlib only): started with a token file and a SQLite store in its
work folder, its output in WORK/serve.log, stopped by its PID."""
import os
import re
import signal
import subprocess
import time

TOKEN = "hostile-test-token"


class ServeDaemon:
    def __init__(self, binary, work, extra=(), cluster="4x8:H100/leaf=2"):
        self.work = work
        self.log_path = os.path.join(work, "serve.log")
        self.log = open(self.log_path, "w+")
        tok = os.path.join(work, "token")
        with open(tok, "w") as f:
            f.write(TOKEN + "\n")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--store", "sqlite:" + os.path.join(work, "berth.db"),
             "--cluster", cluster, "--token-file", tok] + list(extra),
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.port is None:
            if self.proc.poll() is not None:
                raise SystemExit("FAIL: berth serve exited at start:\n" + self.output())
            m = re.search(r'"event":"listening"[^}]*"port":(\d+)', self.output())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.05)
        if self.port is None:
            raise SystemExit("FAIL: berth serve did not listen:\n" + self.output())

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def rss_peak_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
