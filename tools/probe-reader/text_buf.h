/*
 * text_buf.h -- a growable, always NUL-terminated text buffer: a
 * resolved bpftrace script, a /metrics page.  Out of memory is sticky:
 * later appends do nothing and `failed` says the text is incomplete, so a
 * writer checks once, at the end.
 */
#ifndef PR_TEXT_BUF_H
#define PR_TEXT_BUF_H

#include <stddef.h>

typedef struct pr_buf {
	char *data; /* NULL until something is appended */
	size_t len, cap;
	int failed; /* out of memory: data is incomplete */
} pr_buf_t;

/* Append n bytes of s. */
void pr_buf_append(pr_buf_t *b, const char *s, size_t n);
/* Append the string s. */
void pr_buf_puts(pr_buf_t *b, const char *s);
void pr_buf_printf(pr_buf_t *b, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* PR_TEXT_BUF_H */
