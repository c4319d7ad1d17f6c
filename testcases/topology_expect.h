// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The topology topology_check expects, from the command line:
 *   sockets= dies= cores= threads=  (default 1)
 *   cpus=     (default their product; if cores= is missing it is
 *              cpus / (sockets * dies * threads), as QEMU computes it)
 *   l3=on|off (default on)
 *
 * APIC IDs are expected in QEMU's layout: each level gets ceil(log2(count))
 * bits, SMT lowest, then core, die, package. CPU index i is the mixed-radix
 * decomposition of i over the real counts, and CPU 0 boots.
 */
#ifndef TOPOLOGY_EXPECT_H
#define TOPOLOGY_EXPECT_H

#include <stdbool.h>
#include <stdint.h>

#define MAX_CPUS 4096

struct expect {
	uint32_t sockets, dies, cores, threads, cpus;
	bool l3;
	unsigned smt_bits, core_bits, die_bits;	/* APIC ID field widths */
	unsigned core_off, die_off, pkg_off;	/* where each field starts */
	uint32_t per_core, per_die, per_pkg;	/* logical CPUs */
};

struct cpu_pos {
	uint32_t pkg, die, core, smt, apic_id;
};

/* Reads the command line; on a bad value reports FAIL: cmdline, returns false. */
bool expect_parse(struct expect *e);
void expect_print(const struct expect *e);

/* Where CPU index i sits, and its APIC ID. */
struct cpu_pos expect_cpu(const struct expect *e, uint32_t i);

/*
 * The number of distinct values of apic_id >> lo among the expected CPUs
 * whose apic_id >> hi equals boot_apic's (hi <= 32; 32 takes all): how CPU 0
 * would group the CPUs with the given APIC ID fields.
 */
uint32_t expect_count_groups(const struct expect *e, unsigned lo, unsigned hi,
			     uint32_t boot_apic);

#endif
