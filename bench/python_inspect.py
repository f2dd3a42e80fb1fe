"""devcopy.inspect from Python against the C++ devcopy::inspect on the same
model (1,000 tensors: 500 Linear(64, 64) layers in a tree of 50 blocks), side
by side in one run, rounds interleaved. Prints medians and the ratio (the
target: at most 1.10).

    PYTHONPATH=build/python python3 bench/python_inspect.py [rounds]
"""
import statistics
import sys
import time

import torch
from torch import nn

import devcopy
from devcopy import _C


def model_of_1000_tensors():
    blocks = nn.ModuleList(nn.Sequential(*[nn.Linear(64, 64) for _ in range(10)]) for _ in range(50))
    m = nn.Module()
    m.blocks = blocks
    return m


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    torch.set_num_threads(1)  # one core each: the comparison, not the machine's load
    model = model_of_1000_tensors()
    n = sum(1 for _ in model.parameters()) + sum(1 for _ in model.buffers())
    assert n == 1000, n
    py, cpp = [], []
    devcopy.inspect(model)
    _C._time_cpp_inspect(model, 2)  # warm both
    for _ in range(rounds):
        start = time.perf_counter()
        devcopy.inspect(model)
        py.append(time.perf_counter() - start)
        cpp.extend(_C._time_cpp_inspect(model, 1))
    p, c = statistics.median(py), statistics.median(cpp)
    print(f"python_inspect: {n} tensors, {rounds} rounds: C++ {c * 1e3:.3f} ms, "
          f"Python {p * 1e3:.3f} ms, ratio {p / c:.3f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
