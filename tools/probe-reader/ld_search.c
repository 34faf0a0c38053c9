/*
 * ld_search.c -- one DT_NEEDED name to a file, in glibc's order
 * (elf/dl-load.c, _dl_map_object):
 *
 *   a name with a '/'   that path ($ORIGIN... expanded), nothing else;
 *   DT_RPATH            of the file naming it, then of the file that
 *                       loaded that one, up to the program (only when
 *                       the file naming it has no DT_RUNPATH);
 *   LD_LIBRARY_PATH     (not for a set-id program);
 *   DT_RUNPATH          of the file naming it only;
 *   /etc/ld.so.cache    and the system directories, unless DF_1_NODEFLIB.
 *
 * A candidate that does not exist or cannot be opened, or is an ELF of
 * another class or machine, is passed over as the loader passes it; one
 * that is not an ELF shared library (a directory, a device, a text file,
 * a program) stops the loader ("cannot read file data", "invalid ELF
 * header", "cannot dynamically load position-independent executable"),
 * and stops the search here too.  The loader also prefers copies for
 * particular CPUs (DIR/glibc-hwcaps/x86-64-v3/, the older DIR/tls/,
 * DIR/haswell/...), chosen by CPU features not modelled here: where such
 * a copy exists the search is refused rather than guessed.
 */
#include "ld_search.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BP_SYSTEM_LIB_DIRS
#  define BP_SYSTEM_LIB_DIRS "/lib:/usr/lib"
#endif

static const char system_dirs[] = BP_SYSTEM_LIB_DIRS;

/* What the loader's $PLATFORM is: the kernel's AT_PLATFORM ("x86_64",
 * "haswell"...), NULL when it gives none. */
static const char *platform(void)
{
	return (const char *)getauxval(AT_PLATFORM);
}

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Length of the dynamic string token ($NAME or ${NAME}) at s, 0 if none. */
static size_t dst_length(const char *s, size_t len, const char *name)
{
	size_t n = strlen(name);
	if (len > n && s[0] == '$' && strncmp(s + 1, name, n) == 0 && (len == n + 1 || !is_ident(s[n + 1])))
		return n + 1;
	if (len > n + 2 && s[0] == '$' && s[1] == '{' && strncmp(s + 2, name, n) == 0 && s[n + 2] == '}')
		return n + 3;
	return 0;
}

/* elem (len bytes) with $ORIGIN, $LIB and $PLATFORM replaced, into out.
 * 0, or -1 when the element is dropped (as the loader drops it: a value
 * unknown, or any '$' in a set-id program) or too long. */
static int expand(const char *elem, size_t len, const char *origin, int secure, char *out, size_t n)
{
	/* $LIB: the first system directory, relative ("lib/x86_64-linux-gnu"
	 * on Debian, "lib64" on Fedora), as glibc is configured */
	char lib[PATH_MAX];
	const char *dirs = system_dirs + (system_dirs[0] == '/');
	snprintf(lib, sizeof lib, "%.*s", (int)strcspn(dirs, ":"), dirs);
	const char *const names[] = { "ORIGIN", "LIB", "PLATFORM" };
	const char *const values[] = { origin, lib, platform() };
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		const char *value = NULL;
		size_t skip = 0;
		for (size_t k = 0; k < 3 && !skip; k++)
			if ((skip = dst_length(elem + i, len - i, names[k])) != 0)
				value = values[k];
		if (skip && (secure || !value))
			return -1;
		size_t add = skip ? strlen(value) : 1;
		if (o + add >= n)
			return -1;
		memcpy(out + o, skip ? value : elem + i, add);
		o += add;
		i += skip ? skip : 1;
	}
	out[o] = '\0';
	return 0;
}

/* path opened for reading if it is a regular file, -1 otherwise.  The
 * paths come from the program's own RPATH and RUNPATH, someone else's
 * text: a device there (/dev/watchdog) must not be opened, since opening
 * one can act on it.  So the file is first reached with O_PATH, which
 * opens nothing, and only a regular file is opened, through that very
 * descriptor (no second lookup of the path to race with). */
static int open_regular(const char *path, int *other_kind)
{
	int at = open(path, O_PATH | O_CLOEXEC);
	struct stat st;
	*other_kind = 0;
	if (at < 0)
		return -1;
	int fd = -1;
	if (fstat(at, &st) == 0 && S_ISREG(st.st_mode)) {
		char again[64];
		snprintf(again, sizeof again, "/proc/self/fd/%d", at);
		fd = open(again, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	} else {
		*other_kind = 1;
	}
	close(at);
	return fd;
}

/* One candidate file.  PR_LD_FOUND (fd, dyn), PR_LD_NOT_FOUND (absent,
 * unopenable, another class or machine: the loader goes on), or
 * PR_LD_REFUSED (why: the loader would stop at it). */
static int try_file(const char *path, const pr_ld_request_t *req, int *fd, pr_elf_dynamic_t *dyn, char *why,
                    size_t whylen)
{
	int other_kind;
	int f = open_regular(path, &other_kind);
	if (f < 0 && other_kind) {
		/* the loader opens it, cannot read an ELF header from it, and stops */
		snprintf(why, whylen, "%s: not a regular file, where the loader stops", path);
		return PR_LD_REFUSED;
	}
	if (f < 0)
		return PR_LD_NOT_FOUND;
	char err[256];
	int rc = PR_LD_REFUSED;
	if (pr_elf_read_dynamic(f, dyn, err, sizeof err) != 0)
		snprintf(why, whylen, "%s: %s, where the loader stops", path, err);
	else if (dyn->elf_class != req->elf_class || dyn->machine != req->machine)
		rc = PR_LD_NOT_FOUND;
	else if (dyn->type != ET_DYN || dyn->pie)
		snprintf(why, whylen, "%s: not a shared library (%s), where the loader stops", path,
		         dyn->pie ? "a position-independent program" : "ELF type not ET_DYN");
	else
		rc = PR_LD_FOUND;
	if (rc == PR_LD_FOUND) {
		*fd = f;
	} else {
		pr_elf_dynamic_free(dyn);
		close(f);
	}
	return rc;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* A copy of name for particular CPUs in dir, its path into out: under
 * glibc-hwcaps/SUBDIR/, or under the older hwcap subdirectories (tls,
 * the platform, x86's capability names, nested up to four deep). */
static int cpu_specific_copy(const char *dir, const char *name, int depth, char *out, size_t n)
{
	static const char *const legacy[] = { "tls", "x86_64", "avx512_1", "haswell", "xeon_phi", "i686", "sse2" };
	char sub[PATH_MAX];
	if (depth == 4) {
		snprintf(sub, sizeof sub, "%s/glibc-hwcaps", dir);
		DIR *d = opendir(sub);
		struct dirent *e;
		int found = 0;
		while (d && !found && (e = readdir(d)) != NULL)
			if (e->d_name[0] != '.' && snprintf(out, n, "%s/%s/%s", sub, e->d_name, name) > 0)
				found = exists(out);
		if (d)
			closedir(d);
		if (found)
			return 1;
	}
	if (depth == 0)
		return 0;
	const char *plat = platform();
	for (size_t k = 0; k <= sizeof legacy / sizeof legacy[0]; k++) {
		const char *s = k < sizeof legacy / sizeof legacy[0] ? legacy[k] : plat;
		struct stat st;
		if (!s || snprintf(sub, sizeof sub, "%s/%s", dir, s) >= (int)sizeof sub || stat(sub, &st) != 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if ((snprintf(out, n, "%s/%s", sub, name) < (int)n && exists(out)) ||
		    cpu_specific_copy(sub, name, depth - 1, out, n))
			return 1;
	}
	return 0;
}

/* Try each directory of list (':' or, for LD_LIBRARY_PATH, ';' too). */
static int try_list(const char *list, const char *seps, const char *origin, const pr_ld_request_t *req, int *fd,
                    pr_elf_dynamic_t *dyn, char *path, size_t pathlen, char *why, size_t whylen)
{
	for (const char *p = list;; p++) {
		size_t len = strcspn(p, seps);
		char dir[PATH_MAX], copy[PATH_MAX];
		if (expand(p, len, origin, req->secure, dir, sizeof dir) == 0) {
			if (!dir[0])
				snprintf(dir, sizeof dir, "."); /* an empty element: the working directory */
			if (cpu_specific_copy(dir, req->name, 4, copy, sizeof copy)) {
				snprintf(why, whylen, "%s: a copy for particular CPUs, which the loader prefers where the CPU has "
				                      "them (not modelled here)",
				         copy);
				return PR_LD_REFUSED;
			}
			if (snprintf(path, pathlen, "%s/%s", dir, req->name) < (int)pathlen) {
				int rc = try_file(path, req, fd, dyn, why, whylen);
				if (rc != PR_LD_NOT_FOUND)
					return rc;
			}
		}
		p += len;
		if (!*p)
			return PR_LD_NOT_FOUND;
	}
}

/* Where it was looked for, appended for the not-found line: "; "
 * between places. */
static void searched(char *why, size_t whylen, const char *what, const char *list)
{
	size_t used = strlen(why);
	if (used + 1 < whylen &&
	    snprintf(why + used, whylen - used, "%s%s%s%s", used ? "; " : "", what, list ? " " : "", list ? list : "") < 0)
		why[used] = '\0';
}

static void searched_path(char *why, size_t whylen, const pr_ld_path_t *p)
{
	char what[PATH_MAX + 16], list[PATH_MAX * 2];
	snprintf(what, sizeof what, "%s of %s", p->kind, p->file);
	if (p->origin && strstr(p->list, "ORIGIN") && snprintf(list, sizeof list, "%s ($ORIGIN %s)", p->list, p->origin) > 0)
		searched(why, whylen, what, list);
	else
		searched(why, whylen, what, p->list);
}

static int search_cache(const pr_ld_request_t *req, int *fd, pr_elf_dynamic_t *dyn, char *path, size_t pathlen,
                        char *why, size_t whylen)
{
	size_t pos = 0, cpu = 0;
	while (pr_ld_cache_next(req->cache, req->name, &pos, &cpu))
		;
	if (cpu) {
		snprintf(why, whylen, "/etc/ld.so.cache lists %zu cop%s for particular CPUs, which the loader prefers where "
		                      "the CPU has them (not modelled here)",
		         cpu, cpu == 1 ? "y" : "ies");
		return PR_LD_REFUSED;
	}
	const char *p;
	for (pos = 0; (p = pr_ld_cache_next(req->cache, req->name, &pos, &cpu)) != NULL;) {
		snprintf(path, pathlen, "%s", p);
		int rc = try_file(path, req, fd, dyn, why, whylen);
		if (rc != PR_LD_NOT_FOUND)
			return rc;
	}
	return PR_LD_NOT_FOUND;
}

int pr_ld_search(const pr_ld_request_t *req, int *fd, pr_elf_dynamic_t *dyn, char *path, size_t pathlen, char *why,
                 size_t whylen)
{
	char places[2048] = "";
	int rc;
	*fd = -1;
	why[0] = '\0';
	if (strchr(req->name, '/')) {
		if (expand(req->name, strlen(req->name), req->loader_origin, req->secure, path, pathlen) != 0) {
			snprintf(why, whylen, "its $ORIGIN, $LIB or $PLATFORM cannot be expanded");
			return PR_LD_NOT_FOUND;
		}
		rc = try_file(path, req, fd, dyn, why, whylen);
		if (rc == PR_LD_NOT_FOUND)
			snprintf(why, whylen, "%s: no such library", path);
		return rc;
	}
	for (size_t i = 0; i < req->rpath_count; i++) {
		rc = try_list(req->rpaths[i].list, ":", req->rpaths[i].origin, req, fd, dyn, path, pathlen, why, whylen);
		if (rc != PR_LD_NOT_FOUND)
			return rc;
		searched_path(places, sizeof places, &req->rpaths[i]);
	}
	if (req->secure) {
		searched(places, sizeof places, "LD_LIBRARY_PATH ignored (a set-id program)", NULL);
	} else if (req->library_path && req->library_path[0]) {
		rc = try_list(req->library_path, ":;", req->program_origin, req, fd, dyn, path, pathlen, why, whylen);
		if (rc != PR_LD_NOT_FOUND)
			return rc;
		searched(places, sizeof places, "LD_LIBRARY_PATH", req->library_path);
	} else {
		searched(places, sizeof places, "LD_LIBRARY_PATH unset", NULL);
	}
	if (req->runpath.list) {
		rc = try_list(req->runpath.list, ":", req->runpath.origin, req, fd, dyn, path, pathlen, why, whylen);
		if (rc != PR_LD_NOT_FOUND)
			return rc;
		searched_path(places, sizeof places, &req->runpath);
	}
	if (req->nodeflib) {
		searched(places, sizeof places, "no ld.so.cache nor system directories (DF_1_NODEFLIB)", NULL);
	} else {
		if ((rc = search_cache(req, fd, dyn, path, pathlen, why, whylen)) != PR_LD_NOT_FOUND)
			return rc;
		searched(places, sizeof places, "/etc/ld.so.cache", req->cache->problem);
		rc = try_list(system_dirs, ":", NULL, req, fd, dyn, path, pathlen, why, whylen);
		if (rc != PR_LD_NOT_FOUND)
			return rc;
		searched(places, sizeof places, system_dirs, NULL);
	}
	snprintf(why, whylen, "not found (searched: %s)", places);
	return PR_LD_NOT_FOUND;
}
