/*
 * stats_layout.h -- a stats segment's self-description parsed into a
 * layout: its maps (label fields, cells, rows), its quantities (units,
 * bucket bounds) and the metric families each map feeds.  The reader
 * decodes a segment by its own layout, never by the tables it was built
 * with, so a reader and a writer built from different billing.d read each
 * other (docs/stats.md, "The self-description").
 *
 * The text comes from another process: parsing it is bounded (at most
 * BS_DESC_MAX bytes, the counts below) and linear in its size; anything
 * outside the grammar is a one-line refusal.
 */
#ifndef BILLING_STATS_LAYOUT_H
#define BILLING_STATS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "stats_segment.h"
#include "stats_trail.h"

#define BS_DESC_GRAMMAR 5          /* the first line: "billing-stats description 5" */
#define BS_DESC_MAX 65536u         /* description bytes a reader parses at most */
#define BS_CELLS_MAX 48            /* cells of one map's row */
#define BS_LAYOUT_QUANTITIES 16    /* "quantity" lines */
#define BS_LAYOUT_VALUES 4         /* quantities one map holds */
#define BS_LAYOUT_BOUNDS 40        /* bucket bounds of one quantity */
#define BS_NATIVE_BUCKETS_MAX 4096 /* native buckets of one quantity (provider/native.py BUCKETS_MAX) */
#define BS_LAYOUT_KNOWN_ARGS 8     /* "known" lines */
#define BS_LAYOUT_FAMILIES 128     /* "family" lines in all */
#define BS_LAYOUT_LABELS 8         /* labels of one family */
#define BS_LAYOUT_NAME_BYTES 64    /* a name: map, probe, field, quantity, family, label */
#define BS_LAYOUT_FOLDS_MAX 65536u /* folded label sets of one map */

enum { BS_TYPE_COUNTER,
       BS_TYPE_HISTOGRAM };
enum { BS_SRC_COUNT,        /* fires: cell 0 */
       BS_SRC_SUM,          /* a quantity's sum */
       BS_SRC_OBSERVE };    /* a quantity's buckets */
enum { BS_LABEL_VALUE,      /* the field's value */
       BS_LABEL_NONZERO,    /* an int field: zero -> `zero`, else `nonzero` */
       BS_LABEL_CONSTANT }; /* `constant` on every row */

typedef struct bs_lknown {
	const char *arg;
	size_t n;
	const char **values; /* sorted (strcmp), each at most BS_VALUE_BYTES */
} bs_lknown_t;

typedef struct bs_lquantity {
	const char *name, *unit, *divide; /* unit with '_' for ' ' as written */
	int unmeasured_zero, is_signed;
	size_t nbounds;
	const char *le[BS_LAYOUT_BOUNDS]; /* as billing.d writes them, ascending */
	/* Native buckets (provider/native.py), none when nnative is 0: 2^schema
	 * per power of two of the unit, values up to 2^native_low in the zero
	 * bucket, past 2^native_high out of range.  A row keeps nnative + 2
	 * cells: the zero bucket, the buckets, out of range. */
	int schema, native_low, native_high;
	size_t nnative;
	/* Per classic bucket k (0 .. nbounds), the native cells its values
	 * may fall in: [native_from[k], native_to[k]] (a margin of two cells
	 * each side: the bounds are compared in floating point), and the out
	 * of range cell too when native_below[k] (a negative value's).  A
	 * reader that sees bucket k's count change reads these cells alone. */
	uint16_t native_from[BS_LAYOUT_BOUNDS + 1], native_to[BS_LAYOUT_BOUNDS + 1];
	unsigned char native_below[BS_LAYOUT_BOUNDS + 1];
} bs_lquantity_t;

typedef struct bs_lfield {
	const char *name;
	int is_string;
	size_t size;
	const bs_lknown_t *known; /* NULL: none */
} bs_lfield_t;

typedef struct bs_lmap {
	const char *name, *probe, *group;
	size_t key, cells, folds;
	size_t nfields;
	bs_lfield_t fields[BS_MAX_FIELDS];
	size_t nvalues;
	struct {
		size_t quantity; /* index into the layout's quantities */
		size_t cell;     /* its count; sum at +1, buckets from +2 */
		size_t native;   /* its native cells in the row's native block (nnative > 0) */
	} values[BS_LAYOUT_VALUES];
	size_t native_cells; /* a row's native cells, every value's together; 0: none */
	int build_map;       /* this build's map of exactly this shape, -1: none */
} bs_lmap_t;

typedef struct bs_lfamily {
	const char *name, *help;
	int type, source;
	size_t map;
	int value; /* SUM, OBSERVE: index into the map's values; -1 for COUNT */
	int where; /* an int field that must be non-zero, -1: every row */
	size_t nlabels;
	struct {
		const char *name;
		int decode;
		int field; /* VALUE, NONZERO */
		const char *zero, *nonzero, *constant;
	} labels[BS_LAYOUT_LABELS];
} bs_lfamily_t;

/* A probe a trail event may be ("trail" lines, in order: an event's kind
 * is its index) and the names of the arguments the event keeps. */
typedef struct bs_lkind {
	const char *probe;
	size_t nints, nstrs;
	const char *ints[BS_TRAIL_INTS];
	const char *strs[BS_TRAIL_STRS];
} bs_lkind_t;

typedef struct bs_layout {
	char *text; /* the description split in place (every pointer above points into it), then as given */
	size_t len;
	uint64_t hash;
	unsigned refs;
	size_t nknown, nquantities, nmaps, nfamilies, nkinds;
	bs_lknown_t known[BS_LAYOUT_KNOWN_ARGS];
	bs_lquantity_t quantities[BS_LAYOUT_QUANTITIES];
	bs_lmap_t maps[BS_MAX_MAPS];
	bs_lfamily_t families[BS_LAYOUT_FAMILIES];
	bs_lkind_t kinds[BS_TRAIL_KINDS];
} bs_layout_t;

/* The layout of description text[0, len) (without its NUL), from a small
 * cache keyed by hash and the text itself; a reference the caller drops
 * with bs_layout_release.  NULL with a one-line reason in err. */
bs_layout_t *bs_layout_get(const char *text, size_t len, uint64_t hash, char *err, size_t errlen);
void bs_layout_release(bs_layout_t *l);

/* This build's own description's layout (never released). */
const bs_layout_t *bs_layout_own(void);

/* FNV-1a 64 of text, as the writer stamps desc_hash. */
uint64_t bs_desc_hash(const char *text, size_t len);

#endif /* BILLING_STATS_LAYOUT_H */
