"""What devcopy.observe(model) costs a user's Python code, side by side in one
run, rounds interleaved:

- a launch-bound training step: 5 Adam steps of 24 blocks of Linear(256) +
  GELU + LayerNorm, batch 32; bare, under observe(model), under
  torch.profiler.profile (CPU activity), and on CUDA under
  torch.cuda.memory._record_memory_history (target: observe <= 1.03x bare);
- entering and leaving observe(model) once, as each test under the pytest
  plugin pays it (target: <= 50 us), with an empty block and with a block
  making one copy that it keeps (a dtype conversion held in a variable).

Runs on CUDA when there is a device, else on the CPU. Prints medians and
ratios; exits 1 when a target is missed. With --against DIR, also times
enter/exit with another build's package (DIR holds its devcopy/), each side
in its own process, rounds interleaved, and prints both and their ratio.

    PYTHONPATH=build/python python3 bench/python_observe.py [rounds]
    PYTHONPATH=build/python python3 bench/python_observe.py --against OTHER/python
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

import devcopy


def blocks(n=24, d=256):
    layers = []
    for _ in range(n):
        layers += [nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d)]
    return nn.Sequential(*layers)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def train(model, opt, x, device, steps=5):
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
    sync(device)


def timed_step(model, opt, x, device, mode):
    if mode == "history":
        torch.cuda.memory._record_memory_history(max_entries=100000)
    start = time.perf_counter()
    if mode == "observe":
        with devcopy.observe(model):
            train(model, opt, x, device)
    elif mode == "profiler":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            train(model, opt, x, device)
    else:
        train(model, opt, x, device)
    took = time.perf_counter() - start
    if mode == "history":
        torch.cuda.memory._record_memory_history(enabled=None)
    return took


def enter_exit(model, n=200):
    """Median of n single enter/exit pairs of observe(model), in seconds,
    around an empty block ("observe") and around one kept copy ("one copy",
    less the copy alone), and the same for an empty `with` of a do-nothing
    context manager."""

    class Nothing:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    out = {}
    for name, make in (("observe", lambda: devcopy.observe(model)), ("nothing", Nothing)):
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            with make():
                pass
            samples.append(time.perf_counter() - start)
        out[name] = statistics.median(samples)
    x = next(model.parameters()).new_empty(256)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        with devcopy.observe(model):
            kept = x.double()
        mid = time.perf_counter()
        kept = x.double()  # the copy alone
        samples.append(2 * mid - start - time.perf_counter())
    out["one copy"] = statistics.median(samples)
    del kept
    return out


def pair_in(package_dir):
    """enter_exit's medians (empty block, one copy) in a process importing
    devcopy from package_dir."""
    env = dict(os.environ, PYTHONPATH=package_dir)
    out = subprocess.run([sys.executable, __file__, "--pair-only"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [float(v) for v in out.split()[-2:]]


def against(other, rounds):
    """Enter/exit here and with the package in `other`, interleaved."""
    own = os.path.dirname(os.path.dirname(os.path.abspath(devcopy.__file__)))
    times = {own: [], other: []}
    for _ in range(rounds):
        for d in (other, own):
            times[d].append(pair_in(d))
    worst = 0.0
    for i, block in enumerate(("an empty block", "one kept copy")):
        base = statistics.median(t[i] for t in times[other])
        mine = statistics.median(t[i] for t in times[own])
        worst = max(worst, mine)
        print(f"python_observe: enter+exit of observe(model) around {block}, {rounds} processes "
              f"each: {other} {base * 1e6:.1f} us, {own} {mine * 1e6:.1f} us, "
              f"ratio {mine / base:.3f}")
    return 0 if worst <= 50e-6 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=15, help="rounds of the step (15)")
    parser.add_argument("--against", metavar="DIR",
                        help="another build's Python package directory to compare enter/exit with")
    parser.add_argument("--pair-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pair_only:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        pair = enter_exit(blocks().to(device))
        print(pair["observe"], pair["one copy"])
        return 0
    if args.against:
        return against(os.path.abspath(args.against), args.rounds)
    rounds = args.rounds
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = blocks().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(32, 256, device=device)
    modes = ["bare", "observe", "profiler"] + (["history"] if device.type == "cuda" else [])
    times = {m: [] for m in modes}
    for m in modes:  # warm each (Adam's state, the allocator's cache)
        timed_step(model, opt, x, device, m)
    for _ in range(rounds):
        for m in modes:
            times[m].append(timed_step(model, opt, x, device, m))
    med = {m: statistics.median(v) for m, v in times.items()}
    print(f"python_observe: {device.type}, torch {torch.__version__}, {rounds} rounds")
    for m in modes:
        print(f"python_observe: {m:9s} {med[m] * 1e3:8.2f} ms  {med[m] / med['bare']:.3f}x of the bare step")
    pair = enter_exit(model)
    print(f"python_observe: enter+exit of observe(model) {pair['observe'] * 1e6:.1f} us, "
          f"around one kept copy {pair['one copy'] * 1e6:.1f} us "
          f"(an empty context manager {pair['nothing'] * 1e6:.1f} us; target <= 50 us)")
    step_ratio = med["observe"] / med["bare"]
    print(f"python_observe: observe/bare {step_ratio:.3f}x (target <= 1.03)")
    return 0 if step_ratio <= 1.03 and max(pair["observe"], pair["one copy"]) <= 50e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
