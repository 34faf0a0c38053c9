/*
 * usdt.h -- the USDT source: the BPF object loaded with the enabled
 * groups' programs (usdt_maps.c), attached to every module of the --pid
 * and --binary targets that carries their probes (attach.c), and its
 * maps read as rows for the snapshot.  One instance; its --binary watcher
 * attaches files that appear later under the exporter's lock.
 */
#ifndef BX_USDT_H
#define BX_USDT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup_filter.h"
#include "labels.h"
#include "map_row.h"
#include "targets.h"
#include "usdt_links.h"

struct billing_exporter_bpf;

/* One attachment: one probe's sites in one file (usdt_links.h). */
typedef struct bx_link {
	bx_usdt_link_t usdt;
	size_t map; /* the bx_maps index it feeds */
} bx_link_t;

typedef struct bx_usdt {
	/* what it counts, set before bx_bpf_load() */
	unsigned groups;           /* BX_GROUP_* enabled */
	bx_targets_t *targets;     /* the --pid and --binary targets */
	long only_uid;             /* --uid: fires of that user only; -1 all */
	const bx_cgroup_t *cgroup; /* --cgroup: fires of its processes only; NULL all */
	unsigned idle_detach_s;    /* --idle-detach: a --binary file idle this long is detached */
	int verbose;               /* libbpf's log on stderr */
	pthread_mutex_t *lock;     /* the --binary watcher attaches holding it */
	/* the BPF side */
	struct billing_exporter_bpf *skel;
	bx_link_t *links;
	size_t link_count;
	int multi;                     /* sites attached through multi-uprobe links, else one link a site */
	bx_usdt_specs_t specs;         /* the sites' argument specs (usdt_links.h) */
	size_t attached[BX_MAP_COUNT]; /* attachments per map (= per probe) */
	int stats_fd;                  /* bpf_enable_stats, -1 when off */
} bx_usdt_t;

/* What the exporter needs without root, as tests/security/exporter/
 * test_capabilities.py shows (docs/security.md): BPF programs and maps,
 * multi-uprobe links, and other users' process memory.  Said by the
 * message that reports a refusal. */
#define BX_CAPABILITIES "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE"

/* usdt_maps.c: open and load the BPF object with only the enabled
 * groups' programs (bpf_stats: the kernel's run-time statistics on).  0,
 * or -1 with a one-line reason in err. */
int bx_bpf_load(bx_usdt_t *u, int bpf_stats, char *err, size_t errlen);
/* attach.c: attach each enabled probe in every module of every target
 * that carries it.  A target refused (a note whose arguments cannot be
 * read, the kernel's refusal) is one line on stderr and skipped, the
 * others served.  0, or -1 with a one-line reason in err: every target
 * refused while no other source serves one (others 0). */
int bx_attach_all(bx_usdt_t *u, int others, char *err, size_t errlen);
/* Every link detached (the watcher stopped first), the object closed. */
void bx_bpf_close(bx_usdt_t *u);
void bx_detach_all(bx_usdt_t *u);
/* The fd of BPF map `name`, -1 if absent; probe's program when loaded,
 * else NULL. */
int bx_map_fd(const bx_usdt_t *u, const char *name);
struct bpf_program *bx_program(const bx_usdt_t *u, const char *probe);

/* usdt_maps.c: map mi's rows and its fold map's, appended to rows, their
 * labels admitted into slots (map mi's, one per key field); 0, or -1. */
int bx_usdt_rows(const bx_usdt_t *u, size_t mi, bx_label_slot_t *slots, bx_rows_t *rows);
/* Fires no map could take, per map. */
void bx_usdt_dropped(const bx_usdt_t *u, uint64_t dropped[BX_MAP_COUNT]);
/* The kernel's figures for probe's BPF program: runs, run time (ns) and
 * recursion misses; 0 each when it is not loaded. */
void bx_usdt_program_stats(const bx_usdt_t *u, const char *probe, uint64_t out[3]);

#endif /* BX_USDT_H */
