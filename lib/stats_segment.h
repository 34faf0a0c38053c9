/*
 * stats_segment.h -- the layout of a stats segment: the file a stats
 * build of a service maps (lib/stats_writer.c writes it) and billing-exporter
 * reads without privilege (tools/stats-reader/stats_read.c).  docs/stats.md.
 *
 *   header     one page: magic, layout version, generation, where the rest is
 *   desc       the self-description: text generated from billing.d
 *              (provider/stats_emit.py): maps, quantities, metric families;
 *              a reader decodes the segment by it (stats_layout.h), whatever
 *              billing.d the reader was built from
 *   dicts      per map and label field, up to BS_LABEL_VALUES values seen
 *              (a field's known values need no entry: their index says which)
 *   rows       per map, up to its bs_map_info_t.rows label sets, each as value indices
 *   slots      per thread: a header line and every map's cells, row by row
 *   trails     the slow-request trails' ring (stats_trail.h)
 *   native     per map and row, the native (exponential) buckets of its
 *              values that declare them, shared by the process's threads
 *
 * Every count a reader trusts is published by the writer with a release
 * store after what it covers is written, and the writer only appends: a
 * reader (or a writer killed half-way) sees a consistent prefix.
 * Everything is native byte order (the endian field says which); a
 * segment is read on the host that wrote it.
 */
#ifndef BILLING_STATS_SEGMENT_H
#define BILLING_STATS_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "billing_metrics_layout.h"

/* Layout 5: the trails' ring grew a kept lane (stats_trail.h), so what follows it moved. */
#define BS_MAGIC "BILLSTAT" /* 8 bytes, no NUL */
#define BS_LAYOUT_VERSION 5u
#define BS_ENDIAN 0x01020304u
#define BS_HEADER_SIZE 4096u
#define BS_MAX_MAPS 32                  /* header room; BX_MAP_COUNT are used */
#define BS_MAX_FIELDS 4                 /* header room; BX_MAX_FIELDS are used */
#define BS_LABEL_VALUES BX_LABEL_VALUES /* distinct values per label field besides its known ones, then "other" (billing.d: @@label-values) */
#define BS_GENERAL_ROWS 128             /* label sets per map taken first come */
/* Rows of a map (bs_map_info_t.rows): the general ones, then room for
 * every folded label set of that map (BX_FOLD_KEYS_<PROBE>: a label set
 * past the general rows keeps its known values and folds the rest, so a
 * known value's fires are never lost), and an overflow row last, which a
 * fold never needs.  The maps' rows follow one another. */
#define BS_ROWS_MAX (BS_GENERAL_ROWS + BX_FOLD_KEYS_MAX + 1)
#define BS_ROWS_TOTAL (BX_MAP_COUNT * (BS_GENERAL_ROWS + 1) + BX_FOLD_KEYS_TOTAL)
#define BS_SLOT_HEADER 64 /* a slot's own cache line before its cells */

/* Value indices in a row: BS_IDX_KNOWN, BS_IDX_OVERFLOW, BS_IDX_FOLDED
 * (billing_metrics_layout.h, from provider/metrics.py). */

/* Known values a field may have (provider/metrics.py KNOWN_MAX). */
#define BS_KNOWN_MAX (BS_IDX_OVERFLOW - BS_IDX_KNOWN)
/* A dictionary index is below BS_IDX_KNOWN: billing.d's @@label-values
 * fits (provider/metrics.py refuses more; this holds if it did not). */
typedef char bs_label_values_fit_[BS_LABEL_VALUES >= 1 && BS_LABEL_VALUES <= BS_IDX_KNOWN ? 1 : -1];

/* Slot states. */
#define BS_SLOT_NEVER 0u
#define BS_SLOT_IN_USE 1u
#define BS_SLOT_FREE 2u /* its thread exited; the totals stay, the next thread adds to them */

/* Segment states. */
#define BS_RUNNING 1u
#define BS_EXITED 2u /* exit() ran: the figures are final */

struct bs_header {
	union {
		char text[8];  /* BS_MAGIC */
		uint64_t word; /* stored last, with release: a reader that sees it sees a whole header */
	} magic;
	uint32_t layout_version;
	uint32_t endian;
	uint64_t generation; /* unique per segment: a reader that sees it change starts over */
	uint64_t size;       /* of the file, bytes */
	uint32_t pid;        /* of the writer (in its own PID namespace) */
	uint32_t state;      /* BS_RUNNING, BS_EXITED */
	uint64_t start_time; /* the writer's start time, /proc/PID/stat field 22 */
	uint32_t nmaps;      /* BX_MAP_COUNT of the writer */
	uint32_t nslots;     /* thread slots, the last one shared by overflow threads */
	uint32_t rows_per_map, label_values;
	uint64_t desc_offset, desc_size, desc_hash; /* desc_hash: FNV-1a 64 of the text */
	uint64_t dicts_offset, rows_offset, slots_offset, slot_size;
	uint32_t slots_used;                             /* high-water mark: slots [0, slots_used) were ever claimed */
	uint32_t overflow_used;                          /* 1 once a thread found no free slot */
	uint32_t row_count[BS_MAX_MAPS];                 /* published rows per map */
	uint32_t dict_count[BS_MAX_MAPS][BS_MAX_FIELDS]; /* published values per field */
	uint64_t map_cells_offset[BS_MAX_MAPS];          /* within a slot, bytes from its cells */
	uint32_t map_cells[BS_MAX_MAPS];                 /* cells per row of each map */
	uint64_t trail_offset;                           /* the trails' ring (stats_trail.h); 0: none */
	/* The native buckets: map after map (the description's order), row
	 * after row, bs_lmap_t.native_cells each, added to atomically by every
	 * thread of the process (one row's buckets are many: two threads
	 * rarely share a line).  0: none. */
	uint64_t native_offset, native_size;
	/* How the writer writes (BS_FLAG_*; 0 from a writer that predates
	 * them: the header page is zeros past what it wrote). */
	uint32_t flags;
	uint32_t reserved_;
};

/* bs_header.flags */
#define BS_FLAG_NATIVE_FIRST 1u /* a value's native cell is added before its classic bucket (stats_writer.h): \
	                         * a reader that sees a bucket's count sees the native cells it covers */

/* A slot's header line; only its owner writes it (and the cells). */
struct bs_slot {
	uint32_t state;
	uint32_t tid;    /* the owner, for a person reading a dump */
	uint64_t claims; /* threads that have used this slot */
};

/* One row: the dictionary index of each label field of its map. */
struct bs_row {
	uint8_t idx[BS_MAX_FIELDS];
};

/* Offsets (bytes) of dictionary entry (map, field, i) and row (map, r). */
/* The label values' dictionaries as the header says (its label_values:
 * a reader takes a segment's own, which another billing.d may set). */
#define BS_DICT_ENTRY(h, m, f, i) \
  ((h)->dicts_offset + ((((uint64_t)(m)*BS_MAX_FIELDS + (f)) * (h)->label_values) + (i)) * BS_VALUE_BYTES)
#define BS_DICTS_SIZE(nmaps, values) ((uint64_t)(nmaps)*BS_MAX_FIELDS * (values)*BS_VALUE_BYTES)
#define BS_ROW_ENTRY(h, m, r) \
  ((h)->rows_offset + ((uint64_t)billing_stats_maps_[m].row_base + (r)) * sizeof(struct bs_row))
#define BS_ROWS_SIZE ((uint64_t)BS_ROWS_TOTAL * sizeof(struct bs_row))

/* The description this build writes, generated from billing.d. */
extern const char billing_stats_desc_[];

/* Each map's key as this build lays it out (generated): where each label
 * field is, and whether it is a string or an int32.  The writer interns
 * with it; the reader prints int fields in decimal. */
typedef struct bs_map_info {
	size_t key_size, cells;
	size_t rows, row_base; /* its rows, and where they start among all maps' rows */
	size_t nfields;
	struct {
		size_t offset, size;
		int is_string;
		const char *const *known; /* "@@known" values, sorted (strcmp); NULL: none */
		size_t nknown;
	} fields[BX_MAX_FIELDS];
	size_t native_cells; /* native buckets of a row (its values' together); 0: none */
} bs_map_info_t;

extern const bs_map_info_t billing_stats_maps_[BX_MAP_COUNT];

#endif /* BILLING_STATS_SEGMENT_H */
