/*
 * semaphore_guard.c -- the checks before doctor writes a semaphore
 * (semaphore_guard.h): the ELF's sections and segments through libelf,
 * the process's mappings through /proc/PID/maps.
 */
#include "semaphore_guard.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

typedef struct mapping {
	uint64_t start, end, offset;
	char perms[8];
	unsigned int dev_major, dev_minor;
	unsigned long long inode;
} mapping_t;

/* The mapping of pid holding [addr, addr + len), whole.  0, or -1. */
static int find_mapping(pid_t pid, uint64_t addr, uint64_t len, mapping_t *out)
{
	char path[64], line[4400];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = -1;
	while (found != 0 && fgets(line, sizeof line, f)) {
		mapping_t m;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %llu", &m.start, &m.end, m.perms,
		           &m.offset, &m.dev_major, &m.dev_minor, &m.inode) != 7)
			continue;
		if (addr >= m.start && addr < m.end) {
			if (m.end - addr >= len) {
				*out = m;
				found = 0;
			} else {
				break; /* straddles two mappings */
			}
		}
	}
	fclose(f);
	return found;
}

static int same_file(const mapping_t *m, const pr_module_t *mod)
{
	return m->inode == mod->ino && m->dev_major == major((dev_t)mod->dev) &&
	       m->dev_minor == minor((dev_t)mod->dev);
}

/* The file behind mapping m of pid: the very inode mapped (map_files),
 * else the module's paths; only if it is the module's file. */
static int open_module(pid_t pid, const mapping_t *m, const pr_module_t *mod)
{
	char path[4200];
	const char *tries[3] = { path, mod->attach_path, mod->path };
	snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
	for (size_t k = 0; k < 3; k++) {
		if (!tries[k])
			continue;
		int fd = open(tries[k], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (unsigned long long)st.st_dev == mod->dev &&
		    (unsigned long long)st.st_ino == mod->ino)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

/* In the ELF at fd: is [addr, addr + 2) in .probes alone (writable, not
 * executable) and in a writable, non-executable PT_LOAD at file offset
 * want_offset?  NULL, or why not. */
static const char *elf_problem(int fd, uint64_t addr, int64_t want_offset)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return "libelf is out of date";
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return "its module is not an ELF file";
	const char *problem = NULL;
	size_t shstrndx, phnum, in_probes = 0, others = 0, loads = 0;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0 || elf_getphdrnum(elf, &phnum) != 0) {
		problem = "its module's ELF headers cannot be read";
		goto out;
	}
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh)) {
			problem = "its module's section headers cannot be read";
			goto out;
		}
		if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0 || addr + 2 <= sh.sh_addr ||
		    addr >= sh.sh_addr + sh.sh_size)
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".probes") == 0 && sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_WRITE) &&
		    !(sh.sh_flags & SHF_EXECINSTR) && addr >= sh.sh_addr && addr + 2 <= sh.sh_addr + sh.sh_size)
			in_probes++;
		else
			others++;
	}
	if (in_probes != 1 || others != 0) {
		problem = "its address is not inside its module's semaphore section (.probes, writable data)";
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || addr < ph.p_vaddr ||
		    addr + 2 > ph.p_vaddr + ph.p_filesz)
			continue;
		loads++;
		if (!(ph.p_flags & PF_W) || (ph.p_flags & PF_X) ||
		    (int64_t)(addr - ph.p_vaddr + ph.p_offset) != want_offset)
			problem = "the segment holding it is not writable data at the offset the notes give";
	}
	if (!problem && loads != 1)
		problem = "it is not inside exactly one loadable segment of its module";
out:
	elf_end(elf);
	return problem;
}

int bp_semaphore_guard(const pr_probe_set_t *set, const pr_probe_t *p, char *why, size_t n)
{
	const pr_module_t *mod = &set->modules[p->module];
	uint64_t at = p->runtime_semaphore;
	mapping_t sem, site;
	if (!set->is_process || !p->semaphore || !at || !p->runtime_address || p->semaphore_offset < 0) {
		snprintf(why, n, "no semaphore address in the process");
		return -1;
	}
	if (find_mapping(set->pid, at, 2, &sem) != 0) {
		snprintf(why, n, "no single mapping of the process holds it");
		return -1;
	}
	if (strcmp(sem.perms, "rw-p") != 0) {
		snprintf(why, n, "the mapping holding it is %s, not rw-p (writable, private data)", sem.perms);
		return -1;
	}
	if (!same_file(&sem, mod) || at - sem.start + sem.offset != (uint64_t)p->semaphore_offset) {
		snprintf(why, n, "the mapping holding it is not its module's file at the offset the notes give");
		return -1;
	}
	/* part of the program: its site in an executable mapping of the same
	 * file, at the same load bias as the semaphore */
	if (find_mapping(set->pid, p->runtime_address, 1, &site) != 0 || site.perms[2] != 'x' ||
	    !same_file(&site, mod) || at - p->semaphore != p->runtime_address - p->address) {
		snprintf(why, n, "its module is not loaded as code in the process (a data mapping of the file?)");
		return -1;
	}
	int fd = open_module(set->pid, &sem, mod);
	if (fd < 0) {
		snprintf(why, n, "its module's file cannot be opened to check its sections");
		return -1;
	}
	const char *problem = elf_problem(fd, p->semaphore, p->semaphore_offset);
	close(fd);
	if (problem) {
		snprintf(why, n, "%s", problem);
		return -1;
	}
	return 0;
}
