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

#define EXIT_PASS 0
#define EXIT_FAIL 1
#define EXIT_ALL_SKIPPED 38

/* Records one check; fmt (may be NULL) explains a failure. Returns pass. */
bool report(const char *name, bool pass, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void report_skip(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints SUMMARY and returns the exit status. */
int report_summary(void);

/* Writes status to the isa-debug-exit port 0xF4; halts if nothing is there. */
__attribute__((noreturn)) void debug_exit(int status);

#endif
