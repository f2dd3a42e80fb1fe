"""The calls that crashed the extension on the H200 (numbers written to a
std::ostream, a ModuleScope), each announced before it runs, so a crash
names its step. Run by scripts/python-abi-diag.sh and gpu-test.sh."""
import sys

import torch

import devcopy
from devcopy import _C


def step(name):
    print(f"smoke: {name}", flush=True)


maps = {l.split()[-1] for l in open("/proc/self/maps") if "/" in l}
print("smoke: mapped", sorted(m for m in maps if "libstdc++" in m or "libgomp" in m), flush=True)
step("str(Report())")
print(repr(str(_C.Report())))
step("Finding with bytes")
f = _C.Finding()
f.kind, f.message, f.bytes = "cached-memory", "x", 123456789
print(str(f))
step("format_bytes")
print(_C.format_bytes(123456789))
step("ModuleScope")
s = _C.Scope("smoke")
s.enter()
s.exit()
dev = "cuda" if torch.cuda.is_available() else "cpu"
step(f"inspect on {dev}")
m = torch.nn.Linear(64, 64).to(dev)
print(str(devcopy.inspect(m)))
step("observe")
with devcopy.observe(m) as obs:
    m.weight.to(torch.float64)
print(str(obs.report))
print("smoke: PASSED")
sys.exit(0)
