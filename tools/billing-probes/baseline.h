/*
 * baseline.h -- the probe contract of a build as text: which probes it
 * carries, with their argument count and types, in a form a CI job keeps
 * in its repository and compares the next build with (`check
 * --save-baseline FILE` / `check --baseline FILE`, docs/tool.md).
 *
 * The format, version 1:
 *
 *     billing-probes baseline 1
 *     PROVIDER:NAME NARGS TYPE...
 *
 * one probe signature a line, every line ending in '\n', fields split by
 * one space; NAME in the ELF spelling (payment__auth); NARGS 0..12; one
 * TYPE per argument: int8 uint8 int16 uint16 int32 uint32 int64 uint64
 * float32 float64, the size and signedness the ELF note gives.  Lines are
 * written sorted by byte value and unique.  A probe whose sites disagree
 * (one site passes an int, another a long long) has one line per
 * signature.  Nothing else: no path, address or build id.
 */
#ifndef BP_BASELINE_H
#define BP_BASELINE_H

#include <stddef.h>

#include "probe_reader.h"

#define BP_BASELINE_HEADER "billing-probes baseline 1"

typedef struct bp_baseline_entry {
	char *key;       /* "PROVIDER:NAME" */
	char *signature; /* "NARGS TYPE...", e.g. "2 uint64 int32" */
	int line;        /* where a parsed baseline holds it; 0 for a build's */
} bp_baseline_entry_t;

/* Sorted by (key, signature), unique. */
typedef struct bp_baseline {
	bp_baseline_entry_t *entries;
	size_t count;
} bp_baseline_t;

/* The signatures of every probe of the catalogue's providers that the sets
 * carry (other providers, such as libc and rtld, belong to the system, not
 * to the build).  0, or -1 with one line in err: out of memory, or a probe
 * whose signature cannot be written truly (an argument the note reader
 * cannot decode, more than 12 arguments, a name that is not an
 * identifier). */
int bp_baseline_from_sets(const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets, bp_baseline_t *out,
                          char *err, size_t errlen);

/* Parse a baseline file's text.  0, or -1 with "line N: why" in err. */
int bp_baseline_parse(const char *text, size_t len, bp_baseline_t *out, char *err, size_t errlen);

/* The file's text: the header line, then one line per entry.  A malloc'd
 * string (its length in *len), or NULL when out of memory. */
char *bp_baseline_format(const bp_baseline_t *b, size_t *len);

/* How many distinct probes (keys) b holds. */
size_t bp_baseline_probe_count(const bp_baseline_t *b);

void bp_baseline_free(bp_baseline_t *b);

typedef enum bp_baseline_change_kind {
	BP_BASELINE_REMOVED, /* in the baseline, not in the build: breaks a consumer */
	BP_BASELINE_CHANGED, /* in both, with other signatures: breaks a consumer */
	BP_BASELINE_ADDED,   /* in the build only: information */
} bp_baseline_change_kind_t;

/* One probe that differs: its signatures on each side (a run of entries
 * sharing the key; count 0 on the side it is missing from). */
typedef struct bp_baseline_change {
	bp_baseline_change_kind_t kind;
	const char *key;
	const bp_baseline_entry_t *was, *now;
	size_t was_count, now_count;
} bp_baseline_change_t;

typedef struct bp_baseline_diff {
	bp_baseline_change_t *items; /* in key order; point into the baselines */
	size_t count;
	size_t removed, changed, added;
} bp_baseline_diff_t;

/* old against new.  0, or -1 when out of memory. */
int bp_baseline_compare(const bp_baseline_t *old, const bp_baseline_t *new_build, bp_baseline_diff_t *out);
void bp_baseline_diff_free(bp_baseline_diff_t *d);

#endif /* BP_BASELINE_H */
