/*
 * stats_trail.c -- the slow-request trails' writer (stats_trail.h says
 * what a trail is; the generated billing_trail_<probe>() call in here).
 *
 * Open requests live in a table of this process (not in the segment):
 * OPEN_PLACES places, a request's place found from its ID in at most
 * OPEN_PROBES steps.  A place is taken by a compare-and-swap of its ID
 * from 0 to CLAIMED, filled, then given the request's ID with release; it
 * is given back (ID 0) at request-done.  An event takes the next index of
 * its request's place with one atomic add and writes it; `owner` says for
 * which request the event was written, so an event that raced with its
 * request's end (and the place's next request) is never committed to the
 * wrong trail.  Only slow requests touch the segment: one record of the
 * ring, claimed with an atomic add and written under its sequence number.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <string.h>
#include <time.h>

#include "billing/stats_gen.h"
#include "stats_settings.h"
#include "stats_trail_writer.h"

#define OPEN_PLACES 256 /* requests open at once that keep a trail */
#define OPEN_PROBES 16  /* places looked at for one ID */
#define CLAIMED UINT64_MAX

typedef struct open_request {
	uint64_t id; /* 0: free; CLAIMED: being filled */
	uint64_t start_ns;
	uint32_t next; /* events claimed, request-start's included */
	char handler[BS_TRAIL_HANDLER];
	uint64_t owner[BS_TRAIL_EVENTS]; /* the request each event was written for, stored last */
	struct bs_trail_event events[BS_TRAIL_EVENTS];
} open_request_t;

int billing_trail_open_;
static open_request_t open_requests[OPEN_PLACES];
static __thread uint64_t current BS_TLS_MODEL; /* the request this thread last started */

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t home(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 56) % OPEN_PLACES;
}

static open_request_t *find(uint64_t id)
{
	size_t h = home(id);
	for (size_t i = 0; i < OPEN_PROBES; i++) {
		open_request_t *r = &open_requests[(h + i) % OPEN_PLACES];
		if (__atomic_load_n(&r->id, __ATOMIC_ACQUIRE) == id)
			return r;
	}
	return NULL;
}

static void copy_str(char *dst, const char *s, uint16_t *cut, unsigned bit)
{
	size_t n = s ? strnlen(s, BS_TRAIL_STR) : 0;
	if (n == BS_TRAIL_STR) {
		n = BS_TRAIL_STR - 1;
		*cut |= (uint16_t)(1u << bit);
	}
	memcpy(dst, s ? s : "", n);
	memset(dst + n, 0, BS_TRAIL_STR - n);
}

/* Event i of request r, written for request id. */
static void put(open_request_t *r, uint32_t i, uint64_t id, const bs_trail_fire_t *f)
{
	struct bs_trail_event *e = &r->events[i];
	uint64_t t = now_ns(CLOCK_MONOTONIC), start = __atomic_load_n(&r->start_ns, __ATOMIC_RELAXED);
	e->offset_ns = t > start ? t - start : 0;
	e->kind = f->kind;
	e->cut = 0;
	e->reserved = 0;
	memcpy(e->ints, f->ints, sizeof e->ints);
	for (unsigned s = 0; s < BS_TRAIL_STRS; s++)
		copy_str(e->strs[s], f->strs[s], &e->cut, s);
	__atomic_store_n(&r->owner[i], id, __ATOMIC_RELEASE);
}

static void count_untracked(void)
{
	struct bs_trail_ring *ring = bs_trail_ring_();
	if (ring)
		__atomic_fetch_add(&ring->untracked, 1, __ATOMIC_RELAXED);
}

void bs_trail_start_(uint64_t id, const char *handler, const bs_trail_fire_t *f)
{
	current = id;
	if (id == 0 || id == CLAIMED || bs_settings_()->slow_off)
		return;
	if (find(id)) { /* an ID still open: its events cannot be told apart */
		count_untracked();
		return;
	}
	size_t h = home(id);
	for (size_t i = 0; i < OPEN_PROBES; i++) {
		open_request_t *r = &open_requests[(h + i) % OPEN_PLACES];
		uint64_t free_id = 0;
		if (!__atomic_compare_exchange_n(&r->id, &free_id, CLAIMED, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&r->start_ns, now_ns(CLOCK_MONOTONIC), __ATOMIC_RELAXED);
		__atomic_store_n(&r->next, 1, __ATOMIC_RELAXED);
		size_t n = handler ? strnlen(handler, sizeof r->handler - 1) : 0;
		memset(r->handler, 0, sizeof r->handler);
		memcpy(r->handler, handler ? handler : "", n);
		put(r, 0, id, f);
		__atomic_store_n(&r->id, id, __ATOMIC_RELEASE);
		__atomic_fetch_add(&billing_trail_open_, 1, __ATOMIC_RELAXED);
		return;
	}
	count_untracked();
}

void bs_trail_event_(uint64_t id, int by_id, const bs_trail_fire_t *f)
{
	if (!by_id)
		id = current;
	open_request_t *r = id && id != CLAIMED ? find(id) : NULL;
	if (!r)
		return;
	uint32_t i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
	if (i < BS_TRAIL_EVENTS - 1) /* the last place is request-done's */
		put(r, i, id, f);
}

static uint64_t threshold_of(const char *handler)
{
	const bs_settings_t *s = bs_settings_();
	for (size_t i = 0; i < s->nslow; i++)
		if (strcmp(s->slow[i].handler, handler) == 0)
			return s->slow[i].ns;
	for (size_t i = 0; i < bs_slow_nhandlers_; i++)
		if (strcmp(bs_slow_handlers_[i].handler, handler) == 0)
			return bs_slow_handlers_[i].ns;
	return s->slow_default_ns ? s->slow_default_ns : bs_slow_default_ns_;
}

/* Copy request r (id) into the ring's next record. */
static void commit(open_request_t *r, uint64_t id, int32_t status, uint64_t duration, uint64_t threshold,
                   uint32_t claimed)
{
	struct bs_trail_ring *ring = bs_trail_ring_();
	if (!ring)
		return;
	uint64_t n = __atomic_fetch_add(&ring->committed, 1, __ATOMIC_RELAXED);
	struct bs_trail *t = (struct bs_trail *)(ring + 1) + n % BS_TRAIL_RECORDS;
	__atomic_store_n(&t->seq, 2 * n + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	t->request_id = id;
	t->duration_ns = duration;
	t->threshold_ns = threshold;
	t->end_unix_ns = now_ns(CLOCK_REALTIME);
	t->status = status;
	t->reserved = 0;
	memcpy(t->handler, r->handler, sizeof t->handler);
	uint32_t kept = 0, upto = claimed < BS_TRAIL_EVENTS ? claimed : BS_TRAIL_EVENTS;
	for (uint32_t i = 0; i < upto; i++)
		if (__atomic_load_n(&r->owner[i], __ATOMIC_ACQUIRE) == id)
			t->events[kept++] = r->events[i];
	memset(&t->events[kept], 0, (BS_TRAIL_EVENTS - kept) * sizeof t->events[0]);
	t->nevents = kept;
	t->lost = claimed > BS_TRAIL_EVENTS ? claimed - BS_TRAIL_EVENTS : 0;
	__atomic_store_n(&t->seq, 2 * n + 2, __ATOMIC_RELEASE);
}

void bs_trail_done_(uint64_t id, const char *handler, int32_t status, uint64_t duration_ns, const bs_trail_fire_t *f)
{
	if (current == id)
		current = 0;
	open_request_t *r = id && id != CLAIMED ? find(id) : NULL;
	if (!r)
		return;
	uint32_t claimed = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED) + 1;
	uint32_t last = claimed - 1 < BS_TRAIL_EVENTS - 1 ? claimed - 1 : BS_TRAIL_EVENTS - 1;
	put(r, last, id, f);
	uint64_t duration = duration_ns;
	if (!duration) { /* not measured by the service: the trail's own clock */
		uint64_t t = now_ns(CLOCK_MONOTONIC), start = __atomic_load_n(&r->start_ns, __ATOMIC_RELAXED);
		duration = t > start ? t - start : 0;
	}
	uint64_t threshold = threshold_of(handler ? handler : "");
	if (duration >= threshold)
		commit(r, id, status, duration, threshold, claimed);
	for (uint32_t i = 0; i < BS_TRAIL_EVENTS; i++)
		__atomic_store_n(&r->owner[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->id, 0, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&billing_trail_open_, 1, __ATOMIC_RELAXED);
}

void bs_trail_forget_(void)
{
	memset(open_requests, 0, sizeof open_requests);
	__atomic_store_n(&billing_trail_open_, 0, __ATOMIC_RELAXED);
	current = 0;
}
