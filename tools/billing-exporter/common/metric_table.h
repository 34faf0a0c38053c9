/*
 * metric_table.h -- the declarative description of what the exporter
 * publishes: which BPF map each probe feeds, how each key field of that
 * map decodes into a label, and every metric derived from those maps
 * (name, type, unit, help, source, labels).
 *
 * The rows for the probes' metrics are generated from billing.d's "@@"
 * declarations (metric_table_gen.h, provider/metrics.py); the exporter's
 * own metrics are rows of the same type, each with the function that
 * makes its samples (self_metrics.c).  The exposition (snapshot.c,
 * format.c), the attach list per metric group (attach.c), the check
 * against billing.d's catalogue (metric_check.c) and the metric table of
 * docs/exporter.md (--print-metric-table, compared by a test) are all
 * derived from these tables.
 */
#ifndef BX_METRIC_TABLE_H
#define BX_METRIC_TABLE_H

#include <stddef.h>

#include "billing_metrics_layout.h"

/* Metric groups, selectable with --metrics: BX_GROUP_<NAME>, BX_GROUP_SELF
 * (the exporter's own, always on), BX_GROUPS_PROBES and BX_GROUPS_DEFAULT,
 * generated from billing.d's "@@groups" line (billing_metrics_layout.h). */

/* A number from billing.d as text, for help strings. */
#define BX_TEXT(x) BX_TEXT_(x)
#define BX_TEXT_(x) #x

typedef enum bx_key_kind { BX_KEY_STRING,
	                   BX_KEY_INT32 } bx_key_kind_t;

/* One field of a map's key: the probe argument it holds. */
typedef struct bx_key_field {
	const char *arg; /* argument name in billing.d, e.g. "gateway" */
	int arg_pos;     /* its position in billing.d's declaration */
	bx_key_kind_t kind;
	size_t offset, size;      /* within the key struct */
	const char *const *known; /* "@@known" values, sorted (strcmp); NULL: none */
	size_t nknown;
} bx_key_field_t;

/* The BPF map of a label's known values (k_ARG), filled before attach. */
typedef struct bx_known_map {
	const char *map; /* NULL ends the table */
	size_t key_size;
	const char *const *values;
	size_t count;
} bx_known_map_t;

#define BX_NO_ARG (-1)

/* A quantity (billing.d's "@@quantity"): an argument with a unit and
 * histogram buckets, e.g. duration_ns observed in seconds. */
#define BX_MAX_BOUNDS 32
typedef struct bx_quantity {
	const char *arg;     /* argument name, "duration_ns" */
	const char *unit;    /* "seconds", "minor units" */
	double divide;       /* argument value / divide = value in unit */
	int unmeasured_zero; /* 0 is not measured: counted, never observed */
	int is_signed;       /* its sum is two's complement */
	size_t nbounds;
	const char *le[BX_MAX_BOUNDS]; /* the bounds as billing.d writes them */
} bx_quantity_t;

/* One quantity in a map's value: count, sum, buckets from `cell` on. */
typedef struct bx_map_quantity {
	int quantity; /* index into bx_quantities */
	int arg_pos;
	size_t cell; /* in 64-bit cells from the start of the value */
} bx_map_quantity_t;

/* One BPF map: fed by one program, named like the probe it attaches to.
 * Its value is 64-bit cells: fires at cell 0, then each quantity. */
typedef struct bx_map_desc {
	const char *map;      /* BPF map name, "m_payment_auth" */
	const char *fold_map; /* its fold map, "f_payment_auth": fires the full map could not take */
	const char *probe;    /* ELF spelling of the probe = BPF program name */
	unsigned group;
	size_t key_size, value_size;
	size_t nfields;
	bx_key_field_t fields[BX_MAX_FIELDS];
	size_t nquantities;
	bx_map_quantity_t quantities[BX_MAX_QUANTITIES_PER_MAP];
} bx_map_desc_t;

typedef enum bx_metric_type { BX_COUNTER,
	                      BX_GAUGE,
	                      BX_HISTOGRAM } bx_metric_type_t;

/* What a metric reads from a map's rows. */
typedef enum bx_source {
	BX_SRC_COUNT, /* fires */
	BX_SRC_SUM,   /* sum of a quantity */
	BX_SRC_HIST,  /* a quantity's histogram (observed values only) */
	BX_SRC_SELF,  /* an exporter metric, made by its function (self_metrics.c) */
} bx_source_t;

/* How a label's value comes from a row's key. */
typedef enum bx_decode {
	BX_DEC_VALUE,    /* the field as is (strings escaped, ints in decimal) */
	BX_DEC_NONZERO,  /* an int field: 0 -> if_zero, else if_nonzero */
	BX_DEC_CONSTANT, /* a fixed value for every row of the map */
} bx_decode_t;

typedef struct bx_label {
	const char *name;
	bx_decode_t decode;
	int field;            /* index into the map's fields (not for CONSTANT) */
	const char *constant; /* CONSTANT's value; NONZERO's word for 0 */
	const char *if_nonzero;
} bx_label_t;

/* Which rows count: all, or those whose field `where_nonzero` is non-zero. */
#define BX_WHERE_ALL (-1)

typedef struct bx_metric {
	const char *name; /* full sample name base: counters end in _total */
	bx_metric_type_t type;
	const char *unit; /* "seconds", "minor units", "" */
	const char *help;
	int map; /* index into bx_maps (BX_MAP_*), -1 for BX_SRC_SELF */
	bx_source_t source;
	int quantity;      /* SUM, HIST: index into the map's quantities */
	int where_nonzero; /* field index, or BX_WHERE_ALL */
	size_t nlabels;
	bx_label_t labels[BX_MAX_FIELDS];
	const char *self_labels; /* BX_SRC_SELF: the label names, for the docs */
} bx_metric_t;

extern const bx_quantity_t bx_quantities[];
extern const size_t bx_quantity_count;
extern const bx_known_map_t bx_known_maps[];
extern const bx_map_desc_t bx_maps[];
extern const size_t bx_map_count;
extern const bx_metric_t bx_metrics[];
extern const size_t bx_metric_count;

/* "business" -> BX_GROUP_BUSINESS; 0 for an unknown name. */
unsigned bx_group_by_name(const char *name);
const char *bx_group_name(unsigned group);
/* The probe groups among groups by name, between separators, in names. */
char *bx_group_names(unsigned groups, const char *separator, char *names, size_t len);

/* Metric i's group: its map's, or BX_GROUP_SELF. */
unsigned bx_metric_group(const bx_metric_t *m);
/* "counter", "gauge", "histogram". */
const char *bx_metric_type_name(bx_metric_type_t t);

/* --- the table against billing.d's catalogue (metric_check.c) ------------ */

/* 0 when every map's probe exists in the catalogue and every argument
 * the BPF side reads sits at the position, with the name and type, that
 * billing.d declares; else -1 with the first mismatch in err. */
int bx_metric_table_check(char *err, size_t errlen);

#endif /* BX_METRIC_TABLE_H */
