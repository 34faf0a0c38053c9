/*
 * top_sample.h -- what `billing-probes top` reads: a process's stats
 * segment or a directory of them, found and trusted the way
 * billing-exporter does (stats_trust.h, proc_identity.h), read only
 * through stats_read.h and decoded by each segment's own description
 * (maps found by probe name), into the totals one screen shows.
 */
#ifndef BP_TOP_SAMPLE_H
#define BP_TOP_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "stats_layout.h"
#include "stats_segment.h"
#include "stats_trust.h"

enum { TOP_HANDLERS = 64,    /* handlers shown; more are refused as a reading */
       TOP_SEGMENTS = 256 }; /* segments of one directory */

typedef struct top_handler {
	char name[BS_VALUE_BYTES * 4 + 1];
	uint64_t requests;                      /* request-done fires */
	uint64_t buckets[BS_LAYOUT_BOUNDS + 1]; /* duration observations per bucket, the last +Inf */
	uint64_t slow;                          /* observations over the handler's threshold (its segment's) */
	int slow_unknown;                       /* 1: a row's threshold cannot be told (top_sample.c) */
} top_handler_t;

/* One reading of a target: counters since each segment's start. */
typedef struct top_sample {
	uint64_t invoices, payments, approved, declined, outcome_unknown, refunds, errors;
	size_t nhandlers;
	top_handler_t handlers[TOP_HANDLERS];
	/* the duration buckets' upper bounds as the segments write them (seconds) */
	size_t nbounds;
	char le[BS_LAYOUT_BOUNDS][24];
	/* which segments were summed: a change between two readings restarts the interval */
	size_t nsegments;
	uint64_t segment_ids[TOP_SEGMENTS]; /* pid, start time, generation mixed */
} top_sample_t;

typedef struct top_target {
	pid_t pid;       /* a process, or -1 for a directory */
	const char *dir; /* --stats-dir */
	uid_t user;      /* whose segments are read */
	unsigned long long start_time;
	pid_t ns_pid;
	bx_segment_place_t place; /* the process's segment */
} top_target_t;

/* Find the target: PID's segment (the file it maps, else NSPID.stats in
 * /dev/shm/billing-stats-UID) or --stats-dir DIR, nothing read from it
 * (billing-probes slow reads its trails).  0, or -1 with a one-line
 * reason in err. */
int top_target_find(top_target_t *t, const char *pid_text, const char *dir, char *err, size_t errlen);

/* top_target_find(), then a first reading of a process's segment, which
 * checks the file and its writer.  0, or -1 with a one-line reason. */
int top_target_open(top_target_t *t, const char *pid_text, const char *dir, char *err, size_t errlen);

/* Open dir/name as a segment of user, through the directory's and the
 * file's ownership checks (how: BX_OWNER_ONLY for a process's, else
 * BX_OWNER_OR_ROOT).  The fd, or -1 with the reason in err. */
int top_segment_open(const char *dir, const char *name, uid_t user, int how, struct stat *st, char *err,
                     size_t errlen);

/* Read the target into *s.  0; 1 when the process is gone (or its
 * segment says it exited); -1 with a one-line reason in err. */
int top_sample_read(const top_target_t *t, top_sample_t *s, char *err, size_t errlen);

#endif /* BP_TOP_SAMPLE_H */
