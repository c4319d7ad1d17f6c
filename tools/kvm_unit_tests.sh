#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs an existing x86_64 kvm-unit-tests build through its own runner
# (run_tests.sh) with topolab as QEMU, twice, and once with the real
# qemu-system-x86_64 (TCG) unless saved QEMU results are given, and writes
# docs/kvm-unit-tests.md: per test, topolab's result and SUMMARY, whether the
# two topolab runs printed byte-identical output, and QEMU's result.
#
# It builds nothing: kvm-unit-tests and whatever builds it stay outside this
# repository. KUT_DIR is a configured (--arch=x86_64) and built checkout.
#
# Usage: tools/kvm_unit_tests.sh KUT_DIR [options] [-- TEST...]
#   --qemu-results FILE  use a saved QEMU run (run_tests.sh's output, as this
#                        script saves it in WORK/qemu.out) instead of running QEMU
#   --no-qemu            no QEMU column
#   --timeout SECS       cap on a test's time (default 90): a test keeps its cfg timeout
#                        (run_tests.sh's default 90 s) when that is shorter
#   --all                also run the tests marked nodefault (run_tests.sh -a)
#   --runs N             topolab runs to compare (default 2)
#   --work DIR           where runs, logs and captures go (default build/kut)
#   --doc FILE           the page to write (default docs/kvm-unit-tests.md)
#   --qemu-bin PATH      the QEMU to compare with (default: qemu-system-x86_64 in PATH)
#   --qemu-label TEXT    how the page names saved QEMU results (e.g. "QEMU 7.2.22 (Debian), TCG, 90 s cap")
#   --topolab PATH       topolab's QEMU front end (default build/qemu-system-x86_64)
#   --no-doc             run and compare only
#   --doc-only           run nothing: write the page from the runs already in WORK
#   -- TEST...           run only these tests (names from x86/unittests.cfg)
# The page's "Failures and causes" section, between the causes markers, is
# written by hand and kept when the page is written again.
# Exit status: 0 when the runs happened and the page was written, 2 on bad input.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "kvm_unit_tests.sh: $*" >&2; exit 2; }

kut=""; qemu_results=""; no_qemu=0; timeout_s=90; all=0; runs=2
work="$repo/build/kut"; doc="$repo/docs/kvm-unit-tests.md"; no_doc=0; doc_only=0
qemu_bin=""; qemu_label=""; topolab="$repo/build/qemu-system-x86_64"; tests=()
while [ $# -gt 0 ]; do
  case $1 in
    --qemu-results) [ $# -ge 2 ] || die "--qemu-results needs a FILE"; qemu_results=$2; shift ;;
    --no-qemu) no_qemu=1 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs SECS"; timeout_s=$2; shift ;;
    --all) all=1 ;;
    --runs) [ $# -ge 2 ] || die "--runs needs N"; runs=$2; shift ;;
    --work) [ $# -ge 2 ] || die "--work needs a DIR"; work=$2; shift ;;
    --doc) [ $# -ge 2 ] || die "--doc needs a FILE"; doc=$2; shift ;;
    --no-doc) no_doc=1 ;;
    --doc-only) doc_only=1 ;;
    --qemu-label) [ $# -ge 2 ] || die "--qemu-label needs TEXT"; qemu_label=$2; shift ;;
    --qemu-bin) [ $# -ge 2 ] || die "--qemu-bin needs a PATH"; qemu_bin=$2; shift ;;
    --topolab) [ $# -ge 2 ] || die "--topolab needs a PATH"; topolab=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; tests=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$kut" ] || die "one KUT_DIR only (got '$kut' and '$1')"; kut=$1 ;;
  esac
  shift
done

# --- checks, one line each ---------------------------------------------------
[ -n "$kut" ] || die "usage: tools/kvm_unit_tests.sh KUT_DIR [--qemu-results FILE] [options] (see --help)"
[ -d "$kut" ] || die "KUT_DIR '$kut' is not a directory"
kut=$(cd "$kut" && pwd)
[ -f "$kut/run_tests.sh" ] && [ -f "$kut/x86/unittests.cfg" ] ||
  die "'$kut' is not a kvm-unit-tests checkout (no run_tests.sh or x86/unittests.cfg)"
[ -f "$kut/config.mak" ] || die "'$kut' is not configured (no config.mak): configure and build it for x86_64 first, outside this repository"
grep -q '^ARCH=x86_64$' "$kut/config.mak" || die "'$kut' is configured for $(sed -n 's/^ARCH=//p' "$kut/config.mak"), not x86_64"
compgen -G "$kut/x86/*.flat" >/dev/null || die "'$kut' has no build (no x86/*.flat): build it first, outside this repository"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds, got '$timeout_s'"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs wants a count, got '$runs'"
[ -x "$topolab" ] || die "no topolab QEMU front end at $topolab: build topolab first (cmake -S . -B build && cmake --build build)"
topolab=$(cd "$(dirname "$topolab")" && pwd)/$(basename "$topolab")
if [ -n "$qemu_results" ]; then
  [ -f "$qemu_results" ] || die "--qemu-results '$qemu_results' is not a file"
  grep -Eq '(PASS|FAIL|SKIP)[^ ]* [^ ]' "$qemu_results" || die "--qemu-results '$qemu_results' has no PASS/FAIL/SKIP lines of run_tests.sh"
  qemu_results=$(cd "$(dirname "$qemu_results")" && pwd)/$(basename "$qemu_results")
elif [ $no_qemu = 0 ]; then
  [ -n "$qemu_bin" ] || qemu_bin=$(command -v qemu-system-x86_64) ||
    die "no qemu-system-x86_64 in PATH: give --qemu-bin PATH, --qemu-results FILE or --no-qemu"
  [ -x "$qemu_bin" ] || die "--qemu-bin '$qemu_bin' is not executable"
fi
command -v python3 >/dev/null || die "python3 is needed to write the page"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"
getopt -T >/dev/null 2>&1; [ $? -eq 4 ] || die "run_tests.sh needs util-linux's enhanced getopt"
mkdir -p "$work" || die "cannot create $work"
work=$(cd "$work" && pwd)

# --- the recording shim --------------------------------------------------------
# run_tests.sh is given this shim as QEMU. Probes (--help, -device ?, -h, the
# _NO_FILE_4Uhere_ run) go straight to the real binary by exec. A test run is
# the real binary with its stdout and stderr copied, byte for byte, into
# CAPTURE/TESTNAME.{out,err,status}, which is what the determinism check
# compares (the runner's own logs mix the two streams in no fixed order and
# name a fresh mktemp file). A TERM from the runner's timeout reaches the
# real process: timeout --foreground would not signal a grandchild.
shim=$work/qemu-shim
cat >"$shim" <<'EOF'
#!/usr/bin/env bash
real=${KUT_SHIM_REAL:?}; dir=${KUT_SHIM_CAPTURE:?}
kernel=""; prev=""
for a in "$@"; do [ "$prev" = -kernel ] && kernel=$a; prev=$a; done
if [ -z "${TESTNAME:-}" ] || [ -z "$kernel" ] || [ "$kernel" = _NO_FILE_4Uhere_ ]; then
  exec "$real" "$@"
fi
base=$dir/$TESTNAME
printf '%s\n' "$@" >"$base.argv"
start=$(date +%s.%N)
# the cap: run_tests.sh's own timeout (the cfg's, or 90 s) still applies when shorter
timeout -k 1s "${KUT_SHIM_CAP:-90}s" "$real" "$@" > >(tee "$base.out") 2> >(tee "$base.err" >&2) &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT HUP
while :; do
  wait $pid; rc=$?
  kill -0 $pid 2>/dev/null || break
done
echo "$rc" >"$base.status"
echo "$start $(date +%s.%N)" >"$base.time"
exit $rc
EOF
chmod +x "$shim"

# A host with /dev/kvm would make run_tests.sh pick ACCEL=kvm, and the real
# QEMU would honour a cfg's -enable-kvm. ACCEL=tcg fixes the first; for the
# QEMU run, a private mount namespace without /dev/kvm fixes the second when
# unshare is allowed (root), as on a host without KVM.
nokvm=()
nokvm_note="no /dev/kvm on this host"
if [ -e /dev/kvm ]; then
  nokvm_note="/dev/kvm present and could not be hidden: tests whose cfg says -enable-kvm may have used KVM under QEMU"
  if unshare -m true 2>/dev/null; then
    mkdir -p "$work/.realdev"
    nokvm=(unshare -m bash -c '
      set -e; d=$1; shift
      mount --make-rprivate /
      mount --rbind /dev "$d"
      mount -t tmpfs -o mode=755 tmpfs /dev
      for e in "$d"/* "$d"/.[!.]*; do
        [ -e "$e" ] || [ -L "$e" ] || continue
        n=${e##*/}; [ "$n" = kvm ] && continue
        if [ -L "$e" ]; then cp -P "$e" "/dev/$n"; else ln -s "$e" "/dev/$n"; fi
      done
      exec "$@"' nokvm "$work/.realdev")
    if "${nokvm[@]}" test ! -e /dev/kvm 2>/dev/null; then
      nokvm_note="/dev/kvm hidden from the QEMU run (private mount namespace), as on a host without KVM"
    else
      nokvm=()
    fi
  fi
fi

# run NAME QEMU_BINARY [WRAPPER...]: one pass of run_tests.sh
run_suite() {
  local name=$1 real=$2; shift 2
  local cap=$work/$name.capture args=(-j1)
  rm -rf "$cap" "$work/$name.logs" "$work/$name.logs.old"
  mkdir -p "$cap"
  [ $all = 1 ] && args+=(-a)
  echo "kvm_unit_tests.sh: $name: run_tests.sh with QEMU=$real (a test's cfg timeout, at most ${timeout_s}s)" >&2
  local t0=$SECONDS
  (cd "$kut" && "$@" env -u TIMEOUT ACCEL=tcg QEMU="$shim" KUT_SHIM_CAP="$timeout_s" \
      KUT_SHIM_REAL="$real" KUT_SHIM_CAPTURE="$cap" unittest_log_dir="$work/$name.logs" \
      ./run_tests.sh "${args[@]}" "${tests[@]}" </dev/null >"$work/$name.out" 2>"$work/$name.stderr")
  local rc=$?
  echo "$((SECONDS - t0))" >"$work/$name.seconds"
  sed 's/\x1b\[[0-9;]*m//g' "$work/$name.out" | grep -E '^(PASS|FAIL|SKIP) ' >"$work/$name.results" || true
  if [ ! -s "$work/$name.results" ]; then
    echo "kvm_unit_tests.sh: $name: run_tests.sh printed no results (status $rc); see $work/$name.out and $work/$name.stderr" >&2
    return 1
  fi
  echo "kvm_unit_tests.sh: $name: $(grep -c '^PASS' "$work/$name.results") PASS, $(grep -c '^FAIL' "$work/$name.results") FAIL, $(grep -c '^SKIP' "$work/$name.results") SKIP in $((SECONDS - t0)) s" >&2
}

status=0
if [ $doc_only = 1 ]; then
  for i in $(seq 1 "$runs"); do
    [ -s "$work/topolab-$i.results" ] || die "--doc-only: no results of run topolab-$i in $work"
  done
  if [ -z "$qemu_results" ] && [ $no_qemu = 0 ]; then
    [ -s "$work/qemu.results" ] || die "--doc-only: no QEMU run in $work: give --qemu-results FILE or --no-qemu"
    [ -f "$work/qemu.nokvm" ] && nokvm_note=$(cat "$work/qemu.nokvm")
  fi
else
  for i in $(seq 1 "$runs"); do
    run_suite "topolab-$i" "$topolab" || status=1
  done
fi
if [ -z "$qemu_results" ] && [ $no_qemu = 0 ]; then
  [ $doc_only = 1 ] || { run_suite qemu "$qemu_bin" "${nokvm[@]}" || status=1; echo "$nokvm_note" >"$work/qemu.nokvm"; }
  qemu_results=$work/qemu.out
  qemu_version=$("$qemu_bin" -version 2>/dev/null | head -1)
elif [ -n "$qemu_results" ]; then
  qemu_version="${qemu_label:-saved results from $(basename "$qemu_results")}"
  # A run this script saved keeps its note on /dev/kvm beside it.
  nokvm_note=""
  [ -f "$(dirname "$qemu_results")/qemu.nokvm" ] && nokvm_note=$(cat "$(dirname "$qemu_results")/qemu.nokvm")
else
  qemu_version=""
fi
[ $status = 0 ] || die "a run printed no results; the page was not written"
[ $no_doc = 1 ] && exit 0

kut_head=$(git -C "$kut" rev-parse --short=8 HEAD 2>/dev/null || cat "$kut/build-head" 2>/dev/null || echo unknown)
# the commit the runs were made from (kept in WORK, so --doc-only names it too)
if [ $doc_only = 1 ] && [ -s "$work/topolab.head" ]; then
  topolab_head=$(cat "$work/topolab.head")
else
  topolab_head=$(git -C "$repo" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
  git -C "$repo" diff --quiet HEAD -- . ':!docs/kvm-unit-tests.md' 2>/dev/null || topolab_head="$topolab_head+changes"
  echo "$topolab_head" >"$work/topolab.head"
fi
topolab_version=$("$topolab" -version 2>/dev/null | head -1)

mkdir -p "$(dirname "$doc")"
KUT_HEAD=$kut_head TOPOLAB_HEAD=$topolab_head TOPOLAB_VERSION=$topolab_version \
QEMU_VERSION=$qemu_version QEMU_RESULTS=$qemu_results NOKVM_NOTE=$nokvm_note \
RUNS=$runs WORK=$work DOC=$doc TIMEOUT_S=$timeout_s ALL=$all KUT=$kut \
python3 - <<'PY' || die "writing $doc failed"
import os, re, glob

env = os.environ
work, doc, runs = env["WORK"], env["DOC"], int(env["RUNS"])
ansi = re.compile(r"\x1b\[[0-9;]*m")
line_re = re.compile(r"^(PASS|FAIL|SKIP) (\S+)(?: \((.*)\))?\s*$")

def results(path):
    out, order = {}, []
    if not path or not os.path.exists(path):
        return out, order
    with open(path, errors="replace") as f:
        for raw in f:
            m = line_re.match(ansi.sub("", raw.rstrip("\n")))
            if m:
                name = m.group(2)
                if name not in out:
                    order.append(name)
                out[name] = (m.group(1), m.group(3) or "")
    return out, order

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None

top = [results(f"{work}/topolab-{i}.out") for i in range(1, runs + 1)]

# run_tests.sh's qemu_fixup_return_code joins stderr into one line before it
# looks for a line without "warning", so status 1 with a warning and then an
# error (topolab refusing the line after opening the kernel) reads as a PASS.
# Such a PASS is counted as the FAIL it is, with the error as its reason.
def false_pass(i, name):
    err = read(f"{work}/topolab-{i}.capture/{name}.err")
    if not err:
        return None
    for l in err.decode("utf-8", "replace").splitlines():
        if l.strip() and "warning" not in l.lower():
            return l.strip()[:160]
    return None

false_passes = []
for i, (res, _) in enumerate(top, start=1):
    for name, (verdict, summary) in list(res.items()):
        if verdict == "PASS":
            why = false_pass(i, name)
            if why:
                res[name] = ("FAIL", f"runner said PASS; stderr: {why}")
                if i == 1:
                    false_passes.append(name)
qemu, qorder = results(env.get("QEMU_RESULTS", ""))
# the tests of topolab's first run; QEMU's results only for the same tests,
# so that a run of a few tests against a saved full QEMU run compares like with like
order = list(top[0][1])

def deterministic(name):
    """yes/no/- : did every topolab run print the same stdout, stderr and status?"""
    caps = []
    for i in range(1, runs + 1):
        base = f"{work}/topolab-{i}.capture/{name}"
        out, err, status = (read(base + s) for s in (".out", ".err", ".status"))
        # killed by a timeout: TERM (143), KILL after the grace second (137) or
        # the cap (124) is the host's timing, not the guest's output
        if status is not None and status.strip() in (b"124", b"137", b"143"):
            status = b"killed by a timeout"
        caps.append((out, err, status))
    if all(c == (None, None, None) for c in caps):
        # never started (the runner skipped it, or topolab refused the line);
        # then the runner's verdict is all there is to compare
        verdicts = [t[0].get(name) for t in top]
        return "yes (not run)" if len(set(verdicts)) == 1 else "no"
    return "yes" if len(set(caps)) == 1 else "no"

def esc(s):
    return s.replace("|", "\\|")

sign_re = re.compile(r"^(FAIL: |.*assert failed|Unhandled exception|.*[Aa]bort)")
def first_sign(name):
    """topolab's last stderr line that is no warning, else the first failure line of the guest."""
    base = f"{work}/topolab-1.capture/{name}"
    err = read(base + ".err")
    if err:
        for l in reversed(err.decode("utf-8", "replace").splitlines()):
            if l.strip() and "warning" not in l.lower():
                return l.strip()[:160]
    out = read(base + ".out")
    if out:
        for l in out.decode("utf-8", "replace").splitlines():
            if sign_re.match(l):
                return l.strip()[:160]
    return ""

rows, counts = [], {"top": {}, "qemu": {}, "det": 0, "n": 0, "both": 0, "target_miss": []}
for n in order:
    t = top[0][0].get(n, ("-", ""))
    others = [tt[0].get(n, ("-", "")) for tt in top[1:]]
    q = qemu.get(n, ("-", "")) if qemu else ("", "")
    d = deterministic(n)
    if len(set([t[0]] + [o[0] for o in others])) > 1:
        d = "no"
    counts["n"] += 1
    counts["top"][t[0]] = counts["top"].get(t[0], 0) + 1
    if qemu:
        counts["qemu"][q[0]] = counts["qemu"].get(q[0], 0) + 1
    if d.startswith("yes"):
        counts["det"] += 1
    if t[0] == "PASS" and q[0] == "PASS":
        counts["both"] += 1
    if q[0] == "PASS" and t[0] != "PASS":
        counts["target_miss"].append(n)
    sign = first_sign(n) if t[0] == "FAIL" else ""
    rows.append(f"| `{n}` | {t[0]} | {esc(t[1])} | {esc(sign)} | {d} | {q[0]} | {esc(q[1])} |")

begin, end = "<!-- causes:begin (written by hand; tools/kvm_unit_tests.sh keeps this section) -->", "<!-- causes:end -->"
causes = None
old = read(doc)
if old is not None:
    old = old.decode("utf-8", "replace")
    i, j = old.find("<!-- causes:begin"), old.find(end)
    if i >= 0 and j > i:
        causes = old[old.index("-->", i) + 3:j].strip("\n")
if causes is None:
    causes = "_To be written by hand: for each test that fails under topolab, the first cause (topolab's one-line error or the first FAIL line) and what would fix it._"

def secs(name):
    try:
        return open(f"{work}/{name}.seconds").read().strip() + " s"
    except OSError:
        return "?"

tp, qp = counts["top"].get("PASS", 0), counts["qemu"].get("PASS", 0)
lines = []
lines.append("# kvm-unit-tests under topolab")
lines.append("")
lines.append("Generated by `tools/kvm_unit_tests.sh` (only the section *Failures and causes* is written by hand).")
lines.append("")
lines.append(f"- kvm-unit-tests `{env['KUT_HEAD']}`, x86_64 build, run by its own `run_tests.sh`"
             + (" -a" if env["ALL"] == "1" else "") + f" with `ACCEL=tcg`, one test at a time, each within its cfg timeout"
             f" (90 s when the cfg names none) and at most {env['TIMEOUT_S']} s.")
lines.append(f"- topolab `{env['TOPOLAB_HEAD']}` ({env['TOPOLAB_VERSION'] or 'version unknown'}) as `QEMU=build/qemu-system-x86_64`, {runs} runs"
             + ", ".join([""] + [f"{secs(f'topolab-{i}')}" for i in range(1, runs + 1)]) + ".")
if qemu:
    own = env['QEMU_RESULTS'] == f"{work}/qemu.out"
    lines.append(f"- QEMU: {env['QEMU_VERSION']}" + (f", TCG, {secs('qemu')}" if own else "")
                 + (f"; {env['NOKVM_NOTE']}" if env['NOKVM_NOTE'] else "") + ".")
lines.append("- *Same output*: every topolab run printed byte-identical stdout and stderr and ended with the same status (a kill by a timeout counts as one status)"
             " (captured by a pass-through QEMU shim; \"not run\" means the runner decided without starting it).")
lines.append("- A refused command line shows as SKIP: run_tests.sh first runs each line with a missing kernel and skips the test,"
             " with the emulator's last line as the reason, unless the emulator complains about the kernel file.")
lines.append("")
lines.append("## Totals")
lines.append("")
lines.append(f"| | topolab | QEMU 7.2 TCG |")
lines.append(f"|---|---|---|")
for k in ("PASS", "FAIL", "SKIP"):
    lines.append(f"| {k} | {counts['top'].get(k, 0)} | {counts['qemu'].get(k, 0) if qemu else ''} |")
lines.append(f"| tests | {counts['n']} | {sum(counts['qemu'].values()) if qemu else ''} |")
i386 = sum(1 for n in order if top[0][0].get(n, ("", ""))[1] == "i386 only")
if i386:
    lines.append(f"| of them x86_64 or arch-free | {counts['n'] - i386} | |")
lines.append("")
lines.append(f"- Passes under topolab: **{tp}**; under QEMU 7.2 TCG: **{qp}**; under both: {counts['both']}.")
lines.append(f"- Same output in all {runs} topolab runs: **{counts['det']} of {counts['n']}**.")
if false_passes:
    lines.append(f"- Counted as FAIL although run_tests.sh printed PASS (status 1 with a warning, then an error, on stderr): "
                 + ", ".join(f"`{n}`" for n in false_passes) + ".")
if qemu:
    miss = counts["target_miss"]
    lines.append(f"- Passing under QEMU but not under topolab: {len(miss)}" + (": " + ", ".join(f"`{m}`" for m in miss) if miss else "") + ".")
lines.append("")
lines.append("## Per test")
lines.append("")
lines.append("| test | topolab | SUMMARY / reason | first sign of a failure | same output | QEMU 7.2 TCG | QEMU SUMMARY / reason |")
lines.append("|---|---|---|---|---|---|---|")
lines += rows
lines.append("")
lines.append("## Failures and causes")
lines.append("")
lines.append(begin)
lines.append(causes)
lines.append(end)
lines.append("")
with open(doc, "w") as f:
    f.write("\n".join(lines))
print(f"kvm_unit_tests.sh: wrote {doc}: topolab {tp} PASS, QEMU {qp} PASS, {counts['det']}/{counts['n']} same output")
PY
