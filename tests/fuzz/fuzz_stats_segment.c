/*
 * fuzz_stats_segment.c -- libFuzzer entry point for the stats segment
 * reader (tools/stats-reader/stats_read.c) and its description parser (tools/stats-reader/stats_layout.c):
 * billing-exporter reads segments other users
 * write.  Also run by replay_corpus.c in `meson test` (corpus-stats/).
 *
 * The input is the segment's beginning (header, description, label
 * dictionaries, rows: where the reader's checks are); the file behind it
 * is zeros up to the size the header claims, at most 4 MB, so a seed of a
 * few kilobytes stands for a whole segment.
 *
 * The description's hash is stamped afresh over whatever the input holds
 * there (as a writer stamps it), so a mutated description reaches the
 * parser instead of failing its hash check; an input with another hash
 * than its text's is a seed of its own, and the check is still reached
 * for the inputs whose description lies outside the file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stats_read.h"

/* The header's desc_hash set to the hash of the description it names,
 * when the header and the description lie within the file. */
static void stamp_description_hash(unsigned char *file, size_t total)
{
	struct bs_header h;
	if (total < sizeof h)
		return;
	memcpy(&h, file, sizeof h);
	if (h.desc_size < 2 || h.desc_offset < sizeof h || h.desc_offset > total || h.desc_size > total - h.desc_offset)
		return;
	h.desc_hash = bs_desc_hash((const char *)file + h.desc_offset, (size_t)h.desc_size - 1);
	memcpy(file + offsetof(struct bs_header, desc_hash), &h.desc_hash, sizeof h.desc_hash);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bs_segment_t seg;
	char err[256];
	uint64_t claimed = 0;

	if (size >= 32)
		memcpy(&claimed, data + 24, sizeof claimed); /* struct bs_header's size */
	size_t total = claimed > size && claimed <= (4u << 20) ? (size_t)claimed : size;
	/* An exact-size heap copy, so ASan sees any read past the end. */
	unsigned char *file = calloc(total ? total : 1, 1);
	if (!file)
		return 0;
	if (size)
		memcpy(file, data, size);
	stamp_description_hash(file, total);
	if (bs_read_mem(file, total, &seg, err, sizeof err) == 0) {
		for (int m = 0; m < BX_MAP_COUNT; m++)
			for (size_t r = 0; r < seg.nrows[m]; r++)
				(void)strlen(bs_row(&seg, m, r)->text[0]);
		/* the segment's own maps and families, as its description lays them out */
		for (size_t m = 0; m < seg.layout->nmaps; m++)
			for (size_t r = 0; r < seg.map_rows[m]; r++)
				for (size_t f = 0; f < seg.layout->maps[m].nfields; f++)
					(void)strlen(bs_map_row(&seg, m, r)->text[f]);
		for (size_t i = 0; i < seg.layout->nfamilies; i++) {
			const bs_lfamily_t *fam = &seg.layout->families[i];
			(void)strlen(fam->help);
			for (size_t k = 0; k < fam->nlabels; k++)
				(void)strlen(fam->labels[k].name);
		}
	} else {
		(void)strlen(err);
	}
	free(file);
	return 0;
}
