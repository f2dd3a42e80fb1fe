"""Report.to_html(): one self-contained page (nothing fetched, no script
from elsewhere). Per device: memory over the observed block as an inline
SVG (allocated and reserved, copies and findings as marks, the peak
annotated; hover for the line), the peak's parts by owner and line and the
finding that explains it, and a bar of reachable, shared, duplicated,
unreachable and cached bytes. Then every finding (runtime and, merged, a
static run's) with its source line and a link to its rule page, sortable and
filterable by a small inline script; the essentials read without it."""
import html
import os

from . import _C

_SEGMENTS = (  # key, label, colour
    ("reachable", "reachable", "#4e79a7"),
    ("shared", "shared (counted once)", "#76b7b2"),
    ("duplicated", "duplicated", "#e15759"),
    ("unreachable", "unreachable", "#f28e2b"),
    ("cached", "cached, unused", "#bab0ac"),
)
_PART = {"reachable": "reachable, not shared or duplicated"}  # its segment, not its figure
_OWNERS = {  # owner -> colour, in the breakdown's bar
    "parameters": "#4e79a7", "gradients": "#59a14f", "optimizer state": "#edc948",
    "buffers": "#76b7b2", "checkpoint temporaries": "#e15759", "copies": "#f28e2b",
    "other": "#bab0ac",
}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:74em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1.02em;margin:.8em 0 .3em}
.bar{display:flex;height:1.6em;border:1px solid #999;border-radius:3px;overflow:hidden;margin:.3em 0}
.bar span{display:block;height:100%}
.legend span{display:inline-block;margin-right:1.2em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;
text-align:left;vertical-align:top}td.n{text-align:right;white-space:nowrap}
th[data-sort]{cursor:pointer}th[data-sort]:after{content:" \\2195";color:#999}
.kind{font-family:monospace;white-space:nowrap}.details{color:#555;font-size:.92em;white-space:pre-wrap}
.where{font-family:monospace;font-size:.92em}
.none{color:#2a7a2a}.explain{background:#fff4e5;border-left:4px solid #e15759;padding:.5em .8em}
.miss{background:#eef3fb;border-left:4px solid #4e79a7;padding:.5em .8em}
svg.timeline{width:100%;height:auto;border:1px solid #ddd;background:#fcfcfc}
.filters{margin:.4em 0}.filters input,.filters select{font:inherit;margin-right:.6em}
.origin{color:#666;font-size:.9em}
"""


def _e(x):
    return html.escape(str(x), quote=True)


def _b(n):
    return _C.format_bytes(int(n))


def _loc(w):
    """'file:line in function' for a SourceLocation ('' when unknown)."""
    if not (w.file or w.function):
        return ""
    text = w.file or "<no debug info>"
    if w.line:
        text += f":{w.line}"
    return text + (f" in {w.function}" if w.function else "")


def rule_docs():
    """Where the rule pages are: DEVCOPY_RULE_DOCS, else this checkout's
    rules/ directory, else the installed pages."""
    env = os.environ.get("DEVCOPY_RULE_DOCS")
    if env:
        return env.rstrip("/")
    here = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "rules"))
    if os.path.isdir(here):
        return "file://" + here
    return "share/doc/devcopy/rules"


def _rule(kind, docs):
    return f'<a class="kind" href="{_e(docs)}/{_e(kind)}.md">{_e(kind)}</a>'


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
            f'{_e(_b(d[k]))}" style="width:{100.0 * d[k] / total:.3f}%;background:{colour}"></span>'
            for k, label, colour in _SEGMENTS if d[k] > 0)
        legend = "".join(
            f'<span><i style="background:{colour}"></i>{_e(label)} '
            f'<b class="fig-{k}">{_e(_b(f[k]))}</b></span>'
            for k, label, colour in _SEGMENTS)
        out.append(f'<div class="device" data-device="{_e(name)}"><h3>{_e(name)}</h3>'
                   f'<div class="bar">{spans}</div><div class="legend">{legend}</div></div>')
    if out:
        return "<h2>Memory by device</h2>" + "".join(out)
    return "" if report.timelines else '<p class="none">no device memory was inspected</p>'


def _svg(t, findings):
    """Allocated and reserved over time; copies (ticks) and findings
    (triangles) as marks; the peak annotated. Titles are the hover text."""
    W, H, L, R, T, B = 900, 230, 80, 12, 16, 34
    samples = list(t.samples)
    end = max([s.time_ns for s in samples] + [m.time_ns for m in t.marks] + [t.peak_time_ns, 1])
    top = max([s.reserved for s in samples] + [s.allocated for s in samples] + [t.peak_bytes, 1])

    def x(ns):
        return L + (W - L - R) * ns / end

    def y(v):
        return T + (H - T - B) * (1 - v / top)

    def line(key, colour, label):
        pts, prev = [], None
        for s in samples:
            v = getattr(s, key)
            if prev is not None:
                pts.append(f"{x(s.time_ns):.1f},{y(prev):.1f}")  # steps
            pts.append(f"{x(s.time_ns):.1f},{y(v):.1f}")
            prev = v
        return (f'<polyline class="{key}" fill="none" stroke="{colour}" stroke-width="2" '
                f'points="{" ".join(pts)}"><title>{_e(label)}</title></polyline>')

    parts = [f'<svg class="timeline" data-device="{_e(t.device)}" viewBox="0 0 {W} {H}" '
             'role="img">',
             f"<title>{_e(t.device)}: allocated and reserved memory over the observed block</title>"]
    for frac in (0, 0.5, 1):
        v = top * frac
        parts.append(f'<line x1="{L}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e3e3"/>'
                     f'<text x="{L - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">'
                     f"{_e(_b(v))}</text>")
    parts.append(f'<text x="{W - R}" y="{H - 6}" font-size="11" text-anchor="end">'
                 f"{end / 1e9:.3f} s</text><text x=\"{L}\" y=\"{H - 6}\" font-size=\"11\">0 s</text>")
    parts.append(line("reserved", "#bab0ac", "reserved"))
    parts.append(line("allocated", "#4e79a7", "allocated"))
    by_line = {}
    for m in t.marks:
        by_line.setdefault(f"{m.where.file}:{m.where.line}", m)
        where = _loc(m.where)
        parts.append(f'<line class="mark-copy" x1="{x(m.time_ns):.1f}" x2="{x(m.time_ns):.1f}" '
                     f'y1="{H - B}" y2="{H - B + 7}" stroke="#f28e2b" stroke-width="2">'
                     f"<title>copy {_e(m.route)}, {_e(_b(m.bytes))}{' at ' + _e(where) if where else ''}"
                     f"</title></line>")
    for f in findings:
        m = by_line.get(f.location)
        if m is None:
            continue
        cx = x(m.time_ns)
        parts.append(f'<path class="mark-finding" d="M{cx:.1f},{H - B + 8} l-5,9 h10 z" fill="#e15759">'
                     f"<title>{_e(f.kind)}: {_e(f.message)}</title></path>")
    px, py = x(t.peak_time_ns), y(t.peak_bytes)
    where = _loc(t.peak_where)
    anchor = "end" if px > W / 2 else "start"
    dx = -8 if anchor == "end" else 8
    parts.append(f'<circle class="peak" cx="{px:.1f}" cy="{py:.1f}" r="5" fill="#e15759">'
                 f"<title>peak {_e(_b(t.peak_bytes))}{' during ' + _e(where) if where else ''}</title></circle>"
                 f'<text x="{px + dx:.1f}" y="{max(py - 6, 12):.1f}" font-size="12" text-anchor="{anchor}" '
                 f'font-weight="bold">peak {_e(_b(t.peak_bytes))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _breakdown(t, docs):
    total = max(t.peak_bytes, 1)
    owners = {}
    for p in t.parts:
        owners[p.owner] = owners.get(p.owner, 0) + p.bytes
    spans = "".join(f'<span class="owner" data-owner="{_e(o)}" data-bytes="{b}" '
                    f'title="{_e(o)}: {_e(_b(b))}" style="width:{100.0 * b / total:.3f}%;'
                    f'background:{_OWNERS.get(o, "#999")}"></span>' for o, b in owners.items())
    legend = "".join(f'<span><i style="background:{_OWNERS.get(o, "#999")}"></i>{_e(o)} <b>{_e(_b(b))}</b></span>'
                     for o, b in owners.items())
    rows = "".join(f'<tr class="part" data-owner="{_e(p.owner)}"><td>{_e(p.owner)}</td>'
                   f'<td class="n" data-v="{p.bytes}">{_e(_b(p.bytes))}</td><td class="n">{p.blocks}</td>'
                   f'<td class="where">{_e(_loc(p.where))}</td></tr>' for p in t.parts[:12])
    explain = ""
    if t.explanation:
        by = f"{_rule(t.explained_by, docs)}: " if t.explained_by else ""
        explain = f'<p class="explain">{by}{_e(t.explanation)}</p>'
    misses = "".join(
        f'<p class="miss">a request of <b>{_e(_b(m.requested))}</b>'
        f'{" at <span class=where>" + _e(_loc(m.where)) + "</span>" if _loc(m.where) else ""} made a new '
        f"segment of {_e(_b(m.segment))} although <b>{_e(_b(m.cached_free))}</b> were cached unused "
        f"(largest free block <b>{_e(_b(m.largest_free_block))}</b>): the cached blocks were too small "
        "for it; allocate the large block first, or set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True</p>" for m in t.misses)
    return (f'{explain}<div class="bar peakbar">{spans}</div><div class="legend">{legend}</div>'
            '<table class="parts"><tr><th>live at the peak</th><th>bytes</th><th>blocks</th>'
            f"<th>allocated at</th></tr>{rows}</table>{misses}")


def _timelines(report, docs):
    out = []
    for t in report.timelines:
        where = _loc(t.peak_where)
        out.append(f'<section class="timeline-device" data-device="{_e(t.device)}">'
                   f"<h3>{_e(t.device)}: peak <b class='peak-bytes' data-bytes='{t.peak_bytes}'>"
                   f"{_e(_b(t.peak_bytes))}</b>{' during <span class=where>' + _e(where) + '</span>' if where else ''}"
                   f" (reserved {_e(_b(t.peak_reserved))})</h3>"
                   f"{_svg(t, report.findings)}{_breakdown(t, docs)}</section>")
    return ("<h2>Memory over time</h2>" + "".join(out)) if out else ""


def _rows(report, static, docs):
    rows = []
    for f in report.findings:
        where = f.location or f.module or ", ".join(f.tensors[:3])
        details = "\n".join(f.details)
        rows.append((f.kind, f.bytes, where, f.message, details, "runtime"))
    for s in static or ():
        rows.append((s["rule"], 0, f"{s['file']}:{s['line']}", s["message"], "", "static"))
    out = []
    for kind, nbytes, where, message, details, origin in rows:
        out.append(f'<tr class="finding" data-kind="{_e(kind)}" data-bytes="{nbytes}" data-origin="{origin}">'
                   f"<td>{_rule(kind, docs)}<div class=origin>{origin}</div></td>"
                   f'<td class="n" data-v="{nbytes}">{_e(_b(nbytes)) if nbytes else ""}</td>'
                   f'<td class="where">{_e(where)}</td><td>{_e(message)}'
                   f'{"<div class=details>" + _e(details) + "</div>" if details else ""}</td></tr>')
    return out, sorted({r[0] for r in rows})


def _findings(report, static, docs):
    rows, kinds = _rows(report, static, docs)
    if not rows:
        return '<p class="none">no findings</p>'
    options = "".join(f'<option value="{_e(k)}">{_e(k)}</option>' for k in kinds)
    return ('<div class="filters" hidden><input id="q" type="search" placeholder="filter: text or file">'
            f'<select id="kind"><option value="">every rule</option>{options}</select></div>'
            '<table class="findings"><thead><tr><th data-sort="text">rule</th><th data-sort="num">bytes</th>'
            '<th data-sort="text">where</th><th>what</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _routes(report):
    rows = [f'<tr class="route"><td>{_e(c.src_device)} &rarr; {_e(c.dst_device)}</td><td>{_e(c.dtype)}</td>'
            f'<td class="n">{c.count}</td><td class="n" data-bytes="{c.bytes}">{_e(_b(c.bytes))}</td></tr>'
            for c in report.copies]
    if not rows:
        return '<p class="none">no copies observed</p>'
    syncs = f"<p>device-to-host synchronisations: <b class='syncs'>{report.host_syncs}</b></p>"
    return ("<table><tr><th>route</th><th>dtype</th><th>copies</th><th>bytes</th></tr>"
            + "".join(rows) + "</table>" + syncs)


def fragment(report, static=None, docs=None):
    """The report's body, for notebooks (_repr_html_) and page()."""
    docs = docs or rule_docs()
    n = len(report.findings) + len(static or ())
    return (f'<div class="devcopy"><p><b>{n}</b> finding{"s" if n != 1 else ""}, '
            f'<b class="wasted">{_e(_b(report.wasted_bytes))}</b> wasted</p>'
            f"{_timelines(report, docs)}{_bars(report)}<h2>Findings</h2>{_findings(report, static, docs)}"
            f"<h2>Copies</h2>{_routes(report)}</div>")


# Sorting and filtering the findings, and each bar segment's drawn width
# (data-px: the page's own check that it rendered, read by the headless
# browser test). Inline, no network; without it the page reads the same.
_SCRIPT = """
for (const s of document.querySelectorAll('.bar span'))
  s.dataset.px = Math.round(s.getBoundingClientRect().width);
const table = document.querySelector('table.findings');
if (table) {
  const body = table.tBodies[0], q = document.getElementById('q'), kind = document.getElementById('kind');
  document.querySelector('.filters').hidden = false;
  const filter = () => {
    const text = q.value.toLowerCase();
    for (const r of body.rows)
      r.hidden = (kind.value && r.dataset.kind !== kind.value) ||
                 (text && !r.textContent.toLowerCase().includes(text));
  };
  q.addEventListener('input', filter);
  kind.addEventListener('change', filter);
  table.querySelectorAll('th[data-sort]').forEach((th, col) => {
    let up = false;
    th.addEventListener('click', () => {
      up = !up;
      const key = r => th.dataset.sort === 'num' ? Number(r.cells[col].dataset.v || 0)
                                                 : r.cells[col].textContent;
      const rows = [...body.rows].sort((a, b) => (key(a) > key(b) ? 1 : key(a) < key(b) ? -1 : 0) * (up ? 1 : -1));
      rows.forEach(r => body.appendChild(r));
    });
  });
}
document.body.dataset.rendered = 'yes';
"""


def page(report, title="devcopy report", static=None, docs=None):
    """One self-contained HTML page; `static` lists a static run's findings
    (dicts with rule, file, line, message: see devcopy._static)."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>{fragment(report, static, docs)}"
            f"<script>{_SCRIPT}</script></body></html>\n")
