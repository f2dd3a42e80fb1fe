"""devcopy.inspect_distributed on two GPUs with two ranks, as a
Python user runs it: torch.distributed with NCCL, one GPU per rank.

1. DDP + Adam, one GPU each: DDP all-reduces the gradients, so Adam's state is
   the same on both ranks: `replicated-across-ranks` with the optimizer
   state's bytes (twice the parameters: exp_avg and exp_avg_sq), and no
   `misplaced-rank-memory`.
2. Both ranks build their model on cuda:0 (the set_device bug): NCCL refuses
   two ranks on one GPU, so the report is gathered through a Gloo group, as a
   user would: `misplaced-rank-memory` naming both ranks.

Run by scripts/gpu-test.sh; prints a skip line and exits 0 with fewer than 2
GPUs; exits non-zero when an assertion fails.

    PYTHONPATH=build-gpu/python python3 python/gpu/nccl_ranks.py
"""
import json
import os
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import devcopy

D = 1024
PARAM_BYTES = 2 * (D * D + D) * 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(D, D), nn.ReLU(), nn.Linear(D, D))


def rank_main(rank, world, port, scenario, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=rank, world_size=world)
    try:
        if scenario == "ddp":
            torch.cuda.set_device(rank)
            m = model().cuda(rank)
            ddp = DDP(m, device_ids=[rank])
            opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
            torch.manual_seed(100 + rank)  # each rank its own batch
            ddp(torch.randn(64, D, device=rank)).square().mean().backward()
            opt.step()
            torch.cuda.synchronize()
            report = devcopy.inspect_distributed(m, roots={"opt": opt}, timeout=60)
        else:
            m = model().cuda(0)  # every rank on cuda:0
            gloo = dist.new_group(backend="gloo")
            torch.cuda.synchronize()
            report = devcopy.inspect_distributed(m, group=gloo, timeout=60)
        with open(os.path.join(out_dir, f"{scenario}{rank}.json"), "w") as f:
            f.write(report.to_json())
        if rank == 0:
            print(f"---- {scenario}, rank 0's report ----\n{report}", flush=True)
    finally:
        dist.destroy_process_group()


def check(cond, what, report):
    if not cond:
        print(f"nccl_ranks: FAILED: {what}\n{json.dumps(report, indent=1)[:4000]}")
        sys.exit(1)
    print(f"nccl_ranks: ok: {what}")


def run(scenario, out_dir):
    mp.spawn(rank_main, args=(2, free_port(), scenario, out_dir), nprocs=2, join=True)
    return [json.load(open(os.path.join(out_dir, f"{scenario}{r}.json"))) for r in range(2)]


def main():
    if torch.cuda.device_count() < 2:
        print(f"nccl_ranks: needs 2 CUDA devices, this machine has {torch.cuda.device_count()}: skipped")
        return 0
    with tempfile.TemporaryDirectory() as out:
        for r in run("ddp", out):
            kinds = [f["kind"] for f in r["findings"]]
            by = {x["category"]: x for x in r["replicated"]}
            check("replicated-across-ranks" in kinds, "DDP + Adam: replicated-across-ranks", r)
            state = by.get("optimizer state", {})
            check(state.get("bytes_per_rank", 0) >= 2 * PARAM_BYTES,
                  f"optimizer state replicated: {state.get('bytes_per_rank')} bytes per rank "
                  f"(>= 2 x {PARAM_BYTES})", r)
            check("misplaced-rank-memory" not in kinds, "one GPU per rank: nothing misplaced", r)
            # Adam's step counters are host tensors: only the GPUs matter here.
            devices = sorted({x["device"] for x in r["ranks"] if x["device"].startswith("cuda")})
            check(devices == ["cuda:0", "cuda:1"], f"per-rank devices {devices}", r)
        for r in run("same_gpu", out):
            mis = [f for f in r["findings"] if f["kind"] == "misplaced-rank-memory"]
            check(len(mis) == 1 and "ranks 0 and 1" in mis[0]["message"]
                  and mis[0]["devices"] == ["cuda:0"] and mis[0]["bytes"] >= PARAM_BYTES,
                  "both ranks on cuda:0: misplaced-rank-memory naming ranks 0 and 1", r)
    print("nccl_ranks: PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
