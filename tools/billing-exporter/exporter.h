/*
 * exporter.h -- the running exporter: BPF object, targets, attachments,
 * label slots.  One instance; the HTTP thread and the main loop share it
 * under its lock.
 */
#ifndef BX_EXPORTER_H
#define BX_EXPORTER_H

#include <pthread.h>
#include <stddef.h>

#include "labels.h"
#include "metric_table.h"
#include "targets.h"
#include "usdt_links.h"

#define BX_MAX_MAPS BX_MAP_COUNT /* generated from billing.d */

struct billing_exporter_bpf;
struct bx_stats;
struct bx_cgroup;

/* One attachment: one probe's sites in one file (usdt_links.h). */
typedef struct bx_link {
	bx_usdt_link_t usdt;
	size_t map; /* the bx_maps index it feeds */
} bx_link_t;

typedef struct bx_exporter {
	unsigned groups; /* BX_GROUP_* enabled */
	struct billing_exporter_bpf *skel;
	bx_target_t *targets;
	size_t target_count;
	bx_link_t *links;
	size_t link_count;
	int multi;                    /* sites attached through multi-uprobe links, else one link a site */
	bx_usdt_specs_t specs;        /* the sites' argument specs (usdt_links.h) */
	size_t attached[BX_MAX_MAPS]; /* attachments per map (= per probe) */
	bx_label_slot_t slots[BX_MAX_MAPS][BX_MAX_FIELDS];
	int stats_fd;           /* bpf_enable_stats, -1 when off */
	struct bx_stats *stats; /* stats targets (stats_source.h), NULL when none */
	double last_scrape_seconds;
	int verbose;
	long only_uid;                              /* --uid: fires and segments of that user only; -1 all */
	struct bx_cgroup *cgroup;                   /* --cgroup: fires and segments of its processes only; NULL all */
	unsigned idle_detach_s;                     /* --idle-detach: a --binary file idle this long is detached */
	const struct bx_exemplar_source *exemplars; /* OpenMetrics' bucket exemplars (exemplars.h); NULL none */
	pthread_mutex_t lock;
} bx_exporter_t;

/* What the exporter needs without root, as tests/security/exporter/
 * test_capabilities.py shows (docs/security.md): BPF programs and maps,
 * multi-uprobe links, and other users' process memory.  Said by the
 * message that reports a refusal. */
#define BX_CAPABILITIES "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE"

/* Exit codes: clean / runtime failure / bad input or environment. */
enum { BX_EXIT_OK = 0,
       BX_EXIT_FAIL = 1,
       BX_EXIT_USAGE = 2 };

#include "report.h" /* bx_error: every layer's one line to the operator */

/* attach.c: open and load the BPF object with only the enabled groups'
 * programs; then attach each enabled probe in every module of every
 * target that carries it.  A target refused (a note whose arguments
 * cannot be read, the kernel's refusal) is one line on stderr and
 * skipped, the others served.  0, or -1
 * with a one-line reason in err (every target refused). */
int bx_bpf_load(bx_exporter_t *ex, int bpf_stats, char *err, size_t errlen);
int bx_attach_all(bx_exporter_t *ex, char *err, size_t errlen);
void bx_bpf_close(bx_exporter_t *ex);
/* The fd of BPF map `name`, -1 if absent. */
int bx_map_fd(const bx_exporter_t *ex, const char *name);
/* The fd of BPF program `name` when loaded, -1 otherwise. */
int bx_prog_fd(const bx_exporter_t *ex, const char *name);

#endif /* BX_EXPORTER_H */
