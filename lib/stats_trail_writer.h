/*
 * stats_trail_writer.h -- what the generated billing_trail_<probe>()
 * (stats_gen.c, provider/trail_emit.py) need from lib/stats_trail.c, and
 * the thresholds they define for it.
 */
#ifndef BILLING_STATS_TRAIL_WRITER_H
#define BILLING_STATS_TRAIL_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "stats_trail.h"
#include "stats_writer.h" /* BS_HIDDEN */

/* One fire as its trail event keeps it: its kind (the probe's "trail"
 * line), its integers and its strings (NULL: none). */
typedef struct bs_trail_fire {
	uint16_t kind;
	int64_t ints[BS_TRAIL_INTS];
	const char *strs[BS_TRAIL_STRS];
} bs_trail_fire_t;

typedef struct bs_slow_handler {
	const char *handler;
	uint64_t ns;
} bs_slow_handler_t;

/* @@slow-threshold (generated): the default, then per handler. */
BS_HIDDEN extern const uint64_t bs_slow_default_ns_;
BS_HIDDEN extern const size_t bs_slow_nhandlers_;
BS_HIDDEN extern const bs_slow_handler_t bs_slow_handlers_[];

#define BS_OPEN_PLACES 256 /* requests open at once that keep a trail */

/* An open request's place (stats_trail.c says how places are taken). */
typedef struct bs_open_request {
	uint64_t id; /* 0: free; UINT64_MAX: being filled */
	uint64_t start_ticks;
	uint32_t next; /* events claimed, request-start's included */
	char handler[BS_TRAIL_HANDLER];
	uint64_t owner[BS_TRAIL_EVENTS]; /* the request each event was written for, stored last */
	struct bs_trail_event events[BS_TRAIL_EVENTS];
	const char *literals[BS_TRAIL_EVENTS][2]; /* a string argument kept by its address (NULL: in strs) */
} bs_open_request_t;

BS_HIDDEN extern bs_open_request_t bs_open_requests_[BS_OPEN_PLACES];
BS_HIDDEN extern __thread uint64_t bs_trail_current_ BS_TLS_MODEL;         /* the request this thread last started */
BS_HIDDEN extern __thread bs_open_request_t *bs_trail_place_ BS_TLS_MODEL; /* ... its place, while it has one */
BS_HIDDEN extern int bs_trail_tsc_;                                        /* events are timed by the time-stamp counter (stats_trail.c) */

/* Request id's place; NULL when it has none. */
BS_HIDDEN bs_open_request_t *bs_trail_find_(uint64_t id);
/* s into dst, NUL-filled (and into lit, the thread's literals of this
 * argument, when it is one).  1 when it was cut. */
BS_HIDDEN unsigned bs_trail_copy_str_(char *dst, const char *s, const char **lit);

static inline uint64_t bs_now_ns_(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bs_trail_ticks_(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (bs_trail_tsc_)
		return __builtin_ia32_rdtsc();
#endif
	return bs_now_ns_(CLOCK_MONOTONIC);
}

/* The place of open request id: this thread's own request's without a
 * search, else (search) a look in the table; NULL when it has none. */
static inline bs_open_request_t *bs_trail_place_of_(uint64_t id, int search)
{
	bs_open_request_t *p = bs_trail_place_;
	if (!id || id == UINT64_MAX)
		return NULL;
	if (p && id == bs_trail_current_ && __atomic_load_n(&p->id, __ATOMIC_ACQUIRE) == id)
		return p;
	return search ? bs_trail_find_(id) : NULL;
}

/* Ticks since request p's request-start: an event's offset until the
 * commit turns it into nanoseconds. */
static inline uint64_t bs_trail_offset_(const bs_open_request_t *p)
{
	uint64_t t = bs_trail_ticks_(), start = __atomic_load_n(&p->start_ticks, __ATOMIC_RELAXED);
	return t > start ? t - start : 0;
}

/* The next event of the request an event joins: request id (by_id), else
 * the one this thread started; *r and *i say where it is, and the caller
 * writes its arguments and `cut`, then stores the request's ID into
 * (*r)->owner[*i] with release.  NULL: no such open request, or no room. */
static inline struct bs_trail_event *bs_trail_begin_(uint64_t *id, int by_id, uint16_t kind, bs_open_request_t **r,
                                                     uint32_t *i)
{
	if (!by_id)
		*id = bs_trail_current_;
	bs_open_request_t *p = bs_trail_place_of_(*id, by_id);
	if (!p)
		return NULL;
	uint32_t n = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
	if (n >= BS_TRAIL_EVENTS - 1) /* the last place is request-done's */
		return NULL;
	struct bs_trail_event *e = &p->events[n];
	e->offset_ns = bs_trail_offset_(p);
	e->kind = kind;
	e->reserved = 0;
	*r = p;
	*i = n;
	return e;
}

/* String argument k of event i of request r, a kind's: by its address
 * when this thread met it as a literal lately (most are: copying bytes
 * costs more than the rest of the event), else its bytes.  1 when cut. */
static inline unsigned bs_trail_put_str_(bs_open_request_t *r, uint32_t i, unsigned k, const char *s, uint16_t kind)
{
	bs_thread_t *me = bs_self_;
	const char **lit = me && kind < BS_TRAIL_CACHED_KINDS ? me->trail_literals[kind][k] : NULL;
	if (lit && s && (lit[0] == s || lit[1] == s)) {
		r->literals[i][k] = s;
		return 0;
	}
	r->literals[i][k] = NULL;
	return bs_trail_copy_str_(r->events[i].strs[k], s, lit);
}

/* request-start opens request id (0: none), the thread's current one. */
BS_HIDDEN void bs_trail_start_(uint64_t id, const char *handler, const bs_trail_fire_t *f);
/* request-done: the last event; the trail committed when slow. */
BS_HIDDEN void bs_trail_done_(uint64_t id, const char *handler, int32_t status, uint64_t duration_ns,
                              const bs_trail_fire_t *f);

/* Once, before the first event (lib/stats.c, with its settings): whether
 * the trails are on, how events are timed, and ring(), which gives the
 * segment's ring when a trail is committed (made with the segment; NULL
 * with the stats off).  The ring comes through ring() so that this
 * module never calls back into lib/stats.c, which calls it. */
struct bs_settings;
BS_HIDDEN void bs_trail_prepare_(const struct bs_settings *s, struct bs_trail_ring *(*ring)(void));

/* A new segment's ring header: empty, with the thresholds requests are
 * judged by (lib/stats.c, before the segment's magic). */
BS_HIDDEN void bs_trail_ring_init_(struct bs_trail_ring *ring);

/* A forked child's: the parent's open requests are not its own. */
BS_HIDDEN void bs_trail_forget_(void);

#endif /* BILLING_STATS_TRAIL_WRITER_H */
