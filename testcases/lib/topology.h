// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The boot CPU's topology and caches, decoded the way Linux (6.1) does:
 *
 * - Topology: leaf 0x1F, else leaf 0xB (accepted when subleaf 0 is an SMT
 *   level with a non-zero count), else the legacy leaves (Intel: leaf 1 and
 *   leaf 4 EAX[31:26]; AMD: 0x80000008 ECX). On AMD the extended leaves are
 *   used only with TOPOEXT, as Linux 6.1 does.
 * - Caches: leaf 4, or 0x8000001D on AMD with TOPOEXT, until a subleaf of
 *   type 0. n = 1 + EAX[25:14] APIC IDs share a cache; the cache id is
 *   apicid >> ceil_log2(n). AMD without TOPOEXT: L1/L2 from 0x80000005/6 are
 *   private to the logical CPU and the L3 is shared by the package, which is
 *   what Linux assumes there.
 * - The LLC is the L3 if there is one, else the L2.
 * - AMD has no leaf 0x1F: with TOPOEXT the die is the node of 0x8000001E
 *   (ECX[7:0] node ID, ECX[10:8] nodes per package - 1), as Linux's amd.c
 *   and topology_amd take it. Leaf 0xB folds the dies into its core level.
 */
#ifndef LIB_TOPOLOGY_H
#define LIB_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/cpuid.h"

enum topo_source {
	TOPO_SRC_LEAF_1F,
	TOPO_SRC_LEAF_B,
	TOPO_SRC_INTEL_LEGACY,	/* leaf 1 EBX[23:16] and leaf 4 EAX[31:26] */
	TOPO_SRC_AMD_LEGACY,	/* 0x80000008 ECX, 0x8000001E EBX with TOPOEXT */
};

enum cache_source {
	CACHE_SRC_NONE,
	CACHE_SRC_LEAF_4,
	CACHE_SRC_8000001D,
	CACHE_SRC_AMD_LEGACY,	/* 0x80000005 and 0x80000006 */
};

enum cache_type {
	CACHE_TYPE_NULL = 0,
	CACHE_TYPE_DATA = 1,
	CACHE_TYPE_INST = 2,
	CACHE_TYPE_UNIFIED = 3,
};

struct cache_info {
	unsigned level;
	enum cache_type type;
	uint32_t size_kib;
	uint32_t sharing;	/* n: 1 + EAX[25:14] (1 for AMD legacy L1/L2) */
	unsigned id_shift;	/* CPUs share it iff apicid >> id_shift is equal */
	uint32_t id;		/* apic_id >> id_shift */
	uint32_t eax;		/* the raw leaf 4 / 0x8000001D EAX, 0 if legacy */
};

#define TOPO_MAX_CACHES 8

struct topology {
	enum cpu_vendor vendor;
	enum topo_source source;
	/* The x2APIC ID from the extended leaf, else leaf 1 EBX[31:24]. */
	uint32_t apic_id;
	/* APIC ID bits below each level's ID (Linux: ht_mask_width,
	 * core_plus_mask_width, die_plus_mask_width). */
	unsigned smt_shift;	/* thread within core */
	unsigned core_shift;	/* thread and core within die */
	unsigned pkg_shift;	/* everything within the package */
	/* The counts the leaves report (Linux: smp_num_siblings,
	 * core_level_siblings, die_level_siblings). */
	uint32_t threads_per_core;
	uint32_t logical_per_die;
	uint32_t logical_per_pkg;
	/* AMD with TOPOEXT: 0x8000001E ECX[10:8] + 1 and ECX[7:0] (Linux's
	 * die/node); nodes_per_pkg is 0 otherwise. */
	uint32_t nodes_per_pkg;
	uint32_t node_id;

	enum cache_source cache_source;
	unsigned ncaches;
	struct cache_info caches[TOPO_MAX_CACHES];
	int llc;		/* index into caches, -1 if there is none */
	/* Set if the cache leaf had no type-0 subleaf within TOPO_MAX_CACHES. */
	bool cache_leaf_unterminated;
};

/* ceil(log2(n)), 0 for n <= 1: Linux's get_count_order. */
unsigned ceil_log2(uint32_t n);

void topology_decode(struct topology *t);

/* Replaces t's caches with those of leaf 4 or 0x8000001D, whatever the
 * vendor and TOPOEXT say (for checking a leaf that Linux would ignore). */
void topology_read_cache_leaf(struct topology *t, uint32_t leaf);

const char *topo_source_name(enum topo_source s);
const char *cache_source_name(enum cache_source s);
/* "L1d", "L1i", "L2", "L3"... */
const char *cache_name(const struct cache_info *c);

#endif
