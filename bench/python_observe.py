"""What devcopy.observe(model) costs a user's Python code, side by side in one
run, rounds interleaved:

- a launch-bound training step: 5 Adam steps of 24 blocks of Linear(256) +
  GELU + LayerNorm, batch 32; bare, under observe(model), under
  torch.profiler.profile (CPU activity), and on CUDA under
  torch.cuda.memory._record_memory_history (target: observe <= 1.03x bare);
- entering and leaving observe(model) once, as each test under the pytest
  plugin pays it (target: <= 50 us).

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
    """Median of n single enter/exit pairs of observe(model), in seconds, and
    the same for an empty `with` of a do-nothing context manager."""

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
    return out


def pair_in(package_dir):
    """enter_exit's median for observe(model), in a process importing
    devcopy from package_dir."""
    env = dict(os.environ, PYTHONPATH=package_dir)
    out = subprocess.run([sys.executable, __file__, "--pair-only"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def against(other, rounds):
    """Enter/exit here and with the package in `other`, interleaved."""
    own = os.path.dirname(os.path.dirname(os.path.abspath(devcopy.__file__)))
    times = {own: [], other: []}
    for _ in range(rounds):
        for d in (other, own):
            times[d].append(pair_in(d))
    base, mine = statistics.median(times[other]), statistics.median(times[own])
    print(f"python_observe: enter+exit of observe(model), {rounds} processes each: "
          f"{other} {base * 1e6:.1f} us, {own} {mine * 1e6:.1f} us, ratio {mine / base:.3f}")
    return 0 if mine <= 50e-6 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=15, help="rounds of the step (15)")
    parser.add_argument("--against", metavar="DIR",
                        help="another build's Python package directory to compare enter/exit with")
    parser.add_argument("--pair-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pair_only:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print(enter_exit(blocks().to(device))["observe"])
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
    print(f"python_observe: enter+exit of observe(model) {pair['observe'] * 1e6:.1f} us "
          f"(an empty context manager {pair['nothing'] * 1e6:.1f} us; target <= 50 us)")
    step_ratio = med["observe"] / med["bare"]
    print(f"python_observe: observe/bare {step_ratio:.3f}x (target <= 1.03)")
    return 0 if step_ratio <= 1.03 and pair["observe"] <= 50e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
