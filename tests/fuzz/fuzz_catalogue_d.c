/*
 * fuzz_catalogue_d.c -- libFuzzer entry point for the .d provider parser
 * (tools/probe-reader/catalogue_d.c): `check --provider FILE.d` reads
 * whatever file it is given.  Also run by replay_corpus.c in `meson test`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalogue_d.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	pr_catalogue_t cat;
	/* An exact-size heap copy, so ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);
	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	if (pr_catalogue_parse(text, size, &cat, err, sizeof err) == 0) {
		for (size_t i = 0; i < cat.count; i++)
			(void)strlen(cat.probes[i].name);
		pr_catalogue_free(&cat);
	} else {
		(void)strlen(err);
	}
	free(text);
	return 0;
}
