/*
 * usdt_links.h -- attach a BPF program to every site of one probe in one
 * file, each site's argument spec (usdt_args.h) in the map the programs
 * read it from (bx_usdt_specs), its ID and the target's cookie in the
 * site's BPF cookie.
 *
 * Through one multi-uprobe link per probe and file where the kernel has
 * them (Linux 6.6), attached and detached as one.  Otherwise one uprobe
 * link per site through libbpf's public uprobe attach; the kernel detaches
 * those one at a time, each waiting for RCU grace periods (1,000 sites
 * took 131 s from SIGTERM to exit on Linux 6.18, 0.03 s through one
 * multi-uprobe link: bench/exporter_sites_bench.py with
 * BILLING_EXPORTER_UPROBES=per-site), which is why the multi-uprobe link
 * is used wherever it can be.  Either way the kernel raises each
 * site's semaphore through its reference counter (ref_ctr_offset) while
 * attached and lowers it when the link goes, even when the exporter is
 * killed.  No library's internal layout is involved: the spec is ours
 * (billing_exporter.h), the link attributes are the kernel's UAPI.
 */
#ifndef BX_USDT_LINKS_H
#define BX_USDT_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "target_types.h"

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

#endif /* BX_USDT_LINKS_H */
