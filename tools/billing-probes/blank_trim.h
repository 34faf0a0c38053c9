/*
 * blank_trim.h -- bpftrace's output without the blank lines it trails.
 *
 * bpftrace 0.17 ends with two blank lines and one more per map it prints
 * (a cleared one too): a screen of nothing under the figures an SRE
 * wants.  The launcher passes bpftrace's output through, holding blank
 * lines back until a line with text follows them, so none trail.
 *
 * bpftrace prints strings read from the traced process (str(arg)): text
 * of whoever runs it.  Control bytes in it other than newline and tab,
 * and the two-byte UTF-8 forms of C1 controls (U+0080..U+009F: CSI, OSC),
 * pass as \xNN (term_text.h); other UTF-8 passes unchanged (a lone 0xc2
 * at the very end of the output is dropped: it begins nothing).
 */
#ifndef BP_BLANK_TRIM_H
#define BP_BLANK_TRIM_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
	size_t held; /* blank lines not written yet */
	int at_line_start;
	int lead_c2; /* the last byte was 0xc2, not written yet */
} bp_blank_trim_t;

#define BP_BLANK_TRIM_INIT \
  { \
    0, 1, 0 \
  }

/* Write n bytes of buf to out (flushed), holding trailing blank lines,
 * control bytes escaped. */
void bp_blank_trim_write(bp_blank_trim_t *trim, const char *buf, size_t n, FILE *out);

#endif
