/*
 * report.c -- see report.h.
 */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>

#include "term_text.h"

/* Paths from /proc/PID/maps and /proc/PID/root, module and target names,
 * file names and arguments are other users' text, so the whole line goes
 * through the tools' escaper (term_text.h): no control byte, newline
 * included, reaches the terminal raw. */
void bx_error(const char *fmt, ...)
{
	va_list ap;
	flockfile(stderr);
	fputs("billing-exporter: ", stderr);
	va_start(ap, fmt);
	bp_vprintf_escaped(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}
