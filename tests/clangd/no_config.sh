#!/usr/bin/env bash
# devcopy-clangd with no .clangd anywhere above the file: the devcopy checks
# run (on by default, counted fast), the LSP test passes as with the project's
# .clangd; a .clang-tidy that turns them off leaves a log line saying so.
# Usage: no_config.sh NVIM LSP_TEST_LUA DEVCOPY_CLANGD FIXTURE MOCK EDITOR_DOC
set -euo pipefail
nvim=$1 lua=$2 clangd=$3 fixture=$4 mock=$5 readme=$6
dir=$(mktemp -d /tmp/devcopy-noconfig.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$fixture" "$dir/editor.cpp"
cat > "$dir/compile_commands.json" <<JSON
[{"directory": "$dir", "file": "$dir/editor.cpp",
  "arguments": ["clang++", "-std=c++17", "-isystem", "$mock", "-c", "$dir/editor.cpp"]}]
JSON
for d in "$dir" $(dirname "$dir"); do
  if [ -e "$d/.clangd" ]; then echo "FAIL: $d/.clangd exists: not a test without one"; exit 1; fi
done
run() {
  DEVCOPY_CLANGD=$clangd DEVCOPY_LSP_FILE=$dir/editor.cpp DEVCOPY_LSP_CDB=$dir \
  DEVCOPY_README=$readme XDG_CONFIG_HOME=$dir/state/config XDG_CACHE_HOME=$dir/state/cache \
  XDG_DATA_HOME=$dir/state/data XDG_STATE_HOME=$dir/state/state \
    "$nvim" --headless -u NONE -i NONE -n -c "luafile $lua" "$@"
}
run
# Turned off by the project's clang-tidy configuration: no devcopy
# diagnostic, and clangd's log (stderr, kept by Neovim) says why.
printf "Checks: '-*,bugprone-integer-division'\n" > "$dir/.clang-tidy"
rm -rf "$dir/state"
if run > "$dir/off.txt" 2>&1; then
  echo "FAIL: devcopy diagnostics despite .clang-tidy Checks '-*'"; cat "$dir/off.txt"; exit 1
fi
grep -q "FAIL: after open: missing diagnostic devcopy-" "$dir/off.txt" || { cat "$dir/off.txt"; exit 1; }
log=$(find "$dir/state" -name 'lsp.log' | head -1)
if ! grep -q "no devcopy check runs for $dir/editor.cpp: its Checks ('-\*,bugprone-integer-division'" "$log"; then
  echo "FAIL: no log line says why the devcopy checks did not run:"; cat "$log"; exit 1
fi
echo "PASS: the log says why"
