/*
 * bpftrace_version.c -- `bpftrace --version`, read once, and what each
 * version does differently (bpftrace_version.h).
 */
#include "bpftrace_version.h"

#include <stdio.h>
#include <string.h>

#include "runner.h"

int bp_bpftrace_version_parse(const char *text, bp_bpftrace_version_t *v)
{
	const char *p = strstr(text, "bpftrace v");
	p = p ? p + strlen("bpftrace ") : text;
	int used = 0;
	memset(v, 0, sizeof *v);
	if (sscanf(p, "v%d.%d%n", &v->major, &v->minor, &used) != 2 || v->major < 0 || v->minor < 0)
		return -1;
	if (p[used] == '.')
		sscanf(p + used + 1, "%d", &v->patch);
	size_t len = strcspn(p, " \t\r\n");
	snprintf(v->text, sizeof v->text, "%.*s", (int)(len < sizeof v->text ? len : sizeof v->text - 1), p);
	return 0;
}

int bp_bpftrace_version(const char *path, bp_bpftrace_version_t *v, char *why, size_t whylen)
{
	char *const argv[] = { (char *)path, (char *)"--version", NULL };
	char out[512];
	int rc = bp_run_capture(argv, out, sizeof out, 5000);
	if (rc != 0) {
		snprintf(why, whylen, "`%s --version` %s", path,
		         rc == -1 ? "could not run" : rc == -2 ? "timed out or was killed"
		                                               : "failed");
		return -1;
	}
	if (bp_bpftrace_version_parse(out, v) != 0) {
		snprintf(why, whylen, "`%s --version` printed no version (%.60s)", path, out);
		return -1;
	}
	return 0;
}

static int at_least(const bp_bpftrace_version_t *v, int major, int minor)
{
	return v->major > major || (v->major == major && v->minor >= minor);
}

int bp_bpftrace_tested(const bp_bpftrace_version_t *v)
{
	return v->major == 0 && (v->minor == 17 || v->minor == 23 || v->minor == 27);
}

int bp_bpftrace_counts_sites(const bp_bpftrace_version_t *v)
{
	return !at_least(v, 0, 24);
}

int bp_bpftrace_warns_of_types(const bp_bpftrace_version_t *v)
{
	return at_least(v, 0, 24);
}
