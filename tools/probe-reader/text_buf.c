/*
 * text_buf.c -- see text_buf.h.
 */
#include "text_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and a NUL; 0, or -1 (and b->failed) when out of memory. */
static int reserve(pr_buf_t *b, size_t n)
{
	if (b->failed)
		return -1;
	if (b->cap - b->len > n)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len <= n)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->failed = 1;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void pr_buf_append(pr_buf_t *b, const char *s, size_t n)
{
	if (reserve(b, n) != 0)
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void pr_buf_puts(pr_buf_t *b, const char *s)
{
	pr_buf_append(b, s, strlen(s));
}

void pr_buf_printf(pr_buf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return;
	}
	if (reserve(b, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}
