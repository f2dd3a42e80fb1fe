"""The package's version and metadata, written where Python finds them: the
project's one VERSION file becomes devcopy/_version.py, and
pyproject.toml's entry points a devcopy-<version>.dist-info beside the
package, so importlib.metadata (and pytest's plugin discovery) finds a build
tree on sys.path as it finds an installed package.

    python3 write_metadata.py ROOT DEST   (CMake runs it; setup.py imports it)
"""
import re
import shutil
import sys
from pathlib import Path


def version(root):
    """The project's version: the first line of ROOT/VERSION."""
    text = (Path(root) / "VERSION").read_text(encoding="utf-8").strip()
    if not re.fullmatch(r"\d+(\.\d+)*([.-]?\w+)?", text):
        raise ValueError(f"{Path(root) / 'VERSION'}: not a version: {text!r}")
    return text


def write_version_py(package_dir, ver):
    text = f'"""Written by the build from the project\'s VERSION file."""\n__version__ = "{ver}"\n'
    (Path(package_dir) / "_version.py").write_text(text, encoding="utf-8")


def _project(root):
    text = (Path(root) / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the few tables read here, by hand
        return _sections(text)
    return tomllib.loads(text)["project"]


def _sections(text):
    project, table = {"entry-points": {}}, None
    for line in text.splitlines():
        head = re.fullmatch(r"\s*\[project(?:\.entry-points\.([\w.-]+))?\]\s*", line)
        if head:
            table = project["entry-points"].setdefault(head[1], {}) if head[1] else project
            continue
        if line.strip().startswith("["):
            table = None
        kv = re.fullmatch(r'\s*"?([\w.-]+)"?\s*=\s*"([^"]*)"\s*', line)
        if table is not None and kv:
            table[kv[1]] = kv[2]
    return project


def write_dist_info(dest, root, ver):
    """DEST/devcopy-VER.dist-info with METADATA and entry_points.txt (and no
    other devcopy-*.dist-info left beside it)."""
    dest = Path(dest)
    info = dest / f"devcopy-{ver}.dist-info"
    for old in dest.glob("devcopy-*.dist-info"):
        if old != info:
            shutil.rmtree(old)
    info.mkdir(parents=True, exist_ok=True)
    project = _project(root)
    meta = ["Metadata-Version: 2.1", f"Name: {project.get('name', 'devcopy')}", f"Version: {ver}"]
    if project.get("description"):
        meta.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        meta.append(f"Requires-Python: {project['requires-python']}")
    (info / "METADATA").write_text("\n".join(meta) + "\n", encoding="utf-8")
    groups = []
    for group, points in sorted(project.get("entry-points", {}).items()):
        groups.append(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(points.items())))
    (info / "entry_points.txt").write_text("\n".join(groups), encoding="utf-8")
    (info / "INSTALLER").write_text("devcopy build tree\n", encoding="utf-8")


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: write_metadata.py ROOT DEST")
    root, dest = argv[1], argv[2]
    ver = version(root)
    write_version_py(Path(dest) / "devcopy", ver)
    write_dist_info(dest, root, ver)


if __name__ == "__main__":
    main(sys.argv)
