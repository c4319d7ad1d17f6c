// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A TSC busy-wait delay on one CPU (works with -smp 1).
 *
 * cmdline: us=U (default 10000, 10 ms), mhz=M (default 2000: topolab's TSC
 * runs at --cost freq_mhz, 2000 by default).
 *
 * The TSC frequency comes from CPUID leaf 0x15 (TSC/crystal ratio times the
 * crystal clock, when all three are given), else leaf 0x16 (processor base
 * MHz), else mhz=. topolab's models and QEMU 7.2's Skylake-Server stop below
 * leaf 0x15, so mhz= is what they use. ticks = U * MHz.
 *
 * The delay is
 *	start = rdtsc(); while (rdtsc() - start < ticks) pause;
 * written as one asm block so that from one iteration to the next only RAX,
 * RDX (what RDTSC writes and the subtraction reuses) and RFLAGS differ:
 * start and ticks sit in registers the loop only reads. There is no store,
 * no I/O, no call and no iteration counter in the loop, so an emulator can
 * see that nothing but the TSC moves and jump its clock to the exit.
 *
 * Prints "tsc_delay: us=U ticks=T elapsed=E" (E = the last RDTSC the loop
 * read minus start, so E - T is how late the loop left) and passes if
 * E >= T.
 */
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/div64.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"

#define DEFAULT_US	10000u
#define DEFAULT_MHZ	2000u

/* Returns the elapsed TSC ticks: the last RDTSC of the loop minus start. */
static uint64_t tsc_delay(uint64_t ticks)
{
#ifdef __x86_64__
	uint64_t start, elapsed;
	uint32_t hi;

	__asm__ volatile("rdtsc\n\t"
			 "shl $32, %%rdx\n\t"
			 "or %%rdx, %%rax\n\t"
			 "mov %%rax, %[start]\n\t"
			 "jmp 2f\n"
			 "1:\tpause\n"
			 "2:\trdtsc\n\t"
			 "shl $32, %%rdx\n\t"
			 "or %%rdx, %%rax\n\t"
			 "sub %[start], %%rax\n\t"
			 "cmp %[ticks], %%rax\n\t"
			 "jb 1b"
			 : "=a"(elapsed), "=d"(hi), [start] "=&r"(start)
			 : [ticks] "r"(ticks)
			 : "cc", "memory");
	(void)hi;
	return elapsed;
#else
	/* start in ESI:EDI, ticks in ECX:EBX; EDX:EAX = elapsed. The compare
	 * is unsigned 64-bit: high halves first, low halves if they tie. */
	uint32_t lo, hi, slo, shi;

	__asm__ volatile("rdtsc\n\t"
			 "mov %%eax, %[slo]\n\t"
			 "mov %%edx, %[shi]\n\t"
			 "jmp 2f\n"
			 "1:\tpause\n"
			 "2:\trdtsc\n\t"
			 "sub %[slo], %%eax\n\t"
			 "sbb %[shi], %%edx\n\t"
			 "cmp %[thi], %%edx\n\t"
			 "jb 1b\n\t"
			 "ja 3f\n\t"
			 "cmp %[tlo], %%eax\n\t"
			 "jb 1b\n"
			 "3:"
			 : "=a"(lo), "=d"(hi), [slo] "=&D"(slo), [shi] "=&S"(shi)
			 : [tlo] "b"((uint32_t)ticks), [thi] "c"((uint32_t)(ticks >> 32))
			 : "cc", "memory");
	(void)slo;
	(void)shi;
	return (uint64_t)hi << 32 | lo;
#endif
}

int main(const struct multiboot_info *mbi)
{
	uint32_t us = DEFAULT_US, mhz = DEFAULT_MHZ, max = cpuid_max_basic();
	uint64_t ticks = 0;
	const char *source = NULL;

	(void)mbi;
	if (cmdline_uint("us", &us) == CMDLINE_INVALID ||
	    cmdline_uint("mhz", &mhz) == CMDLINE_INVALID || mhz == 0) {
		report("tsc_delay.cmdline", false, "us= wants a number, mhz= a number > 0");
		return report_summary();
	}
	if (max >= 0x15) {
		struct cpuid_regs r = cpuid(0x15, 0);

		if (r.eax && r.ebx && r.ecx) {
			/* TSC Hz = crystal Hz * EBX / EAX (SDM Vol. 2A, CPUID 15H). */
			uint64_t hz = udiv64((uint64_t)r.ecx * r.ebx, r.eax);

			ticks = udiv64(hz * us, 1000000);
			source = "CPUID.15H";
		}
	}
	if (!source && max >= 0x16 && (cpuid(0x16, 0).eax & 0xffff)) {
		ticks = (uint64_t)us * (cpuid(0x16, 0).eax & 0xffff);
		source = "CPUID.16H";
	}
	if (!source) {
		ticks = (uint64_t)us * mhz;
		source = "mhz=";
	}

	uint64_t elapsed = tsc_delay(ticks);

	printf("tsc_delay: TSC frequency from %s\n", source);
	printf("tsc_delay: us=%u ticks=%llu elapsed=%llu\n", us,
	       (unsigned long long)ticks, (unsigned long long)elapsed);
	report("tsc_delay.elapsed", elapsed >= ticks, "left after %llu ticks, before %llu",
	       (unsigned long long)elapsed, (unsigned long long)ticks);
	return report_summary();
}
