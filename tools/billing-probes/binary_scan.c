/*
 * binary_scan.c -- the processes, in any mount namespace, that run or map
 * a path inside their own root (billing-exporter --binary, billing-probes
 * trace --binary).
 *
 * For each PID in /proc: the file at /proc/PID/root/PATH, if any; then
 * whether the process maps it: a line of /proc/PID/maps naming PATH (a
 * process in another mount namespace is shown paths as it sees them) or
 * the same inode (a chroot sharing our namespace shows the full path).
 * The file's identity is its stat through /proc/PID/map_files (on
 * overlayfs: the layer's file, the one a uprobe is placed on), else
 * through the path.  Paths in maps are compared, never opened or used.
 */
#include "probe_reader.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Does pid map the file it sees at path (seen: its stat through the
 * process's root)?  On a match, *real is the mapped file's stat. */
static int maps_path(int pid, const char *path, const struct stat *seen, struct stat *real)
{
	char maps[64];
	snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
	FILE *f = fopen(maps, "r");
	if (!f)
		return 0;
	char *line = NULL;
	size_t cap = 0, plen = strlen(path);
	ssize_t len;
	int found = 0;
	while (!found && (len = getline(&line, &cap, f)) > 0) {
		unsigned long long start, end, ino;
		int name_at = 0;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (sscanf(line, "%llx-%llx %*s %*s %*s %llu %n", &start, &end, &ino, &name_at) < 3 || !name_at)
			continue;
		const char *name = line + name_at;
		int by_path = strncmp(name, path, plen) == 0 && name[plen] == '\0';
		if (!by_path && ino != (unsigned long long)seen->st_ino)
			continue;
		char link[128];
		snprintf(link, sizeof link, "/proc/%d/map_files/%llx-%llx", pid, start, end);
		if (stat(link, real) != 0)
			*real = *seen; /* map_files needs CAP_SYS_ADMIN: the path's view */
		found = 1;
	}
	free(line);
	fclose(f);
	return found;
}

long bp_binary_scan(const char *path, bp_binary_known_fn known, bp_binary_found_fn found, void *ctx)
{
	if (!path || path[0] != '/')
		return 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	long processes = 0;
	struct dirent *d;
	while ((d = readdir(proc)) != NULL) {
		char *endp;
		long pid = strtol(d->d_name, &endp, 10);
		if (*endp || pid <= 0 || pid == (long)getpid())
			continue;
		bp_binary_file_t file;
		struct stat seen, real;
		memset(&file, 0, sizeof file);
		if ((size_t)snprintf(file.root_path, sizeof file.root_path, "/proc/%ld/root%s", pid, path) >=
		        sizeof file.root_path ||
		    stat(file.root_path, &seen) != 0 || !S_ISREG(seen.st_mode))
			continue;
		int is_known = known && known((unsigned long long)seen.st_dev, (unsigned long long)seen.st_ino, ctx);
		if (!maps_path((int)pid, path, &seen, &real))
			continue; /* it has the file but does not run it */
		processes++;
		if (is_known || (known && known((unsigned long long)real.st_dev, (unsigned long long)real.st_ino, ctx)))
			continue;
		file.pid = (int)pid;
		file.dev = (unsigned long long)real.st_dev;
		file.ino = (unsigned long long)real.st_ino;
		file.path_dev = (unsigned long long)seen.st_dev;
		file.path_ino = (unsigned long long)seen.st_ino;
		if (found && found(&file, ctx) != 0) {
			processes = -1;
			break;
		}
	}
	closedir(proc);
	return processes;
}
