// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/cmdline.h"

/* A private copy: the loader's copy sits in memory we do not own. */
static char cmdline[1024];

void cmdline_init(const struct multiboot_info *mbi)
{
	if (!(mbi->flags & MULTIBOOT_INFO_CMDLINE))
		return;
	const char *src = (const char *)(uintptr_t)mbi->cmdline;
	size_t i;

	for (i = 0; i < sizeof(cmdline) - 1 && src[i]; i++)
		cmdline[i] = src[i];
	cmdline[i] = '\0';
}

const char *cmdline_get(void)
{
	return cmdline;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The value of the last "key=value" word, or NULL; *len gets its length. */
static const char *find_value(const char *key, size_t *len)
{
	const char *found = NULL;

	for (const char *w = cmdline; *w;) {
		while (is_space(*w))
			w++;
		const char *k = key;

		while (*k && *w == *k) {
			k++;
			w++;
		}
		if (!*k && *w == '=') {
			found = ++w;
			*len = 0;
			while (found[*len] && !is_space(found[*len]))
				(*len)++;
		}
		while (*w && !is_space(*w))
			w++;
	}
	return found;
}

bool cmdline_str(const char *key, char *buf, size_t size)
{
	size_t len;
	const char *v = find_value(key, &len);

	if (!v)
		return false;
	if (len > size - 1)
		len = size - 1;
	for (size_t i = 0; i < len; i++)
		buf[i] = v[i];
	buf[len] = '\0';
	return true;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;	/* not a digit in any base we accept */
}

enum cmdline_status cmdline_uint(const char *key, uint32_t *value)
{
	size_t len;
	const char *v = find_value(key, &len);
	uint32_t base = 10;
	uint64_t n = 0;

	if (!v)
		return CMDLINE_ABSENT;
	if (len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
		base = 16;
		v += 2;
		len -= 2;
	}
	if (len == 0)
		return CMDLINE_INVALID;
	for (size_t i = 0; i < len; i++) {
		uint32_t d = (uint32_t)digit_value(v[i]);

		if (d >= base)
			return CMDLINE_INVALID;
		n = n * base + d;
		if (n > UINT32_MAX)
			return CMDLINE_INVALID;
	}
	*value = (uint32_t)n;
	return CMDLINE_FOUND;
}
