/*
 * term_text.c -- foreign text made safe for a terminal (term_text.h).
 */
#include "term_text.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int pr_byte_needs_escape(unsigned char c)
{
	return c < 0x20 || c >= 0x7f;
}

static size_t byte_width(unsigned char c)
{
	if (pr_byte_needs_escape(c))
		return 4;
	return c == '\\' ? 2 : 1;
}

void pr_put_escaped_byte(FILE *out, unsigned char c)
{
	if (pr_byte_needs_escape(c))
		fprintf(out, "\\x%02x", c);
	else if (c == '\\')
		fputs("\\\\", out);
	else
		fputc(c, out);
}

void pr_put_escaped(FILE *out, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		pr_put_escaped_byte(out, *c);
}

size_t pr_escaped_width(const char *s)
{
	size_t w = 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		w += byte_width(*c);
	return w;
}

char *pr_escape_into(const char *s, char *buf, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;
	if (n == 0)
		return buf;
	for (const unsigned char *c = (const unsigned char *)s; *c && k + byte_width(*c) < n; c++) {
		if (pr_byte_needs_escape(*c)) {
			buf[k++] = '\\';
			buf[k++] = 'x';
			buf[k++] = hex[*c >> 4];
			buf[k++] = hex[*c & 15];
		} else {
			if (*c == '\\')
				buf[k++] = '\\';
			buf[k++] = (char)*c;
		}
	}
	buf[k] = '\0';
	return buf;
}

void pr_printf_escaped(FILE *out, const char *fmt, ...)
{
	char small[1024], *big = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof small && (big = malloc((size_t)n + 1)) != NULL) {
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	if (n >= 0)
		pr_put_escaped(out, big ? big : small); /* without memory: cut short rather than lost */
	free(big);
}
