# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the command's tests: `expect_error FRAGMENT ARGS...` runs
# `$topolab ARGS...` and wants the bad-input status (125) and exactly one
# line on stderr that contains FRAGMENT. Needs $topolab, $tmp and fail().
expect_error() {  # FRAGMENT ARGS...
  local fragment=$1
  shift
  timeout 60 "$topolab" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne 125 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$fragment" "$tmp/err"; then
    fail "topolab $* -> status $got, want 125 and one line with '$fragment':"; sed 's/^/    /' "$tmp/err" | head -3
  else
    echo "ok: topolab $* -> $(cat "$tmp/err")"
  fi
}
