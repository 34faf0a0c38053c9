/*
 * blank_trim.c -- pass output through, blank lines held until text
 * follows them, control bytes escaped (blank_trim.h).
 */
#include "blank_trim.h"

#include "term_text.h"

static void put_text_byte(bp_blank_trim_t *trim, unsigned char c, FILE *out)
{
	for (; trim->held; trim->held--)
		fputc('\n', out);
	if (trim->lead_c2) {
		trim->lead_c2 = 0;
		if (c >= 0x80 && c <= 0x9f) {
			/* a C1 control in UTF-8 */
			pr_put_escaped_byte(out, 0xc2);
			pr_put_escaped_byte(out, c);
			trim->at_line_start = 0;
			return;
		}
		fputc(0xc2, out);
	}
	if (c == 0xc2) {
		trim->lead_c2 = 1;
		return;
	}
	if (c == '\n' || c == '\t' || c >= 0x80 || !pr_byte_needs_escape(c))
		fputc(c, out);
	else
		pr_put_escaped_byte(out, c);
	trim->at_line_start = c == '\n';
}

void bp_blank_trim_write(bp_blank_trim_t *trim, const char *buf, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		if (trim->at_line_start && !trim->lead_c2 && buf[i] == '\n') {
			trim->held++;
			continue;
		}
		put_text_byte(trim, (unsigned char)buf[i], out);
	}
	fflush(out);
}
