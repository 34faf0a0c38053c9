/*
 * catalogue_d.h -- the probes a D provider file declares.
 *
 * Just enough of D to read provider blocks:
 *     provider NAME { probe a__b(type, type); ... };
 * Comments, preprocessor lines and #pragma are skipped; other top-level
 * declarations are skipped up to their ';'.
 */
#ifndef PR_CATALOGUE_D_H
#define PR_CATALOGUE_D_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Argument widths are kept for the first 12 arguments (sys/sdt.h's limit). */
#define PR_CATALOGUE_MAX_ARGS 12

typedef struct pr_catalogue_probe {
	char *provider;
	char *name; /* double-underscore form, as in ELF notes */
	int nargs;
	int line; /* where it is declared; 0 for the built-in catalogue */
	/* Bytes of each argument as a probe site stores it (LP64: long long 8,
	 * int 4, any pointer 8); 0 when the type is not a base C type the
	 * parser knows (a typedef): then its width is not checked. */
	int arg_size[PR_CATALOGUE_MAX_ARGS];
} pr_catalogue_probe_t;

typedef struct pr_catalogue {
	pr_catalogue_probe_t *probes;
	size_t count;
} pr_catalogue_t;

/* Parse D text.  Returns 0, or -1 with "LINE: reason" in err. */
int pr_catalogue_parse(const char *text, size_t len, pr_catalogue_t *out, char *err, size_t errlen);
/* Read and parse a file.  Returns 0, or -1 with a reason (no path) in err. */
int pr_catalogue_load(const char *path, pr_catalogue_t *out, char *err, size_t errlen);
void pr_catalogue_free(pr_catalogue_t *c);
/* The probe named provider:name (ELF spelling; name NULL: the first of
 * provider), or NULL. */
const pr_catalogue_probe_t *pr_catalogue_find(const pr_catalogue_t *cat, const char *provider, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* PR_CATALOGUE_D_H */
