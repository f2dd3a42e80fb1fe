#!/usr/bin/env bash
# Builds the three Debian packages from a finished build into BUILD_DIR/packages,
# unpacks each into a scratch root of its own (dpkg-deb -x, as apt would lay it
# out) and uses it from there: the tools on a file, a find_package(devcopy)
# consumer against the probe package, `import devcopy` from the Python one.
#   package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")
out=$build/packages
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack -G DEB failed"; }
version=$(cat "$src/VERSION")

# unpack NAME: checks the package's name, version, copyright; sets $root, $depends.
unpack() {
  local name=$1 deb
  deb=$out/${name}_${version}_amd64.deb
  [[ -f $deb ]] || fail "no $(basename "$deb") in $out: $(ls "$out")"
  [[ $(dpkg-deb -f "$deb" Package) == "$name" ]] || fail "$deb: wrong Package field"
  [[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "$deb: version is not VERSION's $version"
  depends=$(dpkg-deb -f "$deb" Depends)
  echo "$name: $(stat -c %s "$deb") bytes, Installed-Size $(dpkg-deb -f "$deb" Installed-Size) KiB"
  echo "  Depends: $depends"
  root=$tmp/$name
  dpkg-deb -x "$deb" "$root"
  grep -q "Apache-2.0 WITH LLVM-exception" "$root/usr/share/doc/$name/copyright" 2>/dev/null ||
    fail "$name has no /usr/share/doc/$name/copyright naming its license"
}
# lacks PATTERN TEXT WHAT: fails when TEXT matches PATTERN.
lacks() { if grep -Eq "$1" <<<"$2"; then fail "$3"; fi; }

# devcopy: the tools, the plugin, the rule pages and the docs; no LibTorch.
unpack devcopy
for dep in libclang-cpp19 libllvm19; do
  [[ $depends == *"$dep"* ]] || fail "devcopy's Depends lacks $dep: $depends"
done
lacks 'torch' "$depends" "devcopy depends on LibTorch, which none of its tools links: $depends"
usr=$root/usr
for tool in devcopy devcopy-tidy devcopy-clangd; do
  [[ -x $usr/bin/$tool ]] || fail "bin/$tool is not in the package"
  grep -q "devcopy version $version" <<<"$("$usr/bin/$tool" --version)" || fail "$tool --version lacks $version"
done
[[ -f $usr/lib/devcopy/libdevcopy-tidy-plugin.so ]] || fail "the plugin is not in lib/devcopy/"
[[ -f $usr/share/doc/devcopy/rules/devcopy-discarded-copy.md ]] || fail "rule pages are missing"
lacks 'include/|cmake/|python3' "$(cd "$root" && find . -type f)" "devcopy holds the probe's or Python's files"
grep -q "clangd version 19" <<<"$("$usr/bin/devcopy-clangd" --version)" || fail "devcopy-clangd --version"
python3 "$src/tests/docs/check_links.py" "$usr/share/doc/devcopy" || fail "dead links in the installed pages"

# Each installed front end must find the checks and flag the same fixture.
fixture=$tmp/discard.cpp
cat >"$fixture" <<'CPP'
#include <torch/torch.h>
void offload(torch::Tensor x) { x.to(torch::kCPU); }
CPP
args=(-- -std=c++17 -I "$src/tests/analyzer/mock")
out_tidy=$("$usr/bin/devcopy-tidy" --checks='-*,devcopy-*' "$fixture" "${args[@]}" 2>&1 || true)
grep -q "warning: .*\[devcopy-discarded-copy\]" <<<"$out_tidy" || { echo "$out_tidy"; fail "devcopy-tidy found nothing"; }
out_plugin=$(clang-tidy-19 --load="$usr/lib/devcopy/libdevcopy-tidy-plugin.so" --checks='-*,devcopy-*' \
             "$fixture" "${args[@]}" 2>&1 || true)
grep -q "warning: .*\[devcopy-discarded-copy\]" <<<"$out_plugin" || { echo "$out_plugin"; fail "the plugin found nothing"; }
# The installed devcopy's SARIF links the installed rule pages, which exist.
mkdir -p "$tmp/db"
printf '[{"directory": "%s", "file": "%s", "arguments": ["clang++", "-std=c++17", "-I%s", "-c", "%s"]}]' \
  "$tmp" "$fixture" "$src/tests/analyzer/mock" "$fixture" >"$tmp/db/compile_commands.json"
rc=0
"$usr/bin/devcopy" analyze -p "$tmp/db" --no-cache --format sarif --output "$tmp/out.sarif" 2>"$tmp/err" || rc=$?
((rc == 1)) || { cat "$tmp/err"; fail "installed devcopy analyze: exit $rc, not 1"; }
python3 - "$tmp/out.sarif" "$root" <<'PY' || fail "helpUri of the installed tool"
import json, sys
from urllib.parse import unquote, urlparse
rules = json.load(open(sys.argv[1]))["runs"][0]["tool"]["driver"]["rules"]
for r in rules:
    u = urlparse(r["helpUri"])
    assert u.scheme == "file" and unquote(u.path).startswith(sys.argv[2] + "/usr/share/doc/devcopy/rules/"), r["helpUri"]
    open(unquote(u.path)).close()
PY

# libdevcopy-probe-dev: headers, static library, CMake package; LibTorch's dev package.
unpack libdevcopy-probe-dev
[[ $depends == *libtorch-dev* ]] || fail "libdevcopy-probe-dev's Depends lacks libtorch-dev: $depends"
for f in include/devcopy/probe.h include/devcopy/rules_catalog.h lib/libdevcopy_probe.a \
         lib/cmake/devcopy/devcopyConfig.cmake; do
  [[ -f $root/usr/$f ]] || fail "libdevcopy-probe-dev lacks usr/$f"
done
lacks 'bin/|python3' "$(cd "$root" && find . -type f)" "libdevcopy-probe-dev holds tools or Python files"
cmake -S "$src/tests/probe/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$root/usr" >"$tmp/consumer.log" 2>&1 &&
  cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "a find_package(devcopy) consumer does not build against the package"; }
"$tmp/consumer/consumer" >"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "the consumer failed"; }

# python3-devcopy: the package, its extension and the pytest entry point, on python3-torch.
if [[ -f $build/python/devcopy/__init__.py ]]; then
  unpack python3-devcopy
  [[ $depends == *python3-torch* ]] || fail "python3-devcopy's Depends lacks python3-torch: $depends"
  site=$root/usr/lib/python3/dist-packages
  (cd "$tmp" && PYTHONPATH=$site /usr/bin/python3 - "$site" "$version") <<'PY' || fail "the unpacked Python package"
import importlib.metadata as md, sys
import torch
import devcopy
assert devcopy.__file__.startswith(sys.argv[1]), devcopy.__file__
assert md.version("devcopy") == sys.argv[2], md.version("devcopy")
assert getattr(devcopy, "__version__", sys.argv[2]) == sys.argv[2], devcopy.__version__
assert [e.value for e in md.entry_points(group="pytest11") if e.name == "devcopy"] == ["devcopy.pytest_plugin"]
m = torch.nn.Module()
w = torch.randn(64, 64)
m.register_buffer("a", w)
m.register_buffer("b", w.clone())
kinds = [f.kind for f in devcopy.inspect(m).findings]
assert kinds == ["duplicate-storage"], kinds
PY
fi
echo "PASS: the packages install and work from scratch roots"
