/*
 * check.c -- what `check` and `doctor` judge.  Some faults are faults
 * whatever a service promises: a probe of billing's provider with the
 * wrong number or width of arguments (a consumer would read garbage), one
 * that billing.d does not know, a site without its semaphore (every
 * BILLING_ macro is guarded: such a site was built around the public
 * header).  The rest depends on the promise: an expected probe missing is
 * a fault, one present but not expected is information.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

const char *bp_finding_word(bp_finding_kind_t kind)
{
	switch (kind) {
	case BP_MISSING: return "missing";
	case BP_ARG_COUNT: return "mismatch";
	case BP_ARG_WIDTH: return "mismatch";
	case BP_UNKNOWN: return "unknown";
	case BP_UNGUARDED: return "unguarded";
	case BP_UNEXPECTED: return "info";
	case BP_FINDING_KINDS: break;
	}
	return "?";
}

/* A finding about provider:name, at site p of set when there is one. */
static bp_finding_t *add(bp_check_report_t *r, bp_finding_kind_t kind, const char *provider, const char *name,
                         const pr_probe_set_t *set, const pr_probe_t *p)
{
	bp_finding_t *items = realloc(r->items, (r->count + 1) * sizeof *items);
	if (!items)
		return NULL;
	r->items = items;
	bp_finding_t *f = &items[r->count++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->provider = provider;
	f->name = name;
	f->set = set;
	f->site = p;
	if (kind != BP_UNEXPECTED)
		r->problems++;
	return f;
}

/* Faults of one site, whatever is expected. */
static int judge_site(bp_check_report_t *r, const pr_catalogue_t *cat, const pr_probe_set_t *set,
                      const pr_probe_t *p)
{
	if (!pr_catalogue_find(cat, p->provider, NULL))
		return 0; /* libc:setjmp, rtld:init_start ...: not ours to judge */
	const pr_catalogue_probe_t *want = pr_catalogue_find(cat, p->provider, p->name);
	bp_finding_t *f;
	if (!want)
		return add(r, BP_UNKNOWN, p->provider, p->name, set, p) ? 0 : -1;
	if (p->nargs != want->nargs) {
		if (!(f = add(r, BP_ARG_COUNT, want->provider, want->name, set, p)))
			return -1;
		f->want = want->nargs;
		f->got = p->nargs;
	} else {
		for (int a = 0; a < p->nargs && a < PR_CATALOGUE_MAX_ARGS; a++) {
			/* An argument the reader cannot decode (size 0) is a
			 * mismatch too: no consumer can read it. */
			if (p->args[a].kind != PR_SDT_ARG_UNKNOWN &&
			    (!want->arg_size[a] || !p->args[a].size || want->arg_size[a] == p->args[a].size))
				continue;
			if (!(f = add(r, BP_ARG_WIDTH, want->provider, want->name, set, p)))
				return -1;
			f->arg = a + 1;
			f->want = want->arg_size[a];
			f->got = p->args[a].size;
		}
	}
	return p->semaphore || add(r, BP_UNGUARDED, want->provider, want->name, set, p) ? 0 : -1;
}

int bp_check_run(const pr_catalogue_t *cat, const bp_expect_t *expect, const pr_probe_set_t *sets, size_t nsets,
                 bp_check_report_t *out)
{
	static const bp_expect_t everything = { NULL, NULL, NULL, 0 };
	if (!expect)
		expect = &everything;
	memset(out, 0, sizeof *out);
	for (size_t k = 0; k < nsets; k++)
		for (size_t i = 0; i < sets[k].probe_count; i++)
			if (judge_site(out, cat, &sets[k], &sets[k].probes[i]) != 0)
				return -1;
	for (size_t c = 0; c < cat->count; c++) {
		const pr_catalogue_probe_t *want = &cat->probes[c];
		size_t sites = 0;
		for (size_t k = 0; k < nsets; k++)
			for (size_t i = 0; i < sets[k].probe_count; i++)
				sites += strcmp(sets[k].probes[i].provider, want->provider) == 0 &&
				         strcmp(sets[k].probes[i].name, want->name) == 0;
		int expected = bp_expect_covers(expect, want->provider, want->name);
		out->expected += expected != 0;
		out->expected_found += expected && sites;
		bp_finding_t *f = NULL;
		if (expected && !sites)
			f = add(out, BP_MISSING, want->provider, want->name, NULL, NULL);
		else if (!expected && sites)
			f = add(out, BP_UNEXPECTED, want->provider, want->name, NULL, NULL);
		else
			continue;
		if (!f)
			return -1;
		f->want = want->nargs;
	}
	return 0;
}

void bp_check_report_free(bp_check_report_t *r)
{
	free(r->items);
	memset(r, 0, sizeof *r);
}
