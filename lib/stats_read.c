/*
 * stats_read.c -- the segment reader (stats_read.h).  One code path for a
 * file (pread) and for bytes in memory (fuzzing): a `src` that reads a
 * range or fails.
 */
#include "stats_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct src {
	int fd; /* or -1: mem */
	const unsigned char *mem;
	uint64_t size;
	uint64_t backed;      /* bytes the file holds in memory or on disk (st_blocks), 0: unknown */
	bs_read_work_t *work; /* what the reading costs, counted as it goes */
} src_t;

/* n bytes at off into dst; -1 when the range is not wholly in the file. */
static int get(const src_t *s, uint64_t off, void *dst, uint64_t n)
{
	if (off > s->size || n > s->size - off)
		return -1;
	s->work->bytes += n;
	s->work->reads++;
	if (s->fd < 0) {
		memcpy(dst, s->mem + off, n);
		return 0;
	}
	unsigned char *d = dst;
	while (n > 0) {
		ssize_t r = pread(s->fd, d, n, (off_t)off);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1; /* shrunk under us: treated as truncated */
		}
		d += r;
		off += (uint64_t)r;
		n -= (uint64_t)r;
	}
	return 0;
}

#define FAIL(...) \
  do { \
    snprintf(err, errlen, __VA_ARGS__); \
    return -1; \
  } while (0)

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

/* Where each map's rows start among all maps' rows (the writer lays them
 * out one map after another), and how many there are in all. */
typedef struct plan_rows {
	uint64_t rows[BS_MAX_MAPS], base[BS_MAX_MAPS], total;
	uint64_t native_at[BS_MAX_MAPS]; /* each map's native cells in the file */
	int native;                      /* the writer counted native buckets (not BILLING_STATS_NATIVE=off) */
} plan_rows_t;

/* The header against the segment's own layout and the file's size: its
 * maps and cells as described, its tables inside the file. */
static int check_layout(const struct bs_header *h, const bs_layout_t *l, uint64_t size, plan_rows_t *pr, char *err,
                        size_t errlen)
{
	uint64_t cells = 0;

	if (h->nmaps != l->nmaps || h->rows_per_map == 0 || h->rows_per_map > 4096 || h->label_values != BS_LABEL_VALUES)
		FAIL("layout differs: %u maps, %u rows, %u values per label (its description: %zu maps; this reader: "
		     "1..4096 rows, %d values)",
		     h->nmaps, h->rows_per_map, h->label_values, l->nmaps, BS_LABEL_VALUES);
	pr->total = 0;
	for (size_t m = 0; m < l->nmaps; m++) {
		if (h->map_cells_offset[m] != cells * 8 || h->map_cells[m] != l->maps[m].cells)
			FAIL("map %s's cells are not where its description puts them", l->maps[m].name);
		pr->rows[m] = (uint64_t)h->rows_per_map + l->maps[m].folds + 1;
		pr->base[m] = pr->total;
		pr->total += pr->rows[m];
		cells += pr->rows[m] * h->map_cells[m];
	}
	uint64_t dicts = BS_DICTS_SIZE(l->nmaps), rows = pr->total * sizeof(struct bs_row);
	if (h->nslots < 1 || h->nslots > 65537 || h->slot_size < BS_SLOT_HEADER + cells * 8 ||
	    h->slot_size > (1u << 30) || h->slots_used > h->nslots)
		FAIL("slot table is corrupt (%u slots of %llu bytes)", h->nslots, (unsigned long long)h->slot_size);
	if (h->dicts_offset < BS_HEADER_SIZE || h->dicts_offset > size || dicts > size - h->dicts_offset ||
	    h->rows_offset < h->dicts_offset + dicts || h->rows_offset > size || rows > size - h->rows_offset ||
	    h->slots_offset < h->rows_offset + rows || h->slots_offset > size ||
	    (size - h->slots_offset) / h->slot_size < h->nslots)
		FAIL("truncated or corrupt: its tables do not fit its %llu bytes", (unsigned long long)size);
	if (size < h->size)
		FAIL("truncated: %llu bytes of the %llu its header says", (unsigned long long)size,
		     (unsigned long long)h->size);
	/* the trails' ring, if any, after the slots and inside the file */
	uint64_t slots_end = h->slots_offset + (uint64_t)h->nslots * h->slot_size;
	if (h->trail_offset &&
	    (h->trail_offset < slots_end || h->trail_offset > size || size - h->trail_offset < BS_TRAIL_RING_SIZE))
		FAIL("truncated or corrupt: its trails do not fit its %llu bytes", (unsigned long long)size);
	/* the native buckets, map after map as described, after the rest */
	uint64_t native = 0, native_from = h->trail_offset ? h->trail_offset + BS_TRAIL_RING_SIZE : slots_end;
	for (size_t m = 0; m < l->nmaps; m++) {
		pr->native_at[m] = h->native_offset + native * 8;
		native += pr->rows[m] * l->maps[m].native_cells;
	}
	/* none at all: the writer counted none (BILLING_STATS_NATIVE=off) */
	pr->native = h->native_offset != 0 || h->native_size != 0;
	if ((pr->native && native * 8 != h->native_size) ||
	    (native && pr->native &&
	     (h->native_offset < native_from || h->native_offset > size || size - h->native_offset < h->native_size)))
		FAIL("truncated or corrupt: its native buckets do not fit its %llu bytes", (unsigned long long)size);
	return 0;
}

static bs_read_row_t *row_mut(bs_segment_t *s, size_t m, size_t r)
{
	return &s->rows[s->map_first[m] + r];
}

/* What the segment's published counts ask the reader to do, checked
 * before any of it is done: rows within each map's room, claimed slots
 * backed by the file's real size (each claimed slot's header line is
 * written, so it holds a page), and the bytes to read within
 * BS_READ_BUDGET.  The rows' memory is sized to the rows in use. */
/* *p holds n items of size bytes, in memory that follows what a reading
 * uses (grown, or shrunk when four times too big): 0, or -1 when out of
 * memory (*p unchanged). */
static int fit(void **p, size_t *cap, uint64_t n, size_t size)
{
	if (n <= *cap && n >= *cap / 4)
		return 0;
	void *m = realloc(*p, (n ? n : 1) * size);
	if (!m)
		return -1;
	*p = m;
	*cap = n ? n : 1;
	return 0;
}

static int plan(const src_t *s, const struct bs_header *h, const bs_layout_t *l, const plan_rows_t *pr,
                bs_segment_t *out, char *err, size_t errlen)
{
	uint64_t cells = 0, rows = 0, values = 0, native = 0;
	for (size_t m = 0; m < l->nmaps; m++) {
		uint32_t nrows = h->row_count[m];
		if (nrows > pr->rows[m])
			FAIL("map %s claims %u rows (at most %llu)", l->maps[m].name, nrows, (unsigned long long)pr->rows[m]);
		for (int f = 0; f < BS_MAX_FIELDS; f++) {
			if (h->dict_count[m][f] > BS_LABEL_VALUES)
				FAIL("map %s label %d claims %u values (at most %d)", l->maps[m].name, f, h->dict_count[m][f],
				     BS_LABEL_VALUES);
			values += h->dict_count[m][f];
		}
		out->map_rows[m] = nrows;
		out->map_first[m] = (size_t)rows;
		out->native_first[m] = (size_t)native;
		native += pr->native ? (uint64_t)nrows * l->maps[m].native_cells : 0;
		rows += nrows;
		cells += (uint64_t)nrows * h->map_cells[m];
	}
	uint64_t slots = h->slots_used + (h->overflow_used && h->slots_used < h->nslots), backed = s->backed;
	struct stat st;
	/* A thread claiming a slot writes it before publishing the count: a
	 * look at the file after the header was read sees every claimed page. */
	if (backed && slots > backed / 4096 && s->fd >= 0 && fstat(s->fd, &st) == 0)
		backed = (uint64_t)st.st_blocks * 512;
	if (backed && slots > backed / 4096)
		FAIL("claims %llu threads' slots, but the file holds only %llu kB", (unsigned long long)slots,
		     (unsigned long long)(backed >> 10));
	uint64_t bytes = values * BS_VALUE_BYTES + rows * sizeof(struct bs_row) + slots * cells * 8 + native * 8;
	if (bytes > BS_READ_BUDGET)
		FAIL("its counts ask for %llu bytes of reading (%llu slots, %llu rows), over the reader's budget of %llu MiB",
		     (unsigned long long)bytes, (unsigned long long)slots, (unsigned long long)rows,
		     (unsigned long long)(BS_READ_BUDGET >> 20));
	if (fit((void **)&out->rows, &out->rows_cap, rows, sizeof *out->rows) != 0 ||
	    fit((void **)&out->native, &out->native_cap, native, sizeof *out->native) != 0)
		FAIL("out of memory");
	if (rows)
		memset(out->rows, 0, rows * sizeof *out->rows);
	return 0;
}

/* Each map's native cells of the rows in use: one read per map (its rows
 * are contiguous).  Every thread adds to them atomically: each cell is
 * read whole. */
static int read_native(const src_t *s, const bs_layout_t *l, const plan_rows_t *pr, bs_segment_t *out, char *err,
                       size_t errlen)
{
	for (size_t m = 0; m < l->nmaps; m++) {
		uint64_t n = pr->native ? (uint64_t)out->map_rows[m] * l->maps[m].native_cells : 0;
		if (n && get(s, pr->native_at[m], out->native + out->native_first[m], n * 8) != 0)
			FAIL("truncated in map %s's native buckets", l->maps[m].name);
		out->work.bytes += n * 8;
		out->work.reads += n != 0;
	}
	return 0;
}

typedef unsigned char dict_t[BS_MAX_FIELDS][BS_LABEL_VALUES][BS_VALUE_BYTES];

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
			FAIL("map %s names known value %u of %zu", mi->name, idx - BS_IDX_KNOWN, known->n);
		set_text(row->text[f], known->values[idx - BS_IDX_KNOWN]);
		return 0;
	}
	if (idx >= count) {
		if (idx == 0)
			return 0; /* an unused field of this map */
		FAIL("map %s names label value %u of %u", mi->name, idx, count);
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

static int read_dicts_rows(const src_t *s, const struct bs_header *h, const bs_layout_t *l, const plan_rows_t *pr,
                           bs_segment_t *out, dict_t *dict, char *err, size_t errlen)
{
	/* The writer publishes a count after what it covers; counts were read first (plan). */
	size_t most = 1;
	for (size_t m = 0; m < l->nmaps; m++)
		most = out->map_rows[m] > most ? out->map_rows[m] : most;
	struct bs_row *rows = malloc(most * sizeof *rows);
	int rc = 0;
	if (!rows)
		FAIL("out of memory");
	for (size_t m = 0; rc == 0 && m < l->nmaps; m++) {
		size_t nrows = out->map_rows[m];
		for (int f = 0; rc == 0 && f < BS_MAX_FIELDS; f++) {
			uint32_t n = h->dict_count[m][f];
			if (n && get(s, BS_DICT_ENTRY(h, m, f, 0), (*dict)[f], (uint64_t)n * BS_VALUE_BYTES) != 0) {
				snprintf(err, errlen, "truncated in the label values");
				rc = -1;
			}
		}
		if (rc == 0 && nrows &&
		    get(s, h->rows_offset + pr->base[m] * sizeof *rows, rows, (uint64_t)nrows * sizeof *rows) != 0) {
			snprintf(err, errlen, "truncated in the rows");
			rc = -1;
		}
		out->work.rows += nrows;
		for (uint32_t r = 0; rc == 0 && r < nrows; r++)
			for (int f = 0; rc == 0 && f < BS_MAX_FIELDS; f++)
				rc = decode_field(&l->maps[m], f, rows[r].idx[f], h->dict_count[m][f],
				                  (const unsigned char(*)[BS_VALUE_BYTES])(*dict)[f], row_mut(out, m, r), err, errlen);
	}
	free(rows);
	return rc;
}

/* Slot i's cells of the rows in use, map by map, added to the rows. */
static int add_slot(const src_t *s, const struct bs_header *h, const bs_layout_t *l, uint32_t i, bs_segment_t *out,
                    uint64_t *buf, char *err, size_t errlen)
{
	uint64_t base = h->slots_offset + (uint64_t)i * h->slot_size + BS_SLOT_HEADER;
	out->work.slots++;
	for (size_t m = 0; m < l->nmaps; m++) {
		uint64_t n = out->map_rows[m], c = h->map_cells[m];
		if (n == 0)
			continue;
		if (get(s, base + h->map_cells_offset[m], buf, n * c * 8) != 0)
			FAIL("truncated in slot %u", i);
		bs_read_row_t *rows = row_mut(out, m, 0);
		for (uint64_t r = 0; r < n; r++)
			for (uint64_t k = 0; k < c; k++)
				rows[r].cells[k] += buf[r * c + k];
	}
	return 0;
}

/* The slots ever claimed, [0, slots_used), and the overflow slot (the
 * last) once a thread found no free one. */
static int read_slots(const src_t *s, const struct bs_header *h, const bs_layout_t *l, bs_segment_t *out, char *err,
                      size_t errlen)
{
	int rc = 0;
	uint64_t most = 1;
	for (size_t m = 0; m < l->nmaps; m++)
		most = out->map_rows[m] * h->map_cells[m] > most ? out->map_rows[m] * h->map_cells[m] : most;
	uint64_t *buf = malloc(most * 8);
	if (!buf)
		FAIL("out of memory");
	for (uint32_t i = 0; rc == 0 && i < h->slots_used; i++)
		rc = add_slot(s, h, l, i, out, buf, err, errlen);
	if (rc == 0 && h->overflow_used && h->slots_used < h->nslots)
		rc = add_slot(s, h, l, h->nslots - 1, out, buf, err, errlen);
	free(buf);
	return rc;
}

/* This build's maps among the segment's: those it holds in this build's shape. */
static void build_view(bs_segment_t *out)
{
	const bs_layout_t *l = out->layout;
	for (int b = 0; b < BX_MAP_COUNT; b++)
		out->build_sm[b] = -1;
	for (size_t m = 0; m < l->nmaps; m++) {
		int b = l->maps[m].build_map;
		if (b >= 0) {
			out->nrows[b] = out->map_rows[m];
			out->first_row[b] = out->map_first[m];
			out->build_sm[b] = (int)m;
		}
	}
}

/* No rows, no layout: before a reading, and after a refused one. */
static void empty(bs_segment_t *out)
{
	memset(out->nrows, 0, sizeof out->nrows);
	memset(out->map_rows, 0, sizeof out->map_rows);
	bs_layout_release((bs_layout_t *)out->layout);
	out->layout = NULL;
}

/* Every reading starts empty, and counts its work from zero. */
static void begin(bs_segment_t *out)
{
	empty(out);
	memset(&out->work, 0, sizeof out->work);
}

/* The segment's description, read within its budget, parsed (or found
 * among the layouts parsed before). */
static bs_layout_t *read_layout(const src_t *s, const struct bs_header *h, char *err, size_t errlen)
{
	if (h->desc_size < 2 || h->desc_size > BS_DESC_MAX + 1 || h->desc_offset < sizeof *h) {
		snprintf(err, errlen, "description of %llu bytes (a reader takes 2 to %u)", (unsigned long long)h->desc_size,
		         BS_DESC_MAX + 1);
		return NULL;
	}
	char *text = malloc(h->desc_size);
	bs_layout_t *l = NULL;
	if (!text)
		snprintf(err, errlen, "out of memory");
	else if (get(s, h->desc_offset, text, h->desc_size) != 0)
		snprintf(err, errlen, "truncated in its description (%llu bytes)", (unsigned long long)s->size);
	else if (text[h->desc_size - 1] != '\0' || memchr(text, '\0', h->desc_size - 1))
		snprintf(err, errlen, "its description is not one text");
	else
		l = bs_layout_get(text, h->desc_size - 1, h->desc_hash, err, errlen);
	free(text);
	return l;
}

/* The header, as a segment of this layout and byte order has it. */
static int read_header(const src_t *s, struct bs_header *h, char *err, size_t errlen)
{
	if (get(s, 0, h, sizeof *h) != 0)
		FAIL("too short for a stats segment header (%llu bytes)", (unsigned long long)s->size);
	if (memcmp(h->magic.text, BS_MAGIC, 8) != 0)
		FAIL("not a stats segment (no BILLSTAT magic), or not yet initialised");
	if (h->layout_version != BS_LAYOUT_VERSION)
		FAIL("segment layout version %u; this reader reads %u", h->layout_version, BS_LAYOUT_VERSION);
	if (h->endian != BS_ENDIAN)
		FAIL("segment written with another byte order");
	return 0;
}

static int read_src(const src_t *s, bs_segment_t *out, char *err, size_t errlen)
{
	struct bs_header h;
	plan_rows_t pr;

	if (read_header(s, &h, err, errlen) != 0)
		return -1;
	bs_layout_t *l = read_layout(s, &h, err, errlen);
	if (!l)
		return -1;
	out->layout = l;
	dict_t *dict = malloc(sizeof *dict);
	if (!dict) {
		empty(out);
		FAIL("out of memory");
	}
	int rc = check_layout(&h, l, s->size, &pr, err, errlen) != 0 || plan(s, &h, l, &pr, out, err, errlen) != 0 ||
	         read_dicts_rows(s, &h, l, &pr, out, dict, err, errlen) != 0 || read_slots(s, &h, l, out, err, errlen) != 0 ||
	         read_native(s, l, &pr, out, err, errlen) != 0;
	out->has_native = pr.native;
	free(dict);
	if (rc) {
		empty(out); /* no partial result */
		return -1;
	}
	build_view(out);
	out->pid = h.pid;
	out->state = h.state;
	out->generation = h.generation;
	out->start_time = h.start_time;
	out->slots_used = h.slots_used;
	out->nslots = h.nslots;
	out->overflow_used = h.overflow_used;
	return 0;
}

int bs_map_by_probe(const bs_segment_t *s, const char *probe)
{
	for (size_t m = 0; s->layout && m < s->layout->nmaps; m++)
		if (strcmp(s->layout->maps[m].probe, probe) == 0)
			return (int)m;
	return -1;
}

int bs_read_fd(int fd, bs_segment_t *out, char *err, size_t errlen)
{
	struct stat st;
	begin(out);
	if (fstat(fd, &st) != 0)
		FAIL("%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		FAIL("not a regular file");
	src_t s = { fd, NULL, (uint64_t)st.st_size, (uint64_t)st.st_blocks * 512, &out->work };
	return read_src(&s, out, err, errlen);
}

int bs_read_mem(const unsigned char *data, size_t size, bs_segment_t *out, char *err, size_t errlen)
{
	src_t s = { -1, data, size, 0, &out->work };
	begin(out);
	return read_src(&s, out, err, errlen);
}

void bs_segment_free(bs_segment_t *s)
{
	bs_layout_release((bs_layout_t *)s->layout);
	free(s->rows);
	free(s->native);
	memset(s, 0, sizeof *s);
}

int bs_read_path(const char *path, bs_segment_t *out, char *err, size_t errlen)
{
	begin(out);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		FAIL("%s: %s", path, strerror(errno));
	int rc = bs_read_fd(fd, out, err, errlen);
	close(fd);
	return rc;
}

/* --- slow-request trails (stats_trail.h) --------------------------------- */

void bs_trails_free(bs_trails_t *t)
{
	bs_layout_release((bs_layout_t *)t->layout);
	free(t->trails);
	memset(t, 0, sizeof *t);
}

/* Whether record t, read whole as trail n, holds what a writer writes. */
static int trail_valid(const struct bs_trail *t, uint64_t n, const bs_layout_t *l)
{
	if (t->seq != 2 * n + 2 || t->nevents == 0 || t->nevents > BS_TRAIL_EVENTS ||
	    !memchr(t->handler, '\0', sizeof t->handler))
		return 0;
	for (uint32_t i = 0; i < t->nevents; i++) {
		const struct bs_trail_event *e = &t->events[i];
		if (e->kind >= l->nkinds)
			return 0;
		for (unsigned k = 0; k < BS_TRAIL_STRS; k++)
			if (!memchr(e->strs[k], '\0', BS_TRAIL_STR))
				return 0;
	}
	return 1;
}

uint64_t bs_slow_threshold_of(const bs_slow_thresholds_t *t, const char *handler)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->handler[i].handler, handler) == 0)
			return t->handler[i].ns;
	return t->default_ns;
}

/* The ring's thresholds into out: a threshold 0 or a handler without its
 * end, empty or named twice is not as a writer writes it. */
static int read_thresholds(const struct bs_trail_ring *ring, bs_slow_thresholds_t *out, char *err, size_t errlen)
{
	if (ring->slow_default_ns == 0 || ring->nthresholds > BS_TRAIL_THRESHOLDS || ring->trails_off > 1)
		FAIL("its trails' thresholds are corrupt (default %llu ns, %u handlers; this reader reads up to %d)",
		     (unsigned long long)ring->slow_default_ns, ring->nthresholds, BS_TRAIL_THRESHOLDS);
	for (uint32_t i = 0; i < ring->nthresholds; i++) {
		const struct bs_trail_threshold *t = &ring->threshold[i];
		if (!memchr(t->handler, '\0', sizeof t->handler) || !t->handler[0] || t->ns == 0)
			FAIL("its trails' threshold %u is corrupt (a handler without its end, empty, or 0 ns)", i);
		for (uint32_t k = 0; k < i; k++)
			if (strcmp(ring->threshold[k].handler, t->handler) == 0)
				FAIL("its trails' thresholds %u and %u name one handler", k, i);
	}
	out->default_ns = ring->slow_default_ns;
	out->trails_off = (int)ring->trails_off;
	out->n = ring->nthresholds;
	memcpy(out->handler, ring->threshold, out->n * sizeof out->handler[0]);
	return 0;
}

/* The header and the trails' ring header of the segment open at fd,
 * checked. */
static int read_ring(const src_t *s, struct bs_header *h, struct bs_trail_ring *ring, bs_slow_thresholds_t *th,
                     char *err, size_t errlen)
{
	if (read_header(s, h, err, errlen) != 0)
		return -1;
	if (h->trail_offset == 0)
		FAIL("the segment keeps no trails");
	if (get(s, h->trail_offset, ring, sizeof *ring) != 0 || h->trail_offset % 64 ||
	    s->size - h->trail_offset < BS_TRAIL_RING_SIZE)
		FAIL("truncated in its trails (%llu bytes)", (unsigned long long)s->size);
	if (ring->version != BS_TRAIL_RING_VERSION)
		FAIL("its trails' ring is of version %u; this reader reads version %u", ring->version,
		     BS_TRAIL_RING_VERSION);
	if (ring->records != BS_TRAIL_RECORDS || ring->kept_records != BS_TRAIL_KEPT ||
	    ring->record_size != sizeof(struct bs_trail))
		FAIL("its trails' ring holds %u records (%u kept) of %u bytes; this reader reads %u (%u kept) of %zu", ring->records,
		     ring->kept_records, ring->record_size, BS_TRAIL_RECORDS, BS_TRAIL_KEPT, sizeof(struct bs_trail));
	if (ring->keep_ns == 0)
		FAIL("its trails' ring keeps its kept trails 0 ns: corrupt");
	return read_thresholds(ring, th, err, errlen);
}

/* A file descriptor as a source: a regular file. */
static int fd_src(int fd, src_t *s, bs_read_work_t *work, char *err, size_t errlen)
{
	struct stat st;
	memset(work, 0, sizeof *work);
	if (fstat(fd, &st) != 0)
		FAIL("%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		FAIL("not a regular file");
	*s = (src_t){ fd, NULL, (uint64_t)st.st_size, (uint64_t)st.st_blocks * 512, work };
	return 0;
}

int bs_slow_thresholds_read_fd(int fd, bs_slow_thresholds_t *out, char *err, size_t errlen)
{
	src_t s;
	struct bs_header h;
	struct bs_trail_ring ring;
	bs_read_work_t work;
	memset(out, 0, sizeof *out);
	if (fd_src(fd, &s, &work, err, errlen) != 0 || read_header(&s, &h, err, errlen) != 0)
		return -1;
	if (h.trail_offset == 0)
		return 1;
	return read_ring(&s, &h, &ring, out, err, errlen);
}

int bs_trails_read_fd(int fd, int lane, uint64_t since, bs_trails_t *out, char *err, size_t errlen)
{
	src_t s;
	struct bs_header h;
	struct bs_trail_ring ring;
	bs_read_work_t work;
	memset(out, 0, sizeof *out);
	if (fd_src(fd, &s, &work, err, errlen) != 0 || read_ring(&s, &h, &ring, &out->thresholds, err, errlen) != 0)
		return -1;
	bs_layout_t *l = read_layout(&s, &h, err, errlen);
	if (!l)
		return -1;
	uint64_t records = lane == BS_LANE_KEPT ? BS_TRAIL_KEPT : BS_TRAIL_RECORDS;
	uint64_t base = h.trail_offset + sizeof ring + (lane == BS_LANE_KEPT ? BS_TRAIL_RECORDS * sizeof(struct bs_trail) : 0);
	uint64_t c = lane == BS_LANE_KEPT ? ring.kept : ring.committed, first = c > records ? c - records : 0;
	if (since > first)
		first = since < c ? since : c;
	out->layout = l;
	out->committed = c;
	out->untracked = ring.untracked;
	out->first = first;
	out->keep_ns = ring.keep_ns;
	out->records = (uint32_t)records;
	out->pid = h.pid;
	out->start_time = h.start_time;
	if (c == first)
		return 0;
	if (!(out->trails = malloc((size_t)(c - first) * sizeof *out->trails))) {
		bs_trails_free(out);
		FAIL("out of memory");
	}
	for (uint64_t n = first; n < c; n++) {
		uint64_t at = base + (n % records) * sizeof(struct bs_trail), seq;
		struct bs_trail *t = &out->trails[out->count];
		if (get(&s, at, t, sizeof *t) != 0 || get(&s, at, &seq, sizeof seq) != 0) {
			bs_trails_free(out);
			FAIL("truncated in its trails (%llu bytes)", (unsigned long long)s.size);
		}
		/* whole, unchanged while it was copied, and as a writer writes it */
		if (seq == t->seq && trail_valid(t, n, l))
			out->count++;
		else
			out->skipped++;
	}
	return 0;
}
