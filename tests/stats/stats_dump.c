/*
 * stats_dump.c -- print stats segments as JSON lines, for the tests:
 *   stats_dump FILE...   one line per file: {"file", "pid", "state", "slots_used",
 *                        "overflow_used", "rows": {map: [{"labels": [...], "cells": [...]}]},
 *                        "work": {"bytes", "reads", "rows", "slots"}}
 * or one line {"file", "error", "work"} for a segment the reader refuses;
 * exit 1 then.  "work" is what the reading cost (bs_read_work_t).  Labels are printed as \u00XX-escaped bytes so any value survives.
 */
#include <stdio.h>
#include <stdlib.h>

#include "stats_read.h"

static void put_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Row r's native buckets, per value that has them: [counted in range,
 * out of range] (the zero bucket and the buckets, then the last cell). */
static void put_native(const bs_segment_t *seg, int m, size_t r)
{
	static uint64_t cells[BS_MAX_MAPS * BS_LAYOUT_VALUES * (BS_NATIVE_BUCKETS_MAX + 2)];
	const bs_lmap_t *lm = seg->build_sm[m] >= 0 ? &seg->layout->maps[seg->build_sm[m]] : NULL;
	const uint64_t *n = lm && bs_map_native(seg, (size_t)seg->build_sm[m], r, cells) ? cells : NULL;
	printf(",\"native\":[");
	for (size_t v = 0, k = 0; n && lm && v < lm->nvalues; v++) {
		size_t cells = seg->layout->quantities[lm->values[v].quantity].nnative;
		unsigned long long in = 0;
		if (!cells)
			continue;
		for (size_t c = 0; c <= cells; c++)
			in += n[lm->values[v].native + c];
		printf("%s[%llu,%llu]", k++ ? "," : "", in, (unsigned long long)n[lm->values[v].native + cells + 1]);
	}
	printf("]");
}

static void put_work(const bs_read_work_t *w)
{
	printf(",\"work\":{\"bytes\":%llu,\"reads\":%llu,\"rows\":%llu,\"slots\":%llu}}\n",
	       (unsigned long long)w->bytes, (unsigned long long)w->reads, (unsigned long long)w->rows,
	       (unsigned long long)w->slots);
}

static const char *const map_names[BX_MAP_COUNT] = { BX_MAP_NAME_LIST };

/* The segment's own maps, as its description lays them out: each row's
 * fields and cells of that map alone; and its metric families. */
static void put_described(const bs_segment_t *seg)
{
	const bs_layout_t *l = seg->layout;
	printf(",\"described\":{");
	for (size_t m = 0; m < l->nmaps; m++) {
		const bs_lmap_t *mi = &l->maps[m];
		printf("%s\"%s\":{\"build_map\":%d,\"rows\":[", m ? "," : "", mi->name, mi->build_map);
		for (size_t r = 0; r < seg->map_rows[m]; r++) {
			const bs_read_row_t *row = bs_map_row(seg, m, r);
			printf("%s{\"labels\":[", r ? "," : "");
			for (size_t f = 0; f < mi->nfields; f++) {
				printf("%s", f ? "," : "");
				put_string(row->text[f]);
			}
			printf("],\"cells\":[");
			for (size_t c = 0; c < mi->cells; c++)
				printf("%s%llu", c ? "," : "", (unsigned long long)row->cells[c]);
			printf("]}");
		}
		printf("]}");
	}
	printf("},\"families\":[");
	for (size_t i = 0; i < l->nfamilies; i++) {
		const bs_lfamily_t *f = &l->families[i];
		printf("%s{\"name\":\"%s\",\"type\":%d,\"map\":\"%s\",\"labels\":[", i ? "," : "", f->name, f->type,
		       l->maps[f->map].name);
		for (size_t k = 0; k < f->nlabels; k++)
			printf("%s\"%s\"", k ? "," : "", f->labels[k].name);
		printf("]}");
	}
	printf("]");
}

int main(int argc, char **argv)
{
	int rc = 0;
	bs_segment_t *seg = calloc(1, sizeof *seg);
	char err[256];

	if (!seg)
		return 1;
	for (int i = 1; i < argc; i++) {
		printf("{\"file\":");
		put_string(argv[i]);
		if (bs_read_path(argv[i], seg, err, sizeof err) != 0) {
			printf(",\"error\":");
			put_string(err);
			put_work(&seg->work);
			rc = 1;
			continue;
		}
		printf(",\"pid\":%u,\"state\":%u,\"slots_used\":%u,\"nslots\":%u,\"overflow_used\":%u,\"maps\":{",
		       seg->pid, seg->state, seg->slots_used, seg->nslots, seg->overflow_used);
		for (int m = 0; m < BX_MAP_COUNT; m++) {
			printf("%s\"%s\":[", m ? "," : "", map_names[m]);
			for (size_t r = 0; r < seg->nrows[m]; r++) {
				const bs_read_row_t *row = bs_row(seg, m, r);
				printf("%s{\"labels\":[", r ? "," : "");
				for (int f = 0; f < BX_MAX_FIELDS; f++) {
					printf("%s", f ? "," : "");
					put_string(row->text[f]);
				}
				printf("],\"ints\":[");
				for (int f = 0; f < BX_MAX_FIELDS; f++)
					printf("%s%d", f ? "," : "", (int)row->ints[f]);
				printf("],\"state\":[");
				for (int f = 0; f < BX_MAX_FIELDS; f++)
					printf("%s%d", f ? "," : "", row->state[f]);
				printf("],\"cells\":[");
				for (size_t c = 0; c < BX_MAX_CELLS; c++)
					printf("%s%llu", c ? "," : "", (unsigned long long)row->cells[c]);
				printf("]");
				put_native(seg, m, r);
				printf("}");
			}
			printf("]");
		}
		printf("}");
		put_described(seg);
		put_work(&seg->work);
	}
	bs_segment_free(seg);
	free(seg);
	fflush(stdout);
	return rc;
}
