/*
 * native_index.c -- bx_native_index_<quantity>() for the values on
 * stdin, one "QUANTITY VALUE" a line, printed back with the index; first
 * each quantity's schema and range (test_native_index.py compares them
 * with billing.d and every index with the exact one).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing_metrics_layout.h"

int main(void)
{
	char name[64];
	char value[32];

	printf("native duration_ns %d %d %d\n", BX_DURATION_NS_NATIVE_SCHEMA, BX_DURATION_NS_NATIVE_LOW,
	       BX_DURATION_NS_NATIVE_HIGH);
	printf("native amount_minor %d %d %d\n", BX_AMOUNT_MINOR_NATIVE_SCHEMA, BX_AMOUNT_MINOR_NATIVE_LOW,
	       BX_AMOUNT_MINOR_NATIVE_HIGH);
	while (scanf("%63s %31s", name, value) == 2) {
		if (strcmp(name, "duration_ns") == 0) {
			uint64_t x = strtoull(value, NULL, 10);
			printf("%s %" PRIu64 " %u\n", name, x, bx_native_index_duration_ns(x));
		} else if (strcmp(name, "amount_minor") == 0) {
			int64_t x = strtoll(value, NULL, 10);
			printf("%s %" PRId64 " %u\n", name, x, bx_native_index_amount_minor(x));
		} else {
			fprintf(stderr, "native_index: unknown quantity %s\n", name);
			return 2;
		}
	}
	return 0;
}
