/*
 * kconfig.h -- read the running kernel's build configuration.
 */
#ifndef BP_KCONFIG_H
#define BP_KCONFIG_H

typedef struct kconfig {
	char *text;       /* the whole file; free() it */
	char source[300]; /* where it was read */
} kconfig_t;

/* 0, or -1 when no config is found. */
int bp_kconfig_load(kconfig_t *k);
/* 'y', 'm', or 'n' (also when absent). */
char bp_kconfig_value(const kconfig_t *k, const char *option);
/* What to say when bp_kconfig_load fails. */
const char *bp_kconfig_missing_text(void);

#endif /* BP_KCONFIG_H */
