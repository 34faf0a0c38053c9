/*
 * loop_count.h -- the one argument of the bench and red-zone loops: how many
 * iterations.
 */
#ifndef TESTS_LOOP_COUNT_H
#define TESTS_LOOP_COUNT_H

#include <stdio.h>
#include <stdlib.h>

/* N from "PROG [N]" (DEFAULT without it); 0 after a usage line on stderr. */
static inline unsigned long long loop_count(int argc, char **argv, unsigned long long fallback)
{
	unsigned long long n = fallback;
	char *end;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [N]\n", argv[0]);
		return 0;
	}
	if (argc == 2) {
		n = strtoull(argv[1], &end, 10);
		if (*argv[1] == '\0' || *argv[1] == '-' || *end != '\0' || n == 0) {
			fprintf(stderr, "%s: N must be a positive integer, got '%s'\n", argv[0], argv[1]);
			return 0;
		}
	}
	return n;
}

#endif
