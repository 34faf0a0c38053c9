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

/* --- one probe's sites in one file (usdt_links.c) ------------------------ */

struct bpf_program;
struct bpf_link;

/* BPF_TRACE_UPROBE_MULTI (Linux 6.6): the expected attach type of a
 * program for multi-uprobe links; the installed linux/bpf.h may predate
 * it. */
#define BX_TRACE_UPROBE_MULTI 48

/* The spec IDs given so far: the index of each (probe, argument string),
 * every target together; the map of specs is map_fd's. */
typedef struct bx_usdt_specs {
	int map_fd;
	struct bx_usdt_spec_key {
		const char *probe; /* ELF spelling */
		char *args;
	} * keys;
	size_t count;
} bx_usdt_specs_t;

/* One probe's sites in one file, attached: a multi-uprobe link (fd >= 0),
 * or libbpf's uprobe link per site (sites; fd -1). */
typedef struct bx_usdt_link {
	int fd;
	struct bpf_link **sites;
	size_t site_count;
} bx_usdt_link_t;

/* 1 when this kernel has multi-uprobe links that count every thread of a
 * --pid target; 0 when it has none, or only the first ones (their PID
 * filter took a process for its main thread, fixed since); -errno when
 * it cannot be asked (no permission to load a BPF program). */
int bx_uprobe_multi_kernel(void);

/* Attach prog (loaded for multi-uprobe links when multi) to the sites of
 * probe number `probe` in module m (pid > 0: fires of that process only),
 * each site's cookie carrying its spec ID and target_cookie.  0 with
 * *link set, or -1 with a one-line reason in err (a site whose arguments
 * cannot be read as billing.d declares them, more specs than the map
 * holds, or the kernel's refusal) and nothing attached. */
int bx_usdt_attach(struct bpf_program *prog, int multi, bx_usdt_specs_t *specs, uint32_t target_cookie, int pid,
                   const bx_module_t *m, size_t probe, bx_usdt_link_t *link, char *err, size_t errlen);

void bx_usdt_link_close(bx_usdt_link_t *link);
void bx_usdt_specs_free(bx_usdt_specs_t *specs);

struct billing_exporter_bpf;

/* One attachment: one probe's sites in one file (usdt_links.c), of one
 * target: what detaching an idle file looks for. */
typedef struct bx_link {
	bx_usdt_link_t usdt;
	size_t map; /* the bx_maps index it feeds */
	const bx_target_t *target;
	unsigned long long dev, ino; /* the file */
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
	bx_usdt_specs_t specs;         /* the sites' argument specs (usdt_links.c) */
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
/* attach.c: every link detached (the watcher stopped first), then the
 * object closed (bx_bpf_unload). */
void bx_bpf_close(bx_usdt_t *u);
void bx_detach_all(bx_usdt_t *u);
/* usdt_maps.c: the object closed, with the run-time statistics' fd; the
 * links are detached first (bx_bpf_close), so this file needs none of attach.c. */
void bx_bpf_unload(bx_usdt_t *u);
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
