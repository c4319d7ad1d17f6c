// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every feature CPUID advertises must work: for each feature bit this guest
 * knows, it executes one instruction of that feature (when the bit is set)
 * and reports PASS; a CPU that advertises what it cannot execute raises #UD,
 * which without an IDT ends the run, so the test fails loudly. Built as 32-
 * and 64-bit code (some instructions exist only in one of them).
 */
#include <stddef.h>

#include "lib/cpuid.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"

/* The image is built without SSE/MMX code generation, so no compiler-owned
 * value ever lives in an MMX or XMM register: the snippets below clobber
 * them without saying so. */
#define CR4_OSFXSR (1u << 9)
#define CR4_OSXMMEXCPT (1u << 10)
#define CR4_FSGSBASE (1u << 16)
#define CR4_OSXSAVE (1u << 18)
#define CR4_PKE (1u << 22)

static volatile uint64_t scratch[8] __attribute__((aligned(64)));
static uint8_t fxsave_area[512] __attribute__((aligned(16)));

static unsigned long read_cr4(void)
{
	unsigned long v;

	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static void set_cr4(unsigned long bits)
{
	unsigned long v = read_cr4() | bits;

	__asm__ volatile("mov %0, %%cr4" : : "r"(v));
}

struct feature {
	const char *name;
	uint32_t leaf;
	char reg;		/* 'b', 'c' or 'd' */
	unsigned bit;
	void (*run)(void);
};

static void run_cmov(void) { __asm__ volatile("cmove %%eax, %%eax" ::: "eax", "cc"); }
static void run_clflush(void) { __asm__ volatile("clflush %0" : "+m"(scratch[0])); }
static void run_mmx(void) { __asm__ volatile("pxor %mm0, %mm0; emms"); }
static void run_fxsr(void) { __asm__ volatile("fxsave %0" : "=m"(fxsave_area)); }
static void run_sse(void) { __asm__ volatile("xorps %xmm0, %xmm0"); }
static void run_sse2(void) { __asm__ volatile("pxor %xmm0, %xmm0; mfence"); }
static void run_sse3(void) { __asm__ volatile("addsubps %xmm1, %xmm0"); }
static void run_pclmulqdq(void) { __asm__ volatile("pclmulqdq $0, %xmm1, %xmm0"); }
static void run_ssse3(void) { __asm__ volatile("pshufb %xmm1, %xmm0"); }
static void run_sse41(void) { __asm__ volatile("pblendw $0, %xmm1, %xmm0"); }
static void run_sse42(void) { __asm__ volatile("crc32l %%eax, %%eax" ::: "eax"); }
static void run_movbe(void) { __asm__ volatile("movbe %0, %%eax" : : "m"(scratch[0]) : "eax"); }
static void run_popcnt(void) { __asm__ volatile("popcnt %%eax, %%eax" ::: "eax", "cc"); }
static void run_aes(void) { __asm__ volatile("aesenc %xmm1, %xmm0"); }
static void run_xsave(void)
{
	uint32_t lo, hi;

	set_cr4(CR4_OSXSAVE);
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
}
static void run_rdrand(void) { __asm__ volatile("rdrand %%eax" ::: "eax", "cc"); }
static void run_monitor(void)
{
	/* Arms the monitor only: an MWAIT here could sleep for ever. */
	__asm__ volatile("monitor" : : "a"(scratch), "c"(0), "d"(0));
}
static void run_bmi1(void) { __asm__ volatile("andn %%eax, %%eax, %%eax" ::: "eax", "cc"); }
static void run_bmi2(void) { __asm__ volatile("shlx %%eax, %%eax, %%eax" ::: "eax"); }
static void run_adx(void) { __asm__ volatile("adcx %%eax, %%eax" ::: "eax", "cc"); }
static void run_smap(void) { __asm__ volatile("stac; clac" ::: "cc"); }
static void run_erms(void)
{
	void *d = (void *)&scratch[0], *s = (void *)&scratch[4];
	unsigned long n = 16;

	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}
static void run_clflushopt(void) { __asm__ volatile("clflushopt %0" : "+m"(scratch[0])); }
static void run_clwb(void) { __asm__ volatile("clwb %0" : "+m"(scratch[0])); }
static void run_rdseed(void) { __asm__ volatile("rdseed %%eax" ::: "eax", "cc"); }
static void run_pku(void)
{
	uint32_t pkru;

	set_cr4(CR4_PKE);
	__asm__ volatile("rdpkru" : "=a"(pkru) : "c"(0) : "edx");
	/* SDM: CPUID.07H:ECX[4] (OSPKE) now mirrors CR4.PKE. */
	report("feature.pku.ospke", (cpuid(7, 0).ecx >> 4) & 1, "OSPKE clear after CR4.PKE was set");
}
static void run_rdtscp(void) { __asm__ volatile("rdtscp" ::: "eax", "ecx", "edx"); }
static void run_mmxext(void) { __asm__ volatile("pminub %mm1, %mm0; emms"); }
static void run_lahf(void) { __asm__ volatile("lahf" ::: "eax"); }
static void run_abm(void) { __asm__ volatile("lzcnt %%eax, %%eax" ::: "eax", "cc"); }
static void run_sse4a(void) { __asm__ volatile("extrq $0, $0, %xmm0"); }
static void run_prefetchw(void) { __asm__ volatile("prefetchw %0" : : "m"(scratch[0])); }
static void run_cr8legacy(void)
{
	unsigned long tpr;

	/* LOCK MOV from CR0 reads CR8 (the TPR) with CR8LEGACY. */
	__asm__ volatile(".byte 0xf0; mov %%cr0, %0" : "=r"(tpr));
	(void)tpr;
}
static void run_cldemote(void) { __asm__ volatile(".byte 0x0f, 0x1c, 0x06" : : "S"(scratch) : "memory"); /* cldemote (%esi/%rsi) */ }
static void run_wbnoinvd(void) { __asm__ volatile(".byte 0xf3, 0x0f, 0x09" ::: "memory"); /* wbnoinvd */ }
#ifdef __x86_64__
static void run_cx16(void)
{
	__asm__ volatile("lock cmpxchg16b %0" : "+m"(scratch[0]) : "a"(0), "d"(0), "b"(0), "c"(0) : "cc");
}
static void run_fsgsbase(void)
{
	unsigned long base;

	set_cr4(CR4_FSGSBASE);
	__asm__ volatile("rdfsbase %0" : "=r"(base));
}
#endif

static const struct feature features[] = {
	{"feature.cmov", 1, 'd', 15, run_cmov},
	{"feature.clflush", 1, 'd', 19, run_clflush},
	{"feature.mmx", 1, 'd', 23, run_mmx},
	{"feature.fxsr", 1, 'd', 24, run_fxsr},
	{"feature.sse", 1, 'd', 25, run_sse},
	{"feature.sse2", 1, 'd', 26, run_sse2},
	{"feature.sse3", 1, 'c', 0, run_sse3},
	{"feature.pclmulqdq", 1, 'c', 1, run_pclmulqdq},
	{"feature.monitor", 1, 'c', 3, run_monitor},
	{"feature.ssse3", 1, 'c', 9, run_ssse3},
	{"feature.sse4.1", 1, 'c', 19, run_sse41},
	{"feature.sse4.2", 1, 'c', 20, run_sse42},
	{"feature.movbe", 1, 'c', 22, run_movbe},
	{"feature.popcnt", 1, 'c', 23, run_popcnt},
	{"feature.aes", 1, 'c', 25, run_aes},
	{"feature.xsave", 1, 'c', 26, run_xsave},
	{"feature.rdrand", 1, 'c', 30, run_rdrand},
	{"feature.bmi1", 7, 'b', 3, run_bmi1},
	{"feature.bmi2", 7, 'b', 8, run_bmi2},
	{"feature.erms", 7, 'b', 9, run_erms},
	{"feature.rdseed", 7, 'b', 18, run_rdseed},
	{"feature.adx", 7, 'b', 19, run_adx},
	{"feature.smap", 7, 'b', 20, run_smap},
	{"feature.clflushopt", 7, 'b', 23, run_clflushopt},
	{"feature.clwb", 7, 'b', 24, run_clwb},
	{"feature.pku", 7, 'c', 3, run_pku},
	{"feature.cldemote", 7, 'c', 25, run_cldemote},
	{"feature.lahf_lm", 0x80000001, 'c', 0, run_lahf},
	{"feature.abm", 0x80000001, 'c', 5, run_abm},
	{"feature.cr8legacy", 0x80000001, 'c', 4, run_cr8legacy},
	{"feature.sse4a", 0x80000001, 'c', 6, run_sse4a},
	{"feature.3dnowprefetch", 0x80000001, 'c', 8, run_prefetchw},
	{"feature.mmxext", 0x80000001, 'd', 22, run_mmxext},
	{"feature.rdtscp", 0x80000001, 'd', 27, run_rdtscp},
	{"feature.wbnoinvd", 0x80000008, 'b', 9, run_wbnoinvd},
#ifdef __x86_64__
	{"feature.cx16", 1, 'c', 13, run_cx16},
	{"feature.fsgsbase", 7, 'b', 0, run_fsgsbase},
#endif
};

static bool advertised(const struct feature *f)
{
	uint32_t max = f->leaf >= 0x80000000 ? cpuid_max_ext() : cpuid_max_basic();
	struct cpuid_regs r;
	uint32_t reg;

	if (f->leaf > max)
		return false;
	r = cpuid(f->leaf, 0);
	reg = f->reg == 'b' ? r.ebx : f->reg == 'c' ? r.ecx : r.edx;
	return (reg >> f->bit) & 1;
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	/* SSE instructions need the OS to have enabled FXSAVE and #XM. */
	set_cr4(CR4_OSFXSR | CR4_OSXMMEXCPT);
	printf("cpu_features (%u-bit code): one instruction per advertised feature\n",
	       (unsigned)(sizeof(long) * 8));
	for (unsigned i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		const struct feature *f = &features[i];

		if (!advertised(f)) {
			report_skip(f->name, "not advertised");
			continue;
		}
		/* A #UD here ends the run: the check below never prints. */
		f->run();
		report(f->name, true, NULL);
	}
	return report_summary();
}
