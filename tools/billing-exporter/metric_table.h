/*
 * metric_table.h -- the one declarative description of what the exporter
 * publishes: which BPF map each probe feeds, how each key field of that
 * map decodes into a label, and every metric derived from those maps
 * (name, type, unit, help, source field, labels).
 *
 * The exposition (expose.c), the attach list per metric group (attach.c),
 * the check against billing.d's catalogue (metric_check.c) and the metric
 * table of docs/exporter.md (--print-metric-table, compared by a test) are
 * all derived from these tables; nothing else names a metric.
 */
#ifndef BX_METRIC_TABLE_H
#define BX_METRIC_TABLE_H

#include <stddef.h>

/* Metric groups, selectable with --metrics. */
enum {
	BX_GROUP_BUSINESS = 1u << 0,
	BX_GROUP_REQUESTS = 1u << 1,
	BX_GROUP_DB = 1u << 2,
	BX_GROUP_GATEWAY = 1u << 3,
	BX_GROUP_SELF = 1u << 4, /* the exporter's own: always on */
};
#define BX_GROUPS_DEFAULT (BX_GROUP_BUSINESS | BX_GROUP_REQUESTS | BX_GROUP_SELF)

typedef enum bx_key_kind { BX_KEY_STRING,
	                   BX_KEY_INT32 } bx_key_kind_t;

/* One field of a map's key: the probe argument it holds. */
typedef struct bx_key_field {
	const char *arg; /* argument name in billing.d, e.g. "gateway" */
	int arg_pos;     /* its position (billing_exporter.h BX_ARG_*) */
	bx_key_kind_t kind;
	size_t offset, size; /* within the key struct */
} bx_key_field_t;

#define BX_MAX_FIELDS 3
#define BX_NO_ARG (-1)

/* One BPF map: fed by one program, named like the probe it attaches to. */
typedef struct bx_map_desc {
	const char *map;   /* BPF map name, "m_payment_auth" */
	const char *probe; /* ELF spelling of the probe = BPF program name */
	unsigned group;
	size_t key_size;
	int drop_slot; /* BX_DROP_* */
	size_t nfields;
	bx_key_field_t fields[BX_MAX_FIELDS];
	int amount_pos;   /* argument summed / bucketed as an amount, or BX_NO_ARG */
	int duration_pos; /* argument observed as a duration, or BX_NO_ARG */
} bx_map_desc_t;

typedef enum bx_metric_type { BX_COUNTER,
	                      BX_GAUGE,
	                      BX_HISTOGRAM } bx_metric_type_t;

/* What a metric reads from a map's rows. */
typedef enum bx_source {
	BX_SRC_COUNT,       /* fires */
	BX_SRC_AMOUNT_SUM,  /* sum of the amount argument */
	BX_SRC_AMOUNT_HIST, /* amount histogram */
	BX_SRC_DUR_HIST,    /* duration histogram (durations > 0 only) */
	BX_SRC_SELF,        /* an exporter metric, computed in expose.c */
} bx_source_t;

/* How a label's value comes from a row's key. */
typedef enum bx_decode {
	BX_DEC_VALUE,        /* the field as is (strings escaped, ints in decimal) */
	BX_DEC_OUTCOME_AUTH, /* 0 -> approved, else declined */
	BX_DEC_OUTCOME_TX,   /* 0 -> committed, else failed */
	BX_DEC_CONSTANT,     /* a fixed value for every row of the map */
} bx_decode_t;

typedef struct bx_label {
	const char *name;
	bx_decode_t decode;
	int field; /* index into the map's fields (not for CONSTANT) */
	const char *constant;
} bx_label_t;

/* Which rows count: all, or those whose field `where_field` is non-zero. */
#define BX_WHERE_ALL (-1)

typedef struct bx_metric {
	const char *name; /* full sample name base: counters end in _total */
	bx_metric_type_t type;
	const char *unit; /* "seconds", "minor units", "" */
	const char *help;
	int map; /* index into bx_maps, -1 for BX_SRC_SELF */
	bx_source_t source;
	int where_nonzero; /* field index, or BX_WHERE_ALL */
	size_t nlabels;
	bx_label_t labels[BX_MAX_FIELDS];
	const char *self_labels; /* BX_SRC_SELF: the label names, for the docs */
} bx_metric_t;

extern const bx_map_desc_t bx_maps[];
extern const size_t bx_map_count;
extern const bx_metric_t bx_metrics[];
extern const size_t bx_metric_count;

/* Histogram bounds in the metric's base unit (seconds, minor units). */
extern const double bx_dur_bounds_seconds[];
extern const double bx_amount_bounds[];
/* 1 when those equal billing_exporter.h's kernel-side bounds. */
int bx_bounds_consistent(void);

/* "business" -> BX_GROUP_BUSINESS; 0 for an unknown name. */
unsigned bx_group_by_name(const char *name);
const char *bx_group_name(unsigned group);

/* Metric i's group: its map's, or BX_GROUP_SELF. */
unsigned bx_metric_group(const bx_metric_t *m);

#endif /* BX_METRIC_TABLE_H */
