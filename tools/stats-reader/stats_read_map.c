/*
 * stats_read_map.c -- a running writer's segment, mapped read-only and
 * kept mapped from one reading to the next (stats_read_src.h): a scrape
 * copies a changed row's native cells from the mapping, without a system
 * call per range.  Only pages known to hold data are read there: a
 * mapping's read of a hole would fill it, in the writer's file; the rest
 * is read with pread(), and a page found holding data is known from then
 * on.  The file is another user's: its writer may shrink it while it is
 * read, and touching a page past its new end raises SIGBUS.  A reading of
 * a mapping is guarded: the fault ends that reading (refused, as
 * truncated) and nothing else.  A fault outside a guarded reading goes to
 * whatever handled SIGBUS before.
 */
#ifndef _DEFAULT_SOURCE
#  define _DEFAULT_SOURCE /* SA_NODEFER */
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "stats_read_src.h"

__thread bs_guard_t bs_guard_;

static struct sigaction before;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	bs_guard_t *g = &bs_guard_;
	const unsigned char *at = si->si_addr;
	if (g->on && at >= g->lo && at < g->hi) {
		g->on = 0;
		siglongjmp(g->jb, 1);
	}
	if ((before.sa_flags & SA_SIGINFO) && before.sa_sigaction) {
		before.sa_sigaction(sig, si, uc);
	} else if (!(before.sa_flags & SA_SIGINFO) && before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
		before.sa_handler(sig);
	} else {
		/* returning faults again, now under the disposition before */
		sigaction(SIGBUS, &before, NULL);
	}
}

static int installed = -1; /* sigaction's answer; -1: not asked */

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	/* NODEFER: a reading left by siglongjmp (no mask restored) leaves
	 * SIGBUS unblocked for the next */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	installed = sigaction(SIGBUS, &sa, &before);
}

#define PAGE 4096u

static int known(const bs_file_map_t *m, uint64_t page)
{
	return m->known[page / 8] >> (page % 8) & 1;
}

bs_file_map_t *bs_map_(bs_file_map_t *m, int fd, uint64_t dev, uint64_t ino, uint64_t size, uint64_t backed)
{
	if (!(m->at && m->dev == dev && m->ino == ino && m->size == size)) {
		bs_unmap_(m);
		if (installed == -1) /* one thread reads at a time */
			install();
		if (installed != 0 || size == 0 || size != (size_t)size)
			return NULL;
		unsigned char *bits = calloc((size_t)((size + 8 * PAGE - 1) / (8 * PAGE)), 1);
		void *at = bits ? mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
		if (at == MAP_FAILED) {
			free(bits);
			return NULL;
		}
		*m = (bs_file_map_t){ at, size, dev, ino, backed, bits };
	}
	if (backed < m->backed) /* a writer punched a hole: no page is known */
		memset(m->known, 0, (size_t)((size + 8 * PAGE - 1) / (8 * PAGE)));
	m->backed = backed;
	return m;
}

void bs_unmap_(bs_file_map_t *m)
{
	if (m->at)
		munmap((void *)m->at, (size_t)m->size);
	free(m->known);
	memset(m, 0, sizeof *m);
}

/* The end of at's page, or end if sooner. */
static uint64_t page_end(uint64_t at, uint64_t end)
{
	uint64_t next = (at / PAGE + 1) * PAGE;
	return next < end ? next : end;
}

int bs_src_cells_(const bs_src_t *s, uint64_t off, uint64_t *dst, uint64_t n)
{
	const bs_file_map_t *m = s->map;
	if (!m)
		return bs_src_get_(s, off, dst, n);
	if (off > m->size || n > m->size - off || off % 8 || n % 8)
		return -1;
	unsigned char *d = (unsigned char *)dst;
	for (uint64_t at = off, end = off + n; at < end;) {
		uint64_t upto = page_end(at, end);
		if (!s->fresh && known(m, at / PAGE)) {
			memcpy(d + (at - off), m->at + at, upto - at);
			s->work->bytes += upto - at;
			at = upto;
			continue;
		}
		/* the pages up to the next known one, by one pread */
		while (upto < end && (s->fresh || !known(m, upto / PAGE)))
			upto = page_end(upto, end);
		if (bs_src_get_(s, at, d + (at - off), upto - at) != 0)
			return -1;
		for (uint64_t c = at; c < upto; c += 8) {
			uint64_t v;
			memcpy(&v, d + (c - off), 8);
			if (v)
				m->known[c / PAGE / 8] |= (unsigned char)(1u << (c / PAGE % 8));
		}
		at = upto;
	}
	return 0;
}
