/*
 * elf_dynamic.c -- one ELF file's DT_NEEDED, DT_RPATH, DT_RUNPATH,
 * DT_SONAME and DF_1_NODEFLIB, with the class and machine a library it
 * loads must share.
 *
 * Read the way the loader reads them: the PT_DYNAMIC segment, and the
 * string table its DT_STRTAB names by address, found in the file
 * through the PT_LOAD segments.  The file is someone else's: every
 * offset and size is checked against the file before libelf reads it,
 * and every string must end inside the table.
 */
#include "elf_dynamic.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elf_probes.h"

/* Upper bound on DT_NEEDED entries: a real program has tens. */
enum { MAX_NEEDED = 4096 };

/* The string at offset off of the table, copied; NULL with err set when
 * it does not end inside the table (or out of memory). */
static char *table_string(const Elf_Data *strtab, uint64_t off, char *err, size_t errlen)
{
	const char *base = strtab->d_buf;
	if (off >= strtab->d_size || !memchr(base + off, '\0', strtab->d_size - off)) {
		snprintf(err, errlen, "corrupt ELF: a dynamic entry's string runs past its string table");
		return NULL;
	}
	char *s = strdup(base + off);
	if (!s)
		snprintf(err, errlen, "out of memory");
	return s;
}

/* The dynamic array (PT_DYNAMIC) of elf, or NULL: *none set when the file
 * has no PT_DYNAMIC (a static program), else err says why.  *interp: a
 * PT_INTERP comes before it (the linker puts it first). */
static Elf_Data *dynamic_array(Elf *elf, size_t phnum, uint64_t size, int *none, int *interp, char *err,
                               size_t errlen)
{
	*none = 0;
	*interp = 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph)) {
			snprintf(err, errlen, "corrupt ELF: unreadable program header (%s)", elf_errmsg(-1));
			return NULL;
		}
		*interp |= ph.p_type == PT_INTERP;
		if (ph.p_type != PT_DYNAMIC)
			continue;
		if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) {
			snprintf(err, errlen, "truncated or corrupt ELF: the dynamic section extends past the end of the file");
			return NULL;
		}
		Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_DYN);
		if (!d)
			snprintf(err, errlen, "corrupt ELF: unreadable dynamic section (%s)", elf_errmsg(-1));
		return d;
	}
	*none = 1;
	return NULL;
}

/* Fill out from the dynamic array.  0, or -1 with err. */
static int read_entries(Elf *elf, size_t phnum, uint64_t size, Elf_Data *dyn, pr_elf_dynamic_t *out, char *err,
                        size_t errlen)
{
	size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
	size_t n = entsize ? dyn->d_size / entsize : 0;
	uint64_t strtab_addr = 0, strsz = 0;
	size_t needed = 0;
	GElf_Dyn d;
	for (size_t i = 0; i < n && gelf_getdyn(dyn, (int)i, &d) && d.d_tag != DT_NULL; i++) {
		if (d.d_tag == DT_STRTAB)
			strtab_addr = d.d_un.d_ptr;
		else if (d.d_tag == DT_STRSZ)
			strsz = d.d_un.d_val;
		else if (d.d_tag == DT_FLAGS_1) {
			out->nodeflib = (d.d_un.d_val & DF_1_NODEFLIB) != 0;
			out->pie = (d.d_un.d_val & DF_1_PIE) != 0;
		} else if (d.d_tag == DT_NEEDED)
			needed++;
	}
	if (needed > MAX_NEEDED) {
		snprintf(err, errlen, "corrupt ELF: %zu DT_NEEDED entries", needed);
		return -1;
	}
	if (!needed && !strtab_addr)
		return 0; /* no strings to read */
	int64_t off = pr_elf_address_to_offset(elf, phnum, strtab_addr);
	if (off < 0 || !strsz || (uint64_t)off > size || strsz > size - (uint64_t)off) {
		snprintf(err, errlen, "corrupt ELF: the dynamic string table is not within the file");
		return -1;
	}
	Elf_Data *strtab = elf_getdata_rawchunk(elf, off, strsz, ELF_T_BYTE);
	if (!strtab) {
		snprintf(err, errlen, "corrupt ELF: unreadable dynamic string table (%s)", elf_errmsg(-1));
		return -1;
	}
	if (needed && !(out->needed = calloc(needed, sizeof *out->needed))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n && gelf_getdyn(dyn, (int)i, &d) && d.d_tag != DT_NULL; i++) {
		char **slot = d.d_tag == DT_NEEDED    ? &out->needed[out->needed_count]
		              : d.d_tag == DT_SONAME  ? &out->soname
		              : d.d_tag == DT_RPATH   ? &out->rpath
		              : d.d_tag == DT_RUNPATH ? &out->runpath
		                                      : NULL;
		if (!slot)
			continue;
		free(*slot); /* a tag given twice: the last one */
		if (!(*slot = table_string(strtab, d.d_un.d_val, err, errlen)))
			return -1;
		out->needed_count += d.d_tag == DT_NEEDED;
	}
	if (out->runpath) {
		free(out->rpath);
		out->rpath = NULL;
	}
	return 0;
}

int pr_elf_read_dynamic(int fd, pr_elf_dynamic_t *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	struct stat st;
	Elf *elf = pr_elf_begin_regular(fd, &st, err, errlen);
	if (!elf)
		return -1;
	int rc = -1, none = 0, interp = 0;
	GElf_Ehdr eh;
	size_t phnum = 0;
	uint64_t size = (uint64_t)st.st_size;
	Elf_Data *dyn = NULL;
	if (elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "not an ELF file");
	} else if (!gelf_getehdr(elf, &eh)) {
		snprintf(err, errlen, "truncated or corrupt ELF header (%s)", elf_errmsg(-1));
	} else if (elf_getphdrnum(elf, &phnum) != 0 ||
	           (phnum && (eh.e_phoff > size || (uint64_t)phnum * eh.e_phentsize > size - eh.e_phoff))) {
		snprintf(err, errlen, "truncated or corrupt ELF: program header table past the end of the file");
	} else if ((dyn = dynamic_array(elf, phnum, size, &none, &interp, err, errlen)) != NULL || none) {
		out->elf_class = eh.e_ident[EI_CLASS];
		out->machine = eh.e_machine;
		out->type = eh.e_type;
		out->has_dynamic = !none;
		out->has_interp = interp;
		rc = none ? 0 : read_entries(elf, phnum, size, dyn, out, err, errlen);
	}
	elf_end(elf);
	return rc;
}

void pr_elf_dynamic_free(pr_elf_dynamic_t *d)
{
	for (size_t i = 0; i < d->needed_count; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->soname);
	free(d->rpath);
	free(d->runpath);
	memset(d, 0, sizeof *d);
}
