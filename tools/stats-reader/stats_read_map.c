/*
 * stats_read_map.c -- a running writer's segment, mapped read-only and
 * kept mapped from one reading to the next (stats_read_src.h): a scrape
 * then reads a changed cell where it is, without a system call per range
 * or a copy.  The file is another user's: its writer may shrink it while
 * it is read, and touching a page past its new end raises SIGBUS.  A
 * reading of a mapping is guarded: the fault ends that reading (refused,
 * as truncated) and nothing else.  A fault outside a guarded reading goes
 * to whatever handled SIGBUS before.
 */
#ifndef _DEFAULT_SOURCE
#  define _DEFAULT_SOURCE /* SA_NODEFER */
#endif
#include <signal.h>
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

const unsigned char *bs_map_(bs_file_map_t *m, int fd, uint64_t dev, uint64_t ino, uint64_t size)
{
	if (m->at && m->dev == dev && m->ino == ino && m->size == size)
		return m->at;
	bs_unmap_(m);
	if (installed == -1) /* one thread reads at a time */
		install();
	if (installed != 0 || size == 0 || size != (size_t)size)
		return NULL;
	void *at = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (at == MAP_FAILED)
		return NULL;
	*m = (bs_file_map_t){ at, size, dev, ino };
	return m->at;
}

void bs_unmap_(bs_file_map_t *m)
{
	if (m->at)
		munmap((void *)m->at, (size_t)m->size);
	memset(m, 0, sizeof *m);
}
