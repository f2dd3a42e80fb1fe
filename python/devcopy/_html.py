"""Report.to_html(): one self-contained page (no network, no script from
elsewhere): per device a bar of reachable, shared, duplicated, unreachable
and cached bytes; the findings with their locations; the copy routes."""
import html

from . import _C

_SEGMENTS = (  # key, label, colour
    ("reachable", "reachable", "#4e79a7"),
    ("shared", "shared (counted once)", "#76b7b2"),
    ("duplicated", "duplicated", "#e15759"),
    ("unreachable", "unreachable", "#f28e2b"),
    ("cached", "cached, unused", "#bab0ac"),
)
_PART = {"reachable": "reachable, not shared or duplicated"}  # its segment, not its figure

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:70em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
.bar{display:flex;height:1.6em;border:1px solid #999;border-radius:3px;overflow:hidden;margin:.3em 0}
.bar span{display:block;height:100%}
.legend span{display:inline-block;margin-right:1.2em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;
text-align:left;vertical-align:top}td.n{text-align:right;white-space:nowrap}
.kind{font-family:monospace;white-space:nowrap}.details{color:#555;font-size:.92em;white-space:pre-wrap}
.none{color:#2a7a2a}
"""


def _e(x):
    return html.escape(str(x), quote=True)


def device_figures(report):
    """Bytes per device and segment, as the legend gives them: "reachable"
    is the text report's figure (each storage once), of which "shared" and
    "duplicated" are parts."""
    figs = {}

    def dev(name):
        return figs.setdefault(name, {k: 0 for k, _, _ in _SEGMENTS})

    for d in report.devices:
        f = dev(d.device)
        f["reachable"] = d.reachable_bytes
        f["cached"] = max(d.reserved_unused_bytes, 0)
    for s in report.shared:
        dev(s.device)["shared"] += s.bytes
    for f in report.findings:
        if not f.devices:
            continue
        if f.kind == "duplicate-storage":
            # The copies live beside the first storage: on the other devices.
            targets = f.devices[1:] or f.devices[:1]
            for t in targets:
                dev(t)["duplicated"] += f.bytes // len(targets)
        elif f.kind == "unreachable-allocation":
            dev(f.devices[0])["unreachable"] += f.bytes
    return figs


def _drawn(f):
    """The bar's segments: shared and duplicated bytes drawn out of the
    reachable ones, so the bar's length is what the device holds."""
    drawn = dict(f)
    drawn["reachable"] = max(f["reachable"] - f["shared"] - f["duplicated"], 0)
    return drawn


def _bars(report):
    out = []
    for name, f in device_figures(report).items():
        d = _drawn(f)
        total = sum(d.values()) or 1
        spans = "".join(
            f'<span class="seg-{k}" data-bytes="{d[k]}" title="{_e(_PART.get(k, label))}: '
            f'{_e(_C.format_bytes(d[k]))}" style="width:{100.0 * d[k] / total:.3f}%;background:{colour}"></span>'
            for k, label, colour in _SEGMENTS if d[k] > 0)
        legend = "".join(
            f'<span><i style="background:{colour}"></i>{_e(label)} '
            f'<b class="fig-{k}">{_e(_C.format_bytes(f[k]))}</b></span>'
            for k, label, colour in _SEGMENTS)
        out.append(f'<div class="device" data-device="{_e(name)}"><h3>{_e(name)}</h3>'
                   f'<div class="bar">{spans}</div><div class="legend">{legend}</div></div>')
    return "".join(out) or '<p class="none">no device memory was inspected</p>'


def _findings(report):
    rows = []
    for f in report.findings:
        where = f.location or f.module or ", ".join(f.tensors[:3])
        details = "\n".join(f.details)
        rows.append(f'<tr class="finding" data-kind="{_e(f.kind)}" data-bytes="{f.bytes}">'
                    f'<td class="kind">{_e(f.kind)}</td><td class="n">{_e(_C.format_bytes(f.bytes))}</td>'
                    f'<td class="where">{_e(where)}</td><td>{_e(f.message)}'
                    f'{"<div class=details>" + _e(details) + "</div>" if details else ""}</td></tr>')
    if not rows:
        return '<p class="none">no findings</p>'
    return ("<table><tr><th>rule</th><th>bytes</th><th>where</th><th>what</th></tr>"
            + "".join(rows) + "</table>")


def _routes(report):
    rows = [f'<tr class="route"><td>{_e(c.src_device)} &rarr; {_e(c.dst_device)}</td><td>{_e(c.dtype)}</td>'
            f'<td class="n">{c.count}</td><td class="n" data-bytes="{c.bytes}">{_e(_C.format_bytes(c.bytes))}</td></tr>'
            for c in report.copies]
    if not rows:
        return '<p class="none">no copies observed</p>'
    syncs = f"<p>device-to-host synchronisations: <b class='syncs'>{report.host_syncs}</b></p>"
    return ("<table><tr><th>route</th><th>dtype</th><th>copies</th><th>bytes</th></tr>"
            + "".join(rows) + "</table>" + syncs)


def fragment(report):
    """The report's body, for notebooks (_repr_html_)."""
    n = len(report.findings)
    return (f'<div class="devcopy"><p><b>{n}</b> finding{"s" if n != 1 else ""}, '
            f'<b class="wasted">{_e(_C.format_bytes(report.wasted_bytes))}</b> wasted</p>'
            f"<h2>Memory by device</h2>{_bars(report)}<h2>Findings</h2>{_findings(report)}"
            f"<h2>Copies</h2>{_routes(report)}</div>")


# Records each bar segment's drawn width (data-px): the page's own check
# that it rendered, read by the headless-browser test. Inline, no network.
_SCRIPT = """
for (const s of document.querySelectorAll('.bar span'))
  s.dataset.px = Math.round(s.getBoundingClientRect().width);
document.body.dataset.rendered = 'yes';
"""


def page(report, title="devcopy report"):
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>{fragment(report)}"
            f"<script>{_SCRIPT}</script></body></html>\n")
