/*
 * probe_sites.h -- what instruction sits at a probe site: the nop the
 * compiler left, or what a uprobe wrote there.
 */
#ifndef BP_PROBE_SITES_H
#define BP_PROBE_SITES_H

#include "probe_reader.h"

/* In a file: the nop the compiler left.  In a live process: int3 (0xcc)
 * while a uprobe traps there, call/jmp once the kernel optimized it. */
typedef enum {
	BP_SITE_NOP1,
	BP_SITE_NOP5,
	BP_SITE_INT3,
	BP_SITE_OPTIMIZED,
	BP_SITE_OTHER,
	BP_SITE_UNREADABLE,
	BP_SITE_KINDS
} bp_site_kind_t;

/* "1-byte nop", "int3 (uprobe attached, trapping)", ... */
const char *bp_site_word(bp_site_kind_t kind);

/* Read and classify the site of p: from the process's memory for a
 * process set, else from the file at fd (-1: unreadable). */
bp_site_kind_t bp_site_read(const pr_probe_set_t *set, const pr_probe_t *p, int fd);

/* A uprobe is at the site / the site is still the compiler's nop. */
int bp_site_attached(bp_site_kind_t kind);
int bp_site_plain(bp_site_kind_t kind);

#endif /* BP_PROBE_SITES_H */
