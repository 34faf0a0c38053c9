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

enum { TOP_SEGMENTS = 256,   /* segments of one directory */
       TOP_SKIPPED_KEPT = 4, /* skipped files named in one reading (the others counted) */
       TOP_SKIPPED_BYTES = 512 };

typedef struct top_handler {
	char name[BS_VALUE_BYTES * 4 + 1];
	uint64_t requests;                      /* request-done fires */
	uint64_t buckets[BS_LAYOUT_BOUNDS + 1]; /* duration observations per bucket, the last +Inf */
	uint64_t slow;                          /* observations over the handler's threshold (its segment's) */
	int slow_unknown;                       /* 1: a row's threshold cannot be told (top_sample.c) */
} top_handler_t;

/* A metric family of the segments' descriptions that the summary lines
 * do not show (a team's own probe's counter, the db and gateway
 * histograms): its value summed over rows and segments by name. */
typedef struct top_metric {
	char name[BS_LAYOUT_NAME_BYTES + 1];
	int source;      /* BS_SRC_COUNT: fires; BS_SRC_SUM: a quantity's sum; BS_SRC_OBSERVE: observations */
	int is_signed;   /* a signed quantity's sum, which may go down */
	char divide[24]; /* the sum's divisor to its unit, as described ("1000000000"); "" for a count */
	uint64_t value;  /* a signed sum in two's complement */
	int differs;     /* segments describe the name otherwise (source, sign, divisor): not shown */
} top_metric_t;

/* One reading of a target: counters since each segment's start.  Its
 * handlers are as many as the segments hold (a writer keeps BS_LABEL_VALUES
 * names and "other" each; a directory's segments may each keep others),
 * and its metrics as many as they describe, in memory the sample owns:
 * top_sample_free(). */
typedef struct top_sample {
	uint64_t invoices, payments, approved, declined, outcome_unknown, refunds, errors;
	size_t nhandlers, handlers_cap;
	top_handler_t *handlers;
	size_t nmetrics, metrics_cap;
	top_metric_t *metrics; /* by name */
	/* the duration buckets' upper bounds as the segments write them (seconds) */
	size_t nbounds;
	char le[BS_LAYOUT_BOUNDS][24];
	/* which segments were summed: a change between two readings restarts the interval */
	size_t nsegments;
	uint64_t segment_ids[TOP_SEGMENTS]; /* pid, start time, generation mixed */
	size_t nexited;                     /* of them, segments whose writer has exited */
	/* files of a directory that are not the user's segments (another
	 * user's file in a sticky directory): left out, each "NAME: why" */
	size_t nskipped;
	char skipped[TOP_SKIPPED_KEPT][TOP_SKIPPED_BYTES];
} top_sample_t;

typedef struct top_target {
	pid_t pid;       /* a process, or -1 for a directory */
	const char *dir; /* --stats-dir */
	uid_t user;      /* whose segments are read */
	unsigned long long start_time;
	pid_t ns_pid;
	pr_segment_place_t place; /* the process's segment */
} top_target_t;

/* Find the target: PID's segment (the file it maps, else NSPID.stats in
 * /dev/shm/billing-stats-UID) or --stats-dir DIR, nothing read from it
 * (billing-probes slow reads its trails).  0, or -1 with a one-line
 * reason in err. */
int top_target_find(top_target_t *t, const char *pid_text, const char *dir, char *err, size_t errlen);

/* top_target_find(), then a first reading: a process's checks the file
 * and its writer; a directory's must find a running writer's segment
 * (top_sample_no_writer).  0, or -1 with a one-line reason. */
int top_target_open(top_target_t *t, const char *pid_text, const char *dir, char *err, size_t errlen);

/* Open dir/name as a segment of user, through the directory's and the
 * file's ownership checks (how: PR_OWNER_ONLY for a process's, else
 * PR_OWNER_OR_ROOT).  The fd, or -1 with the reason in err. */
int top_segment_open(const char *dir, const char *name, uid_t user, int how, struct stat *st, char *err,
                     size_t errlen);

/* Read the target into *s (zeroed, or a sample read before).  0; 1 when
 * the process is gone (or its segment says it exited); -1 with a one-line
 * reason in err.  A directory's file that is not a segment of its user (a
 * file of another user in a sticky directory, a link, one writable by
 * others) is left out and named in s->skipped; one that is gone since the
 * directory was listed is left out silently (the segments changed). */
int top_sample_read(const top_target_t *t, top_sample_t *s, char *err, size_t errlen);

/* 1 when a directory holds none of its user's segments (nsegments 0: a
 * typo, a service not started), with why in one line naming the files
 * left out (nskipped, the first's "NAME: why"); else 0.  top and slow
 * refuse such a directory: nothing printed from it would read as an idle
 * service. */
int top_no_segment(const top_target_t *t, size_t nsegments, size_t nskipped, const char *first_skipped, char *why,
                   size_t n);

/* 1 when a reading of a directory holds no segment of a running writer
 * (none at all: a typo, a service not started; or only exited ones), with
 * why in one line; else 0.  Zeros from such a reading would read as an
 * idle service. */
int top_sample_no_writer(const top_target_t *t, const top_sample_t *s, char *why, size_t n);

/* *dst as a copy of *src, in dst's own memory.  0, or -1 out of memory. */
int top_sample_copy(top_sample_t *dst, const top_sample_t *src);

void top_sample_free(top_sample_t *s);

#endif /* BP_TOP_SAMPLE_H */
