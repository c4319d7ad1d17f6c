// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kvm-unit-tests style results on the serial port:
 *   PASS: name
 *   FAIL: name (details)
 *   SKIP: name (reason)
 *   SUMMARY: N tests, M unexpected failures[, K skipped]
 * and the exit status for isa-debug-exit: 0 all passed, 1 any failure,
 * 38 everything skipped (QEMU then exits with (v << 1) | 1).
 */
#ifndef LIB_REPORT_H
#define LIB_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#define EXIT_PASS 0
#define EXIT_FAIL 1
#define EXIT_ALL_SKIPPED 38

/* Records one check; fmt (may be NULL) explains a failure. Returns pass. */
bool report(const char *name, bool pass, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void report_skip(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Value checks that always show their values:
 *   PASS: name (got 0x5, expected 0x5)
 *   FAIL: name (got 0x4, expected 0x5)
 * report_eq_dev also accepts one documented alternative (a known deviation of
 * QEMU 7.2 TCG, say, from the SDM): it is counted as passed and printed as
 *   PASS: name (got 0x8, SDM expects 0x9; accepted as a known deviation)
 *   DEVIATION: name: what
 * unless strict mode is on (the command line word strict=1, read by
 * report_strict_from_cmdline), where it is a FAIL like any other value.
 */
bool report_eq(const char *name, uint64_t got, uint64_t want);
bool report_eq_dev(const char *name, uint64_t got, uint64_t want,
		   uint64_t alt, const char *what);
void report_strict_from_cmdline(void);
unsigned report_deviation_count(void);

/* Prints SUMMARY (after a "DEVIATIONS: K" line when some were accepted) and
 * returns the exit status. */
int report_summary(void);

/* Writes status to the isa-debug-exit port 0xF4; halts if nothing is there. */
__attribute__((noreturn)) void debug_exit(int status);

#endif
