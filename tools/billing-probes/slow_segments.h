/*
 * slow_segments.h -- the segments `billing-probes slow` reads: a process's
 * one, or every *.stats of a --stats-dir, opened through the same
 * ownership checks as top and the exporter (top_segment_open), each lane
 * of trails read whole (a record being written is read again).
 *
 * A directory is a service's, and others live beside it: a segment that
 * is gone is forgotten without a word (its process ended and its file was
 * removed), and a file the checks refuse (another user's in a sticky
 * directory, one anyone may write) is said once, in one line, and left
 * alone until another file takes its name.
 */
#ifndef BP_SLOW_SEGMENTS_H
#define BP_SLOW_SEGMENTS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "stats_trail.h"
#include "top_sample.h"

enum { SLOW_SEGMENTS = 256 };

typedef struct slow_segment {
	char name[NAME_MAX + 1];
	uint64_t next;          /* the first trail of the recent lane not printed yet */
	int started;            /* read at least once (--follow: the first reading prints every trail held) */
	int refused;            /* the checks refused it: said once, not read again */
	unsigned long long ino; /* the file refused (another one at its name is looked at) */
} slow_segment_t;

typedef struct slow_target {
	top_target_t t;
	size_t n;
	slow_segment_t segs[SLOW_SEGMENTS];
} slow_target_t;

/* The target's segments now: the process's one, or every *.stats of the
 * directory (those already known keep their place; one new after the
 * first listing, later set, holds only trails committed since; those gone
 * are forgotten).  0, or -1 with a one-line reason in err. */
int slow_list_segments(slow_target_t *st, int later, char *err, size_t errlen);

/* The target's first look, before anything is printed: 1 when it holds
 * no segment to read, with why in one line: a directory with none of its
 * user's segments, or only files the checks refuse (a typo, a service not
 * started), as top says it (top_no_segment); a process without the
 * segment it would map.  0 when there is one; -1 with the reason in why. */
int slow_target_empty(slow_target_t *st, char *why, size_t n);

/* One reading of lane `lane` of segment s, from trail `since` on.  0; 1
 * when it is gone (its process ended, or its file was removed) or not
 * made yet (no magic: nothing to read until it has); 2 when the
 * checks refuse it (the reason in err, to be said once); -1 with the
 * reason in err. */
int slow_read_segment(slow_target_t *st, slow_segment_t *s, int lane, uint64_t since, bs_trails_t *out, char *err,
                      size_t errlen);

#endif /* BP_SLOW_SEGMENTS_H */
