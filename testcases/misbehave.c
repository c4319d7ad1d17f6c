/*
 * A guest that goes wrong on purpose, so the emulator's diagnoses can be
 * tested: the run must end with a clear one-line error and a non-zero
 * status, never a crash of the emulator or a hang.
 *
 * cmdline: mode=halt | spin | ud | divide | unmapped | msr | exit256
 *   halt      cli; hlt: nothing can ever wake the CPU
 *   spin      an endless loop: only the time limit ends it
 *   ud        ud2, with no IDT to handle #UD
 *   divide    a division by zero, with no IDT to handle #DE
 *   unmapped  a read far beyond RAM
 *   msr       rdmsr of an MSR that does not exist
 *   exit256   writes 256 to isa-debug-exit: a value no exit status carries
 */
#include "lib/cmdline.h"
#include "lib/io.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"

int main(const struct multiboot_info *mbi)
{
	char mode[16];

	(void)mbi;
	if (!cmdline_str("mode", mode, sizeof(mode))) {
		printf("misbehave: give mode=halt|spin|ud|divide|unmapped|msr|exit256\n");
		return EXIT_FAIL;
	}
	printf("misbehave: mode=%s\n", mode);
	if (!strcmp(mode, "halt")) {
		for (;;)
			__asm__ volatile("cli; hlt");
	} else if (!strcmp(mode, "spin")) {
		for (;;)
			__asm__ volatile("" ::: "memory");
	} else if (!strcmp(mode, "ud")) {
		__asm__ volatile("ud2");
	} else if (!strcmp(mode, "divide")) {
		/* In assembly: the compiler turns 1 / x into a comparison. */
		__asm__ volatile("xor %%ecx, %%ecx; div %%ecx" : : "a"(1), "d"(0) : "ecx");
	} else if (!strcmp(mode, "unmapped")) {
		printf("%x\n", *(volatile uint32_t *)0xf0000000u);
	} else if (!strcmp(mode, "exit256")) {
		outl(0xf4, 256);
	} else if (!strcmp(mode, "msr")) {
		uint32_t lo, hi;

		__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(0x4b564dffu));
		printf("%x %x\n", lo, hi);
	}
	printf("misbehave: mode %s did not misbehave\n", mode);
	return EXIT_FAIL;
}
