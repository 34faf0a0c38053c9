/*
 * target.c -- what the user named: an ELF file or a process.
 */
#include "probes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_probes.h"
#include "proc_maps.h"

size_t bp_target_add_module(bp_target_t *t, const char *path)
{
	bp_module_t *mods = realloc(t->modules, (t->module_count + 1) * sizeof *mods);
	if (!mods)
		return (size_t)-1;
	t->modules = mods;
	char *copy = malloc(strlen(path) + 1);
	if (!copy)
		return (size_t)-1;
	strcpy(copy, path);
	mods[t->module_count].path = copy;
	mods[t->module_count].has_note_section = 0;
	return t->module_count++;
}

bp_probe_t *bp_target_add_probe(bp_target_t *t)
{
	if ((t->probe_count & (t->probe_count - 1)) == 0) {
		/* grow at every power of two */
		size_t cap = t->probe_count ? t->probe_count * 2 : 16;
		bp_probe_t *probes = realloc(t->probes, cap * sizeof *probes);
		if (!probes)
			return NULL;
		t->probes = probes;
	}
	bp_probe_t *p = &t->probes[t->probe_count++];
	memset(p, 0, sizeof *p);
	p->traced = -1;
	return p;
}

void bp_target_free(bp_target_t *t)
{
	for (size_t i = 0; i < t->probe_count; i++) {
		free(t->probes[i].provider);
		free(t->probes[i].name);
		free(t->probes[i].arg_string);
	}
	for (size_t i = 0; i < t->module_count; i++)
		free(t->modules[i].path);
	free(t->probes);
	free(t->modules);
	memset(t, 0, sizeof *t);
}

/* All digits and not a file in the current directory: a PID ("./1234"
 * names the file). */
static int looks_like_pid(const char *spec, long *pid)
{
	if (!*spec || strlen(spec) > 10)
		return 0;
	for (const char *c = spec; *c; c++)
		if (*c < '0' || *c > '9')
			return 0;
	struct stat st;
	if (stat(spec, &st) == 0)
		return 0;
	*pid = strtol(spec, NULL, 10);
	return 1;
}

int bp_target_load(const char *spec, bp_target_t *t, char *err, size_t errlen)
{
	long pid;
	memset(t, 0, sizeof *t);
	t->spec = spec;
	if (looks_like_pid(spec, &pid)) {
		if (pid <= 0 || pid > 0x7fffffffL) {
			snprintf(err, errlen, "no such process");
			return -1;
		}
		return bp_proc_load((pid_t)pid, t, err, errlen);
	}
	/* O_NONBLOCK: a FIFO named as target must not hang the open. */
	int fd = open(spec, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			snprintf(err, errlen, "no such file");
		else if (errno == EACCES)
			snprintf(err, errlen, "permission denied");
		else
			snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	size_t module = bp_target_add_module(t, spec);
	int rc = module == (size_t)-1 ? -1 : bp_elf_read_probes(fd, t, module, err, errlen);
	if (module == (size_t)-1)
		snprintf(err, errlen, "out of memory");
	close(fd);
	return rc;
}
