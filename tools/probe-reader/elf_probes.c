/*
 * elf_probes.c -- stapsdt notes of one ELF file, through libelf.
 *
 * libelf finds the sections and note headers; the descriptor bytes go to
 * sdt_note.c, the pure parser the fuzz target exercises.  Every size and
 * offset libelf hands back is checked against the file size first: a
 * truncated file must give an error, not a read past the end.
 */
#include "elf_probes.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "probe_set.h"

int64_t pr_elf_address_to_offset(Elf *elf, size_t phnum, uint64_t addr)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_filesz)
			return (int64_t)(addr - ph.p_vaddr + ph.p_offset);
	}
	return -1;
}

typedef struct elf_layout {
	Elf_Scn *notes[16]; /* .note.stapsdt sections (one in practice) */
	size_t note_count;
	uint64_t base_addr; /* sh_addr of .stapsdt.base, 0 when absent */
} elf_layout_t;

static int scan_sections(Elf *elf, off_t file_size, elf_layout_t *lay, char *err, size_t errlen)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		snprintf(err, errlen, "corrupt ELF: no section name table (%s)", elf_errmsg(-1));
		return -1;
	}
	memset(lay, 0, sizeof *lay);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh)) {
			snprintf(err, errlen, "corrupt ELF: unreadable section header (%s)", elf_errmsg(-1));
			return -1;
		}
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > (uint64_t)file_size || sh.sh_size > (uint64_t)file_size - sh.sh_offset)) {
			snprintf(err, errlen, "truncated or corrupt ELF: section %.40s extends past the end of the file", name);
			return -1;
		}
		if (strcmp(name, ".stapsdt.base") == 0)
			lay->base_addr = sh.sh_addr;
		else if (strcmp(name, ".note.stapsdt") == 0 && sh.sh_type == SHT_NOTE &&
		         lay->note_count < sizeof lay->notes / sizeof lay->notes[0])
			lay->notes[lay->note_count++] = scn;
	}
	if (elf_errno() != 0) {
		snprintf(err, errlen, "corrupt ELF: %s", elf_errmsg(-1));
		return -1;
	}
	return 0;
}

static int add_note(pr_probe_set_t *set, size_t module, Elf *elf, size_t phnum, const elf_layout_t *lay,
                    const unsigned char *desc, size_t len, int is64, int big_endian, int machine,
                    char *err, size_t errlen)
{
	pr_sdt_note_t note;
	char why[200];
	if (pr_sdt_note_parse(desc, len, is64, big_endian, &note, why, sizeof why) != 0) {
		snprintf(err, errlen, "malformed stapsdt note: %s", why);
		return -1;
	}
	pr_probe_t *p = pr_probe_set_add_probe(set);
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->module = module;
	p->provider = strdup(note.provider);
	p->name = strdup(note.name);
	p->arg_string = strdup(note.args);
	if (!p->provider || !p->name || !p->arg_string) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* An argument string past decoding (more than 12 specs) leaves the
	 * probe listed with unknown arguments (nargs -1): it is still there. */
	p->nargs = pr_sdt_args_parse_machine(note.args, machine, p->args, why, sizeof why);
	p->address = pr_sdt_adjust_address(note.pc, note.base, lay->base_addr);
	p->semaphore = pr_sdt_adjust_address(note.semaphore, note.base, lay->base_addr);
	p->address_offset = pr_elf_address_to_offset(elf, phnum, p->address);
	p->semaphore_offset = p->semaphore ? pr_elf_address_to_offset(elf, phnum, p->semaphore) : -1;
	p->traced = -1;
	return 0;
}

Elf *pr_elf_begin_regular(int fd, struct stat *st, char *err, size_t errlen)
{
	if (fstat(fd, st) != 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, S_ISDIR(st->st_mode) ? "is a directory, not an ELF file" : "not a regular file");
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf is out of date: %s", elf_errmsg(-1));
		return NULL;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		snprintf(err, errlen, "not an ELF file (%s)", elf_errmsg(-1));
	return elf;
}

int pr_elf_read_probes(int fd, pr_probe_set_t *set, size_t module, char *err, size_t errlen)
{
	struct stat st;
	Elf *elf = pr_elf_begin_regular(fd, &st, err, errlen);
	if (!elf)
		return -1;
	int rc = -1;
	if (elf_kind(elf) == ELF_K_AR) {
		snprintf(err, errlen, "an ar archive: give the linked program or shared library");
		goto out;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "not an ELF file");
		goto out;
	}
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh)) {
		snprintf(err, errlen, "truncated or corrupt ELF header (%s)", elf_errmsg(-1));
		goto out;
	}
	/* libelf quietly reports no sections when the table lies past the end
	 * of a truncated file: a missing-probes answer for a broken file. */
	uint64_t size = (uint64_t)st.st_size;
	size_t shnum = eh.e_shnum;
	if (eh.e_shoff == 0) {
		snprintf(err, errlen, "no section headers (sstrip'd?): stapsdt notes live in sections");
		goto out;
	}
	if (eh.e_shoff > size || (uint64_t)eh.e_shentsize > size - eh.e_shoff ||
	    (shnum && (uint64_t)shnum * eh.e_shentsize > size - eh.e_shoff)) {
		snprintf(err, errlen, "truncated or corrupt ELF: no section header table within the file");
		goto out;
	}
	if (eh.e_phnum && (eh.e_phoff > size || (uint64_t)eh.e_phnum * eh.e_phentsize > size - eh.e_phoff)) {
		snprintf(err, errlen, "truncated or corrupt ELF: program header table past the end of the file");
		goto out;
	}
	int is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	int big_endian = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	size_t phnum = 0;
	if (elf_getphdrnum(elf, &phnum) != 0) {
		snprintf(err, errlen, "corrupt ELF: bad program header table (%s)", elf_errmsg(-1));
		goto out;
	}
	elf_layout_t lay;
	if (scan_sections(elf, st.st_size, &lay, err, errlen) != 0)
		goto out;
	set->modules[module].has_note_section = lay.note_count > 0;

	for (size_t s = 0; s < lay.note_count; s++) {
		Elf_Data *data = elf_getdata(lay.notes[s], NULL);
		if (!data) {
			snprintf(err, errlen, "truncated or corrupt .note.stapsdt section (%s)", elf_errmsg(-1));
			goto out;
		}
		size_t pos = 0, name_off, desc_off;
		GElf_Nhdr nh;
		size_t next;
		while (pos < data->d_size && (next = gelf_getnote(data, pos, &nh, &name_off, &desc_off)) > 0) {
			const char *owner = (const char *)data->d_buf + name_off;
			if (nh.n_type == PR_SDT_NOTE_TYPE && nh.n_namesz == sizeof PR_SDT_NOTE_OWNER &&
			    memcmp(owner, PR_SDT_NOTE_OWNER, sizeof PR_SDT_NOTE_OWNER) == 0) {
				if (add_note(set, module, elf, phnum, &lay, (const unsigned char *)data->d_buf + desc_off,
				             nh.n_descsz, is64, big_endian, pr_sdt_machine_of_elf(eh.e_machine), err, errlen) != 0)
					goto out;
			}
			pos = next;
		}
		if (pos < data->d_size) {
			snprintf(err, errlen, "corrupt .note.stapsdt: a note header at offset %zu runs past the section", pos);
			goto out;
		}
	}
	rc = 0;
out:
	elf_end(elf);
	return rc;
}
