/*
 * check.h -- a program (one or more probe sets taken together) against a
 * catalogue and the probes it is expected to carry.  Shared by check and
 * doctor; printing is theirs.
 */
#ifndef BP_CHECK_H
#define BP_CHECK_H

#include <stddef.h>

#include "expect.h"
#include "probe_reader.h"

typedef enum bp_finding_kind {
	BP_MISSING,    /* an expected probe has no site: problem */
	BP_ARG_COUNT,  /* a site's argument count differs from the catalogue: problem */
	BP_ARG_WIDTH,  /* an argument's width differs: problem */
	BP_UNKNOWN,    /* a site of the catalogue's provider the catalogue lacks: problem */
	BP_UNGUARDED,  /* a site without semaphore (every BILLING_ macro guards): problem */
	BP_UNEXPECTED, /* present, catalogued, not expected: information */
	BP_FINDING_KINDS
} bp_finding_kind_t;

typedef struct bp_finding {
	bp_finding_kind_t kind;
	const char *provider, *name; /* point into the catalogue or a set */
	const pr_probe_set_t *set;   /* the site's set (NULL for missing) */
	const pr_probe_t *site;      /* the site (NULL for missing, unexpected) */
	int arg;                     /* BP_ARG_WIDTH: 1-based argument */
	int want, got;               /* counts or widths */
} bp_finding_t;

typedef struct bp_check_report {
	bp_finding_t *items;
	size_t count;
	size_t problems;       /* findings other than BP_UNEXPECTED */
	size_t expected;       /* catalogue probes expected */
	size_t expected_found; /* ... of which a site was found */
} bp_check_report_t;

/* A word for each kind: "missing", "mismatch", "unknown", "unguarded", "info". */
const char *bp_finding_word(bp_finding_kind_t kind);

/* Compare.  expect NULL or empty: every catalogue probe is expected.
 * 0, or -1 when out of memory. */
int bp_check_run(const pr_catalogue_t *cat, const bp_expect_t *expect, const pr_probe_set_t *sets, size_t nsets,
                 bp_check_report_t *out);
void bp_check_report_free(bp_check_report_t *r);

#endif /* BP_CHECK_H */
