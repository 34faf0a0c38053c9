/*
 * stats_trail.h -- the slow-request trails of a stats segment: the ring
 * that lib/stats_trail_writer.c commits to and readers (billing-probes slow,
 * billing-exporter's exemplars) read without privilege.  docs/stats.md,
 * "Slow-request trails".
 *
 * While a request is open (request-start .. request-done of one request
 * ID) the writer keeps the probes fired for it in process memory, each as
 * a bounded copy of its words and string bytes: the probes that carry a
 * request_id join that request, whichever thread fires them; the others
 * join the request their thread last started.  At request-done a request
 * over its handler's threshold (billing.d's "@@slow-threshold",
 * BILLING_STATS_SLOW at run time) is checked and copied into the next
 * record of the ring's recent lane; the others are let go.  The recent
 * lane keeps the last BS_TRAIL_RECORDS trails: older ones are
 * overwritten, and bs_trail_ring.committed says how many there were.
 *
 * Some slow trails are also copied into the kept lane, the exemplars'
 * (billing-exporter serves only these): a kept trail stays at least
 * bs_trail_ring.keep_ns (BILLING_STATS_SLOW_KEEP, 15 minutes by default),
 * so an exemplar a person clicks within that time still resolves with
 * `billing-probes slow --id`.  The writer keeps one only when the record
 * it overwrites is older than that, and spaces each (handler, duration
 * bucket)'s picks so that every bucket gets its share (stats_trail_writer.c).
 *
 * A record is written under a sequence number: odd while it is written,
 * 2 * (n + 1) once trail n of its lane (counting from 0) is whole.  A
 * reader copies a record, then reads the number again: a record it does
 * not find whole and unchanged is left out and counted, never shown.
 */
#ifndef BILLING_STATS_TRAIL_H
#define BILLING_STATS_TRAIL_H

#include <stddef.h>
#include <stdint.h>

#define BS_TRAIL_RING_VERSION 2 /* the ring's layout (bs_trail_ring.version): 2 added the kept lane */
#define BS_TRAIL_RECORDS 128    /* the recent lane: the last slow trails */
#define BS_TRAIL_KEPT 256       /* the kept lane: trails kept for exemplars, each at least keep_ns */
#define BS_TRAIL_EVENTS 32      /* events of one trail, request-done included */
#define BS_TRAIL_INTS 4         /* integer arguments an event keeps */
#define BS_TRAIL_STRS 2         /* string arguments an event keeps */
#define BS_TRAIL_STR 24         /* bytes of one, NUL included: longer ones are cut (and marked) */
#define BS_TRAIL_HANDLER 32     /* bytes of a trail's handler, NUL included */
#define BS_TRAIL_KINDS 64       /* probes an event may be (the description's "trail" lines) */
#define BS_TRAIL_THRESHOLDS 32  /* per-handler thresholds: billing.d's (at most 16) and BILLING_STATS_SLOW's (16) */

/* One event: a probe fired for the request, its arguments as the
 * description's "trail" line of that probe names them. */
struct bs_trail_event {
	uint64_t offset_ns; /* since the request's request-start */
	uint16_t kind;      /* its "trail" line: 0 is the first */
	uint16_t cut;       /* bit s: string s was longer than BS_TRAIL_STR - 1 bytes */
	uint32_t owner;     /* 0 in the ring (the writer's, in its process: the claim it was written for) */
	int64_t ints[BS_TRAIL_INTS];
	char strs[BS_TRAIL_STRS][BS_TRAIL_STR];
};

/* One committed trail (its number: seq / 2 - 1). */
struct bs_trail {
	uint64_t seq;          /* odd: being written; 2 * (n + 1): trail n, whole */
	uint64_t request_id;   /* as request-start gave it */
	uint64_t duration_ns;  /* request-done's */
	uint64_t threshold_ns; /* what it was judged by */
	uint64_t end_unix_ns;  /* the wall clock at request-done */
	int32_t status;        /* request-done's */
	uint32_t nevents;      /* kept, in the order they fired: at most BS_TRAIL_EVENTS */
	uint32_t lost;         /* fired for it past BS_TRAIL_EVENTS - 1 (request-done is always kept) */
	uint32_t reserved;
	char handler[BS_TRAIL_HANDLER];
	struct bs_trail_event events[BS_TRAIL_EVENTS];
};

/* A handler's threshold as the writer judges it. */
struct bs_trail_threshold {
	char handler[BS_TRAIL_HANDLER]; /* NUL-terminated, not empty */
	uint64_t ns;
};

/* The ring's header, at bs_header.trail_offset, then the recent lane's
 * records, then the kept lane's.  The thresholds are the writer's own
 * (billing.d's with BILLING_STATS_SLOW over them), written with the
 * header before the segment's magic and never changed: a reader counts
 * slow requests from the duration buckets by them (each is a bound of the
 * buckets: the writer takes no other).  A reader refuses, in one line, a
 * ring whose version, records or record size it does not know (a reader
 * of version 1 checks only records and record_size, and reads the recent
 * lane, which is as it was). */
struct bs_trail_ring {
	uint32_t records;         /* BS_TRAIL_RECORDS */
	uint32_t record_size;     /* sizeof(struct bs_trail) */
	uint64_t committed;       /* trails committed in all: the recent lane holds the last `records` */
	uint64_t untracked;       /* requests not followed: every place for open requests taken, or an ID reused */
	uint64_t slow_default_ns; /* a handler's threshold when threshold[] does not name it */
	uint32_t nthresholds;     /* threshold[0 .. nthresholds) */
	uint32_t trails_off;      /* 1: BILLING_STATS_SLOW=off, no trails kept (slow is still judged by these) */
	uint32_t version;         /* BS_TRAIL_RING_VERSION (0 in a ring of version 1) */
	uint32_t kept_records;    /* BS_TRAIL_KEPT */
	uint64_t kept;            /* trails kept in all: the kept lane holds the last `kept_records` */
	uint64_t keep_ns;         /* a kept trail is overwritten no sooner than this after it was kept */
	struct bs_trail_threshold threshold[BS_TRAIL_THRESHOLDS];
};

#define BS_TRAIL_RING_SIZE \
  (sizeof(struct bs_trail_ring) + (uint64_t)(BS_TRAIL_RECORDS + BS_TRAIL_KEPT) * sizeof(struct bs_trail))

/* --- reading ------------------------------------------------------------- */

/* A segment's thresholds, as its ring's header publishes them. */
typedef struct bs_slow_thresholds {
	uint64_t default_ns;
	size_t n;
	struct bs_trail_threshold handler[BS_TRAIL_THRESHOLDS];
	int trails_off;
} bs_slow_thresholds_t;

/* Handler's threshold in t: its own, else the default. */
uint64_t bs_slow_threshold_of(const bs_slow_thresholds_t *t, const char *handler);

/* A segment's trails of one lane as one reading found them, oldest first. */
typedef struct bs_trails {
	uint64_t committed;              /* to the lane in all, ever */
	uint64_t untracked;              /* requests not followed */
	uint64_t first;                  /* the first trail looked at: those before it are gone (overwritten) or were read */
	size_t count;                    /* trails[0 .. count) */
	size_t skipped;                  /* records not whole or not valid in this reading: left out */
	struct bs_trail *trails;         /* owned: bs_trails_free() */
	const struct bs_layout *layout;  /* the segment's description: kinds[] names each event's probe and
	                                  * arguments (a reference: bs_trails_free() drops it) */
	bs_slow_thresholds_t thresholds; /* what its trails were judged by */
	uint64_t keep_ns;                /* how long a kept trail stays at least */
	uint32_t records;                /* the lane's records */
	uint32_t pid;                    /* the writer, as its header says (check it against /proc) */
	uint64_t start_time;
} bs_trails_t;

/* The lanes of a ring. */
enum { BS_LANE_RECENT = 0, /* every slow trail, the last BS_TRAIL_RECORDS */
       BS_LANE_KEPT = 1 }; /* the exemplars' (stats_trail.h's head) */

/* Read the trails of lane `lane` of the segment open at fd (its header
 * checked as bs_read_fd checks it, kinds checked against its
 * description's "trail" lines), those numbered `since` and later (0:
 * every one the lane holds).  0, or -1 with a one-line reason in err. */
struct bs_layout;
int bs_trails_read_fd(int fd, int lane, uint64_t since, bs_trails_t *out, char *err, size_t errlen);
void bs_trails_free(bs_trails_t *t);

/* The thresholds of the segment open at fd (its header and its ring's
 * checked as bs_trails_read_fd checks them), no trail read.  0; 1 when
 * the segment keeps no trails (out: default_ns 0, no handler); -1 with a
 * one-line reason in err. */
int bs_slow_thresholds_read_fd(int fd, bs_slow_thresholds_t *out, char *err, size_t errlen);

#endif /* BILLING_STATS_TRAIL_H */
