/*
 * catalogue_d.h -- the probes a D provider file declares.
 *
 * Just enough of D to read provider blocks:
 *     provider NAME { probe a__b(type, type); ... };
 * Comments, preprocessor lines and #pragma are skipped; other top-level
 * declarations are skipped up to their ';'.
 */
#ifndef BP_CATALOGUE_D_H
#define BP_CATALOGUE_D_H

#include <stddef.h>

typedef struct bp_catalogue_probe {
	char *provider;
	char *name;   /* double-underscore form, as in ELF notes */
	int nargs;
	int line;     /* where it is declared */
} bp_catalogue_probe_t;

typedef struct bp_catalogue {
	bp_catalogue_probe_t *probes;
	size_t count;
} bp_catalogue_t;

/* Parse D text.  Returns 0, or -1 with "LINE: reason" in err. */
int bp_catalogue_parse(const char *text, size_t len, bp_catalogue_t *out, char *err, size_t errlen);
/* Read and parse a file.  Returns 0, or -1 with a reason (no path) in err. */
int bp_catalogue_load(const char *path, bp_catalogue_t *out, char *err, size_t errlen);
void bp_catalogue_free(bp_catalogue_t *c);

#endif /* BP_CATALOGUE_D_H */
