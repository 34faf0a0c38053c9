/*
 * label_cache.c -- the stats writer's first-level cache against what could
 * fool it (tests/stats/test_label_cache.py computes what each part must
 * leave in the segment).  Built with BILLING_STATS_FORCE.
 *
 *   label_cache THREADS N VALUES
 *
 * Each of THREADS threads, N rounds of:
 *   error(buffer, 1)    one stack buffer, its bytes "reuse-a" or "reuse-b"
 *                       (switching every 3 rounds): the same pointer
 *   error(buffer, 2)    one stack buffer, "prefix-same-xx-1" or "-2"
 *                       (every round): the bytes differ only at the end
 *   error(heap, 3)      one malloc()ed buffer, "heap-a" or "heap-b" (every 5)
 *   error(site k, 4..6) 24 call sites, each its own label object: 6 arrays
 *                       with 3 contents (two objects each), and a literal
 * then every line "AMOUNT DURATION" of the file VALUES as a payment-auth of
 * the literal gateway "gw-lit" (after one fire of amount 1, duration 1 that
 * caches it: the values are counted on the first level's hit), and again
 * of gateway "gw-buf" from a stack buffer (every fire a miss: the
 * key-bytes path counts them).
 * Prints "segment PID PATH".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing/probes.h"
#include "thread_fleet.h"

#define VALUES_MAX 4096

static long rounds;
static long long amounts[VALUES_MAX];
static unsigned long long durations[VALUES_MAX];
static size_t nvalues;

/* Two objects per content: equal bytes at different addresses. */
static const char site_x0[] = "site-x", site_x1[] = "site-x";
static const char site_y0[] = "site-y", site_y1[] = "site-y";
static const char site_z0[] = "site-z", site_z1[] = "site-z";

#define SITE(i, label, k) BILLING_ERROR((unsigned long long)(i), (label), 4 + (k) % 3)

static void many_sites(long i)
{
	SITE(i, site_x0, 0);
	SITE(i, site_x1, 1);
	SITE(i, site_y0, 2);
	SITE(i, site_y1, 3);
	SITE(i, site_z0, 4);
	SITE(i, site_z1, 5);
	SITE(i, "site-x", 6);
	SITE(i, site_x1, 7);
	SITE(i, site_y0, 8);
	SITE(i, "site-y", 9);
	SITE(i, site_z0, 10);
	SITE(i, site_z1, 11);
	SITE(i, site_x0, 12);
	SITE(i, site_x1, 13);
	SITE(i, "site-z", 14);
	SITE(i, site_y1, 15);
	SITE(i, site_z0, 16);
	SITE(i, site_z1, 17);
	SITE(i, site_x0, 18);
	SITE(i, "site-x", 19);
	SITE(i, site_y0, 20);
	SITE(i, site_y1, 21);
	SITE(i, "site-z", 22);
	SITE(i, site_z1, 23);
}

static void *thread_main(void *arg)
{
	char reuse[32], prefix[32], gateway[32];
	char *heap = malloc(32);

	(void)arg;
	if (!heap)
		return NULL;
	for (long i = 0; i < rounds; i++) {
		snprintf(reuse, sizeof reuse, "%s", (i / 3) % 2 ? "reuse-b" : "reuse-a");
		BILLING_ERROR((unsigned long long)i, reuse, 1);
		snprintf(prefix, sizeof prefix, "prefix-same-xx-%d", i % 2 ? 2 : 1);
		BILLING_ERROR((unsigned long long)i, prefix, 2);
		snprintf(heap, 32, "%s", (i / 5) % 2 ? "heap-b" : "heap-a");
		BILLING_ERROR((unsigned long long)i, heap, 3);
		many_sites(i);
	}
	free(heap);
	BILLING_PAYMENT_AUTH(0ULL, 1LL, "EUR", "gw-lit", 0, 1ULL);
	for (size_t v = 0; v < nvalues; v++)
		BILLING_PAYMENT_AUTH((unsigned long long)v, amounts[v], "EUR", "gw-lit", 0, durations[v]);
	snprintf(gateway, sizeof gateway, "gw-buf");
	BILLING_PAYMENT_AUTH(0ULL, 1LL, "EUR", gateway, 0, 1ULL);
	for (size_t v = 0; v < nvalues; v++)
		BILLING_PAYMENT_AUTH((unsigned long long)v, amounts[v], "EUR", gateway, 0, durations[v]);
	return NULL;
}

static int read_values(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (nvalues < VALUES_MAX && fscanf(f, "%lld %llu", &amounts[nvalues], &durations[nvalues]) == 2)
		nvalues++;
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	int threads;

	if (argc != 4 || (threads = atoi(argv[1])) < 1 || (rounds = atol(argv[2])) < 1 || read_values(argv[3]) != 0) {
		fprintf(stderr, "usage: label_cache THREADS N VALUES\n");
		return 2;
	}
	if (run_fleet(threads, thread_main) != 0)
		return 1;
	printf("segment %d %s\n", (int)getpid(), billing_stats_path());
	return 0;
}
