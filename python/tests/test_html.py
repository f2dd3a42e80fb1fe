"""Report.to_html() and `python -m devcopy report --html`: the figures, and
the page as headless Chromium renders it (skipped without chromium)."""
import json
import re
import shutil
import subprocess
import sys

import pytest
import torch

import devcopy

MiB = 1 << 20
SAVED = {
    "findings": [
        {"kind": "cached-memory", "message": "546.00 MiB reserved by the caching allocator on cuda:0 is unused",
         "bytes": 546 * MiB, "devices": ["cuda:0"], "tensors": [], "op": "", "module": "", "details": []},
        {"kind": "duplicate-storage", "message": "the 16.00 MiB of float in a.weight on cpu are copied",
         "bytes": 16 * MiB, "devices": ["cpu"], "tensors": ["a.weight", "b.weight"], "op": "", "module": "",
         "details": []},
        {"kind": "discarded-copy", "message": "aten::to in layers.3 at offload.py:14 copied <1 MiB>",
         "bytes": MiB, "devices": ["cuda:0", "cpu"], "tensors": [], "op": "aten::to",
         "module": "layers.3 at offload.py:14", "details": []},
    ],
    "shared": [{"device": "cpu", "bytes": 4 * MiB, "tensors": ["emb.weight", "head.weight"]}],
    "devices": [
        {"device": "cpu", "reachable_bytes": 40 * MiB, "allocated_bytes": -1, "reserved_bytes": -1,
         "reserved_unused_bytes": -1, "largest_free_block": -1},
        {"device": "cuda:0", "reachable_bytes": 544 * MiB, "allocated_bytes": 544 * MiB,
         "reserved_bytes": 1090 * MiB, "reserved_unused_bytes": 546 * MiB, "largest_free_block": 512 * MiB},
    ],
    "copies": [{"src_device": "cuda:0", "dst_device": "cpu", "dtype": "float", "count": 40,
                "bytes": 40 * MiB}],
    "skipped": [],
    "host_syncs": 3,
}


@pytest.fixture
def saved(tmp_path):
    p = tmp_path / "saved.json"
    p.write_text(json.dumps(SAVED))
    return p


def segments(html, device):
    block = re.search(rf'data-device="{re.escape(device)}">(.*?)</div></div>', html).group(1)
    return {m[0]: int(m[1]) for m in re.findall(r'class="seg-(\w+)" data-bytes="(\d+)"', block)}


def test_page_figures():
    html = devcopy.Report.from_json(json.dumps(SAVED)).to_html()
    assert segments(html, "cuda:0") == {"reachable": 544 * MiB, "cached": 546 * MiB}
    # cpu: 40 MiB reachable of which 4 shared and 16 duplicated.
    assert segments(html, "cpu") == {"reachable": 20 * MiB, "shared": 4 * MiB, "duplicated": 16 * MiB}
    assert html.count('class="finding"') == 3
    assert '<td class="where">offload.py:14</td>' in html
    assert "546.00 MiB" in html and "cuda:0 &rarr; cpu" in html
    assert "http" not in html  # self-contained: nothing fetched


def legend(html, device):
    block = re.search(rf'data-device="{re.escape(device)}">(.*?)</div></div>', html).group(1)
    return dict(re.findall(r'class="fig-(\w+)">([^<]*)<', block))


def text_reachable(report):
    return dict(re.findall(r"devcopy: memory on (\S+): (.+?) reachable", str(report)))


def test_html_figures_agree_with_the_text_report():
    # Tied weights: one storage, shared by two parameters, counted once.
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256),
                                torch.nn.Linear(256, 256))
    model[2].weight = model[0].weight
    model[1].bias.data = model[0].bias.data.clone()  # a duplicate
    for report in (devcopy.inspect(model), devcopy.Report.from_json(json.dumps(SAVED))):
        html = report.to_html()
        text = text_reachable(report)
        assert text, str(report)
        for device, figure in text.items():
            assert legend(html, device)["reachable"] == figure, (device, str(report))
            shown = sum(segments(html, device).get(k, 0) for k in ("reachable", "shared", "duplicated"))
            assert shown == next(d.reachable_bytes for d in report.devices if d.device == device)
    assert legend(devcopy.inspect(model).to_html(), "cpu")["shared"] != "0 B"


def test_notebook_fragment_and_escaping():
    data = json.loads(json.dumps(SAVED))
    data["findings"][0]["message"] = "<script>alert(1)</script>"
    frag = devcopy.Report.from_json(json.dumps(data))._repr_html_()
    assert "<script>" not in frag and "&lt;script&gt;" in frag
    assert "<b>3</b> findings" in frag


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "devcopy", *args], capture_output=True, text=True)


def test_cli_writes_html_and_text(saved, tmp_path):
    out = tmp_path / "page.html"
    r = run_cli("report", "--html", str(saved), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert segments(out.read_text(), "cuda:0")["cached"] == 546 * MiB
    r = run_cli("report", str(saved))
    assert r.returncode == 0 and "cached-memory" in r.stdout and "offload.py:14" in r.stdout


def test_cli_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run_cli("report", "--html", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"devcopy: error: {bad}: not a devcopy JSON report")
    r = run_cli("report", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs it)")
def test_chromium_renders_the_figures_without_console_errors(saved, tmp_path):
    out = tmp_path / "page.html"
    assert run_cli("report", "--html", str(saved), "-o", str(out)).returncode == 0
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                        "--virtual-time-budget=2000", "--dump-dom", out.as_uri()],
                       capture_output=True, text=True, timeout=120)
    dom = r.stdout
    assert 'data-rendered="yes"' in dom, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    # Drawn widths follow the bytes: cached (546) and reachable (544) on cuda:0 nearly equal.
    px = dict(re.findall(r'class="seg-(\w+)" data-bytes="\d+"[^>]*data-px="(\d+)"', dom.split('data-device="cuda:0"')[1]))
    assert int(px["reachable"]) > 50 and abs(int(px["reachable"]) - int(px["cached"])) <= 2
    assert "546.00 MiB" in dom and "offload.py:14" in dom
