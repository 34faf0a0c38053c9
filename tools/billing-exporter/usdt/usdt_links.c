/*
 * usdt_links.c -- attach a BPF program to every site of one probe in one
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
#include "usdt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "billing/catalogue.h"
#include "billing_exporter.h"
#include "usdt_args.h"

/* BPF_LINK_CREATE's attributes for a multi-uprobe link (Linux 6.6: the
 * kernel's UAPI, stable); the installed linux/bpf.h may predate them. */
struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

static int link_create(int prog_fd, const char *path, const uint64_t *offsets, const uint64_t *ref_ctrs,
                       const uint64_t *cookies, uint32_t cnt, uint32_t pid)
{
	struct link_create_uprobe_multi attr;
	memset(&attr, 0, sizeof attr);
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = BX_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctrs;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = cnt;
	attr.pid = pid;
	return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
}

/* The errno of a multi-uprobe link on "/" (a directory: never made), 0
 * if one was made after all. */
static int probe_link(int prog_fd, uint32_t pid)
{
	uint64_t offset = 0;
	int fd = link_create(prog_fd, "/", &offset, NULL, NULL, 1, pid);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

int bx_uprobe_multi_kernel(void)
{
	/* r0 = 0; exit */
	struct bpf_insn insns[2];
	memset(insns, 0, sizeof insns);
	insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
	insns[0].dst_reg = BPF_REG_0;
	insns[1].code = BPF_JMP | BPF_EXIT;
	struct bpf_prog_load_opts opts;
	memset(&opts, 0, sizeof opts); /* LIBBPF_OPTS is a GNU statement expression */
	opts.sz = sizeof opts;
	opts.expected_attach_type = (enum bpf_attach_type)BX_TRACE_UPROBE_MULTI;
	int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &opts);
	if (prog < 0)
		return errno == EPERM || errno == EACCES ? -errno : 0;
	/* A kernel with multi-uprobe links gets as far as the path: not a
	 * regular file.  One whose PID filter counts a process checks the
	 * PID first, and refuses -1. */
	int has = probe_link(prog, 0) == EBADF && probe_link(prog, (uint32_t)-1) == EINVAL;
	close(prog);
	return has;
}

/* The spec ID of the sites of probe `declared` with argument string args:
 * the one given before, or a new one written to the map.  -1 with a
 * reason in err when args cannot be read as billing.d declares them, or
 * the map is full. */
static long spec_id(bx_usdt_specs_t *specs, const billing_probe_info_t *declared, const char *args, char *err,
                    size_t errlen)
{
	for (size_t i = 0; i < specs->count; i++)
		if (specs->keys[i].probe == declared->sdt_name && strcmp(specs->keys[i].args, args) == 0)
			return (long)i;
	struct bx_usdt_spec spec;
	if (bx_usdt_args_parse(args, declared, &spec, err, errlen) != 0)
		return -1;
	if (specs->count == BX_USDT_MAX_SPECS) {
		snprintf(err, errlen, "more than %d distinct argument specs", BX_USDT_MAX_SPECS);
		return -1;
	}
	struct bx_usdt_spec_key *keys = realloc(specs->keys, (specs->count + 1) * sizeof *keys);
	if (!keys) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	specs->keys = keys;
	uint32_t id = (uint32_t)specs->count;
	if (!(keys[id].args = strdup(args))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (bpf_map_update_elem(specs->map_fd, &id, &spec, BPF_ANY) != 0) {
		snprintf(err, errlen, "cannot write an argument spec: %s", strerror(errno));
		free(keys[id].args);
		return -1;
	}
	keys[id].probe = declared->sdt_name;
	return (long)specs->count++;
}

/* One uprobe link per site, through libbpf's public uprobe attach: 0, or
 * -1 with the first refusal in err and none of them kept. */
static int attach_per_site(struct bpf_program *prog, int pid, const char *path, const uint64_t *offsets,
                           const uint64_t *ref_ctrs, const uint64_t *cookies, size_t n, bx_usdt_link_t *link,
                           const char *probe, char *err, size_t errlen)
{
	link->sites = calloc(n ? n : 1, sizeof *link->sites);
	if (!link->sites) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct bpf_uprobe_opts opts;
		memset(&opts, 0, sizeof opts);
		opts.sz = sizeof opts;
		opts.ref_ctr_offset = (size_t)ref_ctrs[i];
		opts.bpf_cookie = cookies[i];
		link->sites[i] = bpf_program__attach_uprobe_opts(prog, pid > 0 ? pid : -1, path, (size_t)offsets[i], &opts);
		if (!link->sites[i]) {
			int e = errno;
			snprintf(err, errlen, "the kernel refused a uprobe on a site of %s: %s%s", probe, strerror(e),
			         e == EPERM || e == EACCES ? " (a uprobe through perf needs root or CAP_SYS_ADMIN)" : "");
			bx_usdt_link_close(link);
			return -1;
		}
		link->site_count++;
	}
	return 0;
}

int bx_usdt_attach(struct bpf_program *prog, int multi, bx_usdt_specs_t *specs, uint32_t target_cookie, int pid,
                   const bx_module_t *m, size_t probe, bx_usdt_link_t *link, char *err, size_t errlen)
{
	const billing_probe_info_t *declared = billing_catalogue_find(m->probes[probe]);
	memset(link, 0, sizeof *link);
	link->fd = -1;
	if (!declared) {
		snprintf(err, errlen, "billing.d declares no probe %s", m->probes[probe]);
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < m->site_count; i++)
		n += m->sites[i].probe == probe;
	uint64_t *offsets = calloc(n ? n : 1, sizeof *offsets);
	uint64_t *ref_ctrs = calloc(n ? n : 1, sizeof *ref_ctrs);
	uint64_t *cookies = calloc(n ? n : 1, sizeof *cookies);
	int rc = -1;
	if (!offsets || !ref_ctrs || !cookies) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < m->site_count; i++) {
		const bx_site_t *s = &m->sites[i];
		if (s->probe != probe)
			continue;
		if (s->offset < 0 || s->semaphore < 0) {
			snprintf(err, errlen, "a site or semaphore of %s lies outside the file's loaded segments",
			         m->probes[probe]);
			goto out;
		}
		long id = spec_id(specs, declared, s->args, err, errlen);
		if (id < 0)
			goto out;
		offsets[k] = (uint64_t)s->offset;
		ref_ctrs[k] = (uint64_t)s->semaphore;
		cookies[k++] = (uint64_t)target_cookie << 32 | (uint64_t)id;
	}
	if (!multi) {
		rc = attach_per_site(prog, pid, m->path, offsets, ref_ctrs, cookies, k, link, m->probes[probe], err,
		                     errlen);
		goto out;
	}
	link->fd = link_create(bpf_program__fd(prog), m->path, offsets, ref_ctrs, cookies, (uint32_t)k,
	                       pid > 0 ? (uint32_t)pid : 0);
	if (link->fd < 0)
		snprintf(err, errlen, "the kernel refused a multi-uprobe link for %s: %s", m->probes[probe],
		         strerror(errno));
	else
		rc = 0;
out:
	free(offsets);
	free(ref_ctrs);
	free(cookies);
	return rc;
}

void bx_usdt_link_close(bx_usdt_link_t *link)
{
	if (link->fd >= 0)
		close(link->fd);
	for (size_t i = 0; i < link->site_count; i++)
		bpf_link__destroy(link->sites[i]);
	free(link->sites);
	memset(link, 0, sizeof *link);
	link->fd = -1;
}

void bx_usdt_specs_free(bx_usdt_specs_t *specs)
{
	for (size_t i = 0; i < specs->count; i++)
		free(specs->keys[i].args);
	free(specs->keys);
	specs->keys = NULL;
	specs->count = 0;
}
