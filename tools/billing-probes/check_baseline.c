/*
 * check_baseline.c -- the baseline modes of `check` (format: baseline.h,
 * docs/tool.md).  A baseline is written only from a whole answer: a
 * process module that could not be read, or a probe whose signature the
 * note reader cannot decode, refuses it, since a later comparison would
 * call that probe removed or changed.  A comparison names each probe that
 * differs on one line; only removals and changes fail, because a consumer
 * written against the baseline still works when probes are added.
 */
#include "check_baseline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "baseline.h"
#include "file_replace.h"
#include "term_text.h"
#include "text_file.h"

/* A baseline file larger than this is not one: every probe a build could
 * sensibly carry fits in a small fraction of it. */
enum { BASELINE_MAX_BYTES = 4 << 20 };

/* "billing" or "billing, shop": the providers a baseline covers. */
static void provider_names(const pr_catalogue_t *cat, char *out, size_t n)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < cat->count && used < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(cat->probes[j].provider, cat->probes[i].provider) == 0;
		if (!seen)
			used += (size_t)snprintf(out + used, n - used, "%s%s", used ? ", " : "", cat->probes[i].provider);
	}
}

static int save(const bp_options_t *opt, const char *what, const char *providers, const bp_baseline_t *build)
{
	char err[600], why[700];
	if (build->count == 0) {
		snprintf(why, sizeof why, "no probe of %s found (built without probes, with LTO, or stripped?): no baseline written",
		         providers);
		bp_error(what, why);
		return BP_EXIT_ERROR;
	}
	size_t len;
	char *text = bp_baseline_format(build, &len);
	if (!text) {
		bp_error(opt->save_baseline_file, "out of memory");
		return BP_EXIT_ERROR;
	}
	int failed = bp_replace_file(opt->save_baseline_file, text, len, err, sizeof err);
	free(text);
	if (failed) {
		bp_error(opt->save_baseline_file, err);
		return BP_EXIT_ERROR;
	}
	size_t probes = bp_baseline_probe_count(build);
	pr_printf_escaped(stdout, "%s: %zu probe%s of %s saved to %s", what, probes, probes == 1 ? "" : "s", providers,
	                  opt->save_baseline_file);
	putchar('\n');
	return BP_EXIT_OK;
}

/* The baseline in opt->baseline_file: 0, or -1 after the one error line. */
static int load(const char *path, bp_baseline_t *out)
{
	char why[600];
	struct stat st;
	size_t len;
	int fd = pr_open_regular(path, 0, &st, why, sizeof why);
	char *text = fd < 0 ? NULL : pr_read_text_fd(fd, BASELINE_MAX_BYTES, &len);
	if (fd >= 0 && !text)
		snprintf(why, sizeof why, "%s", errno == EFBIG ? "larger than any baseline (4 MiB)" : strerror(errno));
	if (!text) {
		bp_error(path, why);
		return -1;
	}
	int rc = bp_baseline_parse(text, len, out, why, sizeof why);
	free(text);
	if (rc != 0)
		bp_error(path, why);
	return rc;
}

/* "2 arguments (uint64, int32)", each signature of a probe, "or" between. */
static void print_signatures(const bp_baseline_entry_t *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *sig = e[i].signature, *types = strchr(sig, ' ');
		int nargs = atoi(sig);
		printf("%s%d argument%s (", i ? " or " : "", nargs, nargs == 1 ? "" : "s");
		for (const char *c = types ? types + 1 : ""; *c; c++) {
			if (*c == ' ')
				fputs(", ", stdout);
			else
				putchar(*c);
		}
		putchar(')');
	}
}

static void print_change(const bp_baseline_change_t *c)
{
	switch (c->kind) {
	case BP_BASELINE_REMOVED:
		printf("removed: %s: ", c->key);
		print_signatures(c->was, c->was_count);
		break;
	case BP_BASELINE_CHANGED:
		printf("changed: %s: was ", c->key);
		print_signatures(c->was, c->was_count);
		fputs(", now ", stdout);
		print_signatures(c->now, c->now_count);
		break;
	case BP_BASELINE_ADDED:
		printf("added: %s: ", c->key);
		print_signatures(c->now, c->now_count);
		break;
	}
	putchar('\n');
}

static int compare(const bp_options_t *opt, const char *what, const bp_baseline_t *build)
{
	bp_baseline_t old;
	if (load(opt->baseline_file, &old) != 0)
		return BP_EXIT_ERROR;
	bp_baseline_diff_t diff;
	if (bp_baseline_compare(&old, build, &diff) != 0) {
		bp_error(opt->baseline_file, "out of memory");
		bp_baseline_free(&old);
		return BP_EXIT_ERROR;
	}
	for (size_t i = 0; i < diff.count; i++)
		print_change(&diff.items[i]);
	size_t kept = bp_baseline_probe_count(&old) - diff.removed - diff.changed;
	if (diff.removed || diff.changed)
		pr_printf_escaped(stdout, "%s: %zu removed, %zu changed, %zu added against the baseline %s", what, diff.removed,
		                  diff.changed, diff.added, opt->baseline_file);
	else
		pr_printf_escaped(stdout, "%s: ok: the %zu probe%s of the baseline %s present, unchanged (%zu added)", what,
		                  kept, kept == 1 ? "" : "s", opt->baseline_file, diff.added);
	putchar('\n');
	int rc = diff.removed || diff.changed ? BP_EXIT_FAIL : BP_EXIT_OK;
	bp_baseline_diff_free(&diff);
	bp_baseline_free(&old);
	return rc;
}

int bp_check_baseline(const bp_options_t *opt, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets)
{
	char what[600], providers[300], err[700];
	snprintf(what, sizeof what, "%s%s", opt->targets[0], opt->target_count > 1 ? " (and the other targets)" : "");
	for (size_t k = 0; k < nsets; k++)
		if (sets[k].unreadable_count)
			return BP_EXIT_ERROR; /* each unreadable module has had its line */
	provider_names(cat, providers, sizeof providers);
	bp_baseline_t build;
	if (bp_baseline_from_sets(cat, sets, nsets, &build, err, sizeof err) != 0) {
		bp_error(what, err);
		return BP_EXIT_ERROR;
	}
	int rc = opt->save_baseline_file ? save(opt, what, providers, &build) : compare(opt, what, &build);
	bp_baseline_free(&build);
	return rc;
}
