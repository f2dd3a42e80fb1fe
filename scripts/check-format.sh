#!/usr/bin/env bash
# Fails when a C++ source differs from the project's style (.clang-format:
# LLVM), naming each file and line. Fixtures and mock headers are exempt:
# their CHECK lines name columns, so they keep the layout they were written in.
#
#   bash scripts/check-format.sh              check every tracked source (ctest "format")
#   bash scripts/check-format.sh --fix        rewrite them in place
#   bash scripts/check-format.sh FILE...      check these files only
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format-19}
command -v "$fmt" >/dev/null || {
  echo "check-format: $fmt not found (scripts/setup.sh installs it)" >&2
  exit 2
}
fix=0
[[ ${1:-} == --fix ]] && { fix=1; shift; }
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cu' \
    ':!:tests/analyzer/fixtures/**' ':!:tests/analyzer/mock/**' ':!:tests/clangd/fixtures/**' \
    ':!:tests/cli/project/**' ':!:tests/cli/multi/**')
  ((${#files[@]})) || { echo "check-format: no C++ sources found (not a git checkout?)" >&2; exit 2; }
fi
if ((fix)); then
  "$fmt" --style=file:"$PWD/.clang-format" -i "${files[@]}"
else
  "$fmt" --style=file:"$PWD/.clang-format" --dry-run --Werror "${files[@]}"
fi
