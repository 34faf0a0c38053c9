/*
 * usdt_multi.h -- attach every site of one probe in one file through a
 * single multi-uprobe link (Linux 6.6+, BPF_TRACE_UPROBE_MULTI).
 *
 * Why: libbpf 1.1 attaches a USDT probe as one uprobe perf event per
 * site, and the kernel detaches those one at a time, each waiting for RCU
 * grace periods (about 0.1 s per site: 1,000 sites took 107 s to detach,
 * with SIGTERM waiting).  A multi-uprobe link is attached and detached as
 * one, with one wait.  The BPF side is unchanged: the programs read their
 * arguments through libbpf's usdt.bpf.h, from the spec this file writes
 * into its spec map, named by the link's BPF cookie for each site.
 *
 * x86-64 only (the argument specs name x86 registers); elsewhere, or on a
 * kernel without multi-uprobes, attach.c uses libbpf's USDT attach.
 */
#ifndef BX_USDT_MULTI_H
#define BX_USDT_MULTI_H

#include <stddef.h>
#include <stdint.h>

#include "targets.h"

/* Argument strings and USDT cookies given a spec ID so far (the index). */
typedef struct bx_usdt_specs {
	char **args;
	uint64_t *cookies;
	size_t count;
} bx_usdt_specs_t;

/* The expected attach type a program needs for bx_usdt_multi_attach(). */
#define BX_TRACE_UPROBE_MULTI 48

/* 1 when this build can attach through multi-uprobes (x86-64). */
int bx_usdt_multi_built(void);

/* Attach program prog_fd to the sites of probe number `probe` in module
 * m (file path; pid > 0: fires of that process only), writing the specs
 * new to `specs` into the map specs_fd (specs_max entries), each with
 * the USDT cookie the program reads (bpf_usdt_cookie).  The link's file
 * descriptor, or -1 with a one-line reason in err (a site's argument
 * spec libbpf's usdt.bpf.h cannot express, or the kernel's refusal). */
int bx_usdt_multi_attach(int prog_fd, int specs_fd, size_t specs_max, bx_usdt_specs_t *specs, uint64_t cookie,
                         int pid, const char *path, const bx_module_t *m, size_t probe, char *err, size_t errlen);

void bx_usdt_specs_free(bx_usdt_specs_t *specs);

#endif /* BX_USDT_MULTI_H */
