/*
 * kconfig.c -- the running kernel's build configuration:
 * /boot/config-RELEASE, else the kernel's own copy in /proc/config.gz
 * (CONFIG_IKCONFIG_PROC, read through zlib when the tool has it).
 */
#include "kconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#ifdef BP_HAVE_ZLIB
#  include <zlib.h>
#endif

#include "text_buf.h"
#include "text_file.h"

static int read_plain(const char *path, kconfig_t *k)
{
	size_t len;
	k->text = pr_read_text_file(path, 64u << 20, &len);
	if (!k->text)
		return -1;
	snprintf(k->source, sizeof k->source, "%s", path);
	return 0;
}

#ifdef BP_HAVE_ZLIB
static int read_gzip(const char *path, kconfig_t *k)
{
	gzFile g = gzopen(path, "rb");
	if (!g)
		return -1;
	pr_buf_t b = { 0 };
	char chunk[1 << 16];
	int n;
	while ((n = gzread(g, chunk, sizeof chunk)) > 0)
		pr_buf_append(&b, chunk, (size_t)n);
	gzclose(g);
	if (b.failed || b.len == 0) {
		free(b.data);
		return -1;
	}
	k->text = b.data;
	snprintf(k->source, sizeof k->source, "%s", path);
	return 0;
}
#endif

int bp_kconfig_load(kconfig_t *k)
{
	struct utsname u;
	char path[300];
	k->text = NULL;
	if (uname(&u) == 0) {
		snprintf(path, sizeof path, "/boot/config-%.200s", u.release);
		if (read_plain(path, k) == 0)
			return 0;
	}
#ifdef BP_HAVE_ZLIB
	if (read_gzip("/proc/config.gz", k) == 0)
		return 0;
#endif
	return -1;
}

/* 'y', 'm', or 'n' (also when absent). */
char bp_kconfig_value(const kconfig_t *k, const char *option)
{
	size_t n = strlen(option);
	for (const char *line = k->text; line && *line;) {
		if (strncmp(line, option, n) == 0 && line[n] == '=')
			return line[n + 1] == 'y' ? 'y' : line[n + 1] == 'm' ? 'm'
			                                                     : 'n';
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return 'n';
}

const char *bp_kconfig_missing_text(void)
{
#ifdef BP_HAVE_ZLIB
	return "kernel config not found (/boot/config-$(uname -r), /proc/config.gz): cannot verify";
#else
	return "kernel config not found (/boot/config-$(uname -r); this build reads no /proc/config.gz: built without zlib)";
#endif
}
