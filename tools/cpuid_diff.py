#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Differential CPUID test: boot the cpuid_dump guest under QEMU (TCG) and
under topolab with the same -smp/-cpu, and compare what the guest printed,
leaf by leaf. Every difference must be covered by an entry of the
deviations file (testcases/cpuid_deviations.txt), which says why it is
intended; anything else fails the test.

Usage: cpuid_diff.py --topolab BIN --image ELF --deviations FILE -smp S -cpu C
       cpuid_diff.py --self-test
Each run may take 60 s + 5 s per vCPU, times $TOPOLAB_TIMEOUT_SCALE (>= 1).
Exit status: 0 equal or all differences intended, 1 unexplained differences,
2 a run failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"^\s*0x([0-9a-f]{8}) 0x([0-9a-f]{2}): eax=0x([0-9a-f]{8}) ebx=0x([0-9a-f]{8}) "
                  r"ecx=0x([0-9a-f]{8}) edx=0x([0-9a-f]{8})\s*$")
REGS = ("eax", "ebx", "ecx", "edx")


def parse_dump(text):
    """{cpu: {(leaf, subleaf): (eax, ebx, ecx, edx)}} from `cpuid -r` text."""
    cpus, current = {}, None
    for line in text.splitlines():
        header = re.search(r"CPU (\d+):\s*$", line)
        if header:
            current = cpus.setdefault(int(header.group(1)), {})
            continue
        m = LINE.match(line)
        if m and current is not None:
            current[(int(m.group(1), 16), int(m.group(2), 16))] = tuple(int(g, 16) for g in m.groups()[2:])
    return cpus


def parse_deviations(path):
    entries = []
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split(None, 5)
            if len(fields) < 6:
                sys.exit(f"{path}:{number}: expected: vendor leaf subleaf register mask reason")
            vendor, leaf, subleaf, reg, mask, reason = fields
            entries.append({
                "where": f"{path}:{number}", "vendor": vendor, "leaf": int(leaf, 16),
                "subleaf": None if subleaf == "*" else int(subleaf, 16), "reg": reg,
                "mask": 0xffffffff if mask == "*" else int(mask, 16), "reason": reason, "used": False,
            })
    return entries


def vendor_of(dump):
    leaf0 = dump.get((0, 0))
    if not leaf0:
        return "?"
    return "amd" if leaf0[1] == 0x68747541 else "intel"  # "Auth"


def allowed_mask(entries, vendor, leaf, subleaf, reg):
    mask = 0
    for e in entries:
        if e["vendor"] not in ("*", vendor) or e["leaf"] != leaf:
            continue
        if e["subleaf"] is not None and e["subleaf"] != subleaf:
            continue
        if e["reg"] in (reg, "*"):
            mask |= e["mask"]
            e["used"] = True
    return mask


def vcpu_count(smp):
    """The vCPUs of a -smp argument: its leading number, cpus=, or the product
    of its topology fields."""
    fields = smp.split(",")
    if fields[0].isdigit():
        return int(fields[0])
    props = dict(f.split("=", 1) for f in fields if "=" in f)
    if props.get("cpus", "").isdigit():
        return int(props["cpus"])
    n = 1
    for key in ("sockets", "dies", "clusters", "cores", "threads"):
        if props.get(key, "").isdigit():
            n *= int(props[key])
    return n


def run_timeout(smp):
    """Seconds a run may take. The guest dumps one CPU at a time while the boot
    CPU spins, so the time grows with the vCPUs (32 EPYC vCPUs: 12 s in a
    Release build, 104 s under ASan+UBSan). TOPOLAB_TIMEOUT_SCALE multiplies
    it for slow builds (the sanitizer build sets it) and loaded hosts."""
    scale = float(os.environ.get("TOPOLAB_TIMEOUT_SCALE", "1"))
    return (60 + 5 * vcpu_count(smp)) * max(scale, 1.0)


def run_qemu(image, smp, cpu, out):
    # -nic none: no network card, so no option ROM (package ipxe-qemu) is needed.
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-kernel", image, "-display", "none", "-no-reboot", "-nic", "none",
           "-serial", f"file:{out}", "-device", "isa-debug-exit,iobase=0xf4,iosize=4", "-m", "128",
           "-smp", smp, "-cpu", cpu]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=run_timeout(smp))
    if r.returncode != 1:  # guest 0 -> (0 << 1) | 1
        sys.stderr.write(f"qemu failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
        sys.exit(2)
    with open(out, errors="replace") as f:
        return f.read()


def run_topolab(topolab, image, smp, cpu):
    cmd = [topolab, "run", image, "-smp", smp, "-cpu", cpu]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=run_timeout(smp))
    if r.returncode != 0:
        sys.stderr.write(f"topolab failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
        sys.exit(2)
    return r.stdout


def self_test():
    """The timeouts, checked without a run (ctest cpuid_diff.self_test)."""
    os.environ.pop("TOPOLAB_TIMEOUT_SCALE", None)
    assert vcpu_count("32,sockets=2,dies=2,cores=4,threads=2") == 32
    assert vcpu_count("sockets=2,cores=3,threads=2") == 12
    # The EPYC diff took 104 s under ASan+UBSan against the old fixed 120 s.
    assert run_timeout("32,sockets=2,dies=2,cores=4,threads=2") >= 2 * 104
    os.environ["TOPOLAB_TIMEOUT_SCALE"] = "4"
    assert run_timeout("1") == 4 * (60 + 5)
    print("cpuid_diff self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--topolab", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--deviations", required=True)
    ap.add_argument("-smp", required=True)
    ap.add_argument("-cpu", required=True)
    args = ap.parse_args()

    entries = parse_deviations(args.deviations)
    with tempfile.TemporaryDirectory() as tmp:
        qemu = parse_dump(run_qemu(args.image, args.smp, args.cpu, os.path.join(tmp, "qemu.txt")))
    ours = parse_dump(run_topolab(args.topolab, args.image, args.smp, args.cpu))
    if not qemu or not ours:
        sys.exit(f"no dump from {'QEMU' if not qemu else 'topolab'}")
    cpus = sorted(set(qemu) & set(ours))
    if set(qemu) != set(ours):
        print(f"CPUs dumped: QEMU {sorted(qemu)}, topolab {sorted(ours)}; comparing {cpus}")

    unexplained = explained = 0
    for cpu in cpus:
        q, t = qemu[cpu], ours[cpu]
        vendor = vendor_of(t)
        for key in sorted(set(q) | set(t)):
            leaf, sub = key
            if key not in q or key not in t:
                side = "QEMU" if key in q else "topolab"
                ok = allowed_mask(entries, vendor, leaf, sub, "*") == 0xffffffff
                explained += ok
                unexplained += not ok
                print(f"{'intended' if ok else 'UNEXPLAINED'}: cpu {cpu} leaf {leaf:#010x}.{sub:02x} only in {side}")
                continue
            for i, reg in enumerate(REGS):
                diff = q[key][i] ^ t[key][i]
                if not diff:
                    continue
                allowed = allowed_mask(entries, vendor, leaf, sub, reg)
                ok = diff & ~allowed == 0
                explained += ok
                unexplained += not ok
                print(f"{'intended' if ok else 'UNEXPLAINED'}: cpu {cpu} leaf {leaf:#010x}.{sub:02x} {reg}: "
                      f"QEMU {q[key][i]:#010x} topolab {t[key][i]:#010x} (differ in {diff:#010x})")
    unused = [e for e in entries if not e["used"]]
    if unused:
        print(f"note: {len(unused)} deviation entries did not apply here (e.g. {unused[0]['where']})")
    print(f"{args.smp} / {args.cpu}: {len(cpus)} CPU(s) compared, {explained} intended differences, "
          f"{unexplained} unexplained")
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
