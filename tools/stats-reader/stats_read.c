/*
 * stats_read.c -- the segment reader (stats_read.h): its rows, labels and
 * cells, a reading at a time, and what changed since the one before.
 * One code path for a file (pread) and for bytes in memory (fuzzing): a
 * source that reads a range or fails (stats_read_src.h).  Native cells:
 * stats_read_native.c; trails: stats_read_trails.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stats_read_src.h"

/* A label's text: at most BS_VALUE_BYTES bytes of s, terminated. */
static void set_text(char *dst, const char *s)
{
	size_t len = strnlen(s, BS_VALUE_BYTES);
	memcpy(dst, s, len);
	dst[len] = '\0';
}

/* An int label's text, in decimal. */
static void set_int_text(char *dst, int32_t v)
{
	char digits[12];
	size_t n = 0;
	uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	do
		digits[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*dst++ = '-';
	while (n)
		*dst++ = digits[--n];
	*dst = '\0';
}

/* A reading in progress: what it will hold, beside the reading before it
 * until every check passed and every byte was read (commit()). */
typedef struct reading {
	int fresh;                                              /* a new generation, or the first reading */
	int defer;                                              /* its native cells left behind (bs_segment_t.defer_natives) */
	size_t had[BS_MAX_MAPS];                                /* rows the reading before holds, per map (0 when fresh) */
	size_t rows_of[BS_MAX_MAPS], first[BS_MAX_MAPS], total; /* this one's */
	bs_read_row_t *rows;                                    /* this reading's rows: new memory when they grew */
	bs_native_cells_t *natives;
	unsigned char *recheck; /* per row: its native cells are behind its counts (bs_segment_t.recheck) */
	uint64_t *sums;         /* each row's cells summed over the slots, map after map (scratch memory) */
	size_t sums_at[BS_MAX_MAPS];
} reading_t;

/* Per change of a reading, BS_LAYOUT_VALUES: its native cells as now read
 * (a list rebuilt) or what else became of them (BS_NATIVE_UNCHANGED,
 * BS_NATIVE_DELTAS).  Kept from one reading to the next, lists and all
 * (one thread reads at a time): a commit swaps a rebuilt list for the
 * one it replaces, whose memory the next reading reuses. */
static bs_native_cells_t *pending;
static size_t pending_cap;

/* Memory reused from one reading to the next (one thread reads at a
 * time): n cells, not cleared. */
typedef struct scratch {
	uint64_t *cells;
	size_t cap;
} scratch_t;
static scratch_t sums_scratch, slot_scratch;

static uint64_t *scratch(scratch_t *s, uint64_t n)
{
	if (n > s->cap || !s->cells) {
		uint64_t *more = realloc(s->cells, (n ? n : 1) * sizeof *more);
		if (!more)
			return NULL;
		s->cells = more;
		s->cap = n ? n : 1;
	}
	return s->cells;
}

/* What the segment's published counts ask the reader to do, checked
 * before any of it is done: rows within each map's room (and, within a
 * generation, never fewer), claimed slots backed by the file's real size
 * (each claimed slot's header line is written, so it holds a page), and
 * the bytes to read within BS_READ_BUDGET. */
static int plan(const bs_src_t *s, const struct bs_header *h, const bs_layout_t *l, const plan_rows_t *pr,
                reading_t *rd, char *err, size_t errlen)
{
	uint64_t cells = 0, values = 0, native = 0;
	rd->total = 0;
	for (size_t m = 0; m < l->nmaps; m++) {
		uint32_t nrows = h->row_count[m];
		if (nrows > pr->rows[m])
			BS_FAIL("map %s claims %u rows (at most %llu)", l->maps[m].name, nrows, (unsigned long long)pr->rows[m]);
		if (nrows < rd->had[m])
			BS_FAIL("map %s claims %u rows, fewer than the %zu it had", l->maps[m].name, nrows, rd->had[m]);
		for (int f = 0; f < BS_MAX_FIELDS; f++) {
			if (h->dict_count[m][f] > h->label_values)
				BS_FAIL("map %s label %d claims %u values (at most %u)", l->maps[m].name, f, h->dict_count[m][f],
				        h->label_values);
			values += h->dict_count[m][f];
		}
		rd->rows_of[m] = nrows;
		rd->first[m] = rd->total;
		rd->sums_at[m] = (size_t)cells;
		native += pr->native ? (uint64_t)nrows * l->maps[m].native_cells : 0;
		rd->total += nrows;
		cells += (uint64_t)nrows * h->map_cells[m];
	}
	uint64_t slots = h->slots_used + (h->overflow_used && h->slots_used < h->nslots), backed = s->backed;
	struct stat st;
	/* A thread claiming a slot writes it before publishing the count: a
	 * look at the file after the header was read sees every claimed page. */
	if (backed && slots > backed / 4096 && s->fd >= 0 && fstat(s->fd, &st) == 0)
		backed = (uint64_t)st.st_blocks * 512;
	if (backed && slots > backed / 4096)
		BS_FAIL("claims %llu threads' slots, but the file holds only %llu kB", (unsigned long long)slots,
		        (unsigned long long)(backed >> 10));
	uint64_t bytes = values * BS_VALUE_BYTES + rd->total * sizeof(struct bs_row) + slots * cells * 8 + native * 8;
	if (bytes > BS_READ_BUDGET)
		BS_FAIL("its counts ask for %llu bytes of reading (%llu slots, %zu rows), over the reader's budget of %llu MiB",
		        (unsigned long long)bytes, (unsigned long long)slots, rd->total,
		        (unsigned long long)(BS_READ_BUDGET >> 20));
	if (!(rd->sums = scratch(&sums_scratch, cells)))
		BS_FAIL("out of memory");
	return 0;
}

/* Room for any segment's label values (its own label_values, checked at
 * most BS_IDX_KNOWN). */
typedef unsigned char dict_t[BS_MAX_FIELDS][BS_IDX_KNOWN][BS_VALUE_BYTES];

/* Field f of a row whose value index is idx: its text (and int). */
static int decode_field(const bs_lmap_t *mi, int f, unsigned idx, uint32_t count, const unsigned char (*dict)[BS_VALUE_BYTES],
                        bs_read_row_t *row, char *err, size_t errlen)
{
	row->state[f] = BS_FIELD_VALUE;
	if (idx == BS_IDX_FOLDED || idx == BS_IDX_OVERFLOW) {
		row->state[f] = idx == BS_IDX_FOLDED ? BS_FIELD_FOLDED : BS_FIELD_OVERFLOW;
		set_text(row->text[f], "other");
		row->ints[f] = 1;
		return 0;
	}
	const bs_lknown_t *known = f < (int)mi->nfields ? mi->fields[f].known : NULL;
	if (idx >= BS_IDX_KNOWN && known && known->n) {
		if (idx - BS_IDX_KNOWN >= known->n)
			BS_FAIL("map %s names known value %u of %zu", mi->name, idx - BS_IDX_KNOWN, known->n);
		set_text(row->text[f], known->values[idx - BS_IDX_KNOWN]);
		return 0;
	}
	if (idx >= count) {
		if (idx == 0)
			return 0; /* an unused field of this map */
		BS_FAIL("map %s names label value %u of %u", mi->name, idx, count);
	}
	if (f < (int)mi->nfields && !mi->fields[f].is_string) {
		int32_t iv;
		memcpy(&iv, dict[idx], sizeof iv);
		row->ints[f] = iv;
		set_int_text(row->text[f], iv);
	} else {
		set_text(row->text[f], (const char *)dict[idx]);
	}
	return 0;
}

/* The rows this reading has and the one before did not, labels decoded,
 * each map's label values read when it has new rows (the writer publishes
 * a count after what it covers; counts were read first: plan). */
static int read_new_rows(const bs_src_t *s, const struct bs_header *h, const bs_layout_t *l, const plan_rows_t *pr,
                         reading_t *rd, char *err, size_t errlen)
{
	dict_t *dict = NULL;
	struct bs_row *rows = NULL;
	int rc = 0;
	for (size_t m = 0; rc == 0 && m < l->nmaps; m++) {
		size_t from = rd->had[m], n = rd->rows_of[m] - from;
		if (n == 0)
			continue;
		if ((!dict && !(dict = malloc(sizeof *dict))) || !(rows = realloc(rows, n * sizeof *rows))) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			break;
		}
		for (int f = 0; rc == 0 && f < BS_MAX_FIELDS; f++) {
			uint32_t count = h->dict_count[m][f];
			if (count && bs_src_get_(s, BS_DICT_ENTRY(h, m, f, 0), (*dict)[f], (uint64_t)count * BS_VALUE_BYTES) != 0) {
				snprintf(err, errlen, "truncated in the label values");
				rc = -1;
			}
		}
		if (rc == 0 && bs_src_get_(s, h->rows_offset + (pr->base[m] + from) * sizeof *rows, rows, n * sizeof *rows) != 0) {
			snprintf(err, errlen, "truncated in the rows");
			rc = -1;
		}
		s->work->rows += n;
		for (size_t r = 0; rc == 0 && r < n; r++) {
			bs_read_row_t *row = &rd->rows[rd->first[m] + from + r];
			memset(row, 0, sizeof *row);
			for (int f = 0; rc == 0 && f < BS_MAX_FIELDS; f++)
				rc = decode_field(&l->maps[m], f, rows[r].idx[f], h->dict_count[m][f],
				                  (const unsigned char(*)[BS_VALUE_BYTES])(*dict)[f], row, err, errlen);
		}
	}
	free(dict);
	free(rows);
	return rc;
}

/* Every claimed slot's cells of the rows in use, map by map, summed: the
 * slots ever claimed, [0, slots_used), and the overflow slot (the last)
 * once a thread found no free one.  The first slot's are read into the
 * sums, the others' beside them and added. */
static int sum_slots(const bs_src_t *s, const struct bs_header *h, const bs_layout_t *l, reading_t *rd, char *err,
                     size_t errlen)
{
	uint64_t total = 0, most = 1;
	for (size_t m = 0; m < l->nmaps; m++) {
		uint64_t cells = rd->rows_of[m] * h->map_cells[m];
		total += cells;
		most = cells > most ? cells : most;
	}
	uint32_t n = h->slots_used + (h->overflow_used && h->slots_used < h->nslots);
	uint64_t *got = n > 1 ? scratch(&slot_scratch, most) : NULL;
	if (n > 1 && !got)
		BS_FAIL("out of memory");
	if (n == 0)
		memset(rd->sums, 0, total * sizeof *rd->sums);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = k < h->slots_used ? k : h->nslots - 1;
		uint64_t base = h->slots_offset + (uint64_t)i * h->slot_size + BS_SLOT_HEADER;
		s->work->slots++;
		for (size_t m = 0; m < l->nmaps; m++) {
			uint64_t cells = rd->rows_of[m] * h->map_cells[m], *sum = rd->sums + rd->sums_at[m];
			/* from a mapping only where a page is known to hold data: a
			 * slot's rows its thread never counted in are holes, which a
			 * read of the mapping would fill */
			if (cells && bs_src_cells_(s, base + h->map_cells_offset[m], k == 0 ? sum : got, cells * 8) != 0)
				BS_FAIL("truncated in slot %u", i);
			for (uint64_t c = 0; k > 0 && c < cells; c++)
				sum[c] += got[c];
		}
	}
	return 0;
}

/* The rows' memory for this reading: the reading before's when it has as
 * many rows (and is of this generation), else new memory holding its
 * rows, each map's at its new place, and room for the new ones. */
static int place_rows(const bs_segment_t *out, const bs_layout_t *l, reading_t *rd, char *err, size_t errlen)
{
	int grew = rd->fresh;
	for (size_t m = 0; m < l->nmaps; m++)
		grew |= rd->rows_of[m] != rd->had[m];
	if (!grew) {
		rd->rows = out->rows;
		rd->natives = out->natives;
		rd->recheck = out->recheck;
		return 0;
	}
	size_t n = rd->total ? rd->total : 1;
	rd->rows = malloc(n * sizeof *rd->rows);
	rd->natives = calloc(n * BS_LAYOUT_VALUES, sizeof *rd->natives);
	rd->recheck = calloc(n, 1);
	if (!rd->rows || !rd->natives || !rd->recheck)
		BS_FAIL("out of memory");
	for (size_t m = 0; m < l->nmaps && !rd->fresh; m++) {
		size_t from = out->map_first[m], to = rd->first[m], k = rd->had[m];
		if (k == 0)
			continue;
		memcpy(&rd->rows[to], &out->rows[from], k * sizeof *rd->rows);
		memcpy(&rd->natives[to * BS_LAYOUT_VALUES], &out->natives[from * BS_LAYOUT_VALUES],
		       k * BS_LAYOUT_VALUES * sizeof *rd->natives);
		memcpy(&rd->recheck[to], &out->recheck[from], k);
	}
	return 0;
}

/* The changes' memory: one reading's at a time (one thread reads at a
 * time; a reading's changes are valid until the next reading). */
static bs_changes_t changes_scratch;

static bs_row_change_t *add_change(bs_changes_t *ch, uint32_t sm, uint32_t row)
{
	if (ch->nrows == ch->rows_cap) {
		size_t cap = ch->rows_cap ? 2 * ch->rows_cap : 64;
		bs_row_change_t *more = realloc(ch->rows, cap * sizeof *more);
		if (!more)
			return NULL;
		ch->rows = more;
		ch->rows_cap = cap;
	}
	bs_row_change_t *c = &ch->rows[ch->nrows++];
	c->sm = sm;
	c->row = row;
	c->native_first = (uint32_t)ch->nnatives;
	c->native_count = 0;
	return c;
}

static const uint64_t zeros[BS_CELLS_MAX];

/* d = now - was, c cells (four at a time: the loop a compiler can
 * widen); non-zero when any differs. */
static uint64_t differences(uint64_t *restrict d, const uint64_t *restrict now, const uint64_t *restrict was, size_t c)
{
	uint64_t any = 0;
	size_t k = 0;
	for (; k + 4 <= c; k += 4) {
		d[k] = now[k] - was[k];
		d[k + 1] = now[k + 1] - was[k + 1];
		d[k + 2] = now[k + 2] - was[k + 2];
		d[k + 3] = now[k + 3] - was[k + 3];
		any |= d[k] | d[k + 1] | d[k + 2] | d[k + 3];
	}
	for (; k < c; k++)
		any |= d[k] = now[k] - was[k];
	return any;
}

/* Each row whose sums differ from its cells before (a new row's are
 * zeros): a change, and its native cells read where its classic buckets
 * changed.  A row whose native cells are behind its counts (recheck: a
 * reading deferred them, or its writer lacks BS_FLAG_NATIVE_FIRST) has
 * them read in every counted bucket; a deferring reading reads none. */
static int find_changes(const bs_src_t *s, const struct bs_header *h, const bs_layout_t *l, const plan_rows_t *pr,
                        bs_segment_t *out, reading_t *rd, char *err, size_t errlen)
{
	bs_changes_t *ch = &changes_scratch;
	int native_first = (h->flags & BS_FLAG_NATIVE_FIRST) != 0;
	/* rows whose native cells are behind are read now, changed or not */
	int catch_up = !rd->defer && !rd->fresh && out->natives_behind;
	for (size_t m = 0; m < l->nmaps; m++) {
		const bs_lmap_t *lm = &l->maps[m];
		size_t c = h->map_cells[m];
		/* the map's rows as they were, and the same rows now: no row changed */
		int same = !rd->fresh && rd->rows_of[m] == rd->had[m] && rd->rows_of[m] &&
		           ((native_first && !catch_up) || !lm->native_cells) &&
		           memcmp(out->sums + out->map_first_cell[m], rd->sums + rd->sums_at[m], rd->rows_of[m] * c * 8) == 0;
		/* the rows' cells before: the last reading's sums, laid out alike */
		const uint64_t *before = rd->fresh ? NULL : out->sums + out->map_first_cell[m];
		for (size_t r = 0; !same && r < rd->rows_of[m]; r++) {
			size_t at = rd->first[m] + r;
			const uint64_t *now = rd->sums + rd->sums_at[m] + r * c, *was = r < rd->had[m] ? before + r * c : NULL;
			/* a change taken, and given back unless the row changed */
			bs_row_change_t *x = add_change(ch, (uint32_t)m, (uint32_t)r);
			if (!x)
				BS_FAIL("out of memory");
			uint64_t changed = was ? differences(x->cells, now, was, c) : differences(x->cells, now, zeros, c);
			int natives = !rd->defer && pr->native && lm->native_cells && (changed || rd->recheck[at]);
			if (!changed && !natives) {
				ch->nrows--;
				continue;
			}
			if (!natives)
				continue;
			if (ch->nrows * BS_LAYOUT_VALUES > pending_cap) {
				size_t cap = 2 * ch->nrows * BS_LAYOUT_VALUES;
				bs_native_cells_t *more = realloc(pending, cap * sizeof *more);
				if (!more)
					BS_FAIL("out of memory");
				memset(more + pending_cap, 0, (cap - pending_cap) * sizeof *more);
				pending = more;
				pending_cap = cap;
			}
			bs_native_cells_t *next = &pending[(ch->nrows - 1) * BS_LAYOUT_VALUES];
			for (size_t v = 0; v < BS_LAYOUT_VALUES; v++)
				next[v].n = BS_NATIVE_UNCHANGED;
			if (bs_native_row_(s, lm, l, pr->native_at[m] + (uint64_t)r * lm->native_cells * 8, was, now,
			                   !native_first || rd->recheck[at],
			                   &rd->natives[at * BS_LAYOUT_VALUES], next, ch, err, errlen) != 0)
				return -1;
			x->native_count = (uint32_t)(ch->nnatives - x->native_first);
		}
	}
	return 0;
}

/* The slots summed and the changes found, the parts that read cells: a
 * mapping's reading guarded, a SIGBUS (its writer shrank the file) ends
 * it as truncated.  The reading's state lives in the caller's frame. */
static int read_cells(const bs_src_t *s, const struct bs_header *h, const bs_layout_t *l, const plan_rows_t *pr,
                      bs_segment_t *out, reading_t *rd, char *err, size_t errlen)
{
	if (s->map) {
		bs_guard_.lo = s->map->at;
		bs_guard_.hi = s->map->at + s->map->size;
		if (sigsetjmp(bs_guard_.jb, 0) != 0)
			BS_FAIL("truncated while read (its file shrank)");
		bs_guard_.on = 1;
	}
	int rc = sum_slots(s, h, l, rd, err, errlen) != 0 || find_changes(s, h, l, pr, out, rd, err, errlen) != 0;
	bs_guard_.on = 0;
	return rc ? -1 : 0;
}

/* This build's maps among the segment's: those it holds in this build's shape. */
static void build_view(bs_segment_t *out)
{
	const bs_layout_t *l = out->layout;
	memset(out->nrows, 0, sizeof out->nrows);
	for (int b = 0; b < BX_MAP_COUNT; b++)
		out->build_sm[b] = -1;
	for (size_t m = 0; l && m < l->nmaps; m++) {
		int b = l->maps[m].build_map;
		if (b >= 0) {
			out->nrows[b] = out->map_rows[m];
			out->first_row[b] = out->map_first[m];
			out->build_sm[b] = (int)m;
		}
	}
}

/* Every row's native cells freed (rows [0, n) of natives). */
static void free_natives(bs_native_cells_t *natives, size_t n)
{
	for (size_t i = 0; natives && i < n * BS_LAYOUT_VALUES; i++)
		bs_native_cells_free_(&natives[i]);
}

static size_t rows_in(const bs_segment_t *s)
{
	size_t n = 0;
	for (size_t m = 0; s->layout && m < s->layout->nmaps; m++)
		n += s->map_rows[m];
	return n;
}

/* The reading is whole: it replaces the one before. */
static void commit(const struct bs_header *h, bs_layout_t *l, const plan_rows_t *pr, bs_segment_t *out, reading_t *rd)
{
	if (rd->rows != out->rows) {
		if (rd->fresh)
			free_natives(out->natives, rows_in(out)); /* the old generation's: its rows are not carried */
		free(out->rows);
		free(out->natives);
		free(out->recheck);
		out->rows = rd->rows;
		out->natives = rd->natives;
		out->recheck = rd->recheck;
		out->rows_cap = rd->total;
	}
	out->changes = changes_scratch;
	int behind = rd->defer && !rd->fresh && out->natives_behind;
	for (size_t i = 0; i < out->changes.nrows; i++) {
		const bs_row_change_t *x = &out->changes.rows[i];
		size_t at = rd->first[x->sm] + x->row;
		uint64_t changed = 0;
		for (size_t k = 0; !(h->flags & BS_FLAG_NATIVE_FIRST) && k < h->map_cells[x->sm]; k++)
			changed |= x->cells[k];
		/* native cells deferred (a deferring reading's changes are rows
		 * that changed), or a writer that may add a native cell after its
		 * bucket: read in every counted bucket next time */
		if (rd->defer)
			out->recheck[at] |= pr->native && l->maps[x->sm].native_cells;
		else
			out->recheck[at] = changed != 0;
		behind |= rd->defer && out->recheck[at];
		/* a row's lists are pending only where its native cells changed */
		for (size_t v = 0; x->native_count && v < BS_LAYOUT_VALUES; v++) {
			bs_native_cells_t *next = &pending[i * BS_LAYOUT_VALUES + v], *had = &out->natives[at * BS_LAYOUT_VALUES + v];
			if (next->n == BS_NATIVE_UNCHANGED)
				continue;
			if (next->n == BS_NATIVE_DELTAS) {
				bs_native_apply_(had, &out->changes.natives[x->native_first], x->native_count, (uint32_t)v);
				continue;
			}
			bs_native_cells_t old = *had;
			*had = *next;
			*next = old; /* its memory reused by the next reading */
		}
	}
	/* the sums as read become the segment's, its old ones the next
	 * reading's scratch: no copy */
	uint64_t *mine = out->sums;
	size_t mine_cap = out->sums_cap;
	out->sums = sums_scratch.cells;
	out->sums_cap = sums_scratch.cap;
	sums_scratch.cells = mine;
	sums_scratch.cap = mine ? mine_cap : 0;
	for (size_t m = 0; m < l->nmaps; m++)
		out->map_first_cell[m] = rd->sums_at[m];
	if (out->layout != l) {
		bs_layout_release((bs_layout_t *)out->layout);
		out->layout = l;
	}
	for (size_t m = 0; m < l->nmaps; m++) {
		out->map_rows[m] = rd->rows_of[m];
		out->map_first[m] = rd->first[m];
	}
	build_view(out);
	out->changes.fresh = rd->fresh;
	out->has_native = pr->native;
	out->natives_behind = behind;
	out->flags = h->flags;
	out->trail_offset = h->trail_offset;
	out->pid = h->pid;
	out->state = h->state;
	out->generation = h->generation;
	out->start_time = h->start_time;
	out->slots_used = h->slots_used;
	out->nslots = h->nslots;
	out->overflow_used = h->overflow_used;
}

/* A reading's temporaries freed; what it took of the one before (the
 * rows it moved) is not. */
static void reading_free(const bs_segment_t *out, reading_t *rd)
{
	if (rd->rows != out->rows) {
		free(rd->rows);
		free(rd->natives);
		free(rd->recheck);
	}
}

static int read_src(const bs_src_t *src, bs_segment_t *out, bs_accept_fn accept, void *ctx, char *err,
                    size_t errlen)
{
	struct bs_header h;
	plan_rows_t pr;
	reading_t rd;
	bs_src_t own = *src, *s = &own;

	memset(&rd, 0, sizeof rd);
	out->changes.nrows = out->changes.nnatives = 0;
	changes_scratch.nrows = changes_scratch.nnatives = 0;
	if (bs_read_header_(s, &h, err, errlen) != 0)
		return -1;
	if (accept && accept(ctx, &h, err, errlen) != 0)
		return 1;
	rd.fresh = !out->layout || out->generation != h.generation;
	rd.defer = out->defer_natives && h.state == BS_RUNNING; /* a writer's last figures are read whole */
	bs_layout_t *l = rd.fresh ? bs_read_layout_(s, &h, err, errlen) : (bs_layout_t *)out->layout;
	if (!l)
		return -1;
	for (size_t m = 0; !rd.fresh && m < l->nmaps; m++)
		rd.had[m] = out->map_rows[m];
	int rc = bs_check_layout_(&h, l, s->size, &pr, err, errlen) != 0 || plan(s, &h, l, &pr, &rd, err, errlen) != 0 ||
	         place_rows(out, l, &rd, err, errlen) != 0 || read_new_rows(s, &h, l, &pr, &rd, err, errlen) != 0;
	/* a running writer's cells change between readings: read in place,
	 * once its counts passed every check (a file of reasonable size); a
	 * new generation maps its file anew (a file at the same path may have
	 * the inode number of one deleted, whose mapping would still read) */
	if (rd.fresh && s->fd >= 0)
		bs_unmap_(&out->map);
	s->fresh = rd.fresh;
	if (rc == 0 && s->fd >= 0 && h.state == BS_RUNNING && s->size <= BS_MAP_MAX)
		s->map = bs_map_(&out->map, s->fd, s->dev, s->ino, s->size, s->backed);
	else if (s->fd >= 0)
		bs_unmap_(&out->map);
	rc = rc || read_cells(s, &h, l, &pr, out, &rd, err, errlen) != 0;
	if (rc == 0)
		commit(&h, l, &pr, out, &rd);
	reading_free(out, &rd);
	if (rc != 0) {
		out->changes.nrows = out->changes.nnatives = 0; /* no part of it */
		if (l != out->layout)
			bs_layout_release(l);
		return -1;
	}
	return 0;
}

int bs_map_by_probe(const bs_segment_t *s, const char *probe)
{
	for (size_t m = 0; s->layout && m < s->layout->nmaps; m++)
		if (strcmp(s->layout->maps[m].probe, probe) == 0)
			return (int)m;
	return -1;
}

int bs_read_fd_if(int fd, const struct stat *st, bs_segment_t *out, bs_accept_fn accept, void *ctx, char *err,
                  size_t errlen)
{
	bs_src_t s;
	if (bs_src_fd_(fd, st, &s, &out->work, err, errlen) != 0)
		return -1;
	return read_src(&s, out, accept, ctx, err, errlen);
}

int bs_read_fd(int fd, bs_segment_t *out, char *err, size_t errlen)
{
	return bs_read_fd_if(fd, NULL, out, NULL, NULL, err, errlen);
}

int bs_read_path(const char *path, bs_segment_t *out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		BS_FAIL("%s: %s", path, strerror(errno));
	int rc = bs_read_fd(fd, out, err, errlen);
	close(fd);
	return rc;
}

int bs_read_mem(const unsigned char *data, size_t size, bs_segment_t *out, char *err, size_t errlen)
{
	bs_src_t s = { .fd = -1, .mem = data, .size = size, .work = &out->work };
	memset(&out->work, 0, sizeof out->work);
	return read_src(&s, out, NULL, NULL, err, errlen);
}

void bs_segment_forget(bs_segment_t *s)
{
	bs_unmap_(&s->map);
	free_natives(s->natives, rows_in(s));
	bs_layout_release((bs_layout_t *)s->layout);
	s->layout = NULL;
	memset(s->map_rows, 0, sizeof s->map_rows);
	memset(s->nrows, 0, sizeof s->nrows);
	s->changes.nrows = s->changes.nnatives = 0;
}

void bs_segment_free(bs_segment_t *s)
{
	bs_segment_forget(s);
	free(s->rows);
	free(s->natives);
	free(s->recheck);
	free(s->sums);
	memset(s, 0, sizeof *s);
}
