/*
 * stale_semaphores.h -- semaphores a live process holds raised while no
 * uprobe sits at any site they guard (a tracer killed with SIGKILL before
 * it lowered them), and lowering them safely.
 */
#ifndef BP_STALE_SEMAPHORES_H
#define BP_STALE_SEMAPHORES_H

#include <stddef.h>
#include <stdint.h>

#include "probe_reader.h"

typedef struct bp_semaphore {
	const pr_probe_t *probe; /* the first probe it guards */
	uint64_t address;        /* run-time address in the process */
	unsigned value;
	size_t sites, attached, plain;
} bp_semaphore_t;

typedef struct bp_semaphore_survey {
	bp_semaphore_t *items; /* raised semaphores only */
	size_t count;
	size_t stale; /* of which raised with every site plain */
} bp_semaphore_survey_t;

/* Is s stale: raised, every site it guards still the compiler's nop? */
int bp_semaphore_is_stale(const bp_semaphore_t *s);

/* Survey the raised semaphores of a process set (re-reading values and
 * sites now).  0, or -1 with errno. */
int bp_semaphores_survey(const pr_probe_set_t *set, bp_semaphore_survey_t *out);
void bp_semaphores_free(bp_semaphore_survey_t *s);

/* Lower the stale semaphore s to 0 if it is still stale now and
 * bp_semaphore_guard() allows the write; if a uprobe appeared meanwhile,
 * put back one count per attached site.  Returns 1 cleared, 0 left alone
 * (in use now), -1 with errno (write refused), -2 with the guard's
 * one-line reason in why (not where a semaphore belongs: left alone). */
int bp_semaphore_clear(const pr_probe_set_t *set, const bp_semaphore_t *s, char *why, size_t n);

#endif /* BP_STALE_SEMAPHORES_H */
