/*
 * stale_semaphores.c -- a raised semaphore with no uprobe at its sites.
 *
 * Why the site bytes decide: a semaphore is raised by whoever attaches a
 * uprobe to the probe (the kernel through the uprobe's ref_ctr_offset, or
 * the tracer itself through /proc/PID/mem on older kernels).  While a
 * uprobe is registered for a site and wanted in this process, the kernel
 * keeps its breakpoint written in this process's copy of the page
 * (install_breakpoint, also on every later mmap), and the kernel raises
 * the counter in the same step.  So a counter above zero whose every site
 * still holds the compiler's nop has no uprobe behind it: nothing is
 * listening, yet every guarded argument is evaluated on every call.
 *
 * A tracer that raises the counter by hand does so a moment before it
 * attaches; the survey is therefore taken twice, 300 ms apart, and only
 * what is stale both times is reported or cleared.  Clearing re-reads
 * value and sites just before writing, writes 0, then re-reads the sites:
 * a uprobe that attached inside that window may have had its increment
 * overwritten, so one count per attached site is put back.  Nothing is
 * written unless semaphore_guard.c finds the counter where a semaphore
 * belongs: the notes are the word of whoever built the file.
 */
#include "stale_semaphores.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe_sites.h"
#include "semaphore_guard.h"

/* between the two surveys: a semaphore stale in both is reported */
#define BP_STALE_PAUSE_MS 300

int bp_semaphore_is_stale(const bp_semaphore_t *s)
{
	return s->value > 0 && s->attached == 0 && s->plain == s->sites;
}

static int survey_once(const pr_probe_set_t *set, bp_semaphore_survey_t *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < set->probe_count; i++) {
		const pr_probe_t *p = &set->probes[i];
		if (!p->runtime_semaphore)
			continue;
		bp_semaphore_t *s = NULL;
		for (size_t k = 0; k < out->count; k++)
			if (out->items[k].address == p->runtime_semaphore)
				s = &out->items[k];
		if (!s) {
			unsigned short value;
			if (pr_proc_read_memory(set->pid, p->runtime_semaphore, &value, sizeof value) != 0)
				return -1;
			bp_semaphore_t *items = realloc(out->items, (out->count + 1) * sizeof *items);
			if (!items)
				return -1;
			out->items = items;
			s = &items[out->count++];
			memset(s, 0, sizeof *s);
			s->probe = p;
			s->address = p->runtime_semaphore;
			s->value = value;
		}
		bp_site_kind_t kind = bp_site_read(set, p, -1);
		s->sites++;
		s->attached += bp_site_attached(kind) != 0;
		s->plain += bp_site_plain(kind) != 0;
	}
	/* keep the raised ones */
	size_t kept = 0;
	for (size_t k = 0; k < out->count; k++)
		if (out->items[k].value > 0)
			out->items[kept++] = out->items[k];
	out->count = kept;
	return 0;
}

int bp_semaphores_survey(const pr_probe_set_t *set, bp_semaphore_survey_t *out)
{
	bp_semaphore_survey_t first;
	if (survey_once(set, &first) != 0) {
		bp_semaphores_free(&first);
		return -1;
	}
	size_t stale = 0;
	for (size_t k = 0; k < first.count; k++)
		stale += bp_semaphore_is_stale(&first.items[k]) != 0;
	if (stale == 0) {
		*out = first;
		return 0;
	}
	struct timespec pause = { 0, BP_STALE_PAUSE_MS * 1000 * 1000 };
	nanosleep(&pause, NULL);
	if (survey_once(set, out) != 0) {
		bp_semaphores_free(&first);
		return -1;
	}
	/* stale now and 300 ms ago */
	for (size_t k = 0; k < out->count; k++) {
		bp_semaphore_t *s = &out->items[k];
		int before = 0;
		for (size_t j = 0; j < first.count; j++)
			if (first.items[j].address == s->address)
				before = bp_semaphore_is_stale(&first.items[j]);
		if (bp_semaphore_is_stale(s) && !before)
			s->plain = 0; /* not stale both times: count it as in use */
		out->stale += bp_semaphore_is_stale(s) != 0;
	}
	bp_semaphores_free(&first);
	return 0;
}

void bp_semaphores_free(bp_semaphore_survey_t *s)
{
	free(s->items);
	memset(s, 0, sizeof *s);
}

static int write_counter(pid_t pid, uint64_t addr, unsigned short value)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = pwrite(fd, &value, sizeof value, (off_t)addr);
	int saved = errno;
	close(fd);
	errno = saved;
	if (n == (ssize_t)sizeof value)
		return 0;
	if (n >= 0)
		errno = EIO;
	return -1;
}

/* Re-read the value and the sites of s now. */
static int reread(const pr_probe_set_t *set, const bp_semaphore_t *s, bp_semaphore_t *now)
{
	*now = *s;
	unsigned short value;
	if (pr_proc_read_memory(set->pid, s->address, &value, sizeof value) != 0)
		return -1;
	now->value = value;
	now->sites = now->attached = now->plain = 0;
	for (size_t i = 0; i < set->probe_count; i++) {
		const pr_probe_t *p = &set->probes[i];
		if (p->runtime_semaphore != s->address)
			continue;
		bp_site_kind_t kind = bp_site_read(set, p, -1);
		now->sites++;
		now->attached += bp_site_attached(kind) != 0;
		now->plain += bp_site_plain(kind) != 0;
	}
	return 0;
}

int bp_semaphore_clear(const pr_probe_set_t *set, const bp_semaphore_t *s, char *why, size_t n)
{
	bp_semaphore_t now;
	if (reread(set, s, &now) != 0)
		return -1;
	if (!bp_semaphore_is_stale(&now))
		return 0;
	/* checked just before the write: the process may have remapped */
	if (bp_semaphore_guard(set, s->probe, why, n) != 0)
		return -2;
	if (write_counter(set->pid, s->address, 0) != 0)
		return -1;
	bp_semaphore_t after;
	if (reread(set, s, &after) != 0)
		return -1;
	if (after.attached > 0 && after.value < after.attached) {
		/* a uprobe attached inside the window: give its count back */
		if (write_counter(set->pid, s->address, (unsigned short)after.attached) != 0)
			return -1;
		return 0;
	}
	return 1;
}
