#!/usr/bin/env bash
# An example with the real <torch/torch.h>, opened in Neovim through
# devcopy-clangd: the editor must show exactly the devcopy findings that
# devcopy-tidy reports for the file, at the same positions.
#   real_example.sh NVIM LSP_TEST_LUA DEVCOPY_CLANGD DEVCOPY_TIDY FILE BUILD_DIR
set -euo pipefail
nvim=$1 lua=$2 clangd=$3 tidy=$4 file=$5 build=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$tidy" -p "$build" --checks='-*,devcopy-*' --quiet "$file" >"$work/tidy.out" 2>"$work/tidy.err" || {
  echo "FAIL: devcopy-tidy failed on $file:"; cat "$work/tidy.err"; exit 1; }
# file:line:col: warning: ... [devcopy-x]  ->  devcopy-x line:col
sed -nE "s|^$file:([0-9]+):([0-9]+): warning: .*\[(devcopy-[a-z-]+)\]$|\3 \1:\2|p" \
  "$work/tidy.out" >"$work/expect"
if [[ ! -s $work/expect ]]; then
  echo "FAIL: devcopy-tidy reports no devcopy finding in $file: nothing to compare"
  exit 1
fi
echo "devcopy-tidy reports:"; sed 's/^/  /' "$work/expect"

export DEVCOPY_CLANGD=$clangd DEVCOPY_LSP_FILE=$file DEVCOPY_LSP_CDB=$build
# The README's Neovim snippet starts the client (lsp_test.lua).
export DEVCOPY_README=$(dirname "$0")/../../docs/editor.md
export DEVCOPY_LSP_EXPECT=$work/expect DEVCOPY_LSP_TIMEOUT_MS=500000
export XDG_CONFIG_HOME=$work/config XDG_CACHE_HOME=$work/cache XDG_DATA_HOME=$work/data \
  XDG_STATE_HOME=$work/state
"$nvim" --headless -u NONE -i NONE -n -c "luafile $lua"
