"""What the memory timeline costs on the offload seed's step (40 x
Linear(4096), batch 1024, the discarded offloads, forward and backward) on a
CUDA device, side by side in one run, rounds interleaved: the bare step;
devcopy.observe() with copies only (DEVCOPY_TIMELINE=0); observe() with the
timeline (the allocator's trace hook); and PyTorch's
torch.cuda.memory._record_memory_history. Prints medians and ratios (the
target for the timeline: at most 1.05 on the bare step).

    PYTHONPATH=build/python python3 bench/python_timeline.py [rounds]
"""
import os
import statistics
import sys
import time

import torch
from torch import nn

import devcopy


class Offload(nn.Module):
    def __init__(self, n=40, d=4096):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

    def forward(self, x):
        prev = x
        for layer in self.layers:
            x = torch.relu(layer(prev))
            prev.to("cpu", non_blocking=True)  # the seed's discarded offload
            prev = x
        return x


def step(model, x):
    model(x).sum().backward()
    torch.cuda.synchronize()


def timed(model, x, mode):
    if mode == "history":
        torch.cuda.memory._record_memory_history(max_entries=100000)
    os.environ["DEVCOPY_TIMELINE"] = "0" if mode == "observer" else "1"
    start = time.perf_counter()
    if mode in ("observer", "timeline"):
        with devcopy.observe(model) as obs:
            step(model, x)
    else:
        step(model, x)
    took = time.perf_counter() - start
    if mode == "history":
        torch.cuda.memory._record_memory_history(enabled=None)
    if mode == "timeline":
        assert obs.report.timelines, "the timeline recorded nothing"
    return took


def main():
    if not torch.cuda.is_available():
        print("python_timeline: no CUDA device", file=sys.stderr)
        return 2
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    model = Offload().cuda()
    x = torch.randn(1024, 4096, device="cuda", requires_grad=True)
    modes = ("bare", "observer", "timeline", "history")
    times = {m: [] for m in modes}
    for m in modes:  # warm each
        timed(model, x, m)
    for _ in range(rounds):
        for m in modes:
            times[m].append(timed(model, x, m))
    med = {m: statistics.median(v) for m, v in times.items()}
    for m in modes:
        print(f"python_timeline: {m:9s} {med[m] * 1e3:8.2f} ms  {med[m] / med['bare']:.3f}x of the bare step")
    ratio = med["timeline"] / med["bare"]
    print(f"python_timeline: timeline/bare {ratio:.3f}x, timeline/observer "
          f"{med['timeline'] / med['observer']:.3f}x, history/bare {med['history'] / med['bare']:.3f}x "
          "(target: timeline/bare <= 1.05)")
    return 0 if ratio <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
