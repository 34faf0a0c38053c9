/*
 * stats_trail_writer.h -- what the generated billing_trail_<probe>()
 * (stats_gen.c, provider/trail_emit.py) need from lib/stats_trail_writer.c, and
 * the thresholds they define for it.
 *
 * The hot path of every request is request-start and a request-done
 * under its threshold: a request's place is claimed, stamped and given
 * the handler's bytes, then let go; nothing is checked, escaped or
 * formatted, no clock is read (the time-stamp counter where it ticks
 * evenly) and no line that other threads write is stored to, but the
 * place's own.  An event inside a request is a bounded copy of its words
 * and string bytes into the request's place.  What a trail needs past
 * that (thresholds by handler, nanoseconds, the checks a reader relies
 * on) waits for a request-done over the lowest threshold: stats_trail_writer.c.
 */
#ifndef BILLING_STATS_TRAIL_WRITER_H
#define BILLING_STATS_TRAIL_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "stats_trail.h"
#include "stats_writer.h" /* BS_HIDDEN, BS_TLS_MODEL */

#if defined(__x86_64__) && defined(__GNUC__)
#  include <emmintrin.h> /* SSE2: every x86-64 has it */
#endif

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
/* request-start's event kind (generated): a trail's first event */
BS_HIDDEN extern const uint16_t bs_trail_start_kind_;
/* Each kind's integers and strings (generated): an event writes only
 * those, a commit clears the others. */
BS_HIDDEN extern const uint8_t bs_trail_kind_ints_[BS_TRAIL_KINDS];
BS_HIDDEN extern const uint8_t bs_trail_kind_strs_[BS_TRAIL_KINDS];

#define BS_OPEN_PLACES 256    /* requests open at once that keep a trail */
#define BS_CLAIMED UINT64_MAX /* a place's ID while it is filled */

/* An open request's place (stats_trail_writer.c says how places are taken).
 * events[0] is request-start's, made from `handler` when the trail is
 * committed; the others are written where they fire. */
typedef struct bs_open_request {
	uint64_t id;                    /* 0: free; BS_CLAIMED: being filled */
	uint32_t tag;                   /* this claim's number (never 0): what an event's `owner` names */
	uint64_t start_ticks;           /* request-start's time */
	uint32_t next;                  /* events claimed, request-start's included */
	uint32_t displaced;             /* open requests whose home is this place that sit in another */
	uint32_t away;                  /* 1: this request sits away from its home place */
	uint16_t handler_cut;           /* 1: request-start's handler was longer than BS_TRAIL_HANDLER - 1 bytes */
	char handler[BS_TRAIL_HANDLER]; /* request-start's, a bounded copy */
	struct bs_trail_event events[BS_TRAIL_EVENTS];
} bs_open_request_t;

extern int billing_trail_open_; /* stats_gen.h: 1 once a request kept a place */
BS_HIDDEN extern bs_open_request_t bs_open_requests_[BS_OPEN_PLACES];
/* A thread's request: the one it last started, and its place while it
 * has one (one thread-local object: one look-up of where it is). */
typedef struct bs_trail_thread {
	uint64_t current;
	bs_open_request_t *place;
	uint32_t tag; /* the place's tag when this thread took it */
} bs_trail_thread_t;
BS_HIDDEN extern __thread bs_trail_thread_t bs_trail_me_ BS_TLS_MODEL;
BS_HIDDEN extern int bs_trail_tsc_;          /* events are timed by the time-stamp counter (stats_trail_writer.c) */
BS_HIDDEN extern int bs_trails_on_;          /* BILLING_STATS_SLOW is not "off" (set once, before any event) */
BS_HIDDEN extern int bs_trail_fast_;         /* the trails on and timed by the counter: the fast paths may run */
BS_HIDDEN extern uint64_t bs_trail_fast_ns_; /* the lowest threshold: a request-done at or under it is let go */
/* bs_trail_fast_, once a request kept a place (billing_trail_open_ then
 * too): the stats build's timing helpers test this alone (stats_gen.c) */
BS_HIDDEN extern int bs_trail_go_;

/* --- fast and slow ----------------------------------------------------------
 *
 * Each hot path is written once, as a static inline function of `fast`.
 * Called with fast 1 (a constant) it makes no call at all: it reads the
 * time-stamp counter, copies strings eight bytes a step, and finds a place
 * only where one look finds it (the thread's own, the ID's home); what it
 * cannot do that way it says, before it has changed anything, and its
 * caller runs it again with fast 0, out of line, where the clock, byte
 * copies and the search are called.  A function that calls nothing needs
 * no stack frame: saving and restoring registers would cost as much as
 * the event itself.  The generated billing_trail_<probe>() choose, per
 * fire: fast when the counter is used and every string argument lies far
 * enough from a page's end (BS_TRAIL_FITS_). */

#if defined(__x86_64__) && defined(__GNUC__)
#  define BS_TRAIL_FAST_ __atomic_load_n(&bs_trail_fast_, __ATOMIC_RELAXED)
#else
#  define BS_TRAIL_FAST_ 0
#endif
#define BS_NOINLINE_ __attribute__((noinline))

/* Whether string s can be copied sixteen bytes a step into `words`
 * words: those bytes from s lie in one page, so a load may run past the
 * string's end but never into a page the string does not reach.  NULL and
 * a string at a page's very start are not (one test for both: they go the
 * slow way). */
#define BS_TRAIL_FITS_(s, words) ((((uintptr_t)(s)-1) & 4095) <= 4095 - 8 * (words))

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#  define BS_NO_SANITIZE_ __attribute__((no_sanitize("address", "thread")))
#else
#  define BS_NO_SANITIZE_
#endif

/* s into dst (bytes), byte by byte, NUL-terminated; NULL is "".  1 when
 * s was cut: longer than bytes - 1. */
BS_HIDDEN unsigned bs_trail_copy_bytes_(char *dst, const char *s, size_t bytes);

/* s into dst (words * 8 bytes), NUL-terminated: a bounded copy, nothing
 * checked.  1 when s was cut.  fast: s fits (BS_TRAIL_FITS_): sixteen
 * bytes a step (then eight), stopped by the first step that holds a NUL;
 * what a step copied past the NUL is whatever followed the string in its
 * page, cleared by the commit before a reader can see it (and not looked
 * at by the sanitizers, which would call the load past the end a fault). */
BS_NO_SANITIZE_ static inline unsigned bs_trail_put_(int fast, char *dst, const char *s, size_t words)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (fast) {
		const __m128i nul = _mm_setzero_si128();
		for (size_t c = 0; c < words / 2; c++) {
			__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * c));
			_mm_storeu_si128((__m128i *)(void *)(dst + 16 * c), x);
			if (_mm_movemask_epi8(_mm_cmpeq_epi8(x, nul)))
				return 0;
		}
		if (words & 1) {
			uint64_t x;
			memcpy(&x, s + 8 * (words - 1), 8);
			memcpy(dst + 8 * (words - 1), &x, 8);
			if ((x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL)
				return 0;
		}
		dst[8 * words - 1] = '\0';
		return 1;
	}
#endif
	(void)fast;
	return bs_trail_copy_bytes_(dst, s, words * 8);
}

/* --- time ------------------------------------------------------------------- */

static inline uint64_t bs_now_ns_(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Ticks now: the time-stamp counter (fast: it is used), else nanoseconds. */
static inline uint64_t bs_trail_ticks_(int fast)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (fast || __atomic_load_n(&bs_trail_tsc_, __ATOMIC_RELAXED))
		return __builtin_ia32_rdtsc();
#endif
	(void)fast;
	return bs_now_ns_(CLOCK_MONOTONIC);
}

/* --- places ----------------------------------------------------------------- */

/* Where request id's place is looked for first. */
static inline size_t bs_trail_home_(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 56) % BS_OPEN_PLACES;
}

/* Out of line: a place away from home (request-start), and the places
 * away from home of id (a search). */
BS_HIDDEN bs_open_request_t *bs_trail_claim_(uint64_t id);
BS_HIDDEN bs_open_request_t *bs_trail_search_(uint64_t id);

/* Request id's place (id neither 0 nor BS_CLAIMED); NULL when it has none,
 * or (fast, *further set) when it may sit away from home. */
static inline bs_open_request_t *bs_trail_find_(int fast, uint64_t id, int *further)
{
	bs_open_request_t *p = &bs_open_requests_[bs_trail_home_(id)];
	if (__atomic_load_n(&p->id, __ATOMIC_ACQUIRE) == id)
		return p;
	if (!__atomic_load_n(&p->displaced, __ATOMIC_RELAXED))
		return NULL;
	if (fast) {
		*further = 1;
		return NULL;
	}
	return bs_trail_search_(id);
}

/* Place p, claimed for request id: the handler's bytes, a new tag, the
 * time now; then published.  Alone in a function of its own (the fast
 * one a tail call): no more values live than there are registers to
 * spare, so nothing is saved and restored. */
static inline void bs_trail_fill_(int fast, bs_open_request_t *p, uint64_t id, const char *handler, uint64_t ticks)
{
	p->handler_cut = bs_trail_put_(fast, p->handler, handler, BS_TRAIL_HANDLER / 8);
	uint32_t tag = __atomic_load_n(&p->tag, __ATOMIC_RELAXED) + 1;
	tag += !tag; /* 0 is no claim's */
	__atomic_store_n(&p->tag, tag, __ATOMIC_RELAXED);
	__atomic_store_n(&p->start_ticks, fast ? ticks : bs_trail_ticks_(0), __ATOMIC_RELAXED);
	__atomic_store_n(&p->next, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&p->id, id, __ATOMIC_RELEASE);
	bs_trail_me_.place = p;
	bs_trail_me_.tag = tag;
	if (tag == 1) { /* the place's first request (set once: no line every request writes) */
		__atomic_store_n(&billing_trail_open_, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&bs_trail_go_, __atomic_load_n(&bs_trail_fast_, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	}
}

/* Out of line: request-start as a whole, fast 0; and the fast fill
 * (ticks: the counter, read now). */
BS_HIDDEN void bs_trail_start_slow_(uint64_t id, const char *handler);
BS_HIDDEN void bs_trail_fill_fast_(bs_open_request_t *p, uint64_t id, const char *handler, uint64_t ticks);

/* request-start: request id (0: none) is the thread's current one, and
 * opens a place, stamped with the time (given: ticks, the counter as its
 * caller read it for a span, else read here), with the handler's bytes.
 * What the fast path cannot do (the counter unused, a handler near a
 * page's end, its home taken) goes to bs_trail_start_slow_; both calls
 * are the last thing done (tail calls: no frame here). */
static inline void bs_trail_start_at_(int given, uint64_t ticks, uint64_t id, const char *handler)
{
	if (!(BS_TRAIL_FAST_ && BS_TRAIL_FITS_(handler, BS_TRAIL_HANDLER / 8))) {
		bs_trail_start_slow_(id, handler);
		return;
	}
	bs_trail_me_.current = id;
	bs_trail_me_.place = NULL;
	if (id - 1 >= BS_CLAIMED - 1)
		return; /* 0 or BS_CLAIMED: no request (and the trails are on: BS_TRAIL_FAST_) */
	bs_open_request_t *p = &bs_open_requests_[bs_trail_home_(id)];
	uint64_t free_id = 0;
	if (__atomic_compare_exchange_n(&p->id, &free_id, BS_CLAIMED, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		bs_trail_fill_fast_(p, id, handler, given ? ticks : bs_trail_ticks_(1));
	else
		bs_trail_start_slow_(id, handler);
}

static inline void bs_trail_start_(uint64_t id, const char *handler)
{
	bs_trail_start_at_(0, 0, id, handler);
}

/* request-done of request id, fast: a request at or under the lowest
 * threshold is let go.  1 when done (let go, or it has no place); 0: the
 * rest out of line, bs_trail_done_slow_(). */
static inline int bs_trail_done_fast_(uint64_t id, uint64_t duration_ns)
{
	bs_open_request_t *p = bs_trail_me_.place;
	if (id == bs_trail_me_.current) {
		bs_trail_me_.current = 0;
		bs_trail_me_.place = NULL;
	} else {
		p = NULL;
	}
	/* a place is this thread's only for an ID that is neither 0 nor BS_CLAIMED */
	if (!p || __atomic_load_n(&p->id, __ATOMIC_ACQUIRE) != id) {
		int further = 0;
		if (id - 1 >= BS_CLAIMED - 1 || !(p = bs_trail_find_(1, id, &further)))
			return !further;
	}
	if (!duration_ns || duration_ns > bs_trail_fast_ns_ || p->away)
		return 0;
	__atomic_store_n(&p->id, 0, __ATOMIC_RELEASE);
	return 1;
}

/* Out of line: request-done of request id that may be slow (or sits away
 * from home): judged by its handler's threshold, committed when slow
 * (kind: request-done's event kind), its place given back. */
BS_HIDDEN void bs_trail_done_slow_(uint64_t id, const char *handler, int32_t status, uint64_t duration_ns,
                                   uint16_t kind);

/* The next event of the request an event joins: request id (by_id), else
 * the one this thread started, its time (fast and given: ticks, the counter
 * as its caller read it for a span; else read here) and kind written (`cut`
 * 0).  The caller writes its
 * arguments, then stores *tag into its `owner` with release.  NULL: no such
 * open request, or no room; or (fast, *further set) the request may sit
 * away from home: nothing done, run it again with fast 0. */
static inline struct bs_trail_event *bs_trail_begin_(int fast, int given, uint64_t ticks, uint64_t id, int by_id,
                                                     uint16_t kind, uint32_t *tag, int *further)
{
	uint64_t current = bs_trail_me_.current;
	bs_open_request_t *p = bs_trail_me_.place;
	if (!by_id)
		id = current;
	if (id == current && p) {
		/* this thread's request: the tag it took the place with (if
		 * another thread ended the request and the place was taken
		 * since, the tag is not the new request's: never committed) */
		*tag = bs_trail_me_.tag;
	} else {
		if (!by_id || id - 1 >= BS_CLAIMED - 1 || !(p = bs_trail_find_(fast, id, further)))
			return NULL;
		/* the tag, then the ID again: the tag is this request's unless
		 * the place was given back and taken since */
		*tag = __atomic_load_n(&p->tag, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&p->id, __ATOMIC_ACQUIRE) != id)
			return NULL;
	}
	uint32_t n = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
	if (n >= BS_TRAIL_EVENTS - 1) /* the last place is request-done's */
		return NULL;
	struct bs_trail_event *e = &p->events[n];
#if defined(__GNUC__)
	__asm__(""
	        : "+r"(e)); /* one register for the event from here: not worked out again from p and n */
#endif
	/* ticks until the commit (which takes one before request-start for 0) */
	e->offset_ns = (fast && given ? ticks : bs_trail_ticks_(fast)) -
	               __atomic_load_n(&p->start_ticks, __ATOMIC_RELAXED);
	/* kind, and cut 0 beside it (stats_trail.h): one store of a constant,
	 * a generated event's kind being one */
	const struct {
		uint16_t kind, cut;
	} kind_cut = { kind, 0 };
	memcpy(&e->kind, &kind_cut, sizeof kind_cut);
	return e;
}

/* Once, before the first event (lib/stats_writer.c, with its settings): whether
 * the trails are on, how events are timed, how long kept trails stay,
 * and ring(), which gives the segment's ring when a trail is committed
 * (made with the segment; NULL with the stats off).  The ring comes
 * through ring() so that this module never calls back into lib/stats_writer.c,
 * which calls it. */
struct bs_settings;
BS_HIDDEN void bs_trail_prepare_(const struct bs_settings *s, struct bs_trail_ring *(*ring)(void));

/* A new segment's ring header: empty, with the thresholds requests are
 * judged by (lib/stats_writer.c, before the segment's magic). */
BS_HIDDEN void bs_trail_ring_init_(struct bs_trail_ring *ring);

/* A forked child's: the parent's open requests are not its own. */
BS_HIDDEN void bs_trail_forget_(void);

#endif /* BILLING_STATS_TRAIL_WRITER_H */
