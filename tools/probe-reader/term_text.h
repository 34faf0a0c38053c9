/*
 * term_text.h -- foreign text made safe for a terminal.
 *
 * Paths from /proc/PID/maps, provider and probe names and argument specs
 * from ELF notes, file names and arguments on the command line: any of
 * them may come from another user, and a terminal acts on the control
 * bytes in them (ESC sequences retitle windows, move the cursor, rewrite
 * what was printed).  Every line billing-probes prints that carries such
 * text goes through these functions, and so does every stderr line of
 * billing-exporter (bx_error): one escaper for both tools, in the probe
 * reader library.
 */
#ifndef PR_TERM_TEXT_H
#define PR_TERM_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* s with every byte outside printable ASCII written as \xNN and each
 * backslash doubled, so the output is one line of plain ASCII that names
 * the bytes exactly. */
void pr_put_escaped(FILE *out, const char *s);

/* printf, then pr_put_escaped on the result: for a line built of our
 * own words and foreign text.  A newline in fmt's result is escaped too,
 * so the caller writes the line end. */
void pr_printf_escaped(FILE *out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* How many columns pr_put_escaped(s) takes. */
size_t pr_escaped_width(const char *s);

/* pr_put_escaped into buf (n bytes), cut short when it does not fit.
 * Returns buf. */
char *pr_escape_into(const char *s, char *buf, size_t n);

/* One byte as pr_put_escaped writes it (for streams: see blank_trim.c). */
void pr_put_escaped_byte(FILE *out, unsigned char c);

/* Does pr_put_escaped write c as \xNN? */
int pr_byte_needs_escape(unsigned char c);

#endif /* PR_TERM_TEXT_H */
