#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a Linux guest's run on topolab against topolab's own view.

  linux_check.py --console LOG --expect EXPECTED [--report JSON]

LOG is the guest's console (tools/linux_init.sh's marker lines among the
kernel's), EXPECTED what `topolab cpuid --format linux` predicts for the same
-smp/-cpu, JSON topolab's run report (--report json). It checks:

- topology: every key of every predicted line (the *_list files and each
  cache's level, type and shared_cpu_list) equals the guest's, and the
  guest's physical_package_id, die_id and core_id split the CPUs into the
  same packages, dies and cores as the predicted lists;
- NUMA: the guest has exactly the predicted nodes, each with the predicted
  cpulist and distance row, and a MemTotal no larger than the memory the
  SRAT gives the node and at least half of it (the kernel's own
  reservations come out of MemTotal; a memoryless node has 0); with more
  than one node, every CPU's scheduler domains end in a NUMA level that
  spans every online CPU, and with one node there is no NUMA level; Linux
  finds the SRAT it was given and takes the SLIT unless topolab predicts it
  rejects it (then it must say so);
- the kernel said nothing about a broken topology ("BUG: arch topology
  borken", "[Firmware Bug]", a "mismatch" from smpboot), about clocks going
  back between CPUs (a TSC warp) or about an MSR access the machine
  refused, and did not panic;
- IPIs: for the last benchmark /init ran, each CPU's RES and CAL deltas of
  /proc/interrupts equal the interrupts topolab's window saw that vCPU take
  at vector 0xFD (RES) and 0xFB/0xFC (CAL).

Prints one line per finding and a summary; exit 0 when there are none.
"""

import argparse
import json
import re
import sys

RES_VECTORS = ["0xfd"]
CAL_VECTORS = ["0xfb", "0xfc"]
COMPLAINTS = [
    re.compile(r"BUG: arch topology borken"),
    re.compile(r"\[Firmware Bug\]"),
    re.compile(r"smpboot: .*mismatch", re.I),
    # NUMA tables Linux refused (docs/numa.md).
    re.compile(r"SRAT: .*ignored|SRAT not used"),
    # Clocks that go back between vCPUs (emu/guest_clock.h) show up here.
    # ("TSCs unsynchronized" is different: Linux's rule for a CPU without an
    # invariant TSC, AMD's here, as under QEMU.)
    re.compile(r"TSC warp|Marking TSC unstable due to check_tsc_sync"),
    # An MSR or register bit the machine refused where hardware takes it.
    re.compile(r"unchecked MSR access error"),
]


SIBLING = re.compile(r"sched: CPU #\d+'s (\S+)-sibling CPU #\d+ is not on the same node")


def numa_complaints(expect_lines):
    """What the prediction's topolab-numa line says Linux must not print,
    must print, and which sibling complaints it may print (Linux prints the
    first only: one WARN_ONCE): ([complaints], [expected], {siblings})."""
    for line in expect_lines:
        if line.startswith("topolab-numa "):
            _, kv = fields(line)
            complaints, expected = [], []
            if kv.get("srat") == "yes":
                complaints.append(re.compile(r"No NUMA configuration found"))
            slit = re.compile(r"SLIT table looks invalid")
            (expected if kv.get("slit") == "rejected" else complaints).append(slit)
            siblings = set(kv.get("complaints", "none").split(",")) - {"none"}
            return complaints, expected, siblings
    return [], [], set()


def nodes(lines):
    """The topolab-node lines: {'node0': {'cpulist': ..., ...}}."""
    out = {}
    for line in lines:
        if line.startswith("topolab-node "):
            key, kv = fields(line)
            out[key] = kv
    return out


def check_nodes(guest, expected, findings):
    if set(guest) != set(expected):
        findings.append(f"numa: the guest has nodes {sorted(guest)}, topolab cpuid says {sorted(expected)}")
    for name, want in expected.items():
        got = guest.get(name)
        if got is None:
            continue
        for k in ("cpulist", "distance"):
            if got.get(k) != want.get(k):
                findings.append(f"numa: {name} {k}: the guest says {got.get(k)}, topolab cpuid says {want.get(k)}")
        size, total = int(want.get("memory_kb", "0")), got.get("memtotal_kb", "")
        if not total.isdigit() or not (size // 2 <= int(total) <= size):
            findings.append(f"numa: {name} MemTotal {total or '?'} kB is not within [{size // 2}, {size}] kB "
                            "(half of the node's SRAT memory, all of it)")


def check_numa_domains(lines, expected_nodes, findings):
    """The NUMA level of the scheduler domains (topolab-sched-domain lines)."""
    online = set()
    for kv in expected_nodes.values():
        online |= parse_cpu_list(kv.get("cpulist", ""))
    mask = sum(1 << c for c in online)
    domains = {}
    for line in lines:
        if line.startswith("topolab-sched-domain cpu"):
            words = line.split()
            kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            domains.setdefault(int(words[1][3:]), []).append((kv.get("name"), kv.get("span_map", "")))
    if not domains:
        return
    for cpu, levels in sorted(domains.items()):
        numa = [span for name, span in levels if name == "NUMA"]
        if len(expected_nodes) > 1 and (not numa or int(numa[-1].replace(",", ""), 16) != mask):
            findings.append(f"numa: CPU{cpu}'s domains are {[n for n, _ in levels]}, "
                            f"expected a NUMA level spanning {mask:x} last")
        elif len(expected_nodes) == 1 and numa:
            findings.append(f"numa: CPU{cpu} has a NUMA domain on a machine with one node")


def fields(line):
    """'topolab-topology cpu0 a=1 b=2' -> ('cpu0', {'a': '1', 'b': '2'})."""
    words = line.split()
    key = " ".join(w for w in words[1:] if "=" not in w)
    return key, dict(w.split("=", 1) for w in words[1:] if "=" in w)


KMSG = re.compile(r"\[ *\d+\.\d{6}\] ")


def read_lines(path):
    """The console's lines, with /init's lines whole again: the kernel's
    console messages (a clocksource switch on a big machine, say) can land
    in the middle of a line /init is writing, and the rest of that line
    follows the kernel's lines."""
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = [line.rstrip("\r\n").replace("\r", "") for line in f]
    out, pending = [], None
    for line in raw:
        m = KMSG.search(line)
        if pending is not None:
            if m and m.start() == 0:
                out.append(line)
                continue
            line, pending = pending + line, None
            m = KMSG.search(line)
        if line.startswith("topolab-") and m and m.start() > 0:
            pending = line[:m.start()]
            out.append(line[m.start():])
            continue
        out.append(line)
    if pending is not None:
        out.append(pending)
    return out


def view(lines):
    out = {}
    for line in lines:
        if line.startswith("topolab-topology ") or line.startswith("topolab-cache "):
            key, kv = fields(line)
            out[line.split()[0] + " " + key] = kv
    return out


def parse_cpu_list(text):
    cpus = set()
    for part in text.split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def partition_by(guest, keys):
    groups = {}
    for name, kv in guest.items():
        if not name.startswith("topolab-topology "):
            continue
        cpu = int(name.split()[1][3:])
        groups.setdefault(tuple(kv.get(k) for k in keys), set()).add(cpu)
    return sorted((frozenset(g) for g in groups.values()), key=sorted)


def predicted_partition(expected, list_key):
    return sorted({parse_cpu_list(kv[list_key]) for name, kv in expected.items()
                   if name.startswith("topolab-topology ")}, key=sorted)


def check_topology(guest, expected, findings, ignore=None):
    for name, want in expected.items():
        got = guest.get(name)
        if got is None:
            findings.append(f"topology: the guest printed no '{name}'")
            continue
        for k, v in want.items():
            if ignore and ignore.search(f"{name} {k}"):
                continue
            if got.get(k) != v:
                findings.append(f"topology: {name} {k}: the guest says {got.get(k)}, topolab cpuid says {v}")
    for ids, list_key in ((["physical_package_id"], "package_cpus_list"),
                          (["physical_package_id", "die_id"], "die_cpus_list"),
                          (["physical_package_id", "die_id", "core_id"], "core_cpus_list")):
        if ignore and ignore.search(list_key):
            continue
        got, want = partition_by(guest, ids), predicted_partition(expected, list_key)
        if got != want:
            findings.append(f"topology: CPUs grouped by {'+'.join(ids)} are {[sorted(g) for g in got]}, "
                            f"but {list_key} says {[sorted(g) for g in want]}")


def interrupt_blocks(lines):
    """The last benchmark's /proc/interrupts before and after, as {row: [per cpu]}."""
    blocks, current, name = {}, None, None
    for line in lines:
        m = re.match(r"topolab-interrupts-(before|after) (\S+)", line)
        if m:
            name, current = m.group(1), []
            continue
        if line == "topolab-interrupts-end" and current is not None:
            blocks[name] = current
            current = None
            continue
        if current is not None:
            current.append(line)
    return {k: table(v) for k, v in blocks.items()}


def table(rows):
    out = {}
    for row in rows:
        label, _, rest = row.strip().partition(":")
        if not rest:
            continue
        counts = []
        for w in rest.split():
            if not w.isdigit():
                break
            counts.append(int(w))
        out[label.strip()] = counts
    return out


def check_ipis(lines, report, findings):
    blocks = interrupt_blocks(lines)
    if "before" not in blocks or "after" not in blocks:
        findings.append("ipis: the guest printed no /proc/interrupts before and after a benchmark")
        return None
    window = report.get("window")
    if not window or not window.get("ended_by_guest"):
        findings.append("ipis: topolab's report has no window the guest closed")
        return None
    rows = []
    for cpu, v in enumerate(window["vcpus"]):
        taken = v.get("interrupts_taken", {})
        for label, vectors in (("RES", RES_VECTORS), ("CAL", CAL_VECTORS)):
            before, after = blocks["before"].get(label, []), blocks["after"].get(label, [])
            if cpu >= len(before) or cpu >= len(after):
                findings.append(f"ipis: /proc/interrupts has no {label} count for CPU{cpu}")
                continue
            guest = after[cpu] - before[cpu]
            topolab = sum(taken.get(vec, 0) for vec in vectors)
            rows.append((cpu, label, guest, topolab))
            if guest != topolab:
                findings.append(f"ipis: CPU{cpu} {label}: /proc/interrupts rose by {guest}, "
                                f"topolab counted {topolab} at {'/'.join(vectors)}")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--console", required=True)
    p.add_argument("--expect", required=True)
    p.add_argument("--report")
    p.add_argument("--ignore", help="a regex on 'LINE KEY' (e.g. 'index[01] shared_cpu_list') for a known, "
                   "documented difference of another machine (QEMU 7.2's private L1: docs/deviations.md)")
    args = p.parse_args(argv)
    lines = read_lines(args.console)
    expect_lines = read_lines(args.expect)
    numa_bad, numa_expected, siblings = numa_complaints(expect_lines)
    findings = []
    sibling_seen = False
    for line in lines:
        m = SIBLING.search(line)
        if m:
            # Predicted (a node cut through a core or an LLC: docs/numa.md) or a finding.
            sibling_seen = True
            if m.group(1) not in siblings:
                findings.append(f"kernel: {line.strip()}")
            continue
        if any(e.search(line) for e in numa_expected):
            continue
        if any(c.search(line) for c in COMPLAINTS + numa_bad):
            findings.append(f"kernel: {line.strip()}")
        if "Kernel panic - not syncing" in line:
            findings.append(f"kernel: {line.strip()}")
    if not any(line.startswith("topolab-topology-begin") for line in lines):
        findings.append("init: the guest never printed its topology (did it reach /init?)")
    if siblings and not sibling_seen:
        findings.append(f"kernel: never said a {'/'.join(sorted(siblings))}-sibling is on another node, "
                        "as topolab cpuid predicts")
    for pattern in numa_expected:
        if not any(pattern.search(line) for line in lines):
            findings.append(f"kernel: never said '{pattern.pattern}', as topolab cpuid predicts")
    guest, expected = view(lines), view(expect_lines)
    if not expected:
        findings.append(f"{args.expect}: no predicted lines")
    check_topology(guest, expected, findings, re.compile(args.ignore) if args.ignore else None)
    expected_nodes = nodes(expect_lines)
    check_nodes(nodes(lines), expected_nodes, findings)
    if expected_nodes:
        check_numa_domains(lines, expected_nodes, findings)
    checked = f"{len(expected)} topology and cache lines, {len(expected_nodes)} nodes"
    if args.report:
        with open(args.report, encoding="utf-8") as f:
            rows = check_ipis(lines, json.load(f), findings)
        if rows:
            res = sum(r[2] for r in rows if r[1] == "RES")
            cal = sum(r[2] for r in rows if r[1] == "CAL")
            checked += f", RES {res} and CAL {cal} over {len(rows) // 2} CPUs"
    for finding in findings:
        print(f"linux_check: {finding}")
    print(f"linux_check: {'ok' if not findings else f'{len(findings)} findings'}: {checked}")
    return 0 if not findings else 1


if __name__ == "__main__":
    sys.exit(main())
