"""Report.to_html() and `python -m devcopy report --html`: the figures, and
the page as headless Chromium renders it (skipped without chromium)."""
import json
import os
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


def dump_dom(page, tmp_path):
    """Headless Chromium's DOM of `page` after its scripts ran, and its log."""
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                           "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs it)")
def test_chromium_renders_the_figures_without_console_errors(saved, tmp_path):
    out = tmp_path / "page.html"
    assert run_cli("report", "--html", str(saved), "-o", str(out)).returncode == 0
    r = dump_dom(out, tmp_path)
    dom = r.stdout
    assert 'data-rendered="yes"' in dom, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    # Drawn widths follow the bytes: cached (546) and reachable (544) on cuda:0 nearly equal.
    px = dict(re.findall(r'class="seg-(\w+)" data-bytes="\d+"[^>]*data-px="(\d+)"', dom.split('data-device="cuda:0"')[1]))
    assert int(px["reachable"]) > 50 and abs(int(px["reachable"]) - int(px["cached"])) <= 2
    assert "546.00 MiB" in dom and "offload.py:14" in dom


GiB = 1 << 30


def _where(file="", line=0, function=""):
    return {"file": file, "line": line, "function": function}


# An observer's report of the LoRA seed, as the H200 gives it (figures
# rounded): the peak during torch.load, its parts, a new segment.
OBSERVED = {
    "findings": [
        {"kind": "transient-device-copy", "bytes": 4 * GiB, "devices": ["cpu", "cuda:0"],
         "message": "aten::copy_ copied 4.00 GiB from cpu to a temporary on cuda:0 that was only copied "
                    "into a float tensor there and then freed", "tensors": [], "op": "aten::copy_",
         "module": "", "details": [], "file": "seeds.py", "line": 98, "function": "__init__", "count": 130},
    ],
    "copies": [{"src_device": "cpu", "dst_device": "cuda:0", "dtype": "float", "count": 130, "bytes": 4 * GiB}],
    "timelines": [{
        "device": "cuda:0", "peak_bytes": 8 * GiB + 200 * MiB, "peak_reserved": 8 * GiB + 330 * MiB,
        "peak_time_ns": 3_000_000_000, "peak_where": _where("seeds.py", 98, "__init__"),
        "explained_by": "transient-device-copy",
        "explanation": "peak 8.20 GiB on cuda:0 during seeds.py:98 in __init__: 4.10 GiB parameters moved at "
                       "seeds.py:72 in __init__, 4.00 GiB checkpoint temporaries from seeds.py:98 in __init__; "
                       "fix: torch.load(f, map_location='cpu') (or mmap=True), or move the model to the device "
                       "after loading",
        "parts": [
            {"owner": "parameters", "bytes": 4 * GiB + 100 * MiB, "blocks": 128, **_where("seeds.py", 72, "__init__")},
            {"owner": "checkpoint temporaries", "bytes": 4 * GiB, "blocks": 129, **_where("seeds.py", 98, "__init__")},
            {"owner": "other", "bytes": 100 * MiB, "blocks": 3, **_where()},
        ],
        "misses": [{"time_ns": 3_500_000_000, "requested": 2 * GiB, "segment": 2 * GiB, "cached_free": 3 * GiB,
                    "largest_free_block": 256 * MiB, **_where("seeds.py", 120, "reserve")}],
        "marks": [{"time_ns": 2_000_000_000 + i * 10_000_000, "ordinal": i + 1, "bytes": 32 * MiB,
                   "route": "cpu -> cuda:0", **_where("seeds.py", 98, "__init__")} for i in range(5)],
        "samples": [[0, 0, 0], [1_000_000_000, 4 * GiB, 4 * GiB], [2_000_000_000, 6 * GiB, 6 * GiB],
                    [3_000_000_000, 8 * GiB + 200 * MiB, 8 * GiB + 330 * MiB],
                    [4_000_000_000, 4 * GiB + 200 * MiB, 8 * GiB + 330 * MiB]],
    }],
    "host_syncs": 0,
}

SARIF = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "devcopy"}}, "results": [
    {"ruleId": "devcopy-copy-in-loop", "level": "warning", "message": {"text": "x.to(kCUDA) copies each iteration"},
     "locations": [{"physicalLocation": {"artifactLocation": {"uri": "src/train.cpp"}, "region": {"startLine": 42}}}]},
]}]}


def test_timeline_roundtrips_through_json():
    report = devcopy.Report.from_json(json.dumps(OBSERVED))
    (t,) = report.timelines
    assert t.peak_bytes == 8 * GiB + 200 * MiB and t.owned("checkpoint temporaries") == 4 * GiB
    again = json.loads(report.to_json())["timelines"][0]
    assert again["parts"] == OBSERVED["timelines"][0]["parts"]
    assert again["samples"] == OBSERVED["timelines"][0]["samples"]
    assert again["misses"] == OBSERVED["timelines"][0]["misses"]
    text = str(report)
    assert "devcopy: peak 8.20 GiB on cuda:0 during seeds.py:98 in __init__" in text
    assert "4.10 GiB parameters allocated at seeds.py:72 in __init__" in text
    assert "a request of 2.00 GiB at seeds.py:120 in reserve made a new segment" in text


def test_page_explains_the_peak_and_merges_a_static_run(tmp_path):
    saved, sarif = tmp_path / "observed.json", tmp_path / "static.sarif"
    saved.write_text(json.dumps(OBSERVED))
    sarif.write_text(json.dumps(SARIF))
    out = tmp_path / "page.html"
    r = run_cli("report", "--html", str(saved), str(sarif), "-o", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert "http" not in page  # self-contained: nothing fetched
    svg = re.search(r'<svg class="timeline" data-device="cuda:0".*?</svg>', page, re.S).group(0)
    assert svg.count('class="mark-copy"') == 5 and svg.count('class="mark-finding"') == 1
    assert "<title>peak 8.20 GiB during seeds.py:98 in __init__</title>" in svg
    assert 'class="allocated"' in svg and 'class="reserved"' in svg
    parts = re.findall(r'<tr class="part" data-owner="([^"]+)">.*?<td class="where">([^<]*)</td>', page)
    assert parts[:2] == [("parameters", "seeds.py:72 in __init__"),
                         ("checkpoint temporaries", "seeds.py:98 in __init__")]
    assert "map_location=&#x27;cpu&#x27;" in page and 'class="explain"' in page
    assert "largest free block <b>256.00 MiB</b>" in page
    rows = re.findall(r'<tr class="finding" data-kind="([^"]+)"[^>]*data-origin="(\w+)"', page)
    assert rows == [("transient-device-copy", "runtime"), ("devcopy-copy-in-loop", "static")]
    assert '<td class="where">src/train.cpp:42</td>' in page
    assert re.search(r'href="[^"]*/transient-device-copy\.md"', page)
    assert "no device memory was inspected" not in page  # the timeline shows it


def screenshot(html_path, png, height=1400):
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={png.parent / 'profile'}", "--hide-scrollbars",
                        f"--window-size=1200,{height}", f"--screenshot={png}", html_path.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert png.exists() and png.stat().st_size > 10_000, r.stderr[-2000:]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs it)")
def test_chromium_draws_the_timeline_and_sorts_the_findings(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(devcopy.Report.from_json(json.dumps(OBSERVED)).to_html(
        title="LoRA seed", static=[{"rule": "devcopy-copy-in-loop", "level": "warning", "file": "a.cpp",
                                    "line": 3, "message": "copied in a loop"}]))
    r = dump_dom(page, tmp_path)
    dom = r.stdout
    assert 'data-rendered="yes"' in dom, r.stderr[-2000:]
    assert [line for line in r.stderr.splitlines() if "Uncaught" in line] == []
    assert '<div class="filters">' in dom  # the script showed the filters
    png = tmp_path / "lora.png"
    screenshot(page, png)
    keep = os.environ.get("DEVCOPY_SCREENSHOT_DIR")
    if keep:
        shutil.copy(png, keep)
