/*
 * usdt_maps.c -- the BPF object (usdt.h): loaded with only the enabled
 * groups' programs, its label maps filled before any program runs, and
 * its maps read as the snapshot's rows: every CPU's copy added, each key
 * decoded into labels (the metric table says how), label values past the
 * cap folded (known values never).
 */
#include "usdt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "billing_exporter.h"
#include "term_text.h"

/* bpftool's generated skeleton is not ISO C99: an empty struct for the
 * read-only data and the object embedded as one long string. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "billing_exporter.skel.h"
#pragma GCC diagnostic pop

static int verbose_libbpf;

/* --verbose: libbpf's log, multi-line (the verifier's) and holding paths
 * other users chose: each byte through the one escaper but the newlines
 * libbpf ends its lines with. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *text = NULL;
	(void)level;
	if (!verbose_libbpf)
		return 0; /* failures are reported once, by us, in one line */
	int n = vasprintf(&text, fmt, ap);
	if (n < 0)
		return n;
	flockfile(stderr);
	for (const char *c = text; *c; c++)
		if (*c == '\n')
			fputc('\n', stderr);
		else
			pr_put_escaped_byte(stderr, (unsigned char)*c);
	funlockfile(stderr);
	free(text);
	return n;
}

static const bx_map_desc_t *map_of_program(const char *prog)
{
	for (size_t i = 0; i < bx_map_count; i++)
		if (strcmp(bx_maps[i].probe, prog) == 0)
			return &bx_maps[i];
	return NULL;
}

/* The known label values into their maps (k_ARG), NUL-padded like a key
 * field, before any program runs: a fold keeps only what is found there.
 * 0, or libbpf's error (negative). */
static int fill_known(bx_usdt_t *u)
{
	for (const bx_known_map_t *k = bx_known_maps; k->map; k++) {
		struct bpf_map *map = bpf_object__find_map_by_name(u->skel->obj, k->map);
		int fd = map ? bpf_map__fd(map) : -1;
		if (fd < 0 || k->key_size > BX_LABEL_BYTES_MAX)
			return -EINVAL;
		for (size_t i = 0; i < k->count; i++) {
			char key[BX_LABEL_BYTES_MAX] = { 0 };
			unsigned char one = 1;
			memcpy(key, k->values[i], strnlen(k->values[i], k->key_size - 1));
			if (bpf_map_update_elem(fd, key, &one, BPF_ANY) != 0)
				return -errno;
		}
	}
	return 0;
}

/* --cgroup's directory into the programs' cgroup array, before any
 * program is attached.  0, or the kernel's error (negative). */
static int fill_cgroup(bx_usdt_t *u)
{
	__u32 slot = 0;
	int fd = bpf_map__fd(u->skel->maps.bx_cgroup);
	if (fd < 0 || bpf_map_update_elem(fd, &slot, &u->cgroup->fd, BPF_ANY) != 0)
		return fd < 0 ? -EINVAL : -errno;
	return 0;
}

/* Open and load the object, its programs made for multi-uprobe links
 * when u->multi.  libbpf's error (negative), or 0. */
static int open_and_load(bx_usdt_t *u)
{
	struct bpf_program *prog;
	u->skel = billing_exporter_bpf__open();
	if (!u->skel)
		return -errno;
	u->skel->rodata->bx_filter_uid = u->only_uid >= 0;
	u->skel->rodata->bx_only_uid = u->only_uid >= 0 ? (__u32)u->only_uid : 0;
	u->skel->rodata->bx_filter_cgroup = u->cgroup != NULL;
	for (size_t t = 0; t < u->targets->count; t++)
		u->skel->rodata->bx_filter_programs |= u->targets->items[t].program != 0;
	bpf_object__for_each_program(prog, u->skel->obj)
	{
		const bx_map_desc_t *m = map_of_program(bpf_program__name(prog));
		bpf_program__set_autoload(prog, m && (m->group & u->groups));
		if (u->multi)
			bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)BX_TRACE_UPROBE_MULTI);
	}
	int rc = billing_exporter_bpf__load(u->skel);
	if (rc == 0)
		rc = fill_known(u);
	if (rc == 0 && u->cgroup)
		rc = fill_cgroup(u);
	u->specs.map_fd = rc == 0 ? bpf_map__fd(u->skel->maps.bx_usdt_specs) : -1;
	if (rc != 0) {
		billing_exporter_bpf__destroy(u->skel);
		u->skel = NULL;
	}
	return rc;
}

/* BILLING_EXPORTER_UPROBES: "per-site" (a uprobe link per site, what a
 * kernel without multi-uprobe links gets: for tests and for comparing
 * costs) or "multi" (required); unset, multi-uprobe links where the
 * kernel has them.  1, 0 or -1 (unset); -2 for another value. */
static int uprobes_asked(void)
{
	const char *v = getenv("BILLING_EXPORTER_UPROBES");
	if (!v)
		return -1;
	return strcmp(v, "multi") == 0 ? 1 : strcmp(v, "per-site") == 0 ? 0
	                                                                : -2;
}

int bx_bpf_load(bx_usdt_t *u, int bpf_stats, char *err, size_t errlen)
{
	verbose_libbpf = u->verbose;
	libbpf_set_print(libbpf_print);
	u->stats_fd = -1;
	u->specs.map_fd = -1;
	int asked = uprobes_asked();
	if (asked == -2) {
		snprintf(err, errlen, "BILLING_EXPORTER_UPROBES is \"multi\" or \"per-site\", or unset");
		return -1;
	}
	int rc = bx_uprobe_multi_kernel();
	u->multi = rc > 0 && asked != 0;
	if (asked == 1 && rc == 0) {
		snprintf(err, errlen, "BILLING_EXPORTER_UPROBES=multi: this kernel has no multi-uprobe links that "
		                      "count every thread of a process");
		return -1;
	}
	if (rc >= 0)
		rc = open_and_load(u);
	if (rc != 0) {
		int e = -rc;
		if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
			snprintf(err, errlen, "cannot load the BPF programs: this kernel has no BTF (/sys/kernel/btf/vmlinux: "
			                      "CONFIG_DEBUG_INFO_BTF), which they read a firing task's executable with");
		else if (e == EPERM || e == EACCES)
			snprintf(err, errlen, "no permission to load BPF programs: run as root "
			                      "(or with " BX_CAPABILITIES ": docs/security.md)");
		else
			snprintf(err, errlen, "cannot load the BPF programs: %s (--verbose shows libbpf's log)",
			         strerror(e));
		return -1;
	}
	if (bpf_stats) {
		u->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (u->stats_fd < 0) {
			snprintf(err, errlen, "cannot turn on BPF run-time statistics: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

void bx_bpf_unload(bx_usdt_t *u)
{
	if (u->skel)
		billing_exporter_bpf__destroy(u->skel);
	u->skel = NULL;
	if (u->stats_fd >= 0)
		close(u->stats_fd);
	u->stats_fd = -1;
}

int bx_map_fd(const bx_usdt_t *u, const char *name)
{
	if (!u->skel) /* stats targets only: nothing loaded */
		return -1;
	struct bpf_map *map = bpf_object__find_map_by_name(u->skel->obj, name);
	return map ? bpf_map__fd(map) : -1;
}

struct bpf_program *bx_program(const bx_usdt_t *u, const char *probe)
{
	struct bpf_program *prog = u->skel ? bpf_object__find_program_by_name(u->skel->obj, probe) : NULL;
	return prog && bpf_program__autoload(prog) ? prog : NULL;
}

/* --- the maps read -------------------------------------------------------- */

/* A key's fields as labels.  In a fold map (`folded`), a string field of
 * 0xff bytes to its end and a non-zero int field are values folded in the
 * kernel: "other" (an int one known to be non-zero). */
static void decode_key(size_t mi, const unsigned char *key, int folded, bx_label_slot_t *slots, struct bx_row *r)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	char buf[BX_LABEL_TEXT];

	for (size_t f = 0; f < m->nfields; f++) {
		const bx_key_field_t *kf = &m->fields[f];
		int32_t v = 0;
		if (kf->kind != BX_KEY_STRING)
			memcpy(&v, key + kf->offset, sizeof v);
		r->ints[f] = v;
		if (folded && (kf->kind == BX_KEY_STRING ? key[kf->offset + kf->size - 1] != 0 : v != 0)) {
			r->labels[f] = BX_LABEL_OTHER;
			continue;
		}
		bx_label_text(kf->kind == BX_KEY_STRING ? (const char *)key + kf->offset : NULL, kf->size, v, buf);
		r->labels[f] = bx_label_admit(&slots[f], kf->known, kf->nknown, buf);
	}
}

/* Every row of BPF map `name` (a map or its fold map) appended to rows. */
static int read_map(const bx_usdt_t *u, size_t mi, const char *name, int folded, bx_label_slot_t *slots,
                    bx_rows_t *rows)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	int fd = bx_map_fd(u, name), ncpu = libbpf_num_possible_cpus();
	unsigned char key[256], next[256];
	size_t ncells = m->value_size / 8;
	if (fd < 0 || ncpu <= 0 || m->key_size > sizeof key || ncells > BX_MAX_CELLS)
		return -1;
	bx_u64 *percpu = calloc((size_t)ncpu, m->value_size);
	int rc = percpu ? 0 : -1, more = rc == 0 && bpf_map_get_next_key(fd, NULL, next) == 0;
	while (more) {
		struct bx_row *r = NULL;
		if (bpf_map_lookup_elem(fd, next, percpu) == 0 && !(r = bx_rows_add(rows))) {
			rc = -1;
			break;
		}
		for (int c = 0; r && c < ncpu; c++)
			for (size_t i = 0; i < ncells; i++)
				r->cells[i] += percpu[(size_t)c * ncells + i];
		if (r)
			decode_key(mi, next, folded, slots, r);
		memcpy(key, next, m->key_size);
		more = bpf_map_get_next_key(fd, key, next) == 0;
	}
	free(percpu);
	return rc;
}

int bx_usdt_rows(const bx_usdt_t *u, size_t mi, bx_label_slot_t *slots, bx_rows_t *rows)
{
	if (!u->skel)
		return 0;
	return read_map(u, mi, bx_maps[mi].map, 0, slots, rows) == 0 && read_map(u, mi, bx_maps[mi].fold_map, 1, slots, rows) == 0
	           ? 0
	           : -1;
}

void bx_usdt_dropped(const bx_usdt_t *u, uint64_t dropped[BX_MAP_COUNT])
{
	int fd = bx_map_fd(u, "m_dropped"), ncpu = libbpf_num_possible_cpus();
	uint64_t *percpu = fd >= 0 && ncpu > 0 ? calloc((size_t)ncpu, sizeof *percpu) : NULL;
	memset(dropped, 0, BX_MAP_COUNT * sizeof *dropped);
	for (uint32_t slot = 0; percpu && slot < BX_MAP_COUNT; slot++)
		if (bpf_map_lookup_elem(fd, &slot, percpu) == 0)
			for (int c = 0; c < ncpu; c++)
				dropped[slot] += percpu[c];
	free(percpu);
}

void bx_usdt_program_stats(const bx_usdt_t *u, const char *probe, uint64_t out[3])
{
	struct bpf_prog_info info;
	uint32_t len = sizeof info;
	struct bpf_program *prog = bx_program(u, probe);
	memset(&info, 0, sizeof info);
	if (prog)
		bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
	out[0] = info.run_cnt;
	out[1] = info.run_time_ns;
	out[2] = info.recursion_misses;
}
