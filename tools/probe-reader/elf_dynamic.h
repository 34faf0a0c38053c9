/*
 * elf_dynamic.h -- what one ELF file asks of the dynamic loader: the
 * libraries it needs, where to look for them, the name it answers to.
 * Private to the probe reader library.
 */
#ifndef PR_ELF_DYNAMIC_H
#define PR_ELF_DYNAMIC_H

#include <stddef.h>

typedef struct pr_elf_dynamic {
	int elf_class;   /* EI_CLASS: a library must share it */
	int machine;     /* e_machine: likewise */
	int type;        /* e_type: ET_EXEC, ET_DYN... */
	int has_dynamic; /* PT_DYNAMIC present (0: a static program) */
	int has_interp;  /* PT_INTERP present: a program, whose $ORIGIN is its real path's directory */
	char *soname;    /* DT_SONAME, NULL for none */
	char **needed;   /* DT_NEEDED, in the file's order */
	size_t needed_count;
	char *rpath;   /* DT_RPATH; NULL for none, and when DT_RUNPATH is there (the loader ignores it then) */
	char *runpath; /* DT_RUNPATH, NULL for none */
	int nodeflib;  /* DF_1_NODEFLIB: no ld.so.cache, no system directories */
	int pie;       /* DF_1_PIE: a program, which the loader refuses as a library */
} pr_elf_dynamic_t;

/* Read the dynamic section of the ELF open on fd, as the loader does:
 * PT_DYNAMIC and the string table it names by address (no section
 * headers needed).  0, or -1 with a one-line reason in err (not an ELF
 * file, truncated or corrupt).  Free *out either way. */
int pr_elf_read_dynamic(int fd, pr_elf_dynamic_t *out, char *err, size_t errlen);
void pr_elf_dynamic_free(pr_elf_dynamic_t *d);

#endif /* PR_ELF_DYNAMIC_H */
