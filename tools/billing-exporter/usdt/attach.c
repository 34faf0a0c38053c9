/*
 * attach.c -- the BPF programs attached to the targets (usdt.h).
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
 * them (usdt_links.c), with the kernel's reference counter for each
 * site's semaphore: the kernel raises it while attached and lowers it
 * when the exporter exits, even by SIGKILL.
 */
#include "usdt.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "billing_exporter.h" /* bx_program_key */
#include "targets.h"
#include "report.h"
#include "target_modules.h" /* bx_module_has_probe, bx_target_has_probe */
#include "ticker.h"

static int add_link(bx_usdt_t *u, const bx_link_t *link)
{
	bx_link_t *links = realloc(u->links, (u->link_count + 1) * sizeof *links);
	if (!links)
		return -1;
	u->links = links;
	links[u->link_count++] = *link;
	u->attached[link->map]++;
	return 0;
}

static void unlink_one(bx_usdt_t *u, bx_link_t *l)
{
	bx_usdt_link_close(&l->usdt);
	u->attached[l->map]--;
}

/* Detach every link of tg on the file (dev, ino). */
static void drop_file_links(bx_usdt_t *u, const bx_target_t *tg, unsigned long long dev, unsigned long long ino)
{
	size_t kept = 0;
	for (size_t i = 0; i < u->link_count; i++) {
		bx_link_t *l = &u->links[i];
		if (l->target == tg && l->dev == dev && l->ino == ino)
			unlink_one(u, l);
		else
			u->links[kept++] = *l;
	}
	u->link_count = kept;
}

/* Detach the links made since u->link_count was `mark`. */
static void drop_links(bx_usdt_t *u, size_t mark)
{
	while (u->link_count > mark)
		unlink_one(u, &u->links[--u->link_count]);
}

/* The cookie of tg's links: for a --binary program, what its program
 * files map to in bx_programs; 0 (no such filter) otherwise. */
static __u32 target_cookie(const bx_usdt_t *u, const bx_target_t *tg)
{
	return tg->program ? (__u32)(tg - u->targets->items) + 1 : 0;
}

/* tg's program files not in bx_programs yet put there, before any link of
 * tg counts a fire in their processes.  A file the map refuses (full, or
 * a program file of another target) is one line, and its processes are
 * not counted. */
static void file_programs(bx_usdt_t *u, bx_target_t *tg)
{
	int fd = bx_map_fd(u, "bx_programs");
	__u64 cookie = target_cookie(u, tg), other = 0;
	for (size_t i = 0; i < tg->program_count; i++) {
		bx_program_file_t *pf = &tg->programs[i];
		struct bx_program_key key = { pf->kdev, pf->kino };
		if (pf->filed)
			continue;
		if (bpf_map_lookup_elem(fd, &key, &other) == 0 && other != cookie) {
			bx_error("%s: a program file (device %llu:%llu, inode %llu) %s runs counts for %s already: not "
			         "counted again",
			         tg->label, pf->kdev >> 20, pf->kdev & 0xfffff, pf->kino, tg->binary,
			         other && other <= u->targets->count ? u->targets->items[other - 1].label : "another target");
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
static int attach_module(bx_usdt_t *u, const bx_target_t *tg, bx_module_t *mod, char *err, size_t errlen)
{
	size_t mark = u->link_count;
	for (size_t i = 0; i < bx_map_count; i++) {
		const bx_map_desc_t *m = &bx_maps[i];
		if (!(m->group & u->groups) || !bx_module_has_probe(mod, m->probe))
			continue;
		struct bpf_program *prog = bx_program(u, m->probe);
		size_t probe = 0;
		while (strcmp(mod->probes[probe], m->probe) != 0)
			probe++;
		bx_usdt_link_t link;
		char why[400];
		if (bx_usdt_attach(prog, u->multi, &u->specs, target_cookie(u, tg), tg->pid, mod, probe, &link, why,
		                   sizeof why) != 0) {
			snprintf(err, errlen, "%s: cannot attach %s in %s: %s", tg->label, m->probe, mod->path, why);
			drop_links(u, mark);
			return -1;
		}
		if (add_link(u, &(bx_link_t){ link, i, tg, mod->dev, mod->ino }) != 0) {
			bx_usdt_link_close(&link);
			drop_links(u, mark);
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
	bx_usdt_t *u;
} watcher;

/* Another target that has the file of mod (of tg) attached, when one of
 * the two is a --binary library: its links count every process mapping
 * the file, so the other's would count some fires twice (two programs'
 * links never count one process; a --pid's counts only its process,
 * which runs no --binary program: bx_targets_check_overlap).  NULL when
 * none. */
static const bx_target_t *counted_by_another(const bx_usdt_t *u, const bx_target_t *tg, const bx_module_t *mod)
{
	for (size_t t = 0; t < u->targets->count; t++) {
		const bx_target_t *o = &u->targets->items[t];
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
static void detach_idle(bx_usdt_t *u, bx_target_t *tg)
{
	bx_program_file_t gone;
	char path[4200];
	int fd = bx_map_fd(u, "bx_programs");
	while (tg->program && bx_program_target_take_idle(tg, u->idle_detach_s, &gone, path, sizeof path)) {
		struct bx_program_key key = { gone.kdev, gone.kino };
		drop_file_links(u, tg, gone.dev, gone.ino);
		if (gone.filed == 1)
			bpf_map_delete_elem(fd, &key);
		bx_error("%s: %s: no process has run it for %u s: detached", tg->label, path, u->idle_detach_s);
	}
}

static void discover_and_attach(bx_usdt_t *u)
{
	for (size_t t = 0; t < u->targets->count; t++) {
		bx_target_t *tg = &u->targets->items[t];
		if (!tg->binary || tg->skipped)
			continue;
		int found = bx_target_discover(tg);
		detach_idle(u, tg);
		if (found <= 0)
			continue;
		file_programs(u, tg);
		for (size_t j = 0; j < tg->module_count; j++) {
			bx_module_t *mod = &tg->modules[j];
			const bx_target_t *other = NULL;
			if (mod->attached)
				continue;
			char err[512];
			if (mod->probe_count == 0) {
				mod->attached = -1; /* that file carries no billing probe */
			} else if ((other = counted_by_another(u, tg, mod)) != NULL) {
				mod->attached = -1;
				bx_error("%s: %s is a file %s counts already: not attached again (it would count twice)",
				         tg->label, mod->path, other->label);
			} else if (attach_module(u, tg, mod, err, sizeof err) != 0) {
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
	bx_usdt_t *u = arg;
	while (!bx_ticker_wait(&watcher.ticks, 1000)) {
		pthread_mutex_lock(u->lock);
		discover_and_attach(u);
		pthread_mutex_unlock(u->lock);
	}
	return NULL;
}

int bx_attach_all(bx_usdt_t *u, int others, char *err, size_t errlen)
{
	int any_binary = 0;
	size_t skipped = 0;
	for (size_t t = 0; t < u->targets->count; t++) {
		bx_target_t *tg = &u->targets->items[t];
		size_t mark = u->link_count;
		for (size_t i = 0; i < bx_map_count; i++) {
			const bx_map_desc_t *m = &bx_maps[i];
			if ((m->group & u->groups) && !bx_target_has_probe(tg, m->probe))
				bx_error("%s: no %s probe, skipped", tg->label, m->probe);
		}
		file_programs(u, tg);
		for (size_t j = 0; j < tg->module_count; j++) {
			bx_module_t *mod = &tg->modules[j];
			if (mod->probe_count == 0) {
				mod->attached = -1;
				continue;
			}
			if (attach_module(u, tg, mod, err, errlen) == 0)
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
			drop_links(u, mark);
			for (size_t k = 0; k < tg->module_count; k++)
				tg->modules[k].attached = -1;
			tg->skipped = 1;
			skipped++;
			bx_error("%s: target skipped", err);
			break;
		}
		any_binary |= !tg->skipped && tg->binary && tg->binary[0] == '/';
	}
	if (skipped == u->targets->count && !others) {
		snprintf(err, errlen, "no target could be attached (see the lines above)");
		return -1;
	}
	if (any_binary && !watcher.running) {
		watcher.u = u;
		bx_ticker_init(&watcher.ticks);
		if (pthread_create(&watcher.thread, NULL, watch_binaries, u) != 0) {
			snprintf(err, errlen, "cannot start the thread that watches for --binary processes");
			bx_ticker_destroy(&watcher.ticks);
			return -1;
		}
		watcher.running = 1;
	}
	return 0;
}

void bx_detach_all(bx_usdt_t *u)
{
	if (watcher.running && watcher.u == u) {
		bx_ticker_stop(&watcher.ticks);
		pthread_join(watcher.thread, NULL);
		bx_ticker_destroy(&watcher.ticks);
		watcher.running = 0;
	}
	drop_links(u, 0);
	free(u->links);
	u->links = NULL;
	bx_usdt_specs_free(&u->specs);
}

void bx_bpf_close(bx_usdt_t *u)
{
	bx_detach_all(u);
	bx_bpf_unload(u);
}
