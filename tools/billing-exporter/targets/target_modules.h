/*
 * target_modules.h -- building a target's modules from the probe reader's
 * probe sets (probe_reader.h): shared by targets.c and program_target.c,
 * the files of billing-exporter that read what a process carries.
 */
#ifndef BX_TARGET_MODULES_H
#define BX_TARGET_MODULES_H

#include <stddef.h>

#include "probe_reader.h"
#include "targets.h"

#define BX_PROVIDER "billing"

/* A new, empty module for path at the end of t's list, for the file
 * (dev, ino) mapped, (path_dev, path_ino) as path shows it; NULL when
 * out of memory.  Pointers to t's modules taken before are stale. */
bx_module_t *bx_module_add(bx_target_t *t, const char *path, unsigned long long dev, unsigned long long ino,
                           unsigned long long path_dev, unsigned long long path_ino);

/* t's module for path: the one it has, else a new, empty one at the end
 * of its list; NULL when out of memory. */
bx_module_t *bx_module_for_path(bx_target_t *t, const char *path);

/* The billing probes of the ELF file at path into m.  0, or -1 with a
 * reason in err ("out of memory" when that is why). */
int bx_module_read(bx_module_t *m, const char *path, char *err, size_t errlen);

/* The probe of note p, and its site, into m.  0, or -1 out of memory. */
int bx_module_add_probe(bx_module_t *m, const pr_probe_t *p);

/* t's module for the file (dev, ino), reached directly or through a
 * path, or NULL. */
bx_module_t *bx_module_of_file(const bx_target_t *t, unsigned long long dev, unsigned long long ino);

/* t's module for the file (dev, ino) taken out and freed, if it has one.
 * Pointers to t's modules taken before are stale. */
void bx_module_remove(bx_target_t *t, unsigned long long dev, unsigned long long ino);

/* 1 when some module of t carries probe. */
int bx_target_has_probe(const bx_target_t *t, const char *probe);
int bx_module_has_probe(const bx_module_t *m, const char *probe);

/* A file at PATH in the root of process pid (st: its stat there, dev and
 * ino: what the process maps) that t has not counted: 1 when it may be
 * added, 0 when refused (one line the first time, remembered: no
 * attachment, not looked at again).  Refused: a file
 * bx_foreign_file_trusted refuses, or one beyond BX_FILES_PER_PATH
 * (counted files: have) that is not the file at PATH here. */
int bx_target_admits(bx_target_t *t, pid_t pid, const struct stat *st, unsigned long long dev,
                     unsigned long long ino, size_t have);
int bx_target_refused(const bx_target_t *t, unsigned long long dev, unsigned long long ino);

/* Is the file (dev, ino) among items; added when it is not: 0, or -1
 * when out of memory. */
int bx_mapped_in(const bx_mapped_t *items, size_t count, unsigned long long dev, unsigned long long ino);
int bx_mapped_add(bx_mapped_t **items, size_t *count, unsigned long long dev, unsigned long long ino);

/* What module m holds, freed (m itself is the caller's). */
void bx_module_free(bx_module_t *m);

#endif /* BX_TARGET_MODULES_H */
