/*
 * attach.c -- load the BPF side and attach it to the targets.
 *
 * Only the programs of the enabled metric groups are loaded and attached,
 * and only to "-done" and event probes (durations travel in the -done
 * probe's duration_ns), so an always-on exporter costs one fire per
 * counted event.  A --pid target's modules are attached through paths that
 * reach the files it maps from here (/proc/PID/root/PATH for a process
 * in a container); a --binary target's files with pid -1, and a thread
 * attaches files that appear later (see watch_binaries).  The links of a
 * --binary program carry its USDT cookie, and its program files are in
 * the BPF map bx_programs before any of its links exists: the programs
 * count a fire of those links only in a process running one of them
 * (billing_exporter.bpf.c).  Each probe's sites in a file are attached
 * through one multi-uprobe link, or a uprobe per site on a kernel without
 * them (usdt_links.h), with the kernel's reference counter for each
 * site's semaphore: the kernel raises it while attached and lowers it
 * when the exporter exits, even by SIGKILL.
 */
#include "exporter.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "billing_exporter.h" /* bx_program_key */
#include "cgroup_filter.h"
#include "program_target.h" /* idle program files */
#include "stats_source.h"
#include "target_modules.h" /* bx_module_has_probe, bx_target_has_probe */
#include "term_text.h"
#include "ticker.h"

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
			bp_put_escaped_byte(stderr, (unsigned char)*c);
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
static int fill_known(bx_exporter_t *ex)
{
	for (const bx_known_map_t *k = bx_known_maps; k->map; k++) {
		struct bpf_map *map = bpf_object__find_map_by_name(ex->skel->obj, k->map);
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
static int fill_cgroup(bx_exporter_t *ex)
{
	__u32 slot = 0;
	int fd = bpf_map__fd(ex->skel->maps.bx_cgroup);
	if (fd < 0 || bpf_map_update_elem(fd, &slot, &ex->cgroup->fd, BPF_ANY) != 0)
		return fd < 0 ? -EINVAL : -errno;
	return 0;
}

/* Open and load the object, its programs made for multi-uprobe links
 * when ex->multi.  libbpf's error (negative), or 0. */
static int open_and_load(bx_exporter_t *ex)
{
	struct bpf_program *prog;
	ex->skel = billing_exporter_bpf__open();
	if (!ex->skel)
		return -errno;
	ex->skel->rodata->bx_filter_uid = ex->only_uid >= 0;
	ex->skel->rodata->bx_only_uid = ex->only_uid >= 0 ? (__u32)ex->only_uid : 0;
	ex->skel->rodata->bx_filter_cgroup = ex->cgroup != NULL;
	for (size_t t = 0; t < ex->target_count; t++)
		ex->skel->rodata->bx_filter_programs |= ex->targets[t].program != 0;
	bpf_object__for_each_program(prog, ex->skel->obj)
	{
		const bx_map_desc_t *m = map_of_program(bpf_program__name(prog));
		bpf_program__set_autoload(prog, m && (m->group & ex->groups));
		if (ex->multi)
			bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)BX_TRACE_UPROBE_MULTI);
	}
	int rc = billing_exporter_bpf__load(ex->skel);
	if (rc == 0)
		rc = fill_known(ex);
	if (rc == 0 && ex->cgroup)
		rc = fill_cgroup(ex);
	ex->specs.map_fd = rc == 0 ? bpf_map__fd(ex->skel->maps.bx_usdt_specs) : -1;
	if (rc != 0) {
		billing_exporter_bpf__destroy(ex->skel);
		ex->skel = NULL;
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

int bx_bpf_load(bx_exporter_t *ex, int bpf_stats, char *err, size_t errlen)
{
	verbose_libbpf = ex->verbose;
	libbpf_set_print(libbpf_print);
	ex->stats_fd = -1;
	ex->specs.map_fd = -1;
	int asked = uprobes_asked();
	if (asked == -2) {
		snprintf(err, errlen, "BILLING_EXPORTER_UPROBES is \"multi\" or \"per-site\", or unset");
		return -1;
	}
	int rc = bx_uprobe_multi_kernel();
	ex->multi = rc > 0 && asked != 0;
	if (asked == 1 && rc == 0) {
		snprintf(err, errlen, "BILLING_EXPORTER_UPROBES=multi: this kernel has no multi-uprobe links that "
		                      "count every thread of a process");
		return -1;
	}
	if (rc >= 0)
		rc = open_and_load(ex);
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
		ex->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (ex->stats_fd < 0) {
			snprintf(err, errlen, "cannot turn on BPF run-time statistics: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void unlink_one(bx_link_t *l)
{
	bx_usdt_link_close(&l->usdt);
}

/* The file each of ex->links attaches (its target, device and inode),
 * parallel to ex->links: what detaching an idle file looks for.  One
 * exporter per process, as the watcher's state. */
typedef struct link_file {
	const bx_target_t *target;
	unsigned long long dev, ino;
} link_file_t;
static link_file_t *link_files;

static int add_link(bx_exporter_t *ex, const bx_usdt_link_t *link, size_t map, const bx_target_t *tg,
                    const bx_module_t *mod)
{
	link_file_t *files = realloc(link_files, (ex->link_count + 1) * sizeof *files);
	if (!files)
		return -1;
	link_files = files;
	bx_link_t *links = realloc(ex->links, (ex->link_count + 1) * sizeof *links);
	if (!links)
		return -1;
	ex->links = links;
	files[ex->link_count] = (link_file_t){ tg, mod->dev, mod->ino };
	links[ex->link_count++] = (bx_link_t){ *link, map };
	ex->attached[map]++;
	return 0;
}

/* Detach every link of tg on the file (dev, ino). */
static void drop_file_links(bx_exporter_t *ex, const bx_target_t *tg, unsigned long long dev, unsigned long long ino)
{
	size_t kept = 0;
	for (size_t i = 0; i < ex->link_count; i++) {
		if (link_files[i].target == tg && link_files[i].dev == dev && link_files[i].ino == ino) {
			unlink_one(&ex->links[i]);
			ex->attached[ex->links[i].map]--;
			continue;
		}
		link_files[kept] = link_files[i];
		ex->links[kept++] = ex->links[i];
	}
	ex->link_count = kept;
}

/* Detach the links made since ex->link_count was `mark`. */
static void drop_links(bx_exporter_t *ex, size_t mark)
{
	while (ex->link_count > mark) {
		ex->link_count--;
		unlink_one(&ex->links[ex->link_count]);
		ex->attached[ex->links[ex->link_count].map]--;
	}
}

/* The cookie of tg's links: for a --binary program, what its program
 * files map to in bx_programs; 0 (no such filter) otherwise. */
static __u32 target_cookie(const bx_exporter_t *ex, const bx_target_t *tg)
{
	return tg->program ? (__u32)(tg - ex->targets) + 1 : 0;
}

/* tg's program files not in bx_programs yet put there, before any link of
 * tg counts a fire in their processes.  A file the map refuses (full, or
 * a program file of another target) is one line, and its processes are
 * not counted. */
static void file_programs(bx_exporter_t *ex, bx_target_t *tg)
{
	int fd = bpf_map__fd(ex->skel->maps.bx_programs);
	__u64 cookie = target_cookie(ex, tg), other = 0;
	for (size_t i = 0; i < tg->program_count; i++) {
		bx_program_file_t *pf = &tg->programs[i];
		struct bx_program_key key = { pf->kdev, pf->kino };
		if (pf->filed)
			continue;
		if (bpf_map_lookup_elem(fd, &key, &other) == 0 && other != cookie) {
			bx_error("%s: a program file (device %llu:%llu, inode %llu) %s runs counts for %s already: not "
			         "counted again",
			         tg->label, pf->kdev >> 20, pf->kdev & 0xfffff, pf->kino, tg->binary,
			         other && other <= ex->target_count ? ex->targets[other - 1].label : "another target");
			pf->filed = -1;
		} else if (bpf_map_update_elem(fd, &key, &cookie, BPF_ANY) != 0) {
			bx_error("%s: a program file (inode %llu) cannot be filtered for (%s, %d files at most): its "
			         "processes are not counted",
			         tg->label, pf->kino, strerror(errno), BX_MAX_PROGRAM_FILES);
			pf->filed = -1;
		} else {
			pf->filed = 1;
		}
	}
}

/* Attach every enabled probe module mod carries (pid -1: every process
 * mapping the file), its links carrying tg's cookie.  0, or -1 with a
 * reason in err and nothing of mod attached. */
static int attach_module(bx_exporter_t *ex, const bx_target_t *tg, bx_module_t *mod, char *err, size_t errlen)
{
	size_t mark = ex->link_count;
	for (size_t i = 0; i < bx_map_count; i++) {
		const bx_map_desc_t *m = &bx_maps[i];
		if (!(m->group & ex->groups) || !bx_module_has_probe(mod, m->probe))
			continue;
		struct bpf_program *prog = bpf_object__find_program_by_name(ex->skel->obj, m->probe);
		size_t probe = 0;
		while (strcmp(mod->probes[probe], m->probe) != 0)
			probe++;
		bx_usdt_link_t link;
		char why[400];
		if (bx_usdt_attach(prog, ex->multi, &ex->specs, target_cookie(ex, tg), tg->pid, mod, probe, &link, why,
		                   sizeof why) != 0) {
			snprintf(err, errlen, "%s: cannot attach %s in %s: %s", tg->label, m->probe, mod->path, why);
			drop_links(ex, mark);
			return -1;
		}
		if (add_link(ex, &link, i, tg, mod) != 0) {
			bx_usdt_link_close(&link);
			drop_links(ex, mark);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	mod->attached = 1;
	return 0;
}

/* --- --binary targets: files that appear later ------------------------------
 * A thread looks through /proc once a second for processes running a
 * --binary PATH inside their own root from a file not attached yet (a
 * container started from a new image), or, for a program, mapping a
 * library with billing probes that is not (another copy of
 * libbillingprobes.so), and attaches to that file.  A restarted
 * container running the same files, or a new worker, needs nothing: the
 * uprobes sit on the files, the kernel places them in every process
 * mapping them, and the BPF filter knows the program file.  One exporter
 * per process: the state is this file's. */
static struct {
	pthread_t thread;
	int running;
	bx_ticker_t ticks;
	bx_exporter_t *ex;
} watcher;

/* Another target that has the file of mod (of tg) attached, when one of
 * the two is a --binary library: its links count every process mapping
 * the file, so the other's would count some fires twice (two programs'
 * links never count one process; a --pid's counts only its process,
 * which runs no --binary program: bx_targets_check_overlap).  NULL when
 * none. */
static const bx_target_t *counted_by_another(const bx_exporter_t *ex, const bx_target_t *tg, const bx_module_t *mod)
{
	for (size_t t = 0; t < ex->target_count; t++) {
		const bx_target_t *o = &ex->targets[t];
		int library = (tg->binary && !tg->program) || (o->binary && !o->program);
		for (size_t j = 0; o != tg && library && j < o->module_count; j++) {
			const bx_module_t *m = &o->modules[j];
			if (m->attached == 1 && m->dev == mod->dev && m->ino == mod->ino)
				return o;
		}
	}
	return NULL;
}

/* tg's program files no process has run for a while (an old image, the
 * file a rollout replaced) detached, their descriptors released and their
 * inodes out of the BPF filter; a process that runs one later finds it
 * as a file not seen before. */
static void detach_idle(bx_exporter_t *ex, bx_target_t *tg)
{
	bx_program_file_t gone;
	char path[4200];
	int fd = bpf_map__fd(ex->skel->maps.bx_programs);
	while (tg->program && bx_program_target_take_idle(tg, ex->idle_detach_s, &gone, path, sizeof path)) {
		struct bx_program_key key = { gone.kdev, gone.kino };
		drop_file_links(ex, tg, gone.dev, gone.ino);
		if (gone.filed == 1)
			bpf_map_delete_elem(fd, &key);
		bx_error("%s: %s: no process has run it for %u s: detached", tg->label, path, ex->idle_detach_s);
	}
}

static void discover_and_attach(bx_exporter_t *ex)
{
	for (size_t t = 0; t < ex->target_count; t++) {
		bx_target_t *tg = &ex->targets[t];
		if (!tg->binary || tg->skipped)
			continue;
		int found = bx_target_discover(tg);
		detach_idle(ex, tg);
		if (found <= 0)
			continue;
		file_programs(ex, tg);
		for (size_t j = 0; j < tg->module_count; j++) {
			bx_module_t *mod = &tg->modules[j];
			const bx_target_t *other = NULL;
			if (mod->attached)
				continue;
			char err[512];
			if (mod->probe_count == 0) {
				mod->attached = -1; /* that file carries no billing probe */
			} else if ((other = counted_by_another(ex, tg, mod)) != NULL) {
				mod->attached = -1;
				bx_error("%s: %s is a file %s counts already: not attached again (it would count twice)",
				         tg->label, mod->path, other->label);
			} else if (attach_module(ex, tg, mod, err, sizeof err) != 0) {
				mod->attached = -1; /* said once, not retried every second */
				bx_error("%s", err);
			} else {
				bx_error("%s: attached to %s (a file not seen before)", tg->label, mod->path);
			}
		}
	}
}

static void *watch_binaries(void *arg)
{
	bx_exporter_t *ex = arg;
	while (!bx_ticker_wait(&watcher.ticks, 1000)) {
		pthread_mutex_lock(&ex->lock);
		discover_and_attach(ex);
		pthread_mutex_unlock(&ex->lock);
	}
	return NULL;
}

int bx_attach_all(bx_exporter_t *ex, char *err, size_t errlen)
{
	int any_binary = 0;
	size_t skipped = 0;
	for (size_t t = 0; t < ex->target_count; t++) {
		bx_target_t *tg = &ex->targets[t];
		size_t mark = ex->link_count;
		for (size_t i = 0; i < bx_map_count; i++) {
			const bx_map_desc_t *m = &bx_maps[i];
			if ((m->group & ex->groups) && !bx_target_has_probe(tg, m->probe))
				bx_error("%s: no %s probe, skipped", tg->label, m->probe);
		}
		file_programs(ex, tg);
		for (size_t j = 0; j < tg->module_count; j++) {
			bx_module_t *mod = &tg->modules[j];
			if (mod->probe_count == 0) {
				mod->attached = -1;
				continue;
			}
			if (attach_module(ex, tg, mod, err, errlen) == 0)
				continue;
			if (tg->pid < 0 && tg->module_count > 1) {
				/* one file of a --binary (a container's): the
				 * watcher treats a file found later the same way */
				mod->attached = -1;
				bx_error("%s: file skipped", err);
				continue;
			}
			/* one hostile or odd target must not leave the others
			 * unwatched */
			drop_links(ex, mark);
			for (size_t k = 0; k < tg->module_count; k++)
				tg->modules[k].attached = -1;
			tg->skipped = 1;
			skipped++;
			bx_error("%s: target skipped", err);
			break;
		}
		any_binary |= !tg->skipped && tg->binary && tg->binary[0] == '/';
	}
	if (skipped == ex->target_count && !bx_stats_target_count(ex)) {
		snprintf(err, errlen, "no target could be attached (see the lines above)");
		return -1;
	}
	if (any_binary && !watcher.running) {
		watcher.ex = ex;
		bx_ticker_init(&watcher.ticks);
		if (pthread_create(&watcher.thread, NULL, watch_binaries, ex) != 0) {
			snprintf(err, errlen, "cannot start the thread that watches for --binary processes");
			bx_ticker_destroy(&watcher.ticks);
			return -1;
		}
		watcher.running = 1;
	}
	return 0;
}

void bx_bpf_close(bx_exporter_t *ex)
{
	if (watcher.running && watcher.ex == ex) {
		bx_ticker_stop(&watcher.ticks);
		pthread_join(watcher.thread, NULL);
		bx_ticker_destroy(&watcher.ticks);
		watcher.running = 0;
	}
	for (size_t i = 0; i < ex->link_count; i++)
		unlink_one(&ex->links[i]);
	free(ex->links);
	ex->links = NULL;
	free(link_files);
	link_files = NULL;
	bx_usdt_specs_free(&ex->specs);
	ex->link_count = 0;
	if (ex->skel)
		billing_exporter_bpf__destroy(ex->skel);
	ex->skel = NULL;
	if (ex->stats_fd >= 0)
		close(ex->stats_fd);
	ex->stats_fd = -1;
}

int bx_map_fd(const bx_exporter_t *ex, const char *name)
{
	if (!ex->skel) /* stats targets only: nothing loaded */
		return -1;
	struct bpf_map *map = bpf_object__find_map_by_name(ex->skel->obj, name);
	return map ? bpf_map__fd(map) : -1;
}

int bx_prog_fd(const bx_exporter_t *ex, const char *name)
{
	if (!ex->skel)
		return -1;
	struct bpf_program *prog = bpf_object__find_program_by_name(ex->skel->obj, name);
	return prog && bpf_program__autoload(prog) ? bpf_program__fd(prog) : -1;
}
