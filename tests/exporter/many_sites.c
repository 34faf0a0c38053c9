/*
 * many_sites.c -- a program with SITES invoice-create probe sites (one
 * note and one uprobe each) and NOTES more notes of db-query-start, a
 * probe the exporter never attaches: what the exporter does with
 * thousands of sites (attach, count exactly, detach quickly) and with a
 * module of many notes (start-up).  SITES: a multiple of 1,000 up to
 * 10,000; NOTES: of 10,000 up to 100,000.
 *
 *   many_sites   prints "waiting pid PID"; on each line read from stdin,
 *                fires every invoice-create site once (amount 1, USD)
 *                and prints "fired N"; exits at end of input.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "billing/probes.h" /* before <sys/sdt.h>: semaphores */
#include <sys/sdt.h>

/* sys/sdt.h's own macros, used bare below, pass empty variadic arguments */
#if defined(__clang__)
#  pragma clang diagnostic ignored "-Wgnu-zero-variadic-macro-arguments"
#endif

#ifndef SITES
#  define SITES 5000
#endif
#ifndef NOTES
#  define NOTES 0
#endif

/* sys/sdt.h's macro under the semaphore, as probes.h's would be if the
 * compiler inlined each (it stops after a few hundred).  Every site the
 * same arguments (one argument spec), but its own code, which the
 * compiler cannot merge: the empty asm names __COUNTER__. */
#define SITE_1(n) \
  if (BILLING_INVOICE_CREATE_ENABLED()) { \
    __asm__ volatile("# site %c0" ::"i"(__COUNTER__)); \
    DTRACE_PROBE4(billing, invoice__create, (unsigned long long)(n), 1ull, 1ll, "USD"); \
  }
#define SITE_10(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n) SITE_1(n)
#define SITE_100(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n) SITE_10(n)
#define SITE_1000(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n) SITE_100(n)

/* a bare note: no semaphore, never fired (see main) */
#define NOTE_1(n) DTRACE_PROBE2(billing, db__query__start, __COUNTER__, "x");
#define NOTE_10(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n) NOTE_1(n)
#define NOTE_100(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n) NOTE_10(n)
#define NOTE_1000(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n) NOTE_100(n)
#define NOTE_10000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n) NOTE_1000(n)

static __attribute__((noinline)) void fire_all(uint64_t n)
{
	(void)n; /* unused in a build whose probes compile to nothing */
#if SITES >= 1000
	SITE_1000(0)
#endif
#if SITES >= 2000
	SITE_1000(1)
#endif
#if SITES >= 3000
	SITE_1000(2)
#endif
#if SITES >= 4000
	SITE_1000(3)
#endif
#if SITES >= 5000
	SITE_1000(4)
#endif
#if SITES >= 6000
	SITE_1000(5)
#endif
#if SITES >= 7000
	SITE_1000(6)
#endif
#if SITES >= 8000
	SITE_1000(7)
#endif
#if SITES >= 9000
	SITE_1000(8)
#endif
#if SITES >= 10000
	SITE_1000(9)
#endif
}

static __attribute__((noinline)) void notes(uint64_t n)
{
	(void)n;
#if NOTES >= 10000
	NOTE_10000(0)
#endif
#if NOTES >= 20000
	NOTE_10000(1)
#endif
#if NOTES >= 30000
	NOTE_10000(2)
#endif
#if NOTES >= 40000
	NOTE_10000(3)
#endif
#if NOTES >= 50000
	NOTE_10000(4)
#endif
#if NOTES >= 60000
	NOTE_10000(5)
#endif
#if NOTES >= 70000
	NOTE_10000(6)
#endif
#if NOTES >= 80000
	NOTE_10000(7)
#endif
#if NOTES >= 90000
	NOTE_10000(8)
#endif
#if NOTES >= 100000
	NOTE_10000(9)
#endif
}

int main(int argc, char **argv)
{
	char line[64];
	(void)argv;
	if (argc > 5) /* never: the notes are there to be read, not fired */
		notes((uint64_t)argc);
	printf("waiting pid %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		fire_all((uint64_t)SITES);
		printf("fired %d\n", SITES);
		fflush(stdout);
	}
	return 0;
}
