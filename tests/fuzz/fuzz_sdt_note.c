/*
 * fuzz_sdt_note.c -- libFuzzer entry point for the stapsdt note parser.
 *
 * The first byte picks the ELF flavour (bit 0: 64-bit, bit 1: big-endian),
 * whether the rest is a whole note descriptor or only an argument string
 * (bit 2), so both parsers are reached without the fuzzer having to
 * discover a valid provider and name first, and the architecture the
 * arguments are read for (bits 3-5: a BP_SDT_MACHINE_* value, modulo 5).  The same function runs
 * under replay_corpus.c in `meson test`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sdt_note.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	pr_sdt_arg_t args[PR_SDT_MAX_ARGS];

	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	const uint8_t *body = data + 1;
	size_t body_len = size - 1;

	if (flags & 4) {
		/* argument string only: NUL-terminate a copy */
		char *copy = malloc(body_len + 1);
		if (!copy)
			return 0;
		memcpy(copy, body, body_len);
		copy[body_len] = '\0';
		int n = pr_sdt_args_parse_machine(copy, (flags >> 3) % 5, args, err, sizeof err);
		for (int i = 0; i < n; i++)
			(void)strlen(pr_sdt_arg_type_name(&args[i]));
		free(copy);
		return 0;
	}

	/* A heap copy of exactly body_len bytes lets ASan catch over-reads. */
	unsigned char *desc = malloc(body_len ? body_len : 1);
	if (!desc)
		return 0;
	if (body_len)
		memcpy(desc, body, body_len);
	pr_sdt_note_t note;
	if (pr_sdt_note_parse(desc, body_len, flags & 1, (flags >> 1) & 1, &note, err, sizeof err) == 0) {
		int n = pr_sdt_args_parse_machine(note.args, (flags >> 3) % 5, args, err, sizeof err);
		for (int i = 0; i < n; i++) {
			(void)strlen(args[i].location);
			(void)strlen(pr_sdt_arg_kind_name(args[i].kind));
		}
		(void)pr_sdt_adjust_address(note.pc, note.base, note.pc ^ note.semaphore);
	} else {
		(void)strlen(err);
	}
	free(desc);
	return 0;
}
