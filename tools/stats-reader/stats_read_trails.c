/*
 * stats_read_trails.c -- a segment's slow-request trails and the
 * thresholds they were judged by, read without privilege (stats_trail.h
 * declares them; docs/stats.md, "Slow-request trails").  A record is
 * taken only when it is whole, unchanged while copied, and as a writer
 * writes it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats_read_src.h"

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
		BS_FAIL("its trails' thresholds are corrupt (default %llu ns, %u handlers; this reader reads up to %d)",
		        (unsigned long long)ring->slow_default_ns, ring->nthresholds, BS_TRAIL_THRESHOLDS);
	for (uint32_t i = 0; i < ring->nthresholds; i++) {
		const struct bs_trail_threshold *t = &ring->threshold[i];
		if (!memchr(t->handler, '\0', sizeof t->handler) || !t->handler[0] || t->ns == 0)
			BS_FAIL("its trails' threshold %u is corrupt (a handler without its end, empty, or 0 ns)", i);
		for (uint32_t k = 0; k < i; k++)
			if (strcmp(ring->threshold[k].handler, t->handler) == 0)
				BS_FAIL("its trails' thresholds %u and %u name one handler", k, i);
	}
	out->default_ns = ring->slow_default_ns;
	out->trails_off = (int)ring->trails_off;
	out->n = ring->nthresholds;
	memcpy(out->handler, ring->threshold, out->n * sizeof out->handler[0]);
	return 0;
}

/* The header and the trails' ring header of the segment open at fd,
 * checked. */
static int read_ring(const bs_src_t *s, struct bs_header *h, struct bs_trail_ring *ring, bs_slow_thresholds_t *th,
                     char *err, size_t errlen)
{
	if (bs_read_header_(s, h, err, errlen) != 0)
		return -1;
	if (h->trail_offset == 0)
		BS_FAIL("the segment keeps no trails");
	if (bs_src_get_(s, h->trail_offset, ring, sizeof *ring) != 0 || h->trail_offset % 64 ||
	    s->size - h->trail_offset < BS_TRAIL_RING_SIZE)
		BS_FAIL("truncated in its trails (%llu bytes)", (unsigned long long)s->size);
	if (ring->version != BS_TRAIL_RING_VERSION)
		BS_FAIL("its trails' ring is of version %u; this reader reads version %u", ring->version,
		        BS_TRAIL_RING_VERSION);
	if (ring->records != BS_TRAIL_RECORDS || ring->kept_records != BS_TRAIL_KEPT ||
	    ring->record_size != sizeof(struct bs_trail))
		BS_FAIL("its trails' ring holds %u records (%u kept) of %u bytes; this reader reads %u (%u kept) of %zu",
		        ring->records, ring->kept_records, ring->record_size, BS_TRAIL_RECORDS, BS_TRAIL_KEPT,
		        sizeof(struct bs_trail));
	if (ring->keep_ns == 0)
		BS_FAIL("its trails' ring keeps its kept trails 0 ns: corrupt");
	return read_thresholds(ring, th, err, errlen);
}

int bs_slow_thresholds_read_fd(int fd, bs_slow_thresholds_t *out, char *err, size_t errlen)
{
	bs_src_t s;
	struct bs_header h;
	struct bs_trail_ring ring;
	bs_read_work_t work;
	memset(out, 0, sizeof *out);
	if (bs_src_fd_(fd, NULL, &s, &work, err, errlen) != 0 || bs_read_header_(&s, &h, err, errlen) != 0)
		return -1;
	if (h.trail_offset == 0)
		return 1;
	return read_ring(&s, &h, &ring, out, err, errlen);
}

int bs_trails_read_fd(int fd, int lane, uint64_t since, bs_trails_t *out, char *err, size_t errlen)
{
	bs_src_t s;
	struct bs_header h;
	struct bs_trail_ring ring;
	bs_read_work_t work;
	memset(out, 0, sizeof *out);
	if (bs_src_fd_(fd, NULL, &s, &work, err, errlen) != 0 || read_ring(&s, &h, &ring, &out->thresholds, err, errlen) != 0)
		return -1;
	uint64_t records = lane == BS_LANE_KEPT ? BS_TRAIL_KEPT : BS_TRAIL_RECORDS;
	uint64_t base = h.trail_offset + sizeof ring + (lane == BS_LANE_KEPT ? BS_TRAIL_RECORDS * sizeof(struct bs_trail) : 0);
	uint64_t c = lane == BS_LANE_KEPT ? ring.kept : ring.committed, first = c > records ? c - records : 0;
	if (since > first)
		first = since < c ? since : c;
	out->committed = c;
	out->untracked = ring.untracked;
	out->first = first;
	out->keep_ns = ring.keep_ns;
	out->records = (uint32_t)records;
	out->pid = h.pid;
	out->start_time = h.start_time;
	if (c == first)
		return 0; /* no trail to read: nor its description (the kinds) */
	bs_layout_t *l = bs_read_layout_(&s, &h, err, errlen);
	if (!l)
		return -1;
	out->layout = l;
	if (!(out->trails = malloc((size_t)(c - first) * sizeof *out->trails))) {
		bs_trails_free(out);
		BS_FAIL("out of memory");
	}
	for (uint64_t n = first; n < c; n++) {
		uint64_t at = base + (n % records) * sizeof(struct bs_trail), seq;
		struct bs_trail *t = &out->trails[out->count];
		if (bs_src_get_(&s, at, t, sizeof *t) != 0 || bs_src_get_(&s, at, &seq, sizeof seq) != 0) {
			bs_trails_free(out);
			BS_FAIL("truncated in its trails (%llu bytes)", (unsigned long long)s.size);
		}
		/* whole, unchanged while it was copied, and as a writer writes it */
		if (seq == t->seq && trail_valid(t, n, l))
			out->count++;
		else
			out->skipped++;
	}
	return 0;
}

int bs_trails_new_fd(int fd, const bs_segment_t *seg, int lane, uint64_t since)
{
	uint64_t committed;
	size_t count = lane == BS_LANE_KEPT ? offsetof(struct bs_trail_ring, kept) : offsetof(struct bs_trail_ring, committed);
	/* the ring was found inside the file when seg was read */
	return seg->trail_offset &&
	       pread(fd, &committed, sizeof committed, (off_t)(seg->trail_offset + count)) == (ssize_t)sizeof committed &&
	       committed > since;
}
