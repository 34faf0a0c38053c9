/*
 * stats_writer.h -- what the generated half of the stats writer
 * (stats_gen.c, provider/stats_emit.py) needs from lib/stats_writer.c.
 *
 * The hot-path rule: a thread stores only to its own slot, with a relaxed
 * load and a relaxed store, or on x86-64 one add instruction without a
 * lock prefix (no atomic read-modify-write, no line another thread
 * writes); the reader sums the slots.  The one exception is the overflow
 * slot that threads share once every slot is taken: there an add is
 * atomic.  Both keep a concurrent reader's view of a cell whole; the
 * relaxed accesses make the sharing explicit to the compiler and to TSan.
 */
#ifndef BILLING_STATS_WRITER_H
#define BILLING_STATS_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SANITIZE_THREAD__)
#  define BS_TSAN_ 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define BS_TSAN_ 1
#  endif
#endif
#ifndef BS_TSAN_
#  define BS_TSAN_ 0
#endif

/* The first level's hit, always this thread's own slot: on x86-64 one add
 * instruction to the cell (no lock prefix: not a read-modify-write that
 * other CPUs see as one; a reader sees the old or the new value whole,
 * as with the relaxed store), elsewhere and under TSan the relaxed load
 * and store, so TSan checks them. */
#if defined(__x86_64__) && defined(__GNUC__) && !BS_TSAN_
#  define BS_ADD_OWN(lvalue, x) __asm__("addq %1, %0" \
		                        : "+m"(lvalue) \
		                        : "er"((uint64_t)(x)))
#else
#  define BS_ADD_OWN(lvalue, x) BX_ADD(lvalue, x, 0)
#endif

/* The same add, stored after every store before it: a histogram's bucket,
 * after the native cell its value also counts in (a reader that sees the
 * bucket's count sees that cell's too).  On x86-64 stores are seen in the
 * order they are made, so a compiler barrier is enough; elsewhere a
 * release store. */
#if defined(__x86_64__) && defined(__GNUC__) && !BS_TSAN_
#  define BS_ADD_OWN_LAST(lvalue, x) __asm__ __volatile__("addq %1, %0" \
		                                          : "+m"(lvalue) \
		                                          : "er"((uint64_t)(x)) \
		                                          : "memory")
#else
#  define BS_ADD_OWN_LAST(lvalue, x) \
    __atomic_store_n(&(lvalue), __atomic_load_n(&(lvalue), __ATOMIC_RELAXED) + (x), __ATOMIC_RELEASE)
#endif

/* The same order where the bucket is added by bx_observe_<q>() (the
 * overflow slot's atomic adds, a value <= 0): what comes before is
 * stored before what follows.  x86-64 stores are seen in order, so a
 * compiler barrier is enough there, and under TSan (which takes no fence,
 * and does not see the reader, another process); a release fence
 * elsewhere. */
#if (defined(__x86_64__) && defined(__GNUC__)) || BS_TSAN_
#  define BS_STORES_IN_ORDER() __asm__ __volatile__("" :: \
		                                        : "memory")
#else
#  define BS_STORES_IN_ORDER() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif

#define BX_ADD(lvalue, x, shared) \
  ((shared) ? (void)__atomic_fetch_add(&(lvalue), (x), __ATOMIC_RELAXED) \
	    : __atomic_store_n(&(lvalue), __atomic_load_n(&(lvalue), __ATOMIC_RELAXED) + (x), \
	                       __ATOMIC_RELAXED))

#include "billing_metrics_layout.h"
#include "stats_segment.h"

#if defined(__GNUC__)
#  define BS_HIDDEN __attribute__((visibility("hidden")))
#else
#  define BS_HIDDEN
#endif

/* A thread's cache from key bytes to row, direct mapped (the second level). */
#define BS_CACHE_ENTRIES 128
typedef struct bs_cache_entry {
	uint32_t tag; /* map + 1; 0: empty */
	uint32_t row;
	unsigned char key[BX_KEY_MAX];
} bs_cache_entry_t;

/* The first level: a thread's cache from a fire's label arguments
 * themselves (a string's pointer, an int's value) to its cells, per map,
 * looked at first in one entry (BS_L1_WAYS below).  A pointer is cached
 * only when it points into read-only memory of a loaded object that
 * cannot be unloaded (bs_immutable_): a string literal, whose bytes
 * cannot change, so equal pointers mean equal labels.  Any other pointer (a buffer the caller may reuse) takes the
 * key-bytes path every time.  A NULL string is not cached either: an
 * entry whose first string argument is 0 is empty, so a hit is the
 * compare of the arguments alone (a map without a string label tests
 * the cells). */
#define BS_L1_ENTRIES 32 /* per map; a power of two */
#define BS_L1_SHIFT 27   /* 32 - log2(BS_L1_ENTRIES) */
/* A fire looks at its own entry; a miss looks at the others of its group
 * of BS_L1_WAYS (slot ^ 1 .. slot ^ 3) before the key's bytes, and a new
 * label set takes its own entry or the group's first free one: three
 * label sets whose pointers share an entry (the loader places a
 * process's literals anew each run) cost a look each, not each other's
 * eviction and the key path every time. */
#define BS_L1_WAYS 4
typedef struct bs_l1_entry {
	uintptr_t arg[BX_MAX_FIELDS]; /* per label field of the map, in order */
	void *cells;                  /* NULL: empty */
	uint64_t *native;             /* the row's native buckets (maps that have them) */
	/* a line each: an entry's address is its index shifted, and one
	 * entry's compare touches one line */
	char pad_[64 - (BX_MAX_FIELDS + 2) * sizeof(uintptr_t)];
} bs_l1_entry_t;

/* A thread's state: its slot and its caches (lib/stats_writer.c claims and frees). */
typedef struct bs_thread {
	struct bs_slot *slot;
	unsigned char *cells; /* the slot's cells */
	int shared;           /* the overflow slot: never in the first level */
	bs_l1_entry_t l1[BX_MAP_COUNT][BS_L1_ENTRIES];
	bs_cache_entry_t cache[BS_CACHE_ENTRIES];
} bs_thread_t;

/* The first-level entry of a fire whose label arguments, xor-ed, are x:
 * multiplicative hashing of its low 32 bits, where string literals'
 * addresses differ (a multiply by an immediate, a shift). */
static inline size_t bs_l1_slot_(uintptr_t x)
{
	return (uint32_t)((uint32_t)x * 0x9e3779b1u) >> BS_L1_SHIFT;
}

/* Initial-exec: one load from the thread pointer, no __tls_get_addr call,
 * in libbillingprobes.so too (16 bytes of the static TLS that glibc keeps
 * for libraries, also when the library is dlopen()ed). */
#if defined(__GNUC__)
#  define BS_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#  define BS_TLS_MODEL
#endif
/* !billing_stats_off_, written with it (lib/stats_writer.c): the library's own
 * code reads this one directly, where the exported one is a load of its
 * address first (the stats build's timing helpers, stats_gen.c). */
BS_HIDDEN extern int bs_stats_on_;
BS_HIDDEN extern __thread bs_thread_t *bs_self_ BS_TLS_MODEL;
/* This thread's first level (bs_self_->l1), or before the thread has a
 * state, one that is always empty and never written: the hot path looks
 * up without testing for a state first. */
BS_HIDDEN extern __thread bs_l1_entry_t (*bs_l1_)[BS_L1_ENTRIES] BS_TLS_MODEL;
BS_HIDDEN extern bs_l1_entry_t bs_l1_empty_[BX_MAP_COUNT][BS_L1_ENTRIES];
/* Where each map's cells start in a slot: a private copy of the
 * segment's header field, so the hot path reads no shared page. */
BS_HIDDEN extern uint64_t bs_map_offset_[BX_MAP_COUNT];

/* Each map's native buckets in this process's segment (NULL: none, or
 * BILLING_STATS_NATIVE=off); a row's are native_cells wide
 * (bs_map_info_t), at its row's place. */
BS_HIDDEN extern uint64_t *bs_native_[BX_MAP_COUNT];

/* The slow path: the segment and this thread's slot on first use, and the
 * row of a key not in the cache (into *e); NULL when the stats are off. */
BS_HIDDEN void *bs_slow_(int map, const void *key, bs_cache_entry_t *e);

/* 1 when the string at p cannot change while the process runs: NULL, or
 * in a read-only segment of an object loaded when the stats started (they
 * are kept loaded: RTLD_NODELETE).  Lock-free. */
BS_HIDDEN int bs_immutable_(const char *p);
/* Takes that table (lib/stats_immutable.c): once, before the first event,
 * without the writer's lock (it calls into the dynamic loader). */
BS_HIDDEN void bs_immutable_start_(void);

/* The cache index of a key: a sum of independent products (they run in
 * parallel; a chained multiply per word cost a third of an event), mixed
 * once at the end. */
static inline uint32_t bs_hash_(int map, const unsigned char *key, size_t n)
{
	uint64_t h = (uint64_t)(map + 1) << 32;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, key + i, 8);
		h += w * (0x9e3779b97f4a7c15ULL + 2 * i);
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return (uint32_t)(h >> 40);
}

/* This thread's cells for the row of `key` in map `map` (its struct
 * bx_value_*), or NULL when the stats are off.  *shared is 1 when the
 * thread counts in the shared overflow slot.  Inline, called with
 * constant sizes from each generated billing_stats_<probe>(), so the
 * hash and the compare are a few word operations. */
static inline void *bs_cells_(int map, const void *key, size_t key_size, size_t cells, int *shared)
{
	bs_thread_t *t = bs_self_;
	bs_cache_entry_t *e;

	if (!t && (!bs_slow_(map, key, NULL) || !(t = bs_self_)))
		return NULL;
	e = &t->cache[bs_hash_(map, (const unsigned char *)key, key_size) % BS_CACHE_ENTRIES];
	if ((e->tag != (uint32_t)map + 1 || memcmp(e->key, key, key_size) != 0) && !bs_slow_(map, key, e))
		return NULL;
	*shared = t->shared;
	return t->cells + bs_map_offset_[map] + (uint64_t)e->row * cells * 8;
}

/* The native buckets (width of them) of the row whose cells (of
 * value_size bytes, in this thread's slot) are v: the row is v's place
 * among its map's rows. */
static inline uint64_t *bs_native_row_(int map, const void *v, size_t value_size, size_t width)
{
	size_t row = (size_t)((const unsigned char *)v - bs_self_->cells - bs_map_offset_[map]) / value_size;
	return bs_native_[map] ? bs_native_[map] + row * width : NULL;
}

/* Count native cell `cell` of that row (none: nothing).  Atomic: every
 * thread of the process shares a row's buckets. */
static inline void bs_native_add_(int map, const void *v, size_t value_size, size_t width, size_t cell)
{
	uint64_t *row = bs_native_row_(map, v, value_size, width);
	if (row)
		__atomic_fetch_add(&row[cell], 1, __ATOMIC_RELAXED);
}

/* Copy a label argument into its key field: NULL as "", cut to size - 1
 * bytes, the rest of the field zero (keys compare as bytes). */
static inline void bs_copy_label_(char *dst, const char *src, size_t size)
{
	if (src)
		memcpy(dst, src, strnlen(src, size - 1));
}

#endif /* BILLING_STATS_WRITER_H */
