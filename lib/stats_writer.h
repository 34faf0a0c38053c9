/*
 * stats_writer.h -- what the generated half of the stats writer
 * (stats_gen.c, provider/stats_emit.py) needs from lib/stats.c.
 *
 * The hot-path rule: a thread stores only to its own slot, with a relaxed
 * load and a relaxed store (no read-modify-write instruction, no lock
 * prefix, no line another thread writes); the reader sums the slots.  The
 * one exception is the overflow slot that threads share once every slot is
 * taken: there an add is atomic.  The relaxed accesses are plain moves on
 * x86-64 and arm64; they keep a concurrent reader's view of a cell whole
 * and make the sharing explicit to the compiler and to TSan.
 */
#ifndef BILLING_STATS_WRITER_H
#define BILLING_STATS_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* A thread's cache from key bytes to row, direct mapped. */
#define BS_CACHE_ENTRIES 128
typedef struct bs_cache_entry {
	uint32_t tag; /* map + 1; 0: empty */
	uint32_t row;
	unsigned char key[BX_KEY_MAX];
} bs_cache_entry_t;

/* A thread's state: its slot and its cache (lib/stats.c claims and frees). */
typedef struct bs_thread {
	struct bs_slot *slot;
	unsigned char *cells; /* the slot's cells */
	int shared;           /* the overflow slot */
	bs_cache_entry_t cache[BS_CACHE_ENTRIES];
} bs_thread_t;

BS_HIDDEN extern __thread bs_thread_t *bs_self_;
/* Where each map's cells start in a slot: a private copy of the
 * segment's header field, so the hot path reads no shared page. */
BS_HIDDEN extern uint64_t bs_map_offset_[BX_MAP_COUNT];

/* The slow path: the segment and this thread's slot on first use, and the
 * row of a key not in the cache (into *e); NULL when the stats are off. */
BS_HIDDEN void *bs_slow_(int map, const void *key, bs_cache_entry_t *e);

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

/* Copy a label argument into its key field: NULL as "", cut to size - 1
 * bytes, the rest of the field zero (keys compare as bytes). */
static inline void bs_copy_label_(char *dst, const char *src, size_t size)
{
	if (src)
		memcpy(dst, src, strnlen(src, size - 1));
}

#endif /* BILLING_STATS_WRITER_H */
