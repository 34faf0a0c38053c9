/*
 * report.c -- see report.h.
 */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "term_text.h"

/* Paths from /proc/PID/maps and /proc/PID/root, module and target names,
 * file names and arguments are other users' text, so the whole line goes
 * through the tools' escaper (term_text.h): no control byte, newline
 * included, reaches the terminal raw.  The line is escaped into memory
 * and written whole: stderr is unbuffered, and a byte at a time is a
 * write() each (31,000 refused names took 13 s of them). */
void bx_error(const char *fmt, ...)
{
	static const char who[] = "billing-exporter: ";
	char text[1024], small[sizeof who + 4 * sizeof text + 1];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	char *msg = (size_t)n < sizeof text ? text : malloc((size_t)n + 1);
	if (msg && msg != text) {
		va_start(ap, fmt);
		vsnprintf(msg, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	size_t room = sizeof who + 4 * (size_t)n + 1; /* each byte escapes to at most 4, then the newline */
	char *line = msg && room > sizeof small ? malloc(room) : small;
	if (!line)
		line = small, room = sizeof small; /* cut short rather than lost */
	memcpy(line, who, sizeof who - 1);
	pr_escape_into(msg ? msg : text, line + sizeof who - 1, room - sizeof who);
	size_t len = strlen(line);
	line[len] = '\n';
	fwrite(line, 1, len + 1, stderr);
	if (msg != text)
		free(msg);
	if (line != small)
		free(line);
}
