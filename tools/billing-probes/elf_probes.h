/*
 * elf_probes.h -- read the stapsdt notes of one ELF file with libelf.
 * Private to the probe reader library.
 */
#ifndef BP_ELF_PROBES_H
#define BP_ELF_PROBES_H

#include <stddef.h>

#include "probe_reader.h"

/* Read the notes of the ELF open on fd into set as module `module`.
 * Returns 0 (also when the file has no .note.stapsdt: see
 * has_note_section), -1 with a one-line reason in err when the file is
 * not an ELF, is truncated or corrupt, or a note is malformed. */
int bp_elf_read_probes(int fd, bp_probe_set_t *set, size_t module, char *err, size_t errlen);

#endif /* BP_ELF_PROBES_H */
