/*
 * stats_trail.c -- the slow-request trails' writer (stats_trail.h says
 * what a trail is; the generated billing_trail_<probe>() call in here).
 *
 * Open requests live in a table of this process (not in the segment):
 * BS_OPEN_PLACES places, a request's place found from its ID in at most
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
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "billing/stats_gen.h"
#include "stats_settings.h"
#include "stats_trail_writer.h"

#define OPEN_PROBES 16 /* places looked at for one ID */
#define CLAIMED UINT64_MAX

int billing_trail_open_;
bs_open_request_t bs_open_requests_[BS_OPEN_PLACES];
__thread uint64_t bs_trail_current_ BS_TLS_MODEL;
__thread bs_open_request_t *bs_trail_place_ BS_TLS_MODEL;
int bs_trail_tsc_;
static int trails_on; /* set once, before any event: BILLING_STATS_SLOW is not "off" */

/* The time-stamp counter where it ticks at one rate on every CPU, whatever
 * their power states (the kernel's constant_tsc and nonstop_tsc): one
 * instruction, where a clock read costs as much as the rest of an event.
 * An event keeps ticks since its request-start; a slow (or unmeasured)
 * request's request-done reads the monotonic clock once, and ticks become
 * nanoseconds by the ratio of both clocks since the trails started.
 * Elsewhere events read the monotonic clock. */
static uint64_t calibrated_ns, calibrated_ticks; /* both clocks read at the start */

/* The thresholds requests are judged by, set once before any event:
 * billing.d's, BILLING_STATS_SLOW's over them.  The segment publishes
 * these very values (bs_trail_ring_init_), so a reader's slow count and
 * the trails agree. */
static struct bs_trail_ring judged;

static void judge_by(const bs_settings_t *s)
{
	judged.slow_default_ns = s->slow_default_ns ? s->slow_default_ns : bs_slow_default_ns_;
	judged.trails_off = s->slow_off != 0;
	judged.nthresholds = 0;
	/* BILLING_STATS_SLOW's first, then billing.d's: the first of a handler counts */
	for (size_t i = 0; i < s->nslow + bs_slow_nhandlers_; i++) {
		const char *handler = i < s->nslow ? s->slow[i].handler : bs_slow_handlers_[i - s->nslow].handler;
		uint64_t ns = i < s->nslow ? s->slow[i].ns : bs_slow_handlers_[i - s->nslow].ns;
		uint32_t k = 0;
		while (k < judged.nthresholds && strcmp(judged.threshold[k].handler, handler) != 0)
			k++;
		if (k < judged.nthresholds || k == BS_TRAIL_THRESHOLDS) /* room for 16 of each (metrics.py, stats_settings.h) */
			continue;
		snprintf(judged.threshold[k].handler, sizeof judged.threshold[k].handler, "%s", handler);
		judged.threshold[k].ns = ns;
		judged.nthresholds++;
	}
}

void bs_trail_ring_init_(struct bs_trail_ring *ring)
{
	*ring = judged;
	ring->records = BS_TRAIL_RECORDS;
	ring->record_size = sizeof(struct bs_trail);
}

/* Nanoseconds per tick of the time-stamp counter, over the time since the
 * trails started: read only for a request that may be slow. */
static double tsc_ns_per_tick(void)
{
	uint64_t ns = bs_now_ns_(CLOCK_MONOTONIC) - calibrated_ns, tk = bs_trail_ticks_() - calibrated_ticks;
	return tk ? (double)ns / (double)tk : 1;
}

/* The segment's ring, as lib/stats.c gives it (bs_trail_prepare_). */
static struct bs_trail_ring *(*ring_of)(void);

static struct bs_trail_ring *the_ring(void)
{
	return ring_of ? ring_of() : NULL;
}

void bs_trail_prepare_(const bs_settings_t *s, struct bs_trail_ring *(*ring)(void))
{
	ring_of = ring;
#if defined(__x86_64__) && defined(__GNUC__)
	char line[4096];
	int constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	while (f && !(constant && nonstop) && fgets(line, sizeof line, f))
		if (strncmp(line, "flags", 5) == 0) {
			constant = strstr(line, " constant_tsc") != NULL;
			nonstop = strstr(line, " nonstop_tsc") != NULL;
		}
	if (f)
		fclose(f);
	bs_trail_tsc_ = constant && nonstop;
	calibrated_ns = bs_now_ns_(CLOCK_MONOTONIC);
	calibrated_ticks = bs_trail_ticks_();
#endif
	judge_by(s);
	__atomic_store_n(&trails_on, !s->slow_off, __ATOMIC_RELEASE);
}

static size_t home(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 56) % BS_OPEN_PLACES;
}

bs_open_request_t *bs_trail_find_(uint64_t id)
{
	size_t h = home(id);
	for (size_t i = 0; i < OPEN_PROBES; i++) {
		bs_open_request_t *r = &bs_open_requests_[(h + i) % BS_OPEN_PLACES];
		if (__atomic_load_n(&r->id, __ATOMIC_ACQUIRE) == id)
			return r;
	}
	return NULL;
}

/* s into dst, NUL-filled; 1 when s is longer than dst holds.  A literal
 * (bs_immutable_) goes into lit, the thread's literals of this argument,
 * over the older of the two. */
unsigned bs_trail_copy_str_(char *dst, const char *s, const char **lit)
{
	memset(dst, 0, BS_TRAIL_STR);
	if (!s)
		return 0;
	size_t i = 0;
	while (i < BS_TRAIL_STR - 1 && s[i]) {
		dst[i] = s[i];
		i++;
	}
	if (lit && bs_immutable_(s)) {
		lit[1] = lit[0];
		lit[0] = s;
	}
	return s[i] && i == BS_TRAIL_STR - 1;
}

/* Event i of request r (request-start's, request-done's), written for
 * request id. */
static void put(bs_open_request_t *r, uint32_t i, uint64_t id, const bs_trail_fire_t *f)
{
	struct bs_trail_event *e = &r->events[i];
	e->offset_ns = bs_trail_offset_(r);
	e->kind = f->kind;
	e->cut = 0;
	e->reserved = 0;
	memcpy(e->ints, f->ints, sizeof e->ints);
	for (unsigned k = 0; k < BS_TRAIL_STRS; k++)
		e->cut |= (uint16_t)(bs_trail_put_str_(r, i, k, f->strs[k], f->kind) << k);
	__atomic_store_n(&r->owner[i], id, __ATOMIC_RELEASE);
}

static void count_untracked(void)
{
	struct bs_trail_ring *ring = the_ring();
	if (ring)
		__atomic_fetch_add(&ring->untracked, 1, __ATOMIC_RELAXED);
}

void bs_trail_start_(uint64_t id, const char *handler, const bs_trail_fire_t *f)
{
	bs_trail_current_ = id;
	bs_trail_place_ = NULL;
	if (id == 0 || id == CLAIMED || !__atomic_load_n(&trails_on, __ATOMIC_ACQUIRE))
		return;
	if (bs_trail_find_(id)) { /* an ID still open: its events cannot be told apart */
		count_untracked();
		return;
	}
	size_t h = home(id);
	for (size_t i = 0; i < OPEN_PROBES; i++) {
		bs_open_request_t *r = &bs_open_requests_[(h + i) % BS_OPEN_PLACES];
		uint64_t free_id = 0;
		if (!__atomic_compare_exchange_n(&r->id, &free_id, CLAIMED, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&r->start_ticks, bs_trail_ticks_(), __ATOMIC_RELAXED);
		__atomic_store_n(&r->next, 1, __ATOMIC_RELAXED);
		size_t n = handler ? strnlen(handler, sizeof r->handler - 1) : 0;
		memset(r->handler, 0, sizeof r->handler);
		memcpy(r->handler, handler ? handler : "", n);
		put(r, 0, id, f);
		__atomic_store_n(&r->id, id, __ATOMIC_RELEASE);
		__atomic_fetch_add(&billing_trail_open_, 1, __ATOMIC_RELAXED);
		bs_trail_place_ = r;
		return;
	}
	count_untracked();
}

static uint64_t threshold_of(const char *handler)
{
	for (uint32_t i = 0; i < judged.nthresholds; i++)
		if (strcmp(judged.threshold[i].handler, handler) == 0)
			return judged.threshold[i].ns;
	return judged.slow_default_ns;
}

/* Copy request r (id) into the ring's next record. */
static void commit(bs_open_request_t *r, uint64_t id, int32_t status, uint64_t duration, uint64_t threshold,
                   uint32_t claimed, double ns_per_tick)
{
	struct bs_trail_ring *ring = the_ring();
	if (!ring)
		return;
	uint64_t n = __atomic_fetch_add(&ring->committed, 1, __ATOMIC_RELAXED);
	struct bs_trail *t = (struct bs_trail *)(ring + 1) + n % BS_TRAIL_RECORDS;
	/* odd first: an exchange with acquire keeps the writes below after it */
	(void)__atomic_exchange_n(&t->seq, 2 * n + 1, __ATOMIC_ACQUIRE);
	t->request_id = id;
	t->duration_ns = duration;
	t->threshold_ns = threshold;
	t->end_unix_ns = bs_now_ns_(CLOCK_REALTIME);
	t->status = status;
	t->reserved = 0;
	memcpy(t->handler, r->handler, sizeof t->handler);
	uint32_t kept = 0, upto = claimed < BS_TRAIL_EVENTS ? claimed : BS_TRAIL_EVENTS;
	for (uint32_t i = 0; i < upto; i++)
		if (__atomic_load_n(&r->owner[i], __ATOMIC_ACQUIRE) == id) {
			struct bs_trail_event *e = &t->events[kept++];
			*e = r->events[i];
			e->offset_ns = (uint64_t)((double)r->events[i].offset_ns * ns_per_tick + 0.5);
			/* a literal kept by its address: its bytes now */
			for (unsigned k = 0; k < BS_TRAIL_STRS; k++)
				if (r->literals[i][k])
					e->cut |= (uint16_t)(bs_trail_copy_str_(e->strs[k], r->literals[i][k], NULL) << k);
		}
	memset(&t->events[kept], 0, (BS_TRAIL_EVENTS - kept) * sizeof t->events[0]);
	t->nevents = kept;
	t->lost = claimed > BS_TRAIL_EVENTS ? claimed - BS_TRAIL_EVENTS : 0;
	__atomic_store_n(&t->seq, 2 * n + 2, __ATOMIC_RELEASE);
}

void bs_trail_done_(uint64_t id, const char *handler, int32_t status, uint64_t duration_ns, const bs_trail_fire_t *f)
{
	bs_open_request_t *r = bs_trail_place_of_(id, 1);
	if (bs_trail_current_ == id) {
		bs_trail_current_ = 0;
		bs_trail_place_ = NULL;
	}
	if (!r)
		return;
	uint32_t claimed = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED) + 1;
	uint32_t last = claimed - 1 < BS_TRAIL_EVENTS - 1 ? claimed - 1 : BS_TRAIL_EVENTS - 1;
	put(r, last, id, f);
	uint64_t end_ticks = bs_trail_ticks_(), threshold = threshold_of(handler ? handler : "");
	/* the clock is read only for a request that is slow, or not measured */
	double ns_per_tick = bs_trail_tsc_ && (!duration_ns || duration_ns > threshold) ? tsc_ns_per_tick() : 1;
	uint64_t duration = duration_ns ? duration_ns : (uint64_t)((double)(end_ticks - r->start_ticks) * ns_per_tick);
	if (duration > threshold) /* over it, as the histogram's bucket above its bound counts */
		commit(r, id, status, duration, threshold, claimed, ns_per_tick);
	for (uint32_t i = 0; i < BS_TRAIL_EVENTS; i++)
		__atomic_store_n(&r->owner[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->id, 0, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&billing_trail_open_, 1, __ATOMIC_RELAXED);
}

void bs_trail_forget_(void)
{
	memset(bs_open_requests_, 0, sizeof bs_open_requests_);
	__atomic_store_n(&billing_trail_open_, 0, __ATOMIC_RELAXED);
	bs_trail_current_ = 0;
	bs_trail_place_ = NULL;
}
