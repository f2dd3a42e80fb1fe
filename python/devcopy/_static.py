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


def _field(obj, key, kind, default, where, path):
    """obj[key] when it is a `kind` (dict, list, str or int), `default` when
    absent or null; ValueError naming `where` otherwise."""
    value = obj.get(key)
    if value is None:
        return default
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        names = {dict: "an object", list: "a list", str: "a string", int: "an integer"}
        raise ValueError(f"devcopy: {path}: {where}.{key} is not {names[kind]}")
    return value


def _sarif_result(r, where, path):
    if not isinstance(r, dict):
        raise ValueError(f"devcopy: {path}: {where} is not an object")
    locations = _field(r, "locations", list, [], where, path)
    first = locations[0] if locations else {}
    if not isinstance(first, dict):
        raise ValueError(f"devcopy: {path}: {where}.locations[0] is not an object")
    loc = _field(first, "physicalLocation", dict, {}, f"{where}.locations[0]", path)
    at = f"{where}.locations[0].physicalLocation"
    return {"rule": _field(r, "ruleId", str, "?", where, path),
            "level": _field(r, "level", str, "warning", where, path),
            "file": _field(_field(loc, "artifactLocation", dict, {}, at, path), "uri", str, "",
                           f"{at}.artifactLocation", path),
            "line": _field(_field(loc, "region", dict, {}, at, path), "startLine", int, 0,
                           f"{at}.region", path),
            "message": _field(_field(r, "message", dict, {}, where, path), "text", str, "",
                              f"{where}.message", path)}


def static_findings(data, path="the document"):
    """The findings of a static run (`data`: parsed SARIF or JSON).

    Args:
        data: the parsed document.
        path: its name, for errors.

    Raises:
        ValueError: a field is not of its type; the message names it.
    """
    out = []
    if "runs" in data:
        for i, run in enumerate(_field(data, "runs", list, [], "the document", path)):
            if not isinstance(run, dict):
                raise ValueError(f"devcopy: {path}: runs[{i}] is not an object")
            for j, r in enumerate(_field(run, "results", list, [], f"runs[{i}]", path)):
                out.append(_sarif_result(r, f"runs[{i}].results[{j}]", path))
        return out
    for i, f in enumerate(data.get("findings", [])):
        where = f"findings[{i}]"
        out.append({"rule": _field(f, "rule", str, "?", where, path),
                    "level": _field(f, "level", str, "warning", where, path),
                    "file": _field(f, "file", str, "", where, path),
                    "line": _field(f, "line", int, 0, where, path),
                    "message": _field(f, "message", str, "", where, path)})
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
        return "static", static_findings(data, path)
    return "probe", data
