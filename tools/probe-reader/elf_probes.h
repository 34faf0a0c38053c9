/*
 * elf_probes.h -- read the stapsdt notes of one ELF file with libelf.
 * Private to the probe reader library.
 */
#ifndef PR_ELF_PROBES_H
#define PR_ELF_PROBES_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "probe_reader.h"

/* Read the notes of the ELF open on fd into set as module `module`.
 * Returns 0 (also when the file has no .note.stapsdt: see
 * has_note_section), -1 with a one-line reason in err when the file is
 * not an ELF, is truncated or corrupt, or a note is malformed. */
int pr_elf_read_probes(int fd, pr_probe_set_t *set, size_t module, char *err, size_t errlen);

/* libelf's handle on the regular file open on fd (its fstat in *st), or
 * NULL with a one-line reason in err (a directory, a device, not an ELF
 * file). */
Elf *pr_elf_begin_regular(int fd, struct stat *st, char *err, size_t errlen);

/* A link-time address -> its file offset, through the PT_LOAD segments
 * (phnum of them); -1 when no segment holds it in the file. */
int64_t pr_elf_address_to_offset(Elf *elf, size_t phnum, uint64_t addr);

#endif /* PR_ELF_PROBES_H */
