/*
 * stats_settings.h -- the stats writer's settings, read from the
 * environment once (lib/stats_settings.c; docs/stats.md lists them).
 *
 * Every value is parsed whole: an unknown word, a unit where none is
 * taken, a sign, a number out of range, a relative directory or a group
 * that does not exist is one line on stderr naming the variable, its value
 * and what is used instead.  A directory refused turns the stats off (the
 * default directory is shared by the user's services: readers would sum
 * the segment with theirs).  A name beginning BILLING_STAT that is none of
 * them (BILLING_STAT_DIR, BILLING_STATS_DIRECTORY) is said in one line,
 * and turns the stats off unless a BILLING_STATS_DIR was taken: it may be
 * a misspelt one.  A set-id program (AT_SECURE) takes none: its
 * environment is its caller's, who would choose the directory it creates
 * and chmods, the group it gives it to and the size of the file it makes.
 */
#ifndef BILLING_STATS_SETTINGS_H
#define BILLING_STATS_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BS_DEFAULT_SLOTS 64             /* BILLING_STATS_THREADS */
#define BS_MAX_SLOTS 65536              /* ... at most */
#define BS_DEFAULT_KEEP_SECONDS 3600L   /* BILLING_STATS_KEEP */
#define BS_MAX_KEEP_SECONDS 315360000L  /* ... at most: ten years */
#define BS_DIR_MAX 4032                 /* BILLING_STATS_DIR, bytes: PATH_MAX less room for a file name */
#define BS_SLOW_OVERRIDES 16            /* BILLING_STATS_SLOW: handlers named at most */
#define BS_SLOW_MAX_NS 3600000000000ULL /* ... a threshold at most: an hour */

/* BILLING_STATS_SLOW_KEEP: how long a trail kept for exemplars stays */
#define BS_DEFAULT_SLOW_KEEP_SECONDS 900L

typedef struct bs_settings {
	int off;              /* BILLING_STATS=off: no segment, no counting */
	int native_off;       /* BILLING_STATS_NATIVE=off: no native buckets */
	char dir[BS_DIR_MAX]; /* BILLING_STATS_DIR; "" for /dev/shm/billing-stats-UID */
	int has_group;        /* BILLING_STATS_GROUP names one: gid */
	gid_t gid;
	long threads;      /* thread slots, the overflow slot not counted */
	long keep_seconds; /* how long a gone process's unchanged segment stays */
	/* BILLING_STATS_SLOW: "off", or thresholds over billing.d's */
	int slow_off;
	uint64_t slow_default_ns; /* 0: billing.d's */
	size_t nslow;
	struct {
		char handler[32];
		uint64_t ns;
	} slow[BS_SLOW_OVERRIDES];
	long slow_keep_seconds; /* BILLING_STATS_SLOW_KEEP */
} bs_settings_t;

#if defined(__GNUC__)
#  define BS_SETTINGS_HIDDEN __attribute__((visibility("hidden")))
#else
#  define BS_SETTINGS_HIDDEN
#endif

/* The settings from the environment, each problem said in one line. */
BS_SETTINGS_HIDDEN void bs_settings_read(bs_settings_t *s);
/* The writer's settings, read once (lib/stats_writer.c). */
BS_SETTINGS_HIDDEN const bs_settings_t *bs_settings_(void);

#endif /* BILLING_STATS_SETTINGS_H */
