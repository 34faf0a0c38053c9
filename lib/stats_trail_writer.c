/*
 * stats_trail_writer.c -- the slow-request trails' writer (stats_trail.h says
 * what a trail is; the generated billing_trail_<probe>() call in here and
 * into stats_trail_writer.h, which holds every request's hot path).
 *
 * Open requests live in a table of this process (not in the segment):
 * BS_OPEN_PLACES places.  A request's place is its home (from its ID),
 * else one of the next OPEN_PROBES; a place away from home is counted in
 * its home's `displaced`, so looking for an ID that is not open costs one
 * look at its home.  A place is taken by a compare-and-swap of its ID
 * from 0 to BS_CLAIMED, stamped with a new tag, filled, then given the
 * request's ID with release; it is given back (ID 0) at request-done.  An
 * event takes the next index of its request's place with one atomic add,
 * writes it and stores the claim's tag into its `owner`: an event that raced
 * with its request's end (and the place's next request) is never
 * committed to the wrong trail, and nothing is cleared between requests.
 *
 * Only a request-done over the lowest threshold comes here: judged by its
 * handler's threshold, and when slow checked (an ID open twice is not
 * committed), turned into nanoseconds, its strings' stale bytes cleared,
 * and copied into the next record of the ring's recent lane, claimed with
 * an atomic add and written under its sequence number.  Some go to the
 * kept lane too (pick()).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "billing/stats_gen.h"
#include "stats_settings.h"
#include "stats_trail_writer.h"

#define OPEN_PROBES 16 /* places looked at for one ID */
#define PICK_PAIRS 64  /* (handler, bucket) pairs whose picks are spaced */

int billing_trail_open_;
bs_open_request_t bs_open_requests_[BS_OPEN_PLACES];
__thread bs_trail_thread_t bs_trail_me_ BS_TLS_MODEL;
int bs_trail_tsc_;
int bs_trails_on_;
int bs_trail_fast_;
int bs_trail_go_;
uint64_t bs_trail_fast_ns_;

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
	judged.keep_ns = (uint64_t)s->slow_keep_seconds * 1000000000u;
	bs_trail_fast_ns_ = judged.slow_default_ns;
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
		if (ns < bs_trail_fast_ns_)
			bs_trail_fast_ns_ = ns;
	}
}

void bs_trail_ring_init_(struct bs_trail_ring *ring)
{
	*ring = judged;
	ring->records = BS_TRAIL_RECORDS;
	ring->record_size = sizeof(struct bs_trail);
	ring->version = BS_TRAIL_RING_VERSION;
	ring->kept_records = BS_TRAIL_KEPT;
}

/* Nanoseconds per tick of the time-stamp counter, over the time since the
 * trails started (now_ns: the monotonic clock now): read only for a
 * request that may be slow. */
static double tsc_ns_per_tick(uint64_t now_ns)
{
	if (!bs_trail_tsc_)
		return 1;
	uint64_t ns = now_ns - calibrated_ns, tk = bs_trail_ticks_(0) - calibrated_ticks;
	return tk ? (double)ns / (double)tk : 1;
}

/* The segment's ring, as lib/stats_writer.c gives it (bs_trail_prepare_). */
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
	calibrated_ticks = bs_trail_ticks_(0);
#endif
	judge_by(s);
	__atomic_store_n(&bs_trails_on_, !s->slow_off, __ATOMIC_RELEASE);
	__atomic_store_n(&bs_trail_fast_, !s->slow_off && bs_trail_tsc_, __ATOMIC_RELEASE);
}

unsigned bs_trail_copy_bytes_(char *dst, const char *s, size_t bytes)
{
	size_t i = 0;
	if (!s)
		s = "";
	while (i < bytes - 1 && s[i]) {
		dst[i] = s[i];
		i++;
	}
	dst[i] = '\0';
	return s[i] != '\0';
}

void bs_trail_fill_fast_(bs_open_request_t *p, uint64_t id, const char *handler, uint64_t ticks)
{
	bs_trail_fill_(1, p, id, handler, ticks);
}

static void count_untracked(void)
{
	struct bs_trail_ring *ring = the_ring();
	if (ring)
		__atomic_fetch_add(&ring->untracked, 1, __ATOMIC_RELAXED);
}

bs_open_request_t *bs_trail_search_(uint64_t id)
{
	size_t h = bs_trail_home_(id);
	for (size_t i = 1; i < OPEN_PROBES; i++) {
		bs_open_request_t *r = &bs_open_requests_[(h + i) % BS_OPEN_PLACES];
		if (__atomic_load_n(&r->id, __ATOMIC_ACQUIRE) == id)
			return r;
	}
	return NULL;
}

/* Home taken: an ID open there already is not followed twice (its events
 * could not be told apart; a second place of one ID found only when one
 * is committed, commit()); else the next free place, counted in home's
 * `displaced` before it is published. */
bs_open_request_t *bs_trail_claim_(uint64_t id)
{
	size_t h = bs_trail_home_(id);
	bs_open_request_t *home = &bs_open_requests_[h];
	if (__atomic_load_n(&home->id, __ATOMIC_ACQUIRE) != id)
		for (size_t i = 1; i < OPEN_PROBES; i++) {
			bs_open_request_t *r = &bs_open_requests_[(h + i) % BS_OPEN_PLACES];
			uint64_t free_id = 0;
			if (!__atomic_compare_exchange_n(&r->id, &free_id, BS_CLAIMED, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				continue;
			__atomic_fetch_add(&home->displaced, 1, __ATOMIC_RELAXED);
			r->away = 1;
			return r;
		}
	count_untracked();
	return NULL;
}

/* Place p (request id's) back: the next request may take it. */
static void give_back(bs_open_request_t *p, uint64_t id)
{
	uint32_t away = p->away;
	p->away = 0;
	__atomic_store_n(&p->id, 0, __ATOMIC_RELEASE);
	if (away)
		__atomic_fetch_sub(&bs_open_requests_[bs_trail_home_(id)].displaced, 1, __ATOMIC_RELAXED);
}

void bs_trail_start_slow_(uint64_t id, const char *handler)
{
	bs_trail_me_.current = id;
	bs_trail_me_.place = NULL;
	if (id - 1 >= BS_CLAIMED - 1 || !__atomic_load_n(&bs_trails_on_, __ATOMIC_RELAXED))
		return;
	bs_open_request_t *p = &bs_open_requests_[bs_trail_home_(id)];
	uint64_t free_id = 0;
	if (__atomic_compare_exchange_n(&p->id, &free_id, BS_CLAIMED, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ||
	    (p = bs_trail_claim_(id)) != NULL)
		bs_trail_fill_(0, p, id, handler, 0);
}

/* Whether request id is open in a place other than p. */
static int open_elsewhere(const bs_open_request_t *p, uint64_t id)
{
	size_t h = bs_trail_home_(id);
	for (size_t i = 0; i < OPEN_PROBES; i++) {
		const bs_open_request_t *r = &bs_open_requests_[(h + i) % BS_OPEN_PLACES];
		if (r != p && __atomic_load_n(&r->id, __ATOMIC_ACQUIRE) == id)
			return 1;
	}
	return 0;
}

static uint64_t threshold_of(const char *handler)
{
	for (uint32_t i = 0; i < judged.nthresholds; i++)
		if (strcmp(judged.threshold[i].handler, handler) == 0)
			return judged.threshold[i].ns;
	return judged.slow_default_ns;
}

/* Event e as a reader finds it: the arguments its kind does not have,
 * and its strings' bytes past their NUL (a longer string's, or what
 * followed a string in its page), cleared. */
static void clear_stale(struct bs_trail_event *e)
{
	unsigned ints = e->kind < BS_TRAIL_KINDS ? bs_trail_kind_ints_[e->kind] : 0;
	unsigned strs = e->kind < BS_TRAIL_KINDS ? bs_trail_kind_strs_[e->kind] : 0;
	e->owner = 0;
	for (unsigned k = ints; k < BS_TRAIL_INTS; k++)
		e->ints[k] = 0;
	for (unsigned k = 0; k < BS_TRAIL_STRS; k++) {
		size_t n = k < strs ? strnlen(e->strs[k], BS_TRAIL_STR - 1) : 0;
		memset(e->strs[k] + n, 0, BS_TRAIL_STR - n);
	}
}

/* --- the kept lane --------------------------------------------------------- */

/* A trail is kept when the kept record it would overwrite was kept at
 * least keep_ns ago (so a kept trail stays that long, whatever the rate
 * of slow requests), and its (handler, duration bucket) was last kept at
 * least keep_ns * active / BS_TRAIL_KEPT ago, `active` the pairs kept in
 * the last keep_ns: every bucket gets its share of the lane, a busy one no
 * more.  Decided under a flag taken without waiting: a commit that finds
 * it taken keeps nothing. */
static int pick_busy;
static uint64_t kept_at[BS_TRAIL_KEPT]; /* monotonic ns each kept trail was kept, by its number */
static struct {
	uint64_t key, last_ns; /* last_ns 0: never */
} pairs[PICK_PAIRS];

static const uint64_t duration_bounds[] = { BX_DURATION_NS_BOUND_LIST };

static uint64_t pair_key(const char *handler, uint64_t duration_ns)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */
	for (const char *c = handler; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	size_t b = 0;
	while (b < sizeof duration_bounds / sizeof duration_bounds[0] && duration_ns > duration_bounds[b])
		b++;
	return h ^ ((uint64_t)b << 56) ^ b;
}

static int pick(uint64_t kept, const char *handler, uint64_t duration_ns, uint64_t now)
{
	uint64_t keep = judged.keep_ns, key = pair_key(handler, duration_ns);
	if (kept >= BS_TRAIL_KEPT && now - kept_at[kept % BS_TRAIL_KEPT] < keep)
		return 0;
	size_t active = 1, mine = PICK_PAIRS, spare = 0;
	for (size_t i = 0; i < PICK_PAIRS; i++) {
		int recent = pairs[i].last_ns && now - pairs[i].last_ns < keep;
		if (pairs[i].last_ns && pairs[i].key == key)
			mine = i;
		else if (recent)
			active++;
		if (pairs[i].last_ns < pairs[spare].last_ns)
			spare = i;
	}
	if (mine < PICK_PAIRS && now - pairs[mine].last_ns < keep / BS_TRAIL_KEPT * active)
		return 0;
	if (mine == PICK_PAIRS) /* a new pair takes the place of the one kept longest ago */
		mine = spare;
	pairs[mine].key = key;
	pairs[mine].last_ns = now ? now : 1;
	kept_at[kept % BS_TRAIL_KEPT] = now;
	return 1;
}

/* Trail t into record k of a lane as trail n, under its sequence number. */
static void put_record(struct bs_trail *k, uint64_t n, const struct bs_trail *t)
{
	/* odd first: an exchange with acquire keeps the writes below after it */
	(void)__atomic_exchange_n(&k->seq, 2 * n + 1, __ATOMIC_ACQUIRE);
	memcpy((char *)k + sizeof k->seq, (const char *)t + sizeof t->seq, sizeof *t - sizeof t->seq);
	__atomic_store_n(&k->seq, 2 * n + 2, __ATOMIC_RELEASE);
}

/* Trail t into the kept lane, when pick() says so. */
static void keep(struct bs_trail_ring *ring, const struct bs_trail *t, uint64_t now)
{
	if (__atomic_exchange_n(&pick_busy, 1, __ATOMIC_ACQUIRE))
		return;
	uint64_t n = __atomic_load_n(&ring->kept, __ATOMIC_RELAXED);
	if (pick(n, t->handler, t->duration_ns, now)) {
		put_record((struct bs_trail *)(ring + 1) + BS_TRAIL_RECORDS + n % BS_TRAIL_KEPT, n, t);
		__atomic_store_n(&ring->kept, n + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&pick_busy, 0, __ATOMIC_RELEASE);
}

/* --- commit -------------------------------------------------------------- */

/* What a slow request's trail holds. */
typedef struct judged_request {
	uint64_t id, duration, threshold, end_ticks;
	int32_t status;
	uint32_t claimed; /* events claimed, request-start's and request-done's included */
	double ns_per_tick;
	const bs_trail_fire_t *done;
} judged_request_t;

/* Request r's trail into t: request-start's event from the place's
 * handler, the events written for this claim, request-done's from its
 * arguments. */
static void make_trail(const bs_open_request_t *r, const judged_request_t *j, struct bs_trail *t)
{
	uint32_t tag = __atomic_load_n(&r->tag, __ATOMIC_RELAXED);
	uint64_t start = __atomic_load_n(&r->start_ticks, __ATOMIC_RELAXED);
	memset(t, 0, sizeof *t);
	t->request_id = j->id;
	t->duration_ns = j->duration;
	t->threshold_ns = j->threshold;
	t->end_unix_ns = bs_now_ns_(CLOCK_REALTIME);
	t->status = j->status;
	memcpy(t->handler, r->handler, strnlen(r->handler, sizeof t->handler - 1));
	struct bs_trail_event *e = &t->events[0];
	e->kind = bs_trail_start_kind_;
	e->cut = (uint16_t)(bs_trail_copy_bytes_(e->strs[0], t->handler, BS_TRAIL_STR) | r->handler_cut);
	uint32_t kept = 1, upto = j->claimed < BS_TRAIL_EVENTS ? j->claimed : BS_TRAIL_EVENTS;
	for (uint32_t i = 1; i + 1 < upto; i++)
		if (__atomic_load_n(&r->events[i].owner, __ATOMIC_ACQUIRE) == tag) {
			e = &t->events[kept++];
			*e = r->events[i];
			/* ticks since request-start: a counter read before it (another CPU's) is 0 */
			e->offset_ns = e->offset_ns >> 63 ? 0 : (uint64_t)((double)e->offset_ns * j->ns_per_tick + 0.5);
			clear_stale(e);
		}
	e = &t->events[kept++];
	e->offset_ns = (uint64_t)((double)(j->end_ticks > start ? j->end_ticks - start : 0) * j->ns_per_tick + 0.5);
	e->kind = j->done->kind;
	memcpy(e->ints, j->done->ints, sizeof e->ints);
	for (unsigned k = 0; k < BS_TRAIL_STRS; k++)
		e->cut |= (uint16_t)(bs_trail_copy_bytes_(e->strs[k], j->done->strs[k] ? j->done->strs[k] : "",
		                                          BS_TRAIL_STR)
		                     << k);
	t->nevents = kept;
	t->lost = j->claimed > BS_TRAIL_EVENTS ? j->claimed - BS_TRAIL_EVENTS : 0;
}

/* Request r's trail into the recent lane's next record, and maybe the
 * kept lane's. */
static void commit(const bs_open_request_t *r, const judged_request_t *j, uint64_t now)
{
	struct bs_trail_ring *ring = the_ring();
	struct bs_trail t;
	if (!ring)
		return;
	make_trail(r, j, &t);
	uint64_t n = __atomic_fetch_add(&ring->committed, 1, __ATOMIC_RELAXED);
	put_record((struct bs_trail *)(ring + 1) + n % BS_TRAIL_RECORDS, n, &t);
	keep(ring, &t, now);
}

void bs_trail_done_slow_(uint64_t id, const char *handler, int32_t status, uint64_t duration_ns, uint16_t kind)
{
	int further = 0;
	bs_open_request_t *p = id - 1 < BS_CLAIMED - 1 ? bs_trail_find_(0, id, &further) : NULL;
	if (!p)
		return;
	const bs_trail_fire_t done = { kind, { (int64_t)status, (int64_t)duration_ns }, { handler, NULL } };
	judged_request_t j = { id, duration_ns, threshold_of(handler ? handler : ""), bs_trail_ticks_(0), status,
		               __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED) + 1, 1, &done };
	if (!duration_ns || duration_ns > j.threshold) {
		/* the clock is read only here: a request that is slow, or not measured */
		uint64_t now = bs_now_ns_(CLOCK_MONOTONIC), start = __atomic_load_n(&p->start_ticks, __ATOMIC_RELAXED);
		j.ns_per_tick = tsc_ns_per_tick(now);
		if (!duration_ns)
			j.duration = (uint64_t)((double)(j.end_ticks > start ? j.end_ticks - start : 0) * j.ns_per_tick);
		if (j.duration > j.threshold) { /* over it, as the histogram's bucket above its bound counts */
			if (open_elsewhere(p, id))
				count_untracked(); /* its events may be another request's */
			else
				commit(p, &j, now);
		}
	}
	give_back(p, id);
}

void bs_trail_forget_(void)
{
	memset(bs_open_requests_, 0, sizeof bs_open_requests_);
	memset(pairs, 0, sizeof pairs);
	memset(kept_at, 0, sizeof kept_at);
	__atomic_store_n(&pick_busy, 0, __ATOMIC_RELAXED);
	bs_trail_me_.current = 0;
	bs_trail_me_.place = NULL;
}
