/*
 * cgroup_filter.c -- --cgroup PATH (cgroup_filter.h).
 */
#include "cgroup_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "probe_reader.h" /* pr_process_start_time */

/* A mountinfo field with its octal escapes (\040 for a space) undone, in place. */
static char *unescape(char *s)
{
	char *out = s;
	for (const char *in = s; *in; out++) {
		if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' &&
		    in[3] <= '7') {
			*out = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
			in += 4;
		} else {
			*out = *in++;
		}
	}
	*out = '\0';
	return s;
}

/* Does path lie at or below dir (whole components)? */
static int below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The cgroup the directory real (resolved, absolute) is, as /proc/PID/cgroup
 * names cgroups to this process: the root of the cgroup2 mount holding it
 * (mountinfo's fourth field, itself relative to our cgroup namespace) and
 * the rest of the path below the mount point.  NULL when no cgroup2 mount
 * holds it. */
static char *cgroup_of_dir(const char *real)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[3 * PATH_MAX], best_root[PATH_MAX] = "";
	size_t best_len = 0;
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE ... */
		char *save = NULL, *field[5] = { NULL }, *tok;
		int i = 0;
		for (tok = strtok_r(line, " \n", &save); tok && i < 5; tok = strtok_r(NULL, " \n", &save))
			field[i++] = tok;
		while (tok && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " \n", &save);
		const char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
		if (!field[4] || !type || strcmp(type, "cgroup2") != 0)
			continue;
		const char *point = unescape(field[4]);
		size_t len = strlen(point);
		if (below(real, point) && (!found || len > best_len)) {
			snprintf(best_root, sizeof best_root, "%s", unescape(field[3]));
			best_len = len;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	if (!found)
		return NULL;
	const char *rest = best_len > 1 ? real + best_len : real; /* a mount on "/" keeps the path whole */
	char *out = malloc(strlen(best_root) + strlen(rest) + 2);
	if (!out)
		return NULL;
	if (strcmp(best_root, "/") == 0)
		strcpy(out, *rest ? rest : "/");
	else
		sprintf(out, "%s%s", best_root, strcmp(rest, "/") == 0 ? "" : rest);
	return out;
}

int bx_cgroup_open(const char *given, bx_cgroup_t *cg, char *err, size_t errlen)
{
	struct statfs fs;
	struct stat st, real_st;
	char real[PATH_MAX];

	memset(cg, 0, sizeof *cg);
	cg->fd = -1;
	if (given[0] != '/') {
		snprintf(err, errlen, "--cgroup %s: not an absolute path (name the cgroup's directory, e.g. "
		                      "/sys/fs/cgroup/billing.slice)",
		         given);
		return -1;
	}
	cg->fd = open(given, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->fd < 0 || fstatfs(cg->fd, &fs) != 0 || fstat(cg->fd, &st) != 0) {
		snprintf(err, errlen, "--cgroup %s: %s", given, strerror(errno));
		goto fail;
	}
	if (fs.f_type == CGROUP_SUPER_MAGIC) {
		snprintf(err, errlen, "--cgroup %s: a cgroup v1 hierarchy; --cgroup needs cgroup v2 (a cgroup2 mount, "
		                      "e.g. /sys/fs/cgroup on a unified host or /sys/fs/cgroup/unified on a hybrid one)",
		         given);
		goto fail;
	}
	if (fs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(err, errlen, "--cgroup %s: not a directory on a cgroup v2 file system (cgroup2)", given);
		goto fail;
	}
	if (!realpath(given, real) || stat(real, &real_st) != 0 || real_st.st_dev != st.st_dev ||
	    real_st.st_ino != st.st_ino || !(cg->path = cgroup_of_dir(real))) {
		snprintf(err, errlen, "--cgroup %s: no cgroup2 mount in /proc/self/mountinfo holds it", given);
		goto fail;
	}
	if (!(cg->given = strdup(given))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return 0;
fail:
	bx_cgroup_close(cg);
	return -1;
}

int bx_cgroup_holds(const bx_cgroup_t *cg, pid_t pid, unsigned long long start_time)
{
	char name[64], line[PATH_MAX + 64];
	int where = -1;

	if (!start_time || pid <= 0 || pr_process_start_time(pid) != start_time)
		return -1;
	snprintf(name, sizeof name, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(name, "re");
	while (f && fgets(line, sizeof line, f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		where = below(line + 3, cg->path);
		break;
	}
	if (f)
		fclose(f);
	/* the file read was that process's, not a later one's given its PID */
	if (pr_process_start_time(pid) != start_time)
		return -1;
	return where;
}

void bx_cgroup_close(bx_cgroup_t *cg)
{
	if (cg->fd >= 0)
		close(cg->fd);
	free(cg->given);
	free(cg->path);
	memset(cg, 0, sizeof *cg);
	cg->fd = -1;
}
