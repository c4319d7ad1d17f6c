#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The ACPI tables of one machine, read by a real decoder: ACPICA's iasl.

    acpi_iasl.py TOPOLAB [MACHINE OPTIONS...]

`topolab cpuid --format acpi` writes the tables a guest of that machine finds,
one file a table as `acpidump -b` writes them. This test holds them against
ACPICA (Debian's acpica-tools), a decoder topolab shares no code with:

- `iasl -d` decodes every table with no complaint (no "Incorrect checksum",
  no "****" marks of a structure cut short, an unknown subtable or a bad
  length). The RSDP is left out: iasl 20200925 reads a table header of 36
  bytes first, and a revision 0 RSDP has 20 (acpi_fuzzer checks it).
- Every data table compiles back (`iasl` on its own disassembly) to the same
  bytes but the checksum and the creator ID and revision, which iasl makes
  its own: so iasl found every field where topolab put it. The DSDT is AML:
  its recompiled disassembly must equal its disassembly.
- What iasl decodes is this machine: one MADT CPU entry per possible CPU,
  Processor UID = index, the APIC IDs of `topolab cpuid` for the present
  ones and those enabled exactly; the SRAT's CPU entries name the same APIC
  IDs in the same order, in the nodes `topolab cpuid` lists; its enabled
  memory ranges add up to each node's memory; the SLIT is the distance table.
"""
import os
import re
import subprocess
import sys
import tempfile

# Header bytes iasl fills in itself when it compiles: the checksum (9) and
# the creator ID and revision (28-35).
HEADER_BYTES_IASL_OWNS = {9, *range(28, 36)}
DATA_TABLES = ["rsdt", "facp", "facs", "apic", "srat", "slit", "hmat"]

failures = []


def fail(message):
    failures.append(message)
    if len(failures) <= 20:
        print(f"FAIL: {message}")


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def unit_bytes(text):
    value, unit = text.split()
    scale = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[unit]
    return int(float(value) * scale)


def cpu_list(text):
    cpus = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus += range(int(a), int(b) + 1)
        elif part:
            cpus.append(int(part))
    return cpus


def cpuid_apic_ids(raw):
    """Each present vCPU's APIC ID as its CPUID says (`cpuid -r` format):
    leaf 0BH's EDX where the leaf exists, else CPUID.01H:EBX[31:24]."""
    ids = {}
    for block in re.split(r"^CPU (\d+):$", raw, flags=re.M)[1:]:
        if block.strip().isdigit():
            cpu = int(block)
            continue
        leaf1 = re.search(r"0x00000001 0x00: eax=\S+ ebx=0x([0-9a-f]+)", block)
        leafb = re.search(r"0x0000000b 0x00: eax=\S+ ebx=0x([0-9a-f]+) ecx=\S+ edx=0x([0-9a-f]+)", block)
        if leafb and int(leafb.group(1), 16) != 0:
            ids[cpu] = int(leafb.group(2), 16)
        else:
            ids[cpu] = int(leaf1.group(1), 16) >> 24
    return ids


def machine_view(topolab, options):
    """What `topolab cpuid` says: the present CPUs' APIC IDs (from their
    CPUID), how many CPUs are present and possible, and the nodes."""
    table = run([topolab, "cpuid", *options], None)
    raw = run([topolab, "cpuid", *options, "--format", "raw"], None)
    if table.returncode != 0 or raw.returncode != 0:
        sys.exit(f"topolab cpuid failed: {(table.stderr + raw.stderr).strip()}")
    apic = cpuid_apic_ids(raw.stdout)
    m = re.search(r"\((\d+) of (\d+) CPUs present\)", table.stdout)
    present, possible = (int(m.group(1)), int(m.group(2))) if m else (len(apic), len(apic))
    nodes = {}
    numa = table.stdout.split("\nNUMA:", 1)
    if len(numa) == 2:
        for line in numa[1].splitlines()[2:]:
            m = re.match(r"(\d+)\s+(\S+)\s+(none|\d+(?:\.\d+)? \S+)\s+([\d ]+)$", line)
            if not m:
                break
            nodes[int(m.group(1))] = {"cpus": [] if m.group(2) == "none" else cpu_list(m.group(2)),
                                      "memory": 0 if m.group(3) == "none" else unit_bytes(m.group(3)),
                                      "distances": [int(d) for d in m.group(4).split()]}
    return apic, present, possible, nodes


def fields(dsl, name):
    """Every value of a decoded field, in order ("Local Apic ID" -> ints)."""
    return [int(v, 16) for v in re.findall(rf"\]\s+{re.escape(name)} : ([0-9A-F]+)", dsl)]


def subtables(dsl):
    """The decoded subtables: their type name and the lines that follow."""
    parts = re.split(r"\n(?=\[[0-9A-F]+h [0-9]+ +[0-9]+\] +Subtable Type : )", dsl)
    out = []
    for part in parts[1:]:
        m = re.search(r"Subtable Type : [0-9A-F]+ \[([^\]]+)\]", part)
        out.append((m.group(1), part))
    return out


def value(part, name):
    m = re.search(rf"\]\s+{re.escape(name)} : ([0-9A-F]+)", part)
    return int(m.group(1), 16) if m else None


def body(dsl):
    """A disassembly without iasl's comment header (file names, dates). At
    the definition block's root `\\_S5` and `_S5` name the same object, and
    iasl's compiler drops the root prefix there: one spelling for both."""
    lines = [l for l in dsl.splitlines() if not l.startswith(" *") and not l.startswith("/*")]
    return "\n".join(re.sub(r"^    Name \(\\", "    Name (", l) for l in lines)


def main():
    topolab, options = sys.argv[1], sys.argv[2:]
    apic, present, possible, nodes = machine_view(topolab, options)
    with tempfile.TemporaryDirectory() as d:
        out = run([topolab, "cpuid", *options, "--format", "acpi", "--output", d], None)
        if out.returncode != 0:
            sys.exit(f"topolab cpuid --format acpi failed: {out.stderr.strip()}")
        files = sorted(f[:-4] for f in os.listdir(d) if f.endswith(".dat"))
        dsl = {}
        for t in files:
            if t == "rsdp":
                continue
            r = run(["iasl", "-d", f"{t}.dat"], d)
            log = r.stdout + r.stderr
            if r.returncode != 0 or re.search(r"Error|Warning|does not contain", log):
                fail(f"iasl -d {t}.dat: status {r.returncode}: {log.strip().splitlines()[-1]}")
                continue
            dsl[t] = open(os.path.join(d, f"{t}.dsl")).read()
            for bad in ("Incorrect checksum", "****", "Invalid"):
                if bad in dsl[t]:
                    line = next(l for l in dsl[t].splitlines() if bad in l)
                    fail(f"{t}: iasl says: {line.strip()}")
            # Compile the disassembly back, in a directory of its own.
            rt = os.path.join(d, "rt")
            os.makedirs(rt, exist_ok=True)
            with open(os.path.join(rt, f"{t}.dsl"), "w") as f:
                f.write(dsl[t])
            r = run(["iasl", "-p", t, f"{t}.dsl"], rt)
            if r.returncode != 0:
                fail(f"iasl {t}.dsl (its own disassembly) does not compile: {(r.stdout + r.stderr).strip()[-300:]}")
                continue
            original = open(os.path.join(d, f"{t}.dat"), "rb").read()
            compiled = open(os.path.join(rt, f"{t}.aml"), "rb").read()
            if t == "dsdt":
                r = run(["iasl", "-d", f"{t}.aml"], rt)
                if body(open(os.path.join(rt, f"{t}.dsl")).read()) != body(dsl[t]):
                    fail("dsdt: the recompiled AML disassembles differently")
                continue
            differ = [i for i in range(max(len(original), len(compiled)))
                      if i >= len(original) or i >= len(compiled) or original[i] != compiled[i]]
            differ = [i for i in differ if i not in HEADER_BYTES_IASL_OWNS]
            if differ:
                fail(f"{t}: iasl compiles its decoding to other bytes from offset {differ[0]:#x} "
                     f"({len(original)} bytes, {len(compiled)} compiled)")
        expected = ["apic", "dsdt", "facp", "facs", "rsdp", "rsdt"]
        if nodes:
            expected += ["srat"]
        if any(len(n["distances"]) > 0 for n in nodes.values()) and "slit" in files:
            expected += ["slit"]
        if "hmat" in files:
            expected += ["hmat"]
        if sorted(expected) != files:
            fail(f"tables {files}, expected {sorted(expected)}")

        # The MADT: a CPU entry per possible CPU, in index order.
        madt_cpus = [(kind, p) for kind, p in subtables(dsl.get("apic", ""))
                     if kind in ("Processor Local APIC", "Processor Local x2APIC")]
        if len(madt_cpus) != possible:
            fail(f"MADT: {len(madt_cpus)} CPU entries for {possible} possible CPUs")
        madt_ids = []
        for index, (kind, p) in enumerate(madt_cpus):
            x2 = kind == "Processor Local x2APIC"
            uid = value(p, "Processor UID" if x2 else "Processor ID")
            apic_id = value(p, "Processor x2Apic ID" if x2 else "Local Apic ID")
            enabled = value(p, "Flags (decoded below)") & 1
            madt_ids.append(apic_id)
            if uid != index:
                fail(f"MADT entry {index}: processor UID {uid}")
            if enabled != (index < present):
                fail(f"MADT entry {index}: enabled {enabled} with {present} present CPUs")
            if index < present and apic.get(index) != apic_id:
                fail(f"MADT entry {index}: APIC ID {apic_id:#x}, topolab cpuid says {apic.get(index)}")
            if x2 != (apic_id > 254):
                fail(f"MADT entry {index}: {kind} for APIC ID {apic_id:#x}")
        if len(set(madt_ids)) != len(madt_ids):
            fail("MADT: an APIC ID twice")

        if nodes:
            srat = subtables(dsl.get("srat", ""))
            srat_cpus = [(kind, p) for kind, p in srat if kind.startswith("Processor Local")]
            srat_ids = [value(p, "Apic ID") for kind, p in srat_cpus]
            if srat_ids != madt_ids:
                fail(f"SRAT: CPU entries name APIC IDs {srat_ids[:8]}..., the MADT {madt_ids[:8]}...")
            for index, (kind, p) in enumerate(srat_cpus):
                domain = value(p, "Proximity Domain") if "x2APIC" in kind else \
                    value(p, "Proximity Domain Low(8)") | (value(p, "Proximity Domain High(24)") << 8)
                want = [n for n, v in nodes.items() if index in v["cpus"]]
                if [domain] != want:
                    fail(f"SRAT: CPU {index} in domain {domain}, topolab cpuid says node {want}")
            # Enabled memory by domain; QEMU's SRAT leaves out the 384 KiB
            # from 640 KiB to 1 MiB of the range that starts at 0.
            memory = {}
            for kind, p in srat:
                if kind == "Memory Affinity" and value(p, "Flags (decoded below)") & 1:
                    domain = value(p, "Proximity Domain")
                    hole = 0x60000 if value(p, "Base Address") == 0 else 0
                    memory[domain] = memory.get(domain, 0) + value(p, "Address Length") + hole
            for n, v in nodes.items():
                if memory.get(n, 0) != v["memory"]:
                    fail(f"SRAT: node {n} has {memory.get(n, 0)} bytes of enabled memory, "
                         f"topolab cpuid says {v['memory']}")
            if "slit" in dsl:
                count = fields(dsl["slit"], "Localities")
                matrix = re.findall(r"Locality\s+\d+ : ((?:[0-9A-F]{2} ?)+)", dsl["slit"])
                decoded = [[int(x, 16) for x in row.split()] for row in matrix]
                want = [nodes[n]["distances"] for n in sorted(nodes)]
                if count != [len(nodes)] or decoded != want:
                    fail(f"SLIT: {count} localities {decoded}, topolab cpuid says {want}")

    summary = f"{len(dsl)} tables decoded, {possible} MADT CPUs, {len(nodes)} nodes"
    if failures:
        sys.exit(f"acpi_iasl: {len(failures)} failures ({summary})")
    print(f"acpi_iasl: ok: {summary}; every data table compiles back to its bytes")


if __name__ == "__main__":
    main()
