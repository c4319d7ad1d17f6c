#include <stdarg.h>
#include <stddef.h>

#include "lib/io.h"
#include "lib/printf.h"
#include "lib/report.h"

#define DEBUG_EXIT_PORT 0xF4

static unsigned tests, failures, skipped;

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

int report_summary(void)
{
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
