/*
 * needed_libs.c -- the shared libraries a program loads, found as the
 * dynamic loader finds them (ld_search.c), read into a probe set: what
 * `check ./svc` counts besides the file itself, since a service built
 * against libbillingprobes.so carries the timing helpers' probes there.
 *
 * Breadth first, as the loader maps them: the files named (the program,
 * and any library given beside it), then their DT_NEEDED entries in
 * order, then those libraries' entries.  A name is loaded once: a file
 * that answers to it already (its path, a name it was loaded as, its
 * DT_SONAME) serves it, and a file reached by two names (same device
 * and inode) is one module.
 */
#include "probe_reader.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_dynamic.h"
#include "elf_probes.h"
#include "ld_cache.h"
#include "ld_search.h"
#include "probe_set.h"

enum { NO_LOADER = -1 };

/* A file of the program as the loader would have it in memory. */
typedef struct object {
	char *path;   /* as named or found */
	char *origin; /* what $ORIGIN stands for in its paths, NULL unknown */
	pr_elf_dynamic_t dyn;
	long loader;  /* the object whose DT_NEEDED loaded it, NO_LOADER for one named */
	char **names; /* the DT_NEEDED names it was loaded for */
	size_t name_count;
	unsigned long long dev, ino;
	int secure; /* its program is set-id */
} object_t;

typedef struct program {
	object_t *objects;
	size_t count;
	pr_ld_cache_t cache;
	pr_probe_set_t *out;
	char *err;
	size_t errlen;
} program_t;

static int out_of_memory(program_t *pg)
{
	snprintf(pg->err, pg->errlen, "out of memory");
	return -1;
}

/* The directory of path, made absolute (a program's: of its real path,
 * as the kernel gives it to the loader). */
static char *origin_of(const char *path, int is_program)
{
	char buf[PATH_MAX * 2], cwd[PATH_MAX];
	if (is_program && realpath(path, buf)) {
		/* buf is the real path */
	} else if (path[0] == '/') {
		snprintf(buf, sizeof buf, "%s", path);
	} else if (getcwd(cwd, sizeof cwd)) {
		snprintf(buf, sizeof buf, "%s/%s", cwd, path);
	} else {
		return NULL;
	}
	char *slash = strrchr(buf, '/');
	if (slash == buf)
		slash[1] = '\0';
	else
		*slash = '\0';
	return strdup(buf);
}

/* Append an object; NULL when out of memory. */
static object_t *add_object(program_t *pg, const char *path, long loader)
{
	object_t *objs = realloc(pg->objects, (pg->count + 1) * sizeof *objs);
	if (!objs)
		return NULL;
	pg->objects = objs;
	object_t *o = &objs[pg->count];
	memset(o, 0, sizeof *o);
	o->loader = loader;
	if (!(o->path = strdup(path)))
		return NULL;
	pg->count++;
	return o;
}

static int add_name(object_t *o, const char *name)
{
	char **names = realloc(o->names, (o->name_count + 1) * sizeof *names);
	if (!names)
		return -1;
	o->names = names;
	if (!(names[o->name_count] = strdup(name)))
		return -1;
	o->name_count++;
	return 0;
}

/* The object answering to name (glibc's _dl_name_match_p and the
 * DT_SONAME test), or NULL. */
static object_t *answering(program_t *pg, const char *name)
{
	for (size_t i = 0; i < pg->count; i++) {
		object_t *o = &pg->objects[i];
		if (strcmp(o->path, name) == 0 || (o->dyn.soname && strcmp(o->dyn.soname, name) == 0))
			return o;
		for (size_t k = 0; k < o->name_count; k++)
			if (strcmp(o->names[k], name) == 0)
				return o;
	}
	return NULL;
}

static object_t *same_file(program_t *pg, unsigned long long dev, unsigned long long ino)
{
	for (size_t i = 0; i < pg->count; i++)
		if (pg->objects[i].dev == dev && pg->objects[i].ino == ino)
			return &pg->objects[i];
	return NULL;
}

/* A module of the sets named: an object, its dynamic section read from
 * the very file whose probes were read. */
static int add_named(program_t *pg, const pr_module_t *mod)
{
	const char *path = mod->attach_path ? mod->attach_path : mod->path;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(pg->err, pg->errlen, "%.300s: %s", mod->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if ((mod->ino && ((unsigned long long)st.st_dev != mod->dev || (unsigned long long)st.st_ino != mod->ino))) {
		close(fd);
		snprintf(pg->err, pg->errlen, "%.300s: replaced while being read", mod->path);
		return -1;
	}
	if (same_file(pg, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino)) {
		close(fd);
		return 0; /* named twice */
	}
	object_t *o = add_object(pg, mod->path, NO_LOADER);
	if (!o) {
		close(fd);
		return out_of_memory(pg);
	}
	o->dev = (unsigned long long)st.st_dev;
	o->ino = (unsigned long long)st.st_ino;
	o->secure = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
	char why[300];
	int rc = pr_elf_read_dynamic(fd, &o->dyn, why, sizeof why);
	close(fd);
	if (rc != 0) {
		snprintf(pg->err, pg->errlen, "%.300s: %s", mod->path, why);
		return -1;
	}
	o->origin = origin_of(mod->path, o->dyn.has_interp);
	return 0;
}

/* A library found: an object, and a module of out with its probes. */
static int add_found(program_t *pg, size_t loader, const char *name, const char *path, int fd, pr_elf_dynamic_t *dyn)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(pg->err, pg->errlen, "%.300s: %s", path, strerror(errno));
		return -1;
	}
	object_t *known = same_file(pg, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	if (known)
		return add_name(known, name) == 0 ? 0 : out_of_memory(pg);
	const char *loader_path = pg->objects[loader].path;
	object_t *o = add_object(pg, path, (long)loader);
	if (!o || add_name(o, name) != 0)
		return out_of_memory(pg);
	o->dyn = *dyn;
	memset(dyn, 0, sizeof *dyn);
	o->dev = (unsigned long long)st.st_dev;
	o->ino = (unsigned long long)st.st_ino;
	o->secure = pg->objects[loader].secure;
	o->origin = origin_of(path, 0);

	pr_probe_set_t *out = pg->out;
	size_t m = pr_probe_set_add_module(out, path);
	if (m == (size_t)-1)
		return out_of_memory(pg);
	out->modules[m].dev = o->dev;
	out->modules[m].ino = o->ino;
	out->modules[m].attach_path = strdup(path);
	out->modules[m].needed_name = strdup(name);
	out->modules[m].needed_by = strdup(loader_path);
	if (!out->modules[m].attach_path || !out->modules[m].needed_name || !out->modules[m].needed_by)
		return out_of_memory(pg);
	size_t before = out->probe_count;
	char why[256];
	if (lseek(fd, 0, SEEK_SET) != 0 || pr_elf_read_probes(fd, out, m, why, sizeof why) != 0) {
		pr_probe_set_truncate(out, before);
		if (pr_probe_set_add_unreadable(out, path, why) != 0)
			return out_of_memory(pg);
	}
	return 0;
}

static int add_missing(program_t *pg, const char *name, const char *needed_by, const char *why)
{
	pr_probe_set_t *out = pg->out;
	pr_missing_library_t *list = realloc(out->missing, (out->missing_count + 1) * sizeof *list);
	if (!list)
		return out_of_memory(pg);
	out->missing = list;
	pr_missing_library_t *m = &list[out->missing_count++];
	m->name = strdup(name);
	m->needed_by = strdup(needed_by);
	m->why = strdup(why);
	return m->name && m->needed_by && m->why ? 0 : out_of_memory(pg);
}

/* The program an object belongs to: the named file at the root of its
 * loader chain. */
static const object_t *program_of(const program_t *pg, const object_t *o)
{
	while (o->loader != NO_LOADER)
		o = &pg->objects[o->loader];
	return o;
}

/* The DT_RPATH lists the loader tries for a name object i needs: its
 * own and those of the objects that loaded it, up to its program; none
 * when it has a DT_RUNPATH.  Into rpaths (pg->count slots); their count. */
static size_t rpath_chain(const program_t *pg, size_t i, pr_ld_path_t *rpaths)
{
	size_t n = 0;
	const object_t *l = &pg->objects[i];
	if (l->dyn.runpath)
		return 0;
	for (;;) {
		if (l->dyn.rpath)
			rpaths[n++] = (pr_ld_path_t){ l->dyn.rpath, l->origin, "RPATH", l->path };
		if (l->loader == NO_LOADER)
			return n;
		l = &pg->objects[l->loader];
	}
}

/* Load the libraries object i names. */
static int load_needed_of(program_t *pg, size_t i)
{
	for (size_t k = 0; k < pg->objects[i].dyn.needed_count; k++) {
		/* pg->objects grows below: o is taken anew for each name */
		const object_t *o = &pg->objects[i];
		const char *name = o->dyn.needed[k];
		if (answering(pg, name))
			continue;
		pr_ld_path_t *rpaths = calloc(pg->count, sizeof *rpaths);
		if (!rpaths)
			return out_of_memory(pg);
		pr_ld_request_t req;
		memset(&req, 0, sizeof req);
		req.name = name;
		req.loader_origin = o->origin;
		req.rpaths = rpaths;
		req.rpath_count = rpath_chain(pg, i, rpaths);
		req.runpath = (pr_ld_path_t){ o->dyn.runpath, o->origin, "RUNPATH", o->path };
		req.program_origin = program_of(pg, o)->origin;
		req.library_path = getenv("LD_LIBRARY_PATH");
		req.secure = o->secure;
		req.nodeflib = o->dyn.nodeflib;
		req.elf_class = o->dyn.elf_class;
		req.machine = o->dyn.machine;
		req.cache = &pg->cache;

		char path[PATH_MAX], why[4096];
		int fd;
		pr_elf_dynamic_t dyn;
		int rc = pr_ld_search(&req, &fd, &dyn, path, sizeof path, why, sizeof why);
		free(rpaths);
		if (rc == PR_LD_FOUND) {
			rc = add_found(pg, i, name, path, fd, &dyn);
			pr_elf_dynamic_free(&dyn);
			close(fd);
		} else {
			rc = add_missing(pg, name, o->path, why);
		}
		if (rc != 0)
			return -1;
	}
	return 0;
}

int pr_probe_set_load_needed(const pr_probe_set_t *sets, size_t nsets, pr_probe_set_t *out, char *err, size_t errlen)
{
	program_t pg;
	memset(&pg, 0, sizeof pg);
	memset(out, 0, sizeof *out);
	pg.out = out;
	pg.err = err;
	pg.errlen = errlen;
	int rc = 0;
	for (size_t s = 0; s < nsets && rc == 0; s++)
		for (size_t m = 0; !sets[s].is_process && m < sets[s].module_count && rc == 0; m++)
			rc = add_named(&pg, &sets[s].modules[m]);
	if (rc == 0 && pg.count)
		pr_ld_cache_open(&pg.cache, "/etc/ld.so.cache");
	for (size_t i = 0; rc == 0 && i < pg.count; i++)
		rc = load_needed_of(&pg, i);
	for (size_t i = 0; i < pg.count; i++) {
		object_t *o = &pg.objects[i];
		free(o->path);
		free(o->origin);
		pr_elf_dynamic_free(&o->dyn);
		for (size_t k = 0; k < o->name_count; k++)
			free(o->names[k]);
		free(o->names);
	}
	free(pg.objects);
	pr_ld_cache_close(&pg.cache);
	return rc;
}

int pr_elf_is_program(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s", errno == ENOENT ? "no such file" : strerror(errno));
		return -1;
	}
	pr_elf_dynamic_t dyn;
	memset(&dyn, 0, sizeof dyn);
	int rc = pr_elf_read_dynamic(fd, &dyn, err, errlen);
	close(fd);
	if (rc == 0)
		rc = dyn.type == ET_EXEC || (dyn.type == ET_DYN && (dyn.pie || (dyn.has_interp && !dyn.soname)));
	pr_elf_dynamic_free(&dyn);
	return rc;
}
