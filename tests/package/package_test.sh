#!/usr/bin/env bash
# Builds the Debian package from a finished build, unpacks it into a scratch
# prefix (dpkg-deb -x, as apt would lay it out) and runs every tool from there.
#   package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$tmp"/out/devcopy_*.deb) || fail "no devcopy_*.deb produced"
info=$(dpkg-deb -I "$deb")
echo "$info" | sed -n '/Package:/,$p'
depends=$(echo "$info" | sed -n 's/^ Depends: //p')
for dep in libtorch1.13 libclang-cpp19 libllvm19; do
  [[ $depends == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
done

dpkg-deb -x "$deb" "$tmp/root"
usr=$tmp/root/usr
for tool in devcopy devcopy-tidy devcopy-clangd; do
  [[ -x $usr/bin/$tool ]] || fail "bin/$tool is not in the package"
done
[[ -f $usr/lib/devcopy/libdevcopy-tidy-plugin.so ]] || fail "the plugin is not in lib/devcopy/"
[[ -f $usr/share/doc/devcopy/rules/devcopy-discarded-copy.md ]] || fail "rule pages are missing"
[[ -f $usr/lib/cmake/devcopy/devcopyConfig.cmake ]] || fail "the probe's CMake package is missing"

"$usr/bin/devcopy" --version | grep -q "devcopy" || fail "devcopy --version"
"$usr/bin/devcopy-clangd" --version | grep -q "clangd version 19" || fail "devcopy-clangd --version"

# Each installed front end must find the checks and flag the same fixture.
fixture=$tmp/discard.cpp
cat >"$fixture" <<'CPP'
#include <torch/torch.h>
void offload(torch::Tensor x) { x.to(torch::kCPU); }
CPP
args=(-- -std=c++17 -I "$src/tests/analyzer/mock")
out=$("$usr/bin/devcopy-tidy" --checks='-*,devcopy-*' "$fixture" "${args[@]}" 2>&1 || true)
grep -q "warning: .*\[devcopy-discarded-copy\]" <<<"$out" || { echo "$out"; fail "devcopy-tidy found nothing"; }
out=$(clang-tidy-19 --load="$usr/lib/devcopy/libdevcopy-tidy-plugin.so" --checks='-*,devcopy-*' \
      "$fixture" "${args[@]}" 2>&1 || true)
grep -q "warning: .*\[devcopy-discarded-copy\]" <<<"$out" || { echo "$out"; fail "the plugin found nothing"; }
echo "PASS: $(basename "$deb") installs every tool, the plugin, the rule pages and the probe"
