#!/usr/bin/python3
"""A torch.distributed program started by Berth's node agents (launcher: torch).

Each task is one rank. It reads the variables Berth's launch spec sets
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, NODE_RANK,
LOCAL_WORLD_SIZE), joins the process group over gloo (CPU), checks that the
ranks of a node are consecutive and agree with LOCAL_RANK / NODE_RANK, and
all-reduces a tensor: the sum of RANK + 1 over the world is
WORLD_SIZE * (WORLD_SIZE + 1) / 2. Prints one line; exits 1 on any mismatch.

  {"launcher": "torch", "groups": [{"count": 8, "gpus": 1}],
   "command": ["/usr/bin/python3", "examples/launch/torch_allreduce.py"]}

With --expect-world N it also checks WORLD_SIZE == N.
"""
import argparse
import datetime
import os
import socket
import sys


def env_int(name):
    v = os.environ.get(name)
    if v is None:
        sys.exit("torch_allreduce: %s is not set (run it through Berth with launcher: torch)" % name)
    try:
        return int(v)
    except ValueError:
        sys.exit("torch_allreduce: %s=%r is not an integer" % (name, v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect-world", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the other ranks")
    args = ap.parse_args()

    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    local_rank, local_world, node_rank = env_int("LOCAL_RANK"), env_int("LOCAL_WORLD_SIZE"), env_int("NODE_RANK")
    master = "%s:%d" % (os.environ.get("MASTER_ADDR", ""), env_int("MASTER_PORT"))
    node = os.environ.get("BERTH_NODE", socket.gethostname())

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    errors = []
    if dist.get_rank() != rank or dist.get_world_size() != world:
        errors.append("process group rank %d of %d, env RANK %d of %d" %
                      (dist.get_rank(), dist.get_world_size(), rank, world))
    if args.expect_world and world != args.expect_world:
        errors.append("WORLD_SIZE %d, expected %d" % (world, args.expect_world))
    if not 0 <= local_rank < local_world:
        errors.append("LOCAL_RANK %d outside LOCAL_WORLD_SIZE %d" % (local_rank, local_world))

    # Every rank's (node rank, local rank, local world size): the ranks of one
    # node are consecutive and in local-rank order, nodes in node-rank order.
    mine = torch.tensor([node_rank, local_rank, local_world], dtype=torch.int64)
    everyone = [torch.zeros(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(everyone, mine)
    expect_rank = 0
    seen_nodes = []
    for r, t in enumerate(everyone):
        nr, lr, lw = (int(x) for x in t)
        if not seen_nodes or seen_nodes[-1] != nr:
            seen_nodes.append(nr)
        if lr != r - expect_rank:
            errors.append("rank %d has LOCAL_RANK %d; its node's ranks start at %d" % (r, lr, expect_rank))
        if lr == lw - 1:
            expect_rank = r + 1
    if seen_nodes != list(range(len(seen_nodes))):
        errors.append("node ranks in rank order are %s, expected 0, 1, ..." % seen_nodes)

    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    total = int(value.item())
    want = world * (world + 1) // 2
    if total != want:
        errors.append("all_reduce gave %d, expected %d" % (total, want))
    dist.barrier()
    dist.destroy_process_group()

    print("torch rank=%d world=%d local_rank=%d local_world=%d node_rank=%d node=%s master=%s allreduce=%d %s" %
          (rank, world, local_rank, local_world, node_rank, node, master, total,
           "ok" if not errors else "MISMATCH: " + "; ".join(errors)), flush=True)
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
