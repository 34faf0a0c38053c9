/*
 * stats_read_src.c -- the segment reader's source (stats_read_src.h): a
 * range of a file (pread) or of bytes in memory, counted; the header as
 * this reader's layout version has it; the description, within its
 * budget.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stats_read_src.h"

int bs_src_get_(const bs_src_t *s, uint64_t off, void *dst, uint64_t n)
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

int bs_src_fd_(int fd, const struct stat *st, bs_src_t *s, bs_read_work_t *work, char *err, size_t errlen)
{
	struct stat own;
	memset(work, 0, sizeof *work);
	if (!st && fstat(fd, &own) != 0)
		BS_FAIL("%s", strerror(errno));
	if (!st)
		st = &own;
	if (!S_ISREG(st->st_mode))
		BS_FAIL("not a regular file");
	*s = (bs_src_t){ .fd = fd,
		         .size = (uint64_t)st->st_size,
		         .backed = (uint64_t)st->st_blocks * 512,
		         .work = work,
		         .dev = (uint64_t)st->st_dev,
		         .ino = (uint64_t)st->st_ino };
	return 0;
}

bs_layout_t *bs_read_layout_(const bs_src_t *s, const struct bs_header *h, char *err, size_t errlen)
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
	else if (bs_src_get_(s, h->desc_offset, text, h->desc_size) != 0)
		snprintf(err, errlen, "truncated in its description (%llu bytes)", (unsigned long long)s->size);
	else if (text[h->desc_size - 1] != '\0' || memchr(text, '\0', h->desc_size - 1))
		snprintf(err, errlen, "its description is not one text");
	else
		l = bs_layout_get(text, h->desc_size - 1, h->desc_hash, err, errlen);
	free(text);
	return l;
}

int bs_read_header_(const bs_src_t *s, struct bs_header *h, char *err, size_t errlen)
{
	if (bs_src_get_(s, 0, h, sizeof *h) != 0)
		BS_FAIL("too short for a stats segment header (%llu bytes)", (unsigned long long)s->size);
	if (memcmp(h->magic.text, BS_MAGIC, 8) != 0)
		BS_FAIL("not a stats segment (no BILLSTAT magic), or not yet initialised");
	if (h->layout_version != BS_LAYOUT_VERSION)
		BS_FAIL("segment layout version %u; this reader reads %u", h->layout_version, BS_LAYOUT_VERSION);
	if (h->endian != BS_ENDIAN)
		BS_FAIL("segment written with another byte order");
	return 0;
}

/* The header against the segment's own layout and the file's size: its
 * maps and cells as described, its tables inside the file. */
int bs_check_layout_(const struct bs_header *h, const bs_layout_t *l, uint64_t size, plan_rows_t *pr, char *err,
                     size_t errlen)
{
	uint64_t cells = 0;

	if (h->nmaps != l->nmaps || h->rows_per_map == 0 || h->rows_per_map > 4096 || h->label_values == 0 ||
	    h->label_values > BS_IDX_KNOWN)
		BS_FAIL("layout differs: %u maps, %u rows, %u values per label (its description: %zu maps; this reader: "
		        "1..4096 rows, 1..%d values)",
		        h->nmaps, h->rows_per_map, h->label_values, l->nmaps, BS_IDX_KNOWN);
	pr->total = 0;
	for (size_t m = 0; m < l->nmaps; m++) {
		if (h->map_cells_offset[m] != cells * 8 || h->map_cells[m] != l->maps[m].cells)
			BS_FAIL("map %s's cells are not where its description puts them", l->maps[m].name);
		pr->rows[m] = (uint64_t)h->rows_per_map + l->maps[m].folds + 1;
		pr->base[m] = pr->total;
		pr->total += pr->rows[m];
		cells += pr->rows[m] * h->map_cells[m];
	}
	uint64_t dicts = BS_DICTS_SIZE(l->nmaps, h->label_values), rows = pr->total * sizeof(struct bs_row);
	if (h->nslots < 1 || h->nslots > 65537 || h->slot_size < BS_SLOT_HEADER + cells * 8 ||
	    h->slot_size > (1u << 30) || h->slots_used > h->nslots)
		BS_FAIL("slot table is corrupt (%u slots of %llu bytes)", h->nslots, (unsigned long long)h->slot_size);
	if (h->dicts_offset < BS_HEADER_SIZE || h->dicts_offset > size || dicts > size - h->dicts_offset ||
	    h->rows_offset < h->dicts_offset + dicts || h->rows_offset > size || rows > size - h->rows_offset ||
	    h->slots_offset < h->rows_offset + rows || h->slots_offset > size ||
	    (size - h->slots_offset) / h->slot_size < h->nslots)
		BS_FAIL("truncated or corrupt: its tables do not fit its %llu bytes", (unsigned long long)size);
	if (size < h->size)
		BS_FAIL("truncated: %llu bytes of the %llu its header says", (unsigned long long)size,
		        (unsigned long long)h->size);
	/* the trails' ring, if any, after the slots and inside the file */
	uint64_t slots_end = h->slots_offset + (uint64_t)h->nslots * h->slot_size;
	if (h->trail_offset &&
	    (h->trail_offset < slots_end || h->trail_offset > size || size - h->trail_offset < BS_TRAIL_RING_SIZE))
		BS_FAIL("truncated or corrupt: its trails do not fit its %llu bytes", (unsigned long long)size);
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
		BS_FAIL("truncated or corrupt: its native buckets do not fit its %llu bytes", (unsigned long long)size);
	return 0;
}
