/*
 * probe_target.c -- what the caller named: an ELF file or a process,
 * read into a probe set by the readers below it.
 */
#include "probe_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_probes.h"
#include "probe_set.h"
#include "proc_maps.h"

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

int pr_probe_set_add_file(pr_probe_set_t *set, const char *path, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO named as target must not hang the open. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			snprintf(err, errlen, "no such file");
		else if (errno == EACCES || errno == EPERM)
			snprintf(err, errlen, "permission denied");
		else
			snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	size_t module = pr_probe_set_add_module(set, path);
	int rc = -1;
	struct stat st;
	if (module == (size_t)-1) {
		snprintf(err, errlen, "out of memory");
	} else {
		if (fstat(fd, &st) == 0) {
			set->modules[module].dev = (unsigned long long)st.st_dev;
			set->modules[module].ino = (unsigned long long)st.st_ino;
		}
		set->modules[module].attach_path = strdup(path);
		rc = set->modules[module].attach_path ? pr_elf_read_probes(fd, set, module, err, errlen) : -1;
		if (!set->modules[module].attach_path)
			snprintf(err, errlen, "out of memory");
	}
	close(fd);
	return rc;
}

int pr_probe_set_load(const char *spec, pr_probe_set_t *set, char *err, size_t errlen)
{
	long pid;
	memset(set, 0, sizeof *set);
	set->spec = spec;
	if (looks_like_pid(spec, &pid)) {
		if (pid <= 0 || pid > 0x7fffffffL) {
			snprintf(err, errlen, "no such process");
			return -1;
		}
		return pr_probe_set_load_pid((pid_t)pid, set, err, errlen);
	}
	return pr_probe_set_add_file(set, spec, err, errlen);
}

char *pr_probe_name_to_elf(const char *name, char *out, size_t n)
{
	size_t o = 0;
	for (const char *c = name; *c; c++) {
		size_t need = *c == '-' ? 2 : 1;
		if (o + need >= n)
			return NULL;
		if (*c == '-') {
			out[o++] = '_';
			out[o++] = '_';
		} else {
			out[o++] = *c;
		}
	}
	if (n == 0)
		return NULL;
	out[o] = '\0';
	return out;
}
