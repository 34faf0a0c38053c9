/*
 * target_overlap.h -- one process counted once.
 */
#ifndef BX_TARGET_OVERLAP_H
#define BX_TARGET_OVERLAP_H

#include <stddef.h>

struct bx_exporter;

/* Targets that would count a process twice, refused: two --binary of one
 * file, a --binary of a library that a --binary program loads, a --pid
 * process that runs a --binary program or maps a --binary library
 * (whether the --pid is served through USDT or from its stats segment:
 * the --binary's uprobes count its fires either way).  0, or -1 with a
 * one-line reason in err. */
int bx_targets_check_overlap(const struct bx_exporter *ex, char *err, size_t errlen);

#endif /* BX_TARGET_OVERLAP_H */
