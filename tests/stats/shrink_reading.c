/*
 * shrink_reading.c -- a running writer's segment, mapped by a reading that
 * follows it, shrunk under that reading (tests/stats/test_corrupt.py).
 * Built with BILLING_STATS_FORCE: this process writes its own segment and
 * reads it with the segment reader.
 *
 *   shrink_reading    counts payments, reads its segment afresh, then
 *                     twice more after more payments (the first of them
 *                     maps the file, the second reads native cells from
 *                     it), then once more with the file cut at its native
 *                     buckets once its header is read; prints
 *                     {"shrink": {"rc", "error", "mapped", "rows_kept"}};
 *                     then touches its own mapping past the new end, a
 *                     fault outside any reading: the process must die of
 *                     it (SIGBUS), not go on.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "billing/probes.h"
#include "stats_read.h"

/* Payments whose amounts (1,000 to 50,000) and durations (1 to 50 ms)
 * spread over every native cell of their classic buckets, or one payment
 * in the middle of them: a reading of it reads ranges of cells that all
 * hold data, whose pages the reading before it found. */
static void pay(int spread)
{
	for (int i = 0; i < (spread ? 2000 : 1); i++) {
		double f = spread ? i / 2000.0 : 0.5, grow = 1.0;
		for (int k = 0; k < 100; k++)
			grow *= 1.0 + 3.912 * f / 100; /* about e^(3.912 f): 50 at f = 1 */
		BILLING_PAYMENT_AUTH(0x10000000000ULL + (unsigned long long)i, (long long)(1000 * grow), "EUR", "stripe-sim",
		                     0, (unsigned long long)(1000000 * grow));
	}
}

/* accept_fn: the file cut where its native buckets start (the slots
 * before them stay whole) */
static int cut(void *path, const struct bs_header *h, char *err, size_t errlen)
{
	if (truncate(path, (off_t)h->native_offset) == 0)
		return 0;
	snprintf(err, errlen, "truncate failed");
	return -1;
}

int main(void)
{
	bs_segment_t seg;
	char err[256] = "";
	memset(&seg, 0, sizeof seg);
	pay(1);
	const char *path = billing_stats_path();
	int fd = path ? open(path, O_RDONLY) : -1;
	if (fd < 0 || bs_read_fd(fd, &seg, err, sizeof err) != 0) {
		printf("{\"shrink\":{\"first\":\"%s\"}}\n", fd < 0 ? "no segment" : "refused");
		return 1;
	}
	pay(1);
	int rc = bs_read_fd(fd, &seg, err, sizeof err);
	pay(0);
	rc = rc ? rc : bs_read_fd(fd, &seg, err, sizeof err);
	int mapped = seg.map.at != NULL;
	pay(0);
	if (rc == 0)
		rc = bs_read_fd_if(fd, NULL, &seg, cut, (void *)path, err, sizeof err);
	size_t rows = 0;
	for (size_t m = 0; m < BS_MAX_MAPS; m++)
		rows += seg.map_rows[m];
	printf("{\"shrink\":{\"rc\":%d,\"error\":\"%s\",\"mapped\":%d,\"rows_kept\":%zu}}\n", rc, rc ? err : "", mapped,
	       rows);
	fflush(stdout);
	pay(1); /* the writer's own cells past the new end */
	close(fd);
	return 3;
}
