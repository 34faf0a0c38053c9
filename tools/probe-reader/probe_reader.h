/*
 * probe_reader.h -- the USDT probes of an ELF file or of a live process,
 * and the catalogue they are checked against.  The one public header of
 * the probe reader library (meson: probe_reader_dep), shared by
 * billing-probes (every command) and billing-exporter, so
 * every tool agrees on what a program or a process carries.
 *
 * Reading:
 *
 *     pr_probe_set_t set;
 *     char err[256];
 *     if (pr_probe_set_load("1234", &set, err, sizeof err) != 0)   // or a path
 *             fprintf(stderr, "1234: %s\n", err);                    // one line
 *     for (size_t i = 0; i < set.probe_count; i++) {
 *             const pr_probe_t *p = &set.probes[i];
 *             // p->provider, p->name ("payment__auth"), p->nargs, p->args[],
 *             // set.modules[p->module].path, p->runtime_address, p->traced
 *     }
 *     pr_probe_set_free(&set);
 *
 * A spec of digits that is not a file is a PID: then every ELF file the
 * process maps is read (executable and libraries; one probe may sit in
 * several modules), run-time addresses are computed from /proc/PID/maps
 * and each semaphore's value is read from the process's memory.  Errors
 * come back as one line without the spec ("permission denied", "no such
 * process", "not an ELF file (...)"); the caller prefixes what it read.
 * A mapped ELF file that cannot be opened or read does not fail a
 * process: it is named in set.unreadable, for the caller to report
 * (files that are not ELF, such as locale archives, are skipped).
 *
 * The catalogue: pr_catalogue_builtin() gives the probes of billing.d as
 * this library was built (no file needed); pr_catalogue_load() reads any
 * .d provider file.  Names are in the ELF spelling ("payment__auth");
 * pr_probe_name_to_elf() turns the D spelling ("payment-auth") into it.
 *
 * Layers, each calling only those below it:
 *     probe_target.c   file or PID -> a probe set
 *     needed_libs.c    the libraries a file loads, found as ld.so does
 *                      (ld_search.c the search, ld_cache.c /etc/ld.so.cache,
 *                      elf_dynamic.c a file's dynamic section)
 *     binary_scan.c    the processes running a path inside their own root
 *     proc_maps.c      /proc/PID/maps, memory reads
 *     elf_probes.c     one ELF file's .note.stapsdt, through libelf
 *     probe_set.c      the container (modules, probes)
 *     sdt_note.c       note descriptors and argument specs, from bytes
 *     catalogue_d.c, catalogue_builtin.c   the catalogue
 */
#ifndef PR_PROBE_READER_H
#define PR_PROBE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "catalogue_d.h"
#include "sdt_note.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pr_probe {
	char *provider;
	char *name;       /* ELF spelling: "request__start" */
	char *arg_string; /* as in the note, "" for none */
	int nargs;        /* -1: the argument string could not be split (unknown) */
	pr_sdt_arg_t args[PR_SDT_MAX_ARGS];
	uint64_t address;         /* probe site, link-time address after .stapsdt.base adjustment */
	uint64_t semaphore;       /* link-time address, 0 for none */
	int64_t address_offset;   /* file offset of the site, -1 when outside every PT_LOAD */
	int64_t semaphore_offset; /* file offset of the semaphore, -1 likewise */
	/* Filled for process targets only. */
	uint64_t runtime_address;   /* 0 when unknown */
	uint64_t runtime_semaphore; /* 0 when none or unknown */
	int traced;                 /* -1 unknown / not a process, 0 no, 1 yes */
	unsigned semaphore_value;
	size_t module; /* index into pr_probe_set_t.modules */
} pr_probe_t;

typedef struct pr_module {
	char *path;           /* as the user or /proc/PID/maps names it */
	int has_note_section; /* .note.stapsdt present (possibly empty) */
	/* The file read: its device and inode (one file reached by two paths,
	 * e.g. through two containers' roots, is one module to attach to). */
	unsigned long long dev, ino;
	/* A path in this tool's own mount namespace reaching that same inode,
	 * for a uprobe: path itself, or /proc/PID/root/PATH for a process in
	 * another mount namespace (a container); NULL when neither does. */
	char *attach_path;
	/* A library a file loads (pr_probe_set_load_needed): the DT_NEEDED
	 * name it was found for, and the path of the file naming it.  NULL
	 * for a file the caller named or a process maps. */
	char *needed_name;
	char *needed_by;
} pr_module_t;

/* A DT_NEEDED library the dynamic loader would not load as this reader
 * finds it (pr_probe_set_load_needed): its probes are not in the set. */
typedef struct pr_missing_library {
	char *name;      /* as DT_NEEDED writes it */
	char *needed_by; /* the path of the file naming it */
	char *why;       /* one line: where it was looked for, or what is wrong */
} pr_missing_library_t;

/* The probes of one target: a file, or every module a process maps. */
typedef struct pr_probe_set {
	const char *spec; /* what the caller named (not copied) */
	int is_process;
	int pid;
	pr_module_t *modules;
	size_t module_count;
	pr_probe_t *probes;
	size_t probe_count;
	/* Process targets: mapped ELF files whose probes could not be read
	 * ("PATH: why", one line each); their probes are missing above. */
	char **unreadable;
	size_t unreadable_count;
	/* pr_probe_set_load_needed: the libraries not found. */
	pr_missing_library_t *missing;
	size_t missing_count;
} pr_probe_set_t;

/* --- loading ------------------------------------------------------------- */

/* A file path, or a PID when spec is all digits and no such file exists.
 * Returns 0, or -1 with a one-line reason in err.  Free the set either way. */
int pr_probe_set_load(const char *spec, pr_probe_set_t *set, char *err, size_t errlen);
/* One ELF file; a set may take several (call pr_probe_set_add_file on a
 * zeroed set for each), e.g. a program and the libraries it will load. */
int pr_probe_set_add_file(pr_probe_set_t *set, const char *path, char *err, size_t errlen);
/* Every module of a live process, with run-time addresses and semaphores. */
int pr_probe_set_load_pid(pid_t pid, pr_probe_set_t *set, char *err, size_t errlen);

/* The shared libraries the ELF files of sets[0..nsets) load, into out
 * (zeroed here): their DT_NEEDED entries, recursively and breadth first,
 * each file once, found as glibc's dynamic loader finds them: a name
 * with a '/' as a path; else DT_RPATH of the file naming it and of the
 * files that loaded that one (when it has no DT_RUNPATH),
 * LD_LIBRARY_PATH of this process, its DT_RUNPATH, /etc/ld.so.cache, the
 * system directories (the last two unless DF_1_NODEFLIB); $ORIGIN, $LIB
 * and $PLATFORM expanded; a file of another class or machine skipped.
 * A set-id program is searched as the loader does when another user runs
 * it: no LD_LIBRARY_PATH, no path holding a '$'.  Process sets are
 * skipped (their libraries are mapped: pr_probe_set_load_pid).  A name
 * that a file of sets answers to (its path, its DT_SONAME) or a file
 * already in sets is not loaded again.  Each library is a module with
 * needed_name and needed_by; one that cannot be found (or where the
 * loader would pick a copy for particular CPUs, glibc-hwcaps) is in
 * out->missing, one found but unreadable in out->unreadable.  0, or -1
 * with a one-line reason in err (out of memory, a file of sets that
 * changed or whose dynamic section is corrupt). */
int pr_probe_set_load_needed(const pr_probe_set_t *sets, size_t nsets, pr_probe_set_t *out, char *err, size_t errlen);

/* Is the ELF file at path a program (what the kernel execs: ET_EXEC, a
 * PIE, as DF_1_PIE or a PT_INTERP without a DT_SONAME says) rather than a shared library the loader maps?  1 a program,
 * 0 a library, -1 with a one-line reason in err. */
int pr_elf_is_program(const char *path, char *err, size_t errlen);

/* Add to dst the modules of src it lacks (one file: same device and
 * inode, whatever the path) with their probes, e.g. the processes of one
 * service read one by one.  0, or -1 when out of memory. */
int pr_probe_set_merge(pr_probe_set_t *dst, const pr_probe_set_t *src);

/* --- processes running a path inside their own root -------------------- */

/* A file some process runs or maps from PATH inside its own root. */
typedef struct pr_binary_file {
	int pid;              /* one process mapping it */
	char root_path[4200]; /* "/proc/PID/root" PATH: reaches it from here */
	/* the file mapped (through /proc/PID/map_files: on overlayfs the
	 * layer's file, where a uprobe lands), and as stat shows it through
	 * root_path (overlayfs: the merged view) */
	unsigned long long dev, ino, path_dev, path_ino;
} pr_binary_file_t;

/* 1 when the caller has the file (dev, ino) already. */
typedef int (*pr_binary_known_fn)(unsigned long long dev, unsigned long long ino, void *ctx);
/* A file not known yet: 0, or -1 to stop the scan (out of memory). */
typedef int (*pr_binary_found_fn)(const pr_binary_file_t *file, void *ctx);

/* Look through /proc for processes (not the caller) that run or map the
 * absolute path inside their own root (a process in a container: the
 * path as the container sees it).  found is called for each file that
 * known (may be NULL) does not know, once per process mapping it: known
 * should say yes to a file found before.  Returns the number of processes
 * mapping the path, known files or not; -1 when found stopped the scan.
 * Matched by the path inside the process's root, then by the inode it
 * maps; paths read from /proc/PID/maps are only compared. */
long pr_binary_scan(const char *path, pr_binary_known_fn known, pr_binary_found_fn found, void *ctx);

/* The processes a repeated scan has looked at, so that it reads a
 * process's maps only when something changed that could matter: a
 * process not seen before, or one that runs another executable (the key:
 * PID, start time, and the executable's device and inode).  A process
 * is looked at on two scans (the dynamic loader maps its libraries after
 * the first may have run), then counted as those looks found it.  NULL
 * when out of memory. */
typedef struct pr_binary_seen pr_binary_seen_t;
pr_binary_seen_t *pr_binary_seen_new(void);
void pr_binary_seen_free(pr_binary_seen_t *seen);

/* pr_binary_scan, reading maps only as seen says (seen NULL: every
 * process's, as pr_binary_scan). */
long pr_binary_scan_seen(const char *path, pr_binary_seen_t *seen, pr_binary_known_fn known,
                         pr_binary_found_fn found, void *ctx);

/* When PID started (clock ticks after boot, /proc/PID/stat field 22); 0
 * when it is gone.  A PID reused by a later process has a later start. */
unsigned long long pr_process_start_time(pid_t pid);
void pr_probe_set_free(pr_probe_set_t *set);

/* Read n bytes of pid's memory at addr.  0, or -1 with errno. */
int pr_proc_read_memory(pid_t pid, uint64_t addr, void *buf, size_t n);

/* --- the catalogue ----------------------------------------------------------- */

/* The probes of billing.d as the library was built.  0, or -1 (out of
 * memory).  Free with pr_catalogue_free(). */
int pr_catalogue_builtin(pr_catalogue_t *out);
/* From catalogue_d.h, included above: pr_catalogue_load(PATH),
 * pr_catalogue_parse(TEXT), pr_catalogue_find(), pr_catalogue_free(). */

/* "payment-auth" -> "payment__auth" into out (n bytes); other characters
 * (glob ones included) are copied.  Returns out, or NULL when too long. */
char *pr_probe_name_to_elf(const char *name, char *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* PR_PROBE_READER_H */
