/*
 * expect.c -- expectations: names or globs, D spelling (payment-auth) or
 * ELF spelling (payment__auth), optionally "provider:" first.  A file holds
 * one per line; '#' starts a comment.  A pattern that matches no probe of
 * the catalogue is a mistake (a typo would silently expect nothing), so it
 * is refused.
 */
#include "expect.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int add(bp_expect_t *e, const char *text, size_t len, const pr_catalogue_t *cat, char *err, size_t errlen)
{
	char *written = strndup(text, len);
	char **p = realloc(e->provider, (e->count + 1) * sizeof *p);
	if (p)
		e->provider = p;
	char **n = realloc(e->name, (e->count + 1) * sizeof *n);
	if (n)
		e->name = n;
	char **w = realloc(e->written, (e->count + 1) * sizeof *w);
	if (w)
		e->written = w;
	if (!written || !p || !n || !w) {
		free(written);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const char *colon = strchr(written, ':');
	char *provider = colon ? strndup(written, (size_t)(colon - written)) : strdup("*");
	const char *name = colon ? colon + 1 : written;
	size_t cap = 2 * strlen(name) + 1;
	char *elf = malloc(cap);
	if (!provider || !elf || !pr_probe_name_to_elf(name, elf, cap)) {
		free(written);
		free(provider);
		free(elf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	e->provider[e->count] = provider;
	e->name[e->count] = elf;
	e->written[e->count] = written;
	e->count++;
	if (!*elf || !*provider) {
		snprintf(err, errlen, "'%.100s' names no probe", written);
		return -1;
	}
	for (size_t i = 0; i < cat->count; i++)
		if (fnmatch(provider, cat->probes[i].provider, 0) == 0 && fnmatch(elf, cat->probes[i].name, 0) == 0)
			return 0;
	snprintf(err, errlen, "expected probe '%.100s' matches no probe of the catalogue", written);
	return -1;
}

static int add_file(bp_expect_t *e, const char *path, const pr_catalogue_t *cat, char *err, size_t errlen)
{
	struct stat st;
	FILE *f = NULL;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%.200s: not a regular file", path);
		return -1;
	}
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%.200s: %s", path, errno == EACCES ? "permission denied" : strerror(errno));
		return -1;
	}
	char line[512];
	int lineno = 0, rc = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		lineno++;
		line[strcspn(line, "#")] = '\0';
		char *start = line + strspn(line, " \t\r\n");
		size_t len = strcspn(start, " \t\r\n");
		if (len == 0)
			continue;
		if (start[len + strspn(start + len, " \t\r\n")] != '\0') {
			snprintf(err, errlen, "%.200s:%d: one probe name or glob per line", path, lineno);
			rc = -1;
			break;
		}
		char why[300];
		if (add(e, start, len, cat, why, sizeof why) != 0) {
			snprintf(err, errlen, "%.200s:%d: %s", path, lineno, why);
			rc = -1;
		}
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "%.200s: %s", path, strerror(errno));
		rc = -1;
	}
	fclose(f);
	if (rc == 0 && e->count == 0) {
		snprintf(err, errlen, "%.200s: names no probe (an empty expectation would check nothing)", path);
		rc = -1;
	}
	return rc;
}

int bp_expect_build(const char *const *names, size_t nnames, const char *file, const pr_catalogue_t *cat,
                    bp_expect_t *e, char *err, size_t errlen)
{
	memset(e, 0, sizeof *e);
	for (size_t i = 0; i < nnames; i++)
		if (add(e, names[i], strlen(names[i]), cat, err, errlen) != 0)
			return -1;
	if (file && add_file(e, file, cat, err, errlen) != 0)
		return -1;
	return 0;
}

int bp_expect_covers(const bp_expect_t *e, const char *provider, const char *name)
{
	if (e->count == 0)
		return 1;
	for (size_t i = 0; i < e->count; i++)
		if (fnmatch(e->provider[i], provider, 0) == 0 && fnmatch(e->name[i], name, 0) == 0)
			return 1;
	return 0;
}

void bp_expect_free(bp_expect_t *e)
{
	for (size_t i = 0; i < e->count; i++) {
		free(e->provider[i]);
		free(e->name[i]);
		free(e->written[i]);
	}
	free(e->provider);
	free(e->name);
	free(e->written);
	memset(e, 0, sizeof *e);
}
