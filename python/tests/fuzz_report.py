"""A mutation fuzzer for the Python report reader: Report.from_json, the
static-report loader of `python -m devcopy report`, and what a read report
is then used for (text, JSON, HTML, merging). libFuzzer cannot drive Python
code here (no atheris in Debian), so this is a small one of its own: seeds
from a corpus folder, byte-level and JSON-level mutations, a fixed random
seed per run for reproducible failures.

Every input must give a Report or one of the errors the API documents:
ValueError or TypeError, one line, starting "devcopy:". A report that was
read must print, render, merge with itself and survive a JSON round trip
unchanged. A failing input is written to the artifact folder and the run
exits 1.

    python3 fuzz_report.py SECONDS CORPUS_DIR ARTIFACT_DIR [SEED]
"""
import json
import os
import random
import sys
import time
import traceback

from devcopy._report import Report
from devcopy._static import load

# Values a mutation may put anywhere: every JSON type, edges of each.
_ODD = [None, True, False, 0, -1, 1 << 63, -(1 << 63) - 1, 1.5, float("nan"), "", "x" * 300,
        "\u202e\x00", [], {}, [1], {"a": 1}, [[[[]]]], "cuda:0", "file.py:12"]


def _mutate_json(value, rng, depth=0):
    """`value` with one random change somewhere inside it."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.3:
            out[rng.choice(["findings", "copies", "devices", "timelines", "host_syncs", "shared",
                            "skipped", "events", "tool", "runs", "version", key + "_"])] = rng.choice(_ODD)
        else:
            out[key] = _mutate_json(value[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value and rng.random() < 0.8:
        out = list(value)
        i = rng.randrange(len(out))
        roll = rng.random()
        if roll < 0.15:
            del out[i]
        elif roll < 0.3:
            out.insert(i, rng.choice(out + _ODD))
        else:
            out[i] = _mutate_json(out[i], rng, depth + 1)
        return out
    return rng.choice(_ODD)


def _mutate_bytes(text, rng):
    data = bytearray(text.encode("utf-8"))
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        i = rng.randrange(len(data))
        roll = rng.random()
        if roll < 0.4:
            data[i] = rng.randrange(256)
        elif roll < 0.7:
            del data[i:i + rng.randint(1, 16)]
        else:
            j = rng.randrange(len(data))
            data[i:i] = data[j:j + rng.randint(1, 32)]
    return data.decode("utf-8", errors="replace")


def _mutant(seeds, rng):
    text = rng.choice(seeds)
    roll = rng.random()
    if roll < 0.05:
        return "[" * rng.randint(1000, 200000)  # nesting past any real report
    if roll < 0.5:
        try:
            return json.dumps(_mutate_json(json.loads(text), rng))
        except ValueError:
            pass
    return _mutate_bytes(text, rng)


class Failure(Exception):
    pass


def _expected_error(e):
    message = str(e)
    if not isinstance(e, (ValueError, TypeError)):
        raise Failure(f"raised {type(e).__name__} (not ValueError/TypeError): {message}")
    if not message.startswith("devcopy:") or "\n" in message:
        raise Failure(f"error is not one line starting 'devcopy:': {message!r}")


def check(text):
    """Raises Failure when `text` breaks a promise of the reader."""
    try:
        kind, _data = load(text, "fuzz.json")
    except Exception as e:  # noqa: B902 -- the point is to see what escapes
        _expected_error(e)
        return
    if kind == "static":
        return
    try:
        report = Report.from_json(text)
    except Exception as e:  # noqa: B902
        _expected_error(e)
        return
    try:
        saved = report.to_json()
        again = Report.from_json(saved)
        if again.to_json() != saved:
            raise Failure("a read report does not survive to_json/from_json unchanged")
        str(report)
        report.to_html()
        str(report.merged(report))
        [str(f) for f in report.findings]
    except Failure:
        raise
    except Exception as e:  # noqa: B902
        raise Failure(f"a report that was read fails to be used: {type(e).__name__}: {e}\n"
                      + traceback.format_exc())


def main(argv):
    seconds, corpus, artifacts = float(argv[1]), argv[2], argv[3]
    seed = int(argv[4]) if len(argv) > 4 else int(os.environ.get("DEVCOPY_FUZZ_SEED", "1"))
    seeds = []
    for name in sorted(os.listdir(corpus)):
        with open(os.path.join(corpus, name), encoding="utf-8") as f:
            seeds.append(f.read())
    if not seeds:
        print(f"fuzz_report: no seeds in {corpus}", file=sys.stderr)
        return 2
    rng = random.Random(seed)
    runs, end = 0, time.monotonic() + seconds
    for text in seeds:  # every seed must read
        if load(text, "seed")[0] == "probe":
            Report.from_json(text)
    while time.monotonic() < end:
        text = _mutant(seeds, rng)
        runs += 1
        try:
            check(text)
        except Failure as e:
            os.makedirs(artifacts, exist_ok=True)
            path = os.path.join(artifacts, f"crash-report-{seed}-{runs}.json")
            with open(path, "w", encoding="utf-8", errors="replace") as f:
                f.write(text)
            print(f"fuzz_report: input {runs} (seed {seed}) saved to {path}: {e}", file=sys.stderr)
            return 1
    print(f"fuzz_report: {runs} inputs in {seconds:.0f} s from {len(seeds)} seeds (seed {seed}), "
          f"0 failures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
