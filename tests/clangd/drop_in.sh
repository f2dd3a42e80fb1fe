#!/usr/bin/env bash
# devcopy-clangd must be a drop-in clangd-19: the same options, the same
# compile command for a file (resource dir included), each option and the
# devcopy module registered once, and the devcopy checks running.
#   drop_in.sh DEVCOPY_CLANGD CLANGD_19 DEVCOPY_TIDY FIXTURE COMPILE_COMMANDS_DIR
set -euo pipefail
ours=$1 stock=$2 tidy=$3 fixture=$4 cdb=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME=$work  # no user config
fail() { echo "FAIL: $*"; exit 1; }

# An option registered twice aborts at startup ("Option ... registered more
# than once!"): LLVM linked both statically and shared would do that.
"$ours" --version >"$work/version" 2>&1 || fail "devcopy-clangd --version: $(cat "$work/version")"
grep -q 'clangd version 19' "$work/version" || fail "not clangd 19: $(cat "$work/version")"

# Same options, hidden ones included (the USAGE line names the binary).
help() { "$1" --help-list-hidden | sed 's/^USAGE: [^ ]*/USAGE: clangd/'; }
grep -q 'devcopy version ' "$work/version" || fail "no devcopy version: $(cat "$work/version")"
# The same options as clangd-19; the help ends with the devcopy checks.
help "$ours" >"$work/ours.full"
help "$stock" >"$work/stock.help"
grep -q '^  devcopy-discarded-copy  ' "$work/ours.full" || fail "--help lists no devcopy check"
sed '/^devcopy checks (/,$d' "$work/ours.full" | sed '${/^$/d}' >"$work/ours.help"
diff -u "$work/stock.help" "$work/ours.help" || fail "the options differ from clangd-19's"

# Same cc1 command for the fixture. --check prints no warnings, but
# --check-tidy-time times each check it runs: ours must run every devcopy check.
check() {
  "$1" --check="$fixture" --check-locations=false --compile-commands-dir="$cdb" --log=verbose \
    --check-tidy-time='devcopy-*' 2>&1
}
check "$ours" >"$work/ours.check" || fail "devcopy-clangd --check failed: $(tail -5 "$work/ours.check")"
check "$stock" >"$work/stock.check" || fail "clangd-19 --check failed: $(tail -5 "$work/stock.check")"
cc1() { grep -o 'internal (cc1) args are: .*' "$1"; }
diff <(cc1 "$work/stock.check") <(cc1 "$work/ours.check") || fail "the compile commands differ"
grep -q 'registered more than once' "$work/ours.check" && fail "an option is registered twice"
# Every check of the module (devcopy-tidy links the same checks) is timed.
timed() { grep -o '  devcopy-[a-z-]* = ' "$1" | tr -d ' =' | sort -u; }
"$tidy" --list-checks --checks='-*,devcopy-*' | grep -o 'devcopy-[a-z-]*' | sort -u >"$work/module"
[[ -s $work/module ]] || fail "devcopy-tidy lists no devcopy check"
diff <(cat "$work/module") <(timed "$work/ours.check") ||
  fail "devcopy-clangd does not run exactly the module's checks (< module, > run)"
[[ -z $(timed "$work/stock.check") ]] || fail "stock clangd-19 ran devcopy checks?"
echo "PASS: devcopy-clangd is clangd-19 plus the devcopy checks"
