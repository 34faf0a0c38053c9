/*
 * ld_search.h -- where glibc's dynamic loader finds one DT_NEEDED
 * library for one file.  Private to the probe reader library.
 */
#ifndef PR_LD_SEARCH_H
#define PR_LD_SEARCH_H

#include <stddef.h>

#include "elf_dynamic.h"
#include "ld_cache.h"

/* A search path and the directory its $ORIGIN stands for. */
typedef struct pr_ld_path {
	const char *list;   /* "dir:dir...", as the dynamic section writes it */
	const char *origin; /* NULL: unknown ($ORIGIN entries dropped) */
	const char *kind;   /* "RPATH" or "RUNPATH", for messages */
	const char *file;   /* whose it is, for messages */
} pr_ld_path_t;

typedef struct pr_ld_request {
	const char *name;           /* the DT_NEEDED entry */
	const char *loader_origin;  /* $ORIGIN of the file naming it (for a name holding $ORIGIN) */
	const pr_ld_path_t *rpaths; /* DT_RPATH of that file and of those that loaded it, in order */
	size_t rpath_count;         /* 0 when that file has a DT_RUNPATH */
	pr_ld_path_t runpath;       /* list NULL for none */
	const char *program_origin; /* for $ORIGIN in LD_LIBRARY_PATH */
	const char *library_path;   /* LD_LIBRARY_PATH, NULL for unset */
	int secure;                 /* set-id program: no LD_LIBRARY_PATH, no path with a '$' */
	int nodeflib;               /* no ld.so.cache, no system directories */
	int elf_class, machine;     /* what a candidate must be */
	const pr_ld_cache_t *cache;
} pr_ld_request_t;

/* Found: the file open on *fd, its dynamic section in *dyn, its path in
 * path.  The result: */
enum { PR_LD_FOUND = 1,
       PR_LD_NOT_FOUND = 0,  /* why: where it was looked for */
       PR_LD_REFUSED = -1 }; /* why: a candidate the loader would stop at, or copies for particular CPUs */

int pr_ld_search(const pr_ld_request_t *req, int *fd, pr_elf_dynamic_t *dyn, char *path, size_t pathlen, char *why,
                 size_t whylen);

#endif /* PR_LD_SEARCH_H */
