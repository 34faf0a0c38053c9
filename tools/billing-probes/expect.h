/*
 * expect.h -- the probes a service promises: `check --expect NAME` and
 * `--expect-file FILE`, as globs over the catalogue.
 */
#ifndef BP_EXPECT_H
#define BP_EXPECT_H

#include <stddef.h>

#include "probe_reader.h"

typedef struct bp_expect {
	char **provider; /* glob, "*" when not given ("billing:payment-auth") */
	char **name;     /* glob in the ELF spelling */
	char **written;  /* as the user wrote it, for messages */
	size_t count;
} bp_expect_t;

/* Collect names and the lines of file (NULL: none) into e; each must
 * match a probe of cat.  0, or -1 with a one-line reason in err. */
int bp_expect_build(const char *const *names, size_t nnames, const char *file, const pr_catalogue_t *cat,
                    bp_expect_t *e, char *err, size_t errlen);
/* Does an expectation cover provider:name?  With no expectations (count
 * 0) every probe is expected. */
int bp_expect_covers(const bp_expect_t *e, const char *provider, const char *name);
void bp_expect_free(bp_expect_t *e);

#endif /* BP_EXPECT_H */
