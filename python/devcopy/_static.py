"""A static run's findings for the HTML page: SARIF (`devcopy analyze
--format sarif`) or devcopy's JSON (`devcopy analyze --format json`, `python
-m devcopy lint`), as dicts with rule, level, file, line, message."""
import json


def is_static(data):
    """True for SARIF or a static devcopy JSON document (not a probe report)."""
    if not isinstance(data, dict):
        return False
    if "runs" in data and str(data.get("version", "")).startswith("2"):
        return True
    findings = data.get("findings")
    return isinstance(findings, list) and data.get("tool") == "devcopy" and \
        all(isinstance(f, dict) and "rule" in f for f in findings)


def static_findings(data, path="the document"):
    """The findings of a static run (`data`: parsed SARIF or JSON).

    Args:
        data: the parsed document.
        path: its name, for errors.
    """
    out = []
    if "runs" in data:
        for run in data.get("runs") or []:
            for r in run.get("results") or []:
                loc = ((r.get("locations") or [{}])[0]).get("physicalLocation", {})
                out.append({"rule": r.get("ruleId", "?"), "level": r.get("level", "warning"),
                            "file": loc.get("artifactLocation", {}).get("uri", ""),
                            "line": int(loc.get("region", {}).get("startLine", 0)),
                            "message": (r.get("message") or {}).get("text", "")})
        return out
    for f in data.get("findings", []):
        out.append({"rule": f["rule"], "level": f.get("level", "warning"), "file": f.get("file", ""),
                    "line": int(f.get("line", 0)), "message": f.get("message", "")})
    return out


def load(text, path):
    """Parses `text` (from `path`): ('static', findings) or ('probe', data)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"devcopy: not a devcopy JSON report ({e})") from None
    except RecursionError:
        raise ValueError("devcopy: nested too deeply to be a devcopy report") from None
    if is_static(data):
        try:
            return "static", static_findings(data, path)
        except (AttributeError, TypeError, ValueError, IndexError) as e:
            raise ValueError(f"devcopy: not a SARIF or devcopy JSON report ({type(e).__name__}: {e})") \
                from None
    return "probe", data
