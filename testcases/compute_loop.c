/*
 * A deterministic integer workload for benchmarks: table-driven CRC32 over a
 * small buffer mixed with a multiplicative hash, about 30 instructions per
 * iteration (table loads, a buffer load and store, shifts, a multiply). The checksum depends
 * only on the iteration count, so any two runs can be compared.
 *
 * cmdline: iterations=N (default DEFAULT_ITERATIONS); stores=off drops the
 * feedback into the buffer, so the loop only loads (emulators differ most in
 * how fast they store: docs/benchmarks.md).
 */
#include "lib/cmdline.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"

#define DEFAULT_ITERATIONS 50000000u
#define CRC32_POLY 0xEDB88320u	/* reflected IEEE 802.3 */
#define FNV_PRIME 0x01000193u
#define BUF_WORDS 16		/* 64 bytes: one cache line of state */

static uint32_t crc_table[256];
static uint32_t buf[BUF_WORDS];

static void init_crc_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? CRC32_POLY : 0);
		crc_table[i] = c;
	}
}

static uint32_t crc_byte(uint32_t crc, uint32_t byte)
{
	return crc_table[(crc ^ byte) & 0xff] ^ (crc >> 8);
}

static uint32_t run(uint32_t iterations, bool stores)
{
	uint32_t crc = ~0u, hash = 0x811C9DC5u;	/* FNV offset basis */

	for (uint32_t i = 0; i < BUF_WORDS; i++)
		buf[i] = i * 0x9E3779B9u;	/* golden-ratio spread */
	for (uint32_t i = 0; i < iterations; i++) {
		uint32_t w = buf[i % BUF_WORDS];

		crc = crc_byte(crc, w);
		crc = crc_byte(crc, w >> 8);
		hash = (hash ^ crc ^ w) * FNV_PRIME;
		hash ^= hash >> 15;
		/* Feed back so every iteration depends on the previous ones. */
		if (stores)
			buf[i % BUF_WORDS] = (w << 7 | w >> 25) ^ hash;
	}
	return ~crc ^ hash;
}

int main(const struct multiboot_info *mbi)
{
	uint32_t iterations = DEFAULT_ITERATIONS;
	char stores[4] = "on";

	if (cmdline_uint("iterations", &iterations) == CMDLINE_INVALID) {
		report("cmdline", false, "iterations= is not a 32-bit number");
		return report_summary();
	}
	cmdline_str("stores", stores, sizeof(stores));
	init_crc_table();
	printf("compute_loop: %u iterations, stores=%s\n", iterations, stores);
	printf("checksum: 0x%08x\n", run(iterations, strcmp(stores, "off") != 0));
	return EXIT_PASS;
}
