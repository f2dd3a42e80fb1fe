"""The three seeds (the offload that frees nothing, reserved memory, the LoRA
adapter that doubles VRAM) reproduced in Python on a CUDA machine, with what
devcopy says asserted.
Run by scripts/gpu-test.sh; every seed runs, and it exits non-zero when one failed.

    PYTHONPATH=build-gpu/python python3 python/seeds/run_seeds.py
"""
import gc
import io
import os
import sys

import torch
from torch import nn

import devcopy

MiB = 1 << 20
dev = torch.device("cuda", 0)


def fresh():
    gc.collect()
    torch.cuda.synchronize()
    # cuBLAS keeps a workspace per handle and stream (32 MiB each on the
    # H200) in the caching allocator, reachable from no tensor: left from
    # an earlier seed's matmuls it would be counted in this one's figures.
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def mb(n):
    return f"{n / MiB:.0f} MiB"


def save_page(name, report, title):
    """The seed's page and JSON, into DEVCOPY_SEED_OUT when set."""
    out = os.environ.get("DEVCOPY_SEED_OUT")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.html"), "w", encoding="utf-8") as f:
        f.write(report.to_html(title=title))
    report.save(os.path.join(out, f"{name}.json"))


def timeline_of(report):
    """The cuda:0 timeline, its peak within 2% of the allocator's own."""
    (t,) = [t for t in report.timelines if t.device == "cuda:0"]
    peak = torch.cuda.max_memory_allocated(dev)
    assert abs(t.peak_bytes - peak) <= 0.02 * peak, (t.peak_bytes, peak)
    assert sum(p.bytes for p in t.parts) == t.peak_bytes, [(p.owner, p.bytes) for p in t.parts]
    return t


def where_line(w):
    return f"{os.path.basename(w.file)}:{w.line}"


def line_of(text):
    src = open(__file__).read().splitlines()
    return [i + 1 for i, s in enumerate(src) if text in s and "line_of" not in s][0]


# ---- 1. LoRA doubles VRAM ---------------------------------------------------
class Inner(nn.Module):  # the CLIP of the seed: moves itself in its constructor
    def __init__(self, early_move, n=64, d=4096):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
        if early_move:
            self.to(dev)


class LoRALinear(nn.Module):
    def __init__(self, base, r=64):
        super().__init__()
        self.base = base
        self.lora_a = nn.Parameter(torch.zeros(r, base.in_features, device=base.weight.device))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, r, device=base.weight.device))

    def forward(self, x):
        return self.base(x) + x @ self.lora_a.t() @ self.lora_b.t()


def apply_lora(inner):
    for i, layer in enumerate(inner.layers):
        inner.layers[i] = LoRALinear(layer)


class Owner(nn.Module):  # the TTD of the seed
    def __init__(self, early_move, checkpoint):
        super().__init__()
        self.model = Inner(early_move)
        apply_lora(self.model)
        checkpoint.seek(0)
        self.model.load_state_dict(torch.load(checkpoint))  # no map_location
        self.to(dev)


def lora_seed():
    ref = Inner(early_move=True)
    apply_lora(ref)
    checkpoint = io.BytesIO()
    torch.save(ref.state_dict(), checkpoint)  # saved from the GPU
    params = sum(p.numel() * p.element_size() for p in ref.parameters())
    # The inner Linear layers' parameters: the ones moved in Inner's
    # constructor (the LoRA factors are made on the device).
    moved = sum(p.numel() * p.element_size() for n, p in ref.named_parameters() if "lora" not in n)
    n_tensors = len(ref.state_dict())
    del ref
    out = {}
    for early in (True, False):
        fresh()
        with devcopy.observe() as obs:
            owner = Owner(early, checkpoint)
            torch.cuda.synchronize()
        if early:
            # The peak explained: during the torch.load, the parameters moved
            # in Inner's constructor plus the checkpoint's temporaries.
            t = timeline_of(obs.report)
            load, move = line_of("torch.load(checkpoint)"), line_of("self.to(dev)")
            assert where_line(t.peak_where) == f"run_seeds.py:{load}", str(t.peak_where)
            assert abs(t.owned("parameters") - moved) <= 0.02 * moved, (t.owned("parameters"), moved)
            assert abs(t.owned("checkpoint temporaries") - params) <= 0.02 * params
            top = {p.owner: where_line(p.where) for p in reversed(t.parts)}
            assert top["parameters"] == f"run_seeds.py:{move}", top
            assert top["checkpoint temporaries"] == f"run_seeds.py:{load}", top
            assert t.explained_by == "transient-device-copy" and "map_location='cpu'" in t.explanation
            print(f"seed 1: {t.explanation}")
            save_page("lora", obs.report, "LoRA seed: why memory doubled")
        torch.cuda.synchronize()
        report = devcopy.inspect(owner)
        out[early] = (torch.cuda.max_memory_allocated(), torch.cuda.memory_reserved(),
                      torch.cuda.memory_allocated(), report, obs.report)
        print(f"seed 1, early move {early}: parameters {mb(params)}, allocated {mb(out[early][2])}, "
              f"peak {mb(out[early][0])}, reserved {mb(out[early][1])}")
        del owner
    peak, reserved, allocated, report, observed = out[True]
    assert peak > 1.8 * params and reserved > 1.8 * params, "the early move doubles the peak"
    (cached,) = report.findings_of("cached-memory")
    assert abs(cached.bytes - (reserved - allocated)) <= MiB, (cached.bytes, reserved - allocated)
    assert report.findings_of("unreachable-allocation") == [], str(report)
    print(str(report))
    # The checkpoint's tensors were restored to the GPU by torch.load (no
    # map_location), copied into the parameters and freed: the observer
    # names the temporaries and the line of the torch.load.
    line = line_of("torch.load(checkpoint)")
    (transient,) = observed.findings_of("transient-device-copy")
    print(str(observed.only("transient-device-copy")))
    assert transient.location.endswith(f"run_seeds.py:{line}"), transient.location
    assert abs(transient.bytes - params) <= 0.01 * params, (transient.bytes, params)
    assert transient.count == n_tensors, (transient.count, n_tensors)
    assert transient.devices == ("cpu", "cuda:0"), transient.devices
    d2d = sum(c.bytes for c in observed.copies if c.src_device == "cuda:0" and c.dst_device == "cuda:0")
    assert d2d >= params * 0.99, (d2d, params)
    print(f"seed 1: transient-device-copy: {transient.count} temporaries, {mb(transient.bytes)} "
          f"at run_seeds.py:{line} (the torch.load); cached-memory {mb(cached.bytes)}; "
          f"{mb(d2d)} copied cuda:0 -> cuda:0")
    peak2, reserved2, _, report2, observed2 = out[False]
    assert peak2 < 1.1 * params and reserved2 < 1.1 * params, "without the early move: no doubling"
    assert report2.findings_of("cached-memory") == [], str(report2)
    assert observed2.findings_of("transient-device-copy") == [], str(observed2)
    print("seed 1, without the early move: no cached-memory, no transient-device-copy")


def peft_silent():
    try:
        from peft import LoraConfig, get_peft_model
        from transformers import ViTConfig, ViTModel
    except ImportError as e:
        print(f"seed 1 (peft): skipped, {e}")
        return
    fresh()
    cfg = ViTConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                    intermediate_size=512, image_size=64, patch_size=8)
    base = ViTModel(cfg)
    # The attention projections, by whatever name this transformers calls
    # them (query/value, q_proj/v_proj); else every Linear layer.
    names = {n.rsplit(".", 1)[-1] for n, m in base.named_modules() if isinstance(m, nn.Linear)}
    targets = sorted(names & {"query", "value", "q_proj", "v_proj"}) or "all-linear"
    model = get_peft_model(base, LoraConfig(r=8, target_modules=targets))
    with devcopy.observe(model) as obs:
        model.to(dev)
    with devcopy.observe(model) as obs2:
        model(pixel_values=torch.randn(2, 3, 64, 64, device=dev))
    report = devcopy.inspect(model)
    assert report.findings == [], str(report)
    for o in (obs, obs2):
        bad = [f for f in o.report.findings
               if f.kind in ("discarded-copy", "stale-after-move", "transient-device-copy")]
        assert bad == [], str(o.report)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"seed 1 (peft LoRA on a ViT from a config, {mb(params)} of parameters, "
          f"allocated {mb(torch.cuda.memory_allocated())}): devcopy silent, as it should be")


# ---- 2. The offload that frees nothing --------------------------------------
class DeepModel(nn.Module):
    def __init__(self, layer_num=8, layer_size=1024):
        super(DeepModel, self).__init__()
        self.layers = nn.ModuleList([nn.Linear(layer_size, layer_size) for _ in range(layer_num)])
        self.relu = nn.ReLU()

    def forward(self, x, offload=False):
        if offload:
            prev_tensor = x
            for idx, layer in enumerate(self.layers):
                x = self.relu(layer(prev_tensor))
                prev_tensor.to('cpu', non_blocking=True)
                prev_tensor = x
        return x


class SavedOnCpu(DeepModel):
    def forward(self, x, offload=False):
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            for layer in self.layers:
                x = self.relu(layer(x))
        return x


def offload_seed():
    fresh()
    model = DeepModel().to(dev)
    x = torch.randn(256, 1024, device=dev, requires_grad=True)
    with devcopy.observe(model) as obs:
        model(x, offload=True).sum().backward()
        torch.cuda.synchronize()
    t = timeline_of(obs.report)
    print(f"seed 2: {t.explanation}")
    save_page("offload", obs.report, "offload seed: the offload that frees nothing")
    found = obs.report.findings_of("discarded-copy")
    line = line_of("prev_tensor.to('cpu', non_blocking=True)")
    print(str(obs.report.only("discarded-copy")))
    assert sum(f.count for f in found) == len(model.layers), found
    assert sum(f.bytes for f in found) == len(model.layers) * 256 * 1024 * 4
    for f in found:
        assert f.location.endswith(f"run_seeds.py:{line}"), f.location
        assert f.devices == ("cuda:0", "cpu")
    fixed = SavedOnCpu().to(dev)
    with devcopy.observe(fixed) as obs:
        fixed(x).sum().backward()
    assert obs.report.findings_of("discarded-copy") == [], str(obs.report)
    print(f"seed 2: {sum(f.count for f in found)} discarded copies, each at run_seeds.py:{line}; "
          "save_on_cpu: none")


# ---- 3. Reserved memory not reused ------------------------------------------
def reserved_seed():
    fresh()
    blocks = [torch.empty(256 * MiB, dtype=torch.uint8, device=dev) for _ in range(8)]
    del blocks
    small = nn.Linear(16, 16).to(dev)
    driver_free, _ = torch.cuda.mem_get_info(dev)
    unused = torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)
    avail = devcopy.available_memory(dev)
    expect = driver_free + unused
    print(f"seed 3: driver free {mb(driver_free)}, reserved unused {mb(unused)}, "
          f"available_memory {mb(avail)} (expected {mb(expect)})")
    assert abs(avail - expect) <= 0.01 * expect
    report = devcopy.inspect(small)
    (cached,) = report.findings_of("cached-memory")
    assert cached.bytes >= 2000 * MiB, cached.bytes
    # A loader budgeting with the driver alone would offload this much to
    # the CPU; devcopy's figure says it fits, and it does.
    want = driver_free + unused // 2
    assert want > driver_free and want <= avail
    placed = torch.empty(want, dtype=torch.uint8, device=dev)
    print(f"seed 3: {mb(want)} placed on the GPU (the driver said {mb(driver_free)} free)")
    del placed
    # Which request made a new segment although enough was cached.
    fresh()
    with devcopy.observe() as obs:
        blocks = [torch.empty(256 * MiB, dtype=torch.uint8, device=dev) for _ in range(32)]
        del blocks
        big = torch.empty(32 * 256 * MiB, dtype=torch.uint8, device=dev)
        torch.cuda.synchronize()
    t = timeline_of(obs.report)
    (miss,) = [m for m in t.misses if m.requested == 32 * 256 * MiB]
    assert miss.cached_free >= miss.requested and miss.largest_free_block == 256 * MiB, \
        (miss.cached_free, miss.largest_free_block)
    line = line_of("big = torch.empty(32 * 256")
    assert where_line(miss.where) == f"run_seeds.py:{line}", str(miss.where)
    print(f"seed 3: a request of {mb(miss.requested)} at run_seeds.py:{line} made a new segment of "
          f"{mb(miss.segment)} although {mb(miss.cached_free)} were cached (largest free block "
          f"{mb(miss.largest_free_block)})")
    save_page("reserved", obs.report, "reserved-memory seed: the cache that could not serve")
    del big


def main():
    if not torch.cuda.is_available():
        print("run_seeds: no CUDA device", file=sys.stderr)
        return 2
    import traceback
    failed = []
    for step in (offload_seed, reserved_seed, lora_seed, peft_silent):
        try:
            step()
        except AssertionError:  # the others still run: every seed's verdict
            traceback.print_exc()
            failed.append(step.__name__)
    print(f"run_seeds: FAILED ({', '.join(failed)})" if failed else "run_seeds: PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
