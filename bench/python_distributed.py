"""devcopy.inspect_distributed on two ranks of one host against a single-rank
devcopy.inspect of the same model, side by side in one run, rounds
interleaved, each round started from a barrier and timed by its slowest
rank. The model (1,000 tensors: 500 Linear(64, 64) layers) lives on the host,
then on a GPU when there is one: each rank its own when the host has two,
else both ranks share one; the ranks talk through Gloo over 127.0.0.1. Prints the medians, inspect on rank 0 while the
others wait (what sharing a GPU costs), one 64 KiB all-gather (the
collective's floor) and the ratio (the target: at most 1.5).

    PYTHONPATH=build/python python3 bench/python_distributed.py [rounds]
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def model_of_1000_tensors(device):
    torch.manual_seed(0)
    blocks = nn.ModuleList(nn.Sequential(*[nn.Linear(64, 64) for _ in range(10)]) for _ in range(50))
    m = nn.Module()
    m.blocks = blocks
    return m.to(device)


def timed(fn):
    dist.barrier()
    start = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def slowest(times):
    """Per round, the slowest rank's time: a collective is done when its last
    rank is, and ranks sharing one GPU take turns on it."""
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, times)
    return statistics.median(max(r) for r in zip(*everyone))


def gpu_of(rank):
    """One GPU per rank where the host has enough, as on a cluster."""
    count = torch.cuda.device_count()
    if count > 1:
        torch.cuda.set_device(rank % count)
    return f"cuda:{rank % count}"


def placement(device, size):
    if device == "cpu":
        return "on the host"
    if torch.cuda.device_count() >= size:
        return "one GPU per rank"
    return "sharing one GPU"


def rank_main(rank, size, port, rounds, out):
    import devcopy

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=size)
    torch.set_num_threads(1)  # one core each, as on a cluster
    devices = ["cpu"] + ([gpu_of(rank)] if torch.cuda.is_available() else [])
    # The floor: one Gloo all-gather of a slot as large as devcopy's.
    slot = torch.zeros(64 << 10, dtype=torch.uint8)
    slots = [torch.empty_like(slot) for _ in range(size)]
    for device in devices:
        model = model_of_1000_tensors(device)
        one, alone, many, gather = [], [], [], []
        devcopy.inspect(model)
        devcopy.inspect_distributed(model)  # warm all three
        dist.all_gather(slots, slot)
        for _ in range(rounds):
            one.append(timed(lambda: devcopy.inspect(model)))
            alone.append(timed(lambda: rank == 0 and devcopy.inspect(model)))
            many.append(timed(lambda: devcopy.inspect_distributed(model)))
            gather.append(timed(lambda: dist.all_gather(slots, slot)))
        figures = (device, slowest(one), slowest(alone), slowest(many), slowest(gather))
        if rank == 0:
            out.put(figures)
    dist.barrier()
    dist.destroy_process_group()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    size = 2
    port = 29500 + os.getpid() % 1000
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(rank_main, args=(size, port, rounds, out), nprocs=size,
                       start_method="spawn", join=True)
    for _ in range(1 + torch.cuda.is_available()):
        device, one, alone, many, gather = out.get()
        print(f"python_distributed: 1000 tensors {placement(device, size)}, {size} ranks, {rounds} rounds, "
              f"slowest rank: inspect {one * 1e3:.3f} ms (rank 0 alone {alone * 1e3:.3f} ms), "
              f"inspect_distributed {many * 1e3:.3f} ms "
              f"(one 64 KiB all-gather alone {gather * 1e3:.3f} ms), "
              f"ratio {many / one:.2f} (target <= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
