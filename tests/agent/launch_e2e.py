#!/usr/bin/env python3
"""Real distributed programs through Berth's node agents on loopback.

`berth serve --node-token-file` (no --cluster) and two `berth agent`s, each
declaring 4 fake GPUs and registering a loopback address of its own
(--address 127.0.0.2 and 127.0.0.3), so the launch spec's MASTER_ADDR and MPI
host file name two distinct, locally reachable hosts.

--case torch: a 2 x 4 PyTorch job (launcher: torch, 8 tasks of 1 GPU as a
  gang over the 2 nodes) submitted with `berth submit`, whose command is
  examples/launch/torch_allreduce.py under /usr/bin/python3 (Debian's
  python3-torch, gloo on CPU). Each rank checks its env against the process
  group and all-reduces a tensor; the test compares every rank's line with
  `GET /v1/jobs/{id}/launch` (rank, world size, local rank, node rank, node,
  master), and the job must end succeeded with every task's log served by
  `GET /v1/jobs/{id}/logs?task=N`.
--case mpi: a 2 x 4 job (launcher: mpi) running examples/launch/berth-mpirun
  over examples/launch/mpi_allreduce.c (built here with mpicc): rank 0's task
  runs mpirun (Debian's openmpi-bin) with Berth's host file, Open MPI's
  remote launcher is examples/launch/local-rsh (runs the "remote" command on
  this machine, telling it the host it was sent to). MPI rank r must land on
  the host of Berth's rank r, and MPI_Allreduce must give the right sum.

Exits 77 (ctest: skipped) with a message when python3-torch (importable from
/usr/bin/python3) or openmpi-bin / mpicc is missing. Bounded: free ports,
deadlines on every wait, everything started stopped by PID.
Usage: launch_e2e.py --berth PATH --case torch|mpi
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Harness, fail, wait  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(REPO, "examples", "launch")
PYTHON = "/usr/bin/python3"  # Debian's python3-torch lives here, whatever comes first on PATH
ADDRESSES = {"a1": "127.0.0.2", "a2": "127.0.0.3"}
# a2 on the first leaf: Berth's rank order (topology first) puts its ranks first, ahead of name and address order.
LEAVES = {"a1": "leaf-1", "a2": "leaf-0"}
SKIP = 77


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def check_torch():
    try:
        out = subprocess.run([PYTHON, "-c", "import torch, torch.distributed as d; "
                              "print(torch.__version__, d.is_available() and d.is_gloo_available())"],
                             capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        skip("%s cannot import torch (%s): install python3-torch (scripts/install-deps.sh)" % (PYTHON, e))
    if out.returncode != 0 or not out.stdout.strip().endswith("True"):
        skip("%s cannot import torch with gloo (%s): install python3-torch (scripts/install-deps.sh)" %
             (PYTHON, (out.stderr.strip().splitlines() or ["?"])[-1]))
    return out.stdout.split()[0]


def check_mpi():
    for tool, pkg in (("mpirun", "openmpi-bin"), ("mpicc", "libopenmpi-dev")):
        if not shutil.which(tool):
            skip("%s not found: install %s (scripts/install-deps.sh)" % (tool, pkg))
    out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.splitlines()[0] if out.stdout else "mpirun"


def launch_spec(h, jid):
    """The job's launch spec, fetched while it runs (409 once it ended)."""
    def get():
        code, body = h.request("GET", "/v1/jobs/%d/launch" % jid)
        if code == 200:
            return body
        j = h.job(jid)
        if j and j["state"] in ("succeeded", "failed", "cancelled"):
            fail("job %d ended %s before its launch spec was read: %s" % (jid, j["state"], j.get("reason")))
        return None
    return wait(get, "job %d's launch spec" % jid, 120, step=0.05)


def start_agents(h):
    for name, addr in ADDRESSES.items():
        h.start_agent(name, address=addr, leaf=LEAVES[name])
    h.wait_nodes(list(ADDRESSES))


def berth_logs(h, jid, task, *extra):
    """`berth logs JID --task T ...`, started (check_cli_logs waits for it)."""
    return subprocess.Popen([h.berth, "logs", str(jid), "--task", str(task), *extra,
                             "--server", "http://127.0.0.1:%d" % h.port, "--token-file", h.user_token],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def check_cli_logs(h, jid, task, proc, api_text, what):
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        fail("%s did not end" % what)
    if proc.returncode != 0 or out != api_text:
        fail("%s: exit %s, %d bytes (the API serves %d): %r %r" % (what, proc.returncode, len(out), len(api_text),
                                                                  out[-500:], err))


def check_spec(spec, world):
    """Two nodes, 4 ranks each, the agents' registered addresses, MASTER_ADDR of rank 0's node."""
    if spec["world_size"] != world or len(spec["tasks"]) != world:
        fail("launch spec world size: %s" % spec)
    per_node = {}
    for t in spec["tasks"]:
        per_node.setdefault(t["node"], []).append(t["rank"])
        if t["address"] != ADDRESSES[t["node"]]:
            fail("task %d's address %r is not what agent %s registered (%s)" %
                 (t["task"], t["address"], t["node"], ADDRESSES[t["node"]]))
    if sorted(len(r) for r in per_node.values()) != [4, 4]:
        fail("the gang is not 4 + 4 over the two nodes: %s" % per_node)
    if [n["node"] for n in spec["nodes"]] != ["a2", "a1"] or per_node["a2"] != [0, 1, 2, 3]:
        fail("rank order is topology order (a2's leaf first): %s" % per_node)
    rank0 = spec["tasks"][0]
    if spec["master_addr"] != ADDRESSES[rank0["node"]] or rank0["env"]["MASTER_ADDR"] != spec["master_addr"]:
        fail("MASTER_ADDR %r is not the address of rank 0's node %s" % (spec["master_addr"], rank0["node"]))
    want_hosts = "".join("%s slots=4\n" % n["address"] for n in spec["nodes"])
    if spec["mpi_hostfile"] != want_hosts:
        fail("host file %r, expected %r" % (spec["mpi_hostfile"], want_hosts))
    print("launch spec: world %d, master %s:%d, nodes %s, host file %r" %
          (spec["world_size"], spec["master_addr"], spec["master_port"],
           ["%s@%s ranks %s" % (n["node"], n["address"], n["ranks"]) for n in spec["nodes"]],
           spec["mpi_hostfile"]))


def case_torch(h):
    version = check_torch()
    h.start_server()
    start_agents(h)
    job = {"name": "ddp", "launcher": "torch", "groups": [{"name": "worker", "count": 8, "gpus": 1}],
           "command": [PYTHON, os.path.join(LAUNCH, "torch_allreduce.py"), "--expect-world", "8",
                       "--timeout", "240"],
           # Gloo picks its own address from an interface: on loopback, lo.
           "env": {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}}
    t0 = time.monotonic()
    jid = h.submit(job)
    spec = launch_spec(h, jid)
    check_spec(spec, 8)
    j = h.wait_state(jid, "succeeded", 300)
    took = time.monotonic() - t0
    lines = {}
    for t in spec["tasks"]:
        code, text = h.logs(jid, t["task"])
        if code != 200:
            fail("logs of task %d: %s %r" % (t["task"], code, text))
        m = re.search(r"^torch rank=(\d+) world=(\d+) local_rank=(\d+) local_world=(\d+) node_rank=(\d+) "
                      r"node=(\S+) master=(\S+) allreduce=(\d+) (.*)$", text, re.M)
        if not m:
            fail("task %d's log has no result line: %r" % (t["task"], text[-2000:]))
        got = (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), m.group(6),
               m.group(7))
        want = (t["rank"], 8, t["local_rank"], t["local_world_size"], t["node_rank"], t["node"],
                "%s:%d" % (spec["master_addr"], spec["master_port"]))
        if got != want:
            fail("task %d printed rank/world/local/local_world/node_rank/node/master %s, the launch spec says %s" %
                 (t["task"], got, want))
        if int(m.group(8)) != 36 or m.group(9) != "ok":
            fail("task %d: all_reduce %s %s" % (t["task"], m.group(8), m.group(9)))
        lines[t["rank"]] = "task %d: %s" % (t["task"], m.group(0))
        check_cli_logs(h, jid, t["task"], berth_logs(h, jid, t["task"]), text, "berth logs %d --task %d" %
                       (jid, t["task"]))
    for args, code, want in (([str(jid), "--task", "99"], 1, "HTTP 404: job %d has no task 99" % jid),
                             (["999"], 1, "HTTP 404: no job 999"), (["x1"], 2, "ID"),
                             ([str(jid), "--follow"], 0, "")):
        out = subprocess.run([h.berth, "logs", *args, "--server", "http://127.0.0.1:%d" % h.port,
                              "--token-file", h.user_token], capture_output=True, text=True, timeout=60)
        if out.returncode != code or want not in out.stderr:
            fail("berth logs %s: exit %d (wanted %d), stderr %r (wanted %r)" %
                 (" ".join(args), out.returncode, code, out.stderr, want))
    for r in sorted(lines):
        print("  " + lines[r])
    print("torch %s: job %d %s in %.1f s; 8 ranks as the launch spec placed them, all_reduce = 36 on every rank; "
          "logs served (API and berth logs) for tasks %s" %
          (version, jid, j["state"], took, sorted(t["task"] for t in spec["tasks"])))


def case_mpi(h):
    version = check_mpi()
    prog = os.path.join(h.work, "mpi_allreduce")
    out = subprocess.run(["mpicc", "-O1", "-o", prog, os.path.join(LAUNCH, "mpi_allreduce.c")],
                         capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        fail("mpicc: " + out.stdout + out.stderr)
    h.start_server()
    start_agents(h)
    gate = os.path.join(h.work, "mpi.go")
    # The tasks wait for the gate file so the test reads the launch spec while the job runs (it ends in a second).
    job = {"name": "mpi", "launcher": "mpi", "groups": [{"name": "rank", "count": 8, "gpus": 1}],
           "command": ["/bin/sh", "-c", 'i=0; while [ ! -e "$0" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); '
                       'done; exec "$@"', gate, os.path.join(LAUNCH, "berth-mpirun"), prog],
           "env": {
               "OMPI_MCA_plm_rsh_agent": os.path.join(LAUNCH, "local-rsh"),  # "ssh" to 127.0.0.x: run here
               "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",  # CI runs as root
               # Two "hosts" on one machine: no shared memory between them, TCP over lo.
               "OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
               "OMPI_MCA_oob_tcp_if_include": "lo", "PMIX_MCA_gds": "hash",
               # No shared hwloc topology between the two daemons of one machine (orted crashed writing it).
               "OMPI_MCA_rtc_hwloc_vmhole": "none",
           }}
    t0 = time.monotonic()
    jid = h.submit(job)
    spec = launch_spec(h, jid)
    check_spec(spec, 8)
    rank0 = spec["tasks"][0]
    follow = berth_logs(h, jid, rank0["task"], "--follow", "--interval", "0.2")  # from before the job's output
    with open(gate, "w"):
        pass
    try:
        j = h.wait_state(jid, "succeeded", 300)
    except SystemExit:
        code, text = h.logs(jid, rank0["task"])  # mpirun's own words on why it failed
        print("--- rank 0's task log (mpirun's output), HTTP %s\n%s" % (code, text[-4000:]))
        raise
    took = time.monotonic() - t0
    code, text = h.logs(jid, rank0["task"])
    if code != 200:
        fail("logs of rank 0's task %d: %s %r" % (rank0["task"], code, text))
    check_cli_logs(h, jid, rank0["task"], follow, text, "berth logs %d --task %d --follow" % (jid, rank0["task"]))
    got = {}
    for m in re.finditer(r"^mpi rank=(\d+) size=(\d+) host=(\S+) allreduce=(\d+) (\S+)$", text, re.M):
        got[int(m.group(1))] = m
    if sorted(got) != list(range(8)):
        fail("rank 0's log (mpirun's output) lacks MPI ranks: %r" % text[-3000:])
    for t in spec["tasks"]:
        m = got[t["rank"]]
        if int(m.group(2)) != 8 or m.group(3) != t["address"] or int(m.group(4)) != 36 or m.group(5) != "ok":
            fail("MPI rank %d: %r; Berth's rank %d is on %s (%s)" % (t["rank"], m.group(0), t["rank"], t["node"],
                                                                   t["address"]))
    for t in spec["tasks"][1:]:
        code, other = h.logs(jid, t["task"])
        if code != 200 or "started by mpirun on rank 0's node" not in other:
            fail("task %d (rank %d) log: %s %r" % (t["task"], t["rank"], code, other))
    for r in range(8):
        print("  %s   (Berth rank %d: task %d on %s@%s)" % (got[r].group(0), r, spec["tasks"][r]["task"],
                                                           spec["tasks"][r]["node"], spec["tasks"][r]["address"]))
    print("%s: job %d %s in %.1f s; MPI rank r on the host of Berth's rank r for all 8, MPI_Allreduce = 36; "
          "berth logs --follow printed rank 0's whole log (%d bytes) and ended with the job" %
          (version, jid, j["state"], took, len(text)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--berth", required=True)
    ap.add_argument("--case", required=True, choices=["torch", "mpi"])
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="berth-launch-e2e-")
    os.makedirs(os.path.join(work, "data"))
    h = Harness(os.path.abspath(args.berth), work)
    try:
        (case_torch if args.case == "torch" else case_mpi)(h)
        print("PASS: %s launch end-to-end (%s)" % (args.case, work))
    except SystemExit as e:
        if e.code not in (0, None, SKIP) and os.path.isdir(work):
            for name in sorted(os.listdir(work)):
                if name.endswith(".log"):
                    print("--- %s (tail)\n%s" % (name, open(os.path.join(work, name)).read()[-2000:]))
        raise
    finally:
        h.stop_all()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
