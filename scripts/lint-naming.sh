#!/usr/bin/env bash
# Fails when an identifier of the analyzer's sources breaks the naming of its
# layer (readability-identifier-naming, configured in analyzer/.clang-tidy:
# LLVM's CamelCase types, variables and members, camelBack functions; and in
# analyzer/cli/ and analyzer/clangd/, camelBack variables). Each finding is
# named by file and line.
#
#   bash scripts/lint-naming.sh [-p BUILD]     every analyzer/ source of BUILD's
#                                              compile_commands.json (default build;
#                                              configure with
#                                              -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
#   bash scripts/lint-naming.sh FILE...        these files, with analyzer/'s
#                                              configuration and no database
#
# JOBS (default 2) clang-tidy runs at a time; CLANG_TIDY, RUN_CLANG_TIDY pick
# the tools (clang-tidy-19, run-clang-tidy-19).
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=${CLANG_TIDY:-clang-tidy-19}
runner=${RUN_CLANG_TIDY:-run-clang-tidy-19}
build=build
if [[ ${1:-} == -p ]]; then
  build=${2:?lint-naming: -p needs a build folder}
  shift 2
fi
command -v "$tidy" >/dev/null || {
  echo "lint-naming: $tidy not found (scripts/setup.sh installs it)" >&2
  exit 2
}
if (($#)); then
  exec "$tidy" --quiet --config-file="$PWD/analyzer/.clang-tidy" "$@" -- -std=c++17
fi
command -v "$runner" >/dev/null || {
  echo "lint-naming: $runner not found (clang-tidy-19's package installs it)" >&2
  exit 2
}
[[ -f $build/compile_commands.json ]] || {
  echo "lint-naming: $build/compile_commands.json not found (configure with" \
    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON, or pass -p BUILD)" >&2
  exit 2
}
# run-clang-tidy prints every command and exits non-zero when one fails;
# keep the findings only.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$runner" -clang-tidy-binary "$(command -v "$tidy")" -p "$build" -j "${JOBS:-2}" \
  -quiet -header-filter="$PWD/analyzer/.*" "$PWD/analyzer/.*\.cpp\$" >"$out" 2>&1 || rc=$?
grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning):' "$out" | sort -u || true
if ((rc)); then
  grep -q ': error:' "$out" || tail -20 "$out" >&2
  echo "lint-naming: identifiers that break analyzer/'s naming (see above)" >&2
  exit 1
fi
