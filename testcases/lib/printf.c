// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/printf.h"
#include "lib/serial.h"

/*
 * n / d for d < 2^31, without libgcc: 32-bit code would otherwise call
 * __udivdi3. Divide the high half natively, then the rest bit by bit;
 * printf only divides by 10, so speed does not matter.
 */
static uint64_t udiv64_small(uint64_t n, uint32_t d, uint32_t *rem)
{
	uint32_t hi = (uint32_t)(n >> 32), lo = (uint32_t)n;
	uint32_t q_hi = hi / d, r = hi % d, q_lo = 0;

	for (int bit = 31; bit >= 0; bit--) {
		r = (r << 1) | ((lo >> bit) & 1);	/* r < 2d < 2^32 */
		q_lo <<= 1;
		if (r >= d) {
			r -= d;
			q_lo |= 1;
		}
	}
	*rem = r;
	return ((uint64_t)q_hi << 32) | q_lo;
}

struct spec {
	bool left;	/* '-' */
	bool zero;	/* '0' */
	int width;
};

static int pad(int n, char c)
{
	for (int i = 0; i < n; i++)
		serial_putc(c);
	return n > 0 ? n : 0;
}

static int put_field(const struct spec *sp, const char *s, int len)
{
	int out = 0;

	if (!sp->left)
		out += pad(sp->width - len, ' ');
	for (int i = 0; i < len; i++)
		serial_putc(s[i]);
	out += len;
	if (sp->left)
		out += pad(sp->width - len, ' ');
	return out;
}

static int put_number(const struct spec *sp, uint64_t v, unsigned base,
		      bool negative, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char buf[24];	/* 2^64 has 20 decimal digits, plus a sign */
	int len = 0, out = 0;

	do {
		uint32_t d;

		if (base == 16) {
			d = v & 0xf;
			v >>= 4;
		} else {
			v = udiv64_small(v, base, &d);
		}
		buf[sizeof(buf) - 1 - len++] = digits[d];
	} while (v);

	int body = len + negative;
	if (sp->zero && !sp->left) {
		/* The sign goes before the zero padding: -0042 */
		if (negative)
			serial_putc('-');
		out = negative + pad(sp->width - body, '0');
		for (int i = sizeof(buf) - len; i < (int)sizeof(buf); i++)
			serial_putc(buf[i]);
		return out + len;
	}
	if (negative)
		buf[sizeof(buf) - 1 - len++] = '-';
	return out + put_field(sp, buf + sizeof(buf) - len, len);
}

/* len is the number of 'l's in the length modifier ('z' counts as size_t's). */
static int64_t signed_arg(va_list *ap, int len)
{
	if (len >= 2)
		return va_arg(*ap, long long);
	if (len == 1)
		return va_arg(*ap, long);
	return va_arg(*ap, int);
}

static uint64_t unsigned_arg(va_list *ap, int len)
{
	if (len >= 2)
		return va_arg(*ap, unsigned long long);
	if (len == 1)
		return va_arg(*ap, unsigned long);
	return va_arg(*ap, unsigned int);
}

int vprintf(const char *fmt, va_list ap_in)
{
	va_list ap;
	int out = 0;

	va_copy(ap, ap_in);
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			serial_putc(*fmt);
			out++;
			continue;
		}
		struct spec sp = { 0 };
		int len = 0;

		for (;; fmt++) {
			if (fmt[1] == '-')
				sp.left = true;
			else if (fmt[1] == '0')
				sp.zero = true;
			else
				break;
		}
		if (fmt[1] == '*') {
			sp.width = va_arg(ap, int);
			fmt++;
		}
		while (fmt[1] >= '0' && fmt[1] <= '9')
			sp.width = sp.width * 10 + (*++fmt - '0');
		for (;; fmt++) {
			if (fmt[1] == 'l')
				len++;
			else if (fmt[1] == 'z')
				len = sizeof(size_t) == sizeof(long) ? 1 : 0;
			else
				break;
		}
		switch (*++fmt) {
		case 'd':
		case 'i': {
			int64_t v = signed_arg(&ap, len);
			out += put_number(&sp, v < 0 ? -(uint64_t)v : (uint64_t)v,
					  10, v < 0, false);
			break;
		}
		case 'u':
			out += put_number(&sp, unsigned_arg(&ap, len), 10, false, false);
			break;
		case 'x':
		case 'X':
			out += put_number(&sp, unsigned_arg(&ap, len), 16, false,
					  *fmt == 'X');
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			int n = 0;

			if (!s)
				s = "(null)";
			while (s[n])
				n++;
			out += put_field(&sp, s, n);
			break;
		}
		case 'c': {
			char c = (char)va_arg(ap, int);

			out += put_field(&sp, &c, 1);
			break;
		}
		case '%':
			serial_putc('%');
			out++;
			break;
		default:	/* unknown or truncated: print it as it was */
			serial_putc('%');
			out++;
			if (!*fmt)
				goto done;
			serial_putc(*fmt);
			out++;
		}
	}
done:
	va_end(ap);
	return out;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}
