/*
 * blank_trim.c -- pass output through, blank lines held until text
 * follows them (blank_trim.h).
 */
#include "blank_trim.h"

void bp_blank_trim_write(bp_blank_trim_t *trim, const char *buf, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		if (trim->at_line_start && buf[i] == '\n') {
			trim->held++;
			continue;
		}
		for (; trim->held; trim->held--)
			fputc('\n', out);
		fputc(buf[i], out);
		trim->at_line_start = buf[i] == '\n';
	}
	fflush(out);
}
