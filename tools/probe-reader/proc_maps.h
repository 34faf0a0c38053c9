/*
 * proc_maps.h -- a live process: its mapped ELF files and its memory.
 * Private to the probe reader library.
 */
#ifndef PR_PROC_MAPS_H
#define PR_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_reader.h"

/* pr_probe_set_load_pid (probe_reader.h) and pr_proc_read_memory live
 * here: every ELF file pid maps, read into a set with run-time addresses
 * and semaphore values.  Errors: no such process, exited while being
 * read, permission denied. */

#endif /* PR_PROC_MAPS_H */
