// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stddef.h>

#include "lib/cmdline.h"
#include "lib/io.h"
#include "lib/printf.h"
#include "lib/report.h"

#define DEBUG_EXIT_PORT 0xF4

static unsigned tests, failures, skipped, deviations;
static bool strict;

static void print_line(const char *tag, const char *name, const char *fmt,
		       va_list ap)
{
	printf("%s: %s", tag, name);
	if (fmt) {
		printf(" (");
		vprintf(fmt, ap);
		printf(")");
	}
	printf("\n");
}

bool report(const char *name, bool pass, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!pass)
		failures++;
	va_start(ap, fmt);
	/* Details only explain failures; a PASS line stays just the name. */
	print_line(pass ? "PASS" : "FAIL", name, pass ? NULL : fmt, ap);
	va_end(ap);
	return pass;
}

void report_skip(const char *name, const char *fmt, ...)
{
	va_list ap;

	tests++;
	skipped++;
	va_start(ap, fmt);
	print_line("SKIP", name, fmt, ap);
	va_end(ap);
}

bool report_eq(const char *name, uint64_t got, uint64_t want)
{
	bool pass = got == want;

	tests++;
	if (!pass)
		failures++;
	printf("%s: %s (got 0x%llx, expected 0x%llx)\n", pass ? "PASS" : "FAIL",
	       name, (unsigned long long)got, (unsigned long long)want);
	return pass;
}

bool report_eq_dev(const char *name, uint64_t got, uint64_t want,
		   uint64_t alt, const char *what)
{
	if (got == want || got != alt || strict)
		return report_eq(name, got, want);
	tests++;
	deviations++;
	printf("PASS: %s (got 0x%llx, SDM expects 0x%llx; accepted as a known "
	       "deviation)\n", name, (unsigned long long)got,
	       (unsigned long long)want);
	printf("DEVIATION: %s: %s\n", name, what);
	return true;
}

void report_strict_from_cmdline(void)
{
	uint32_t v;

	strict = cmdline_uint("strict", &v) == CMDLINE_FOUND && v;
	if (strict)
		printf("strict=1: known deviations are failures\n");
}

unsigned report_deviation_count(void)
{
	return deviations;
}

int report_summary(void)
{
	if (deviations)
		printf("DEVIATIONS: %u (checks that accepted a documented "
		       "non-SDM result)\n", deviations);
	printf("SUMMARY: %u tests, %u unexpected failures", tests, failures);
	if (skipped)
		printf(", %u skipped", skipped);
	printf("\n");
	if (failures)
		return EXIT_FAIL;
	if (tests && skipped == tests)
		return EXIT_ALL_SKIPPED;
	return EXIT_PASS;
}

void debug_exit(int status)
{
	outl(DEBUG_EXIT_PORT, (uint32_t)status);
	halt_forever();
}
