/*
 * workload_system.c -- scripts-workload's system mode (files, sleeps, page
 * faults, a CPU spin: the system views), park mode (threads asleep until
 * told: cswitch's off-CPU times) and --keep-cpus-busy (workload.c describes
 * them; expected.py holds their figures).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

/* --- system -------------------------------------------------------------- */

/* Burns CPU on CPU 0 (the only CPU the VM's perf timer samples) so
 * cpu_profile sees this function in its stacks. */
__attribute__((noinline)) static uint64_t workload_busy_spin(uint64_t ns)
{
	volatile uint64_t x = 0;
	uint64_t end = monotonic_ns() + ns;
	while (monotonic_ns() < end) {
		int i;
		for (i = 0; i < 10000; i++)
			x += (uint64_t)i;
	}
	return x;
}

int run_system(const char *path)
{
	static char block[8192];
	char missing[4096], dir[] = "/tmp/billing-probes-workload-XXXXXX", fresh[64];
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *pages;
	cpu_set_t cpu0;
	int i;

	/* Page faults are what this mode measures: no locking (mlockall's
	 * MCL_FUTURE would fault every new page in at mmap time). */
	munlockall();
	memset(block, 'b', sizeof block);
	if (!path) {
		if (!mkdtemp(dir)) {
			fprintf(stderr, "scripts-workload: cannot make a directory in /tmp: %s\n", strerror(errno));
			return 1;
		}
		snprintf(fresh, sizeof fresh, "%s/workload.dat", dir);
		path = fresh;
	}
	for (i = 0; i < 25; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
		if (fd < 0 || write(fd, block, sizeof block) != (ssize_t)sizeof block) {
			fprintf(stderr, "scripts-workload: cannot write %s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
	}
	snprintf(missing, sizeof missing, "%s.missing", path);
	for (i = 0; i < 5; i++) {
		int fd = open(missing, O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
	unlink(path);
	if (path == fresh)
		rmdir(dir);
	for (i = 0; i < 20; i++)
		sleep_ns(10 * MS);
	pages = mmap(NULL, (size_t)page * 512, PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED) {
		fprintf(stderr, "scripts-workload: mmap failed: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < 512; i++)
		pages[(size_t)i * (size_t)page] = 1;
	munmap(pages, (size_t)page * 512);
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	sched_setaffinity(0, sizeof cpu0, &cpu0); /* best effort */
	workload_busy_spin(1500 * MS);
	return 0;
}

/* --- park --------------------------------------------------------------- */

/* Two threads that block in read() on a pipe until the harness's "wake":
 * cswitch sees each switch out asleep and back in once woken, and the
 * harness stretches that off-CPU time in the script's own state, as no
 * test can wait hours (cases_system.py: case_cswitch_long). */
#define PARKED 2

static int park_pipe[2];
static pid_t parked_tid[PARKED];
static pthread_barrier_t parked;

static void *park(void *slot)
{
	char c;
	parked_tid[(intptr_t)slot] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&parked);
	while (read(park_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

int run_park(void)
{
	pthread_t t[PARKED];
	int i, rc = 0;
	if (pipe(park_pipe) != 0 || pthread_barrier_init(&parked, NULL, PARKED + 1) != 0) {
		fprintf(stderr, "scripts-workload: cannot make a pipe: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < PARKED; i++) {
		if (pthread_create(&t[i], NULL, park, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "scripts-workload: cannot start threads\n");
			return 1; /* the started ones wait at the barrier until exit */
		}
	}
	pthread_barrier_wait(&parked);
	printf("parked %d %d\n", (int)parked_tid[0], (int)parked_tid[1]);
	fflush(stdout);
	rc = wait_for_go();
	if (write(park_pipe[1], "ww", PARKED) != PARKED)
		rc = 1;
	for (i = 0; i < PARKED; i++)
		rc |= pthread_join(t[i], NULL);
	return rc;
}

/* --- keeping a timer alive --------------------------------------------- */

/* DTrace's tick-N (Oracle's DTrace for Linux: a cpu-clock perf event) does
 * not fire while its CPU idles in this VM, and tps.d prints its seconds
 * from a tick.  Which CPU carries the tick is DTrace's choice (a CI run
 * with only CPU 0 kept busy printed one second of three), so
 * --keep-cpus-busy spins one thread on every online CPU until exit. */
static void *spin_cpu(void *arg)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET((int)(intptr_t)arg, &one);
	pthread_setaffinity_np(pthread_self(), sizeof one, &one); /* best effort */
	for (;;)
		(void)workload_busy_spin(1000 * MS);
	return NULL;
}

int keep_cpus_busy(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	for (long cpu = 0; cpu < (n > 0 ? n : 1); cpu++) {
		pthread_t spinner;
		if (pthread_create(&spinner, NULL, spin_cpu, (void *)(intptr_t)cpu) != 0)
			return -1;
	}
	return 0;
}
