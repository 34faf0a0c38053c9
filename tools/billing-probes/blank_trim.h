/*
 * blank_trim.h -- bpftrace's output without the blank lines it trails.
 *
 * bpftrace 0.17 ends with two blank lines and one more per map it prints
 * (a cleared one too): a screen of nothing under the figures an SRE
 * wants.  The launcher passes bpftrace's output through, holding blank
 * lines back until a line with text follows them, so none trail.
 */
#ifndef BP_BLANK_TRIM_H
#define BP_BLANK_TRIM_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
	size_t held; /* blank lines not written yet */
	int at_line_start;
} bp_blank_trim_t;

#define BP_BLANK_TRIM_INIT \
  { \
    0, 1 \
  }

/* Write n bytes of buf to out (flushed), holding trailing blank lines. */
void bp_blank_trim_write(bp_blank_trim_t *trim, const char *buf, size_t n, FILE *out);

#endif
