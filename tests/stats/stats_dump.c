/*
 * stats_dump.c -- print stats segments as JSON lines, for the tests:
 *   stats_dump FILE...   one line per file: {"file", "pid", "state", "slots_used",
 *                        "overflow_used", "rows": {map: [{"labels": [...], "cells": [...]}]},
 *                        "work": {"bytes", "reads", "rows", "slots"}}
 * or one line {"file", "error", "work"} for a segment the reader refuses;
 * exit 1 then.  "work" is what the reading cost (bs_read_work_t).  Labels are printed as \u00XX-escaped bytes so any value survives.
 * Each file is read afresh.
 *   stats_dump --follow FILE
 *                        read FILE at each line of stdin and once more at its
 *                        end, into one reading (each reads what changed
 *                        since the one before; a line "defer": a reading
 *                        that leaves native cells behind, as a scrape that
 *                        serves none does), every reading's changes
 *                        summed; then read it afresh, compare, and print
 *                        {"follow": {"readings", "mapped" (those read in
 *                        place: a running writer's), "deferred" (readings
 *                        that left native cells behind), "changed_rows",
 *                        "changed_natives", "differences", "first"}}: the
 *                        differences between the sums of the changes and the
 *                        fresh reading, between the followed reading and it
 *                        (cells and native cells), and between its native
 *                        cells and each row's whole native block as the file
 *                        holds it; and the first of them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
				printf("%s%llu", c ? "," : "", (unsigned long long)bs_map_cells(seg, m, r)[c]);
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

/* The changes of every reading, summed per row of each of the segment's
 * maps: its cells, and its native cells as its block lays them out. */
typedef struct shadow {
	uint64_t *cells[BS_MAX_MAPS], *natives[BS_MAX_MAPS];
	size_t rows[BS_MAX_MAPS];
} shadow_t;

static int shadow_add(shadow_t *sh, const bs_segment_t *seg)
{
	const bs_changes_t *ch = &seg->changes;
	const bs_layout_t *l = seg->layout;
	for (size_t m = 0; m < l->nmaps; m++) {
		size_t n = seg->map_rows[m], w = l->maps[m].native_cells;
		if (ch->fresh)
			sh->rows[m] = 0;
		if (n <= sh->rows[m])
			continue;
		uint64_t *c = realloc(sh->cells[m], n * BS_CELLS_MAX * 8), *v = realloc(sh->natives[m], (n * w + 1) * 8);
		if (c)
			sh->cells[m] = c;
		if (v)
			sh->natives[m] = v;
		if (!c || !v)
			return -1;
		memset(c + sh->rows[m] * BS_CELLS_MAX, 0, (n - sh->rows[m]) * BS_CELLS_MAX * 8);
		memset(v + sh->rows[m] * w, 0, (n - sh->rows[m]) * w * 8);
		sh->rows[m] = n;
	}
	for (size_t k = 0; k < ch->nrows; k++) {
		const bs_row_change_t *x = &ch->rows[k];
		const bs_lmap_t *lm = &l->maps[x->sm];
		for (size_t c = 0; c < lm->cells; c++)
			sh->cells[x->sm][x->row * BS_CELLS_MAX + c] += x->cells[c];
		for (uint32_t i = 0; i < x->native_count; i++) {
			const bs_native_change_t *n = &ch->natives[x->native_first + i];
			sh->natives[x->sm][x->row * lm->native_cells + lm->values[n->value].native + n->cell] += n->delta;
		}
	}
	return 0;
}

static void differ(size_t *n, char *first, size_t len, const char *what, const char *map, size_t r, size_t c,
                   uint64_t want, uint64_t got)
{
	if ((*n)++ == 0)
		snprintf(first, len, "%s of map %s row %zu cell %zu: %llu, not %llu", what, map, r, c, (unsigned long long)got,
		         (unsigned long long)want);
}

static int follow(const char *path)
{
	bs_segment_t seg, fresh;
	shadow_t sh;
	char err[256], line[64], first[256] = "";
	size_t readings = 0, rows = 0, natives = 0, diff = 0, mapped = 0, deferred = 0;
	static uint64_t dense[BS_LAYOUT_VALUES * (BS_NATIVE_BUCKETS_MAX + 2)];
	memset(&seg, 0, sizeof seg);
	memset(&fresh, 0, sizeof fresh);
	memset(&sh, 0, sizeof sh);
	for (int more = 1; more;) {
		more = fgets(line, sizeof line, stdin) != NULL;
		seg.defer_natives = more && strcmp(line, "defer\n") == 0;
		if (bs_read_path(path, &seg, err, sizeof err) != 0 || shadow_add(&sh, &seg) != 0) {
			printf("{\"follow\":{\"error\":");
			put_string(err);
			printf("}}\n");
			return 1;
		}
		readings++;
		mapped += seg.map.at != NULL;
		deferred += seg.natives_behind;
		rows += seg.changes.nrows;
		natives += seg.changes.nnatives;
		printf("read %zu\n", readings);
		fflush(stdout);
	}
	if (bs_read_path(path, &fresh, err, sizeof err) != 0) {
		printf("{\"follow\":{\"error\":");
		put_string(err);
		printf("}}\n");
		return 1;
	}
	const bs_layout_t *l = fresh.layout;
	struct bs_header h;
	int fd = open(path, O_RDONLY);
	if (fd < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
		printf("{\"follow\":{\"error\":\"the header\"}}\n");
		return 1;
	}
	uint64_t block = h.native_offset; /* each map's rows' native cells, map after map (stats_segment.h) */
	for (size_t m = 0; m < l->nmaps; m++) {
		const bs_lmap_t *lm = &l->maps[m];
		uint64_t *raw = malloc(lm->native_cells * 8 + 8);
		for (size_t r = 0; raw && h.native_offset && r < fresh.map_rows[m]; r++) {
			if (pread(fd, raw, lm->native_cells * 8, (off_t)(block + r * lm->native_cells * 8)) !=
			    (ssize_t)(lm->native_cells * 8))
				differ(&diff, first, sizeof first, "the native block's read", lm->name, r, 0, 1, 0);
			else if (bs_map_native(&fresh, m, r, dense))
				for (size_t c = 0; c < lm->native_cells; c++)
					if (dense[c] != raw[c])
						differ(&diff, first, sizeof first, "the fresh reading's native cells, against its block", lm->name,
						       r, c, raw[c], dense[c]);
		}
		free(raw);
		block += ((uint64_t)h.rows_per_map + lm->folds + 1) * lm->native_cells * 8;
		if (fresh.map_rows[m] != seg.map_rows[m] || fresh.map_rows[m] != sh.rows[m])
			differ(&diff, first, sizeof first, "rows", lm->name, fresh.map_rows[m], 0, fresh.map_rows[m],
			       seg.map_rows[m]);
		for (size_t r = 0; r < fresh.map_rows[m] && r < seg.map_rows[m] && r < sh.rows[m]; r++) {
			for (size_t c = 0; c < lm->cells; c++) {
				uint64_t want = bs_map_cells(&fresh, m, r)[c];
				if (sh.cells[m][r * BS_CELLS_MAX + c] != want)
					differ(&diff, first, sizeof first, "the changes' sum", lm->name, r, c, want,
					       sh.cells[m][r * BS_CELLS_MAX + c]);
				if (bs_map_cells(&seg, m, r)[c] != want)
					differ(&diff, first, sizeof first, "the followed reading", lm->name, r, c, want,
					       bs_map_cells(&seg, m, r)[c]);
			}
			if (!bs_map_native(&fresh, m, r, dense))
				continue;
			uint64_t *had = malloc(lm->native_cells * 8);
			if (!had || !bs_map_native(&seg, m, r, had)) {
				differ(&diff, first, sizeof first, "natives", lm->name, r, 0, 1, 0);
				free(had);
				continue;
			}
			for (size_t c = 0; c < lm->native_cells; c++) {
				if (sh.natives[m][r * lm->native_cells + c] != dense[c])
					differ(&diff, first, sizeof first, "the native changes' sum", lm->name, r, c, dense[c],
					       sh.natives[m][r * lm->native_cells + c]);
				if (had[c] != dense[c])
					differ(&diff, first, sizeof first, "the followed native cells", lm->name, r, c, dense[c], had[c]);
			}
			free(had);
		}
	}
	close(fd);
	printf("{\"follow\":{\"readings\":%zu,\"mapped\":%zu,\"deferred\":%zu,\"changed_rows\":%zu,"
	       "\"changed_natives\":%zu,\"differences\":%zu,\"first\":",
	       readings, mapped, deferred, rows, natives, diff);
	put_string(first);
	printf("}}\n");
	for (size_t m = 0; m < BS_MAX_MAPS; m++) {
		free(sh.cells[m]);
		free(sh.natives[m]);
	}
	bs_segment_free(&seg);
	bs_segment_free(&fresh);
	return diff != 0;
}

int main(int argc, char **argv)
{
	int rc = 0;
	bs_segment_t *seg = calloc(1, sizeof *seg);
	char err[256];

	if (argc == 3 && strcmp(argv[1], "--follow") == 0) {
		free(seg);
		return follow(argv[2]);
	}
	if (!seg)
		return 1;
	for (int i = 1; i < argc; i++) {
		printf("{\"file\":");
		put_string(argv[i]);
		bs_segment_forget(seg); /* each file afresh */
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
				/* this build's cells of the row; zeros past its map's */
				for (size_t c = 0; c < BX_MAX_CELLS; c++)
					printf("%s%llu", c ? "," : "",
					       c < billing_stats_maps_[m].cells ? (unsigned long long)bs_row_cells(seg, m, r)[c] : 0ull);
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
