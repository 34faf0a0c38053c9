/*
 * ld_cache.h -- /etc/ld.so.cache, as glibc's loader reads it: library
 * name -> path.  Private to the probe reader library.
 */
#ifndef PR_LD_CACHE_H
#define PR_LD_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pr_ld_cache {
	unsigned char *data; /* the whole file, NULL when not read */
	size_t size;
	uint32_t nlibs;
	const char *problem; /* why the cache is not used, NULL when it is */
} pr_ld_cache_t;

/* Read the cache at path (glibc's "glibc-ld.so.cache1.1" format).  A
 * missing, unreadable or foreign file leaves the cache empty with
 * c->problem saying why: the loader then searches the system
 * directories, and so does the caller. */
void pr_ld_cache_open(pr_ld_cache_t *c, const char *path);

/* The next path the cache gives for name, from entry *pos on (start at
 * 0), or NULL when there is no more.  Entries for CPU-specific copies
 * (glibc-hwcaps) are skipped and counted in *cpu_specific. */
const char *pr_ld_cache_next(const pr_ld_cache_t *c, const char *name, size_t *pos, size_t *cpu_specific);

void pr_ld_cache_close(pr_ld_cache_t *c);

#endif /* PR_LD_CACHE_H */
