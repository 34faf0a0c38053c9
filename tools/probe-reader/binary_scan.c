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
 * A repeated scan (the exporter's watcher, once a second) reads a
 * process's maps only on its first two scans as the process it is, so
 * its cost grows with the processes, not with their mappings: a process
 * that maps the path later (dlopen) without exec is found once it
 * execs, or by a new process.
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

/* --- the processes looked at ---------------------------------------------- */

/* A process, as the scan's key names it, and what its looks found. */
typedef struct seen_process {
	long pid;
	unsigned long long start, exe_dev, exe_ino;
	int looks; /* scans that read its maps */
	int maps;  /* 1 when they found it mapping the path */
	int alive; /* in the current scan */
} seen_process_t;

struct pr_binary_seen {
	seen_process_t *items; /* by pid, ascending */
	size_t count;
};

pr_binary_seen_t *pr_binary_seen_new(void)
{
	return calloc(1, sizeof(pr_binary_seen_t));
}

void pr_binary_seen_free(pr_binary_seen_t *seen)
{
	if (seen)
		free(seen->items);
	free(seen);
}

/* The entry of pid, inserted (looks 0) when it has none; NULL when out of
 * memory. */
static seen_process_t *seen_entry(pr_binary_seen_t *seen, long pid)
{
	size_t lo = 0, hi = seen->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (seen->items[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < seen->count && seen->items[lo].pid == pid)
		return &seen->items[lo];
	seen_process_t *grown = realloc(seen->items, (seen->count + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	seen->items = grown;
	memmove(&grown[lo + 1], &grown[lo], (seen->count - lo) * sizeof *grown);
	seen->count++;
	memset(&grown[lo], 0, sizeof *grown);
	grown[lo].pid = pid;
	return &grown[lo];
}

static void seen_forget_gone(pr_binary_seen_t *seen)
{
	size_t kept = 0;
	for (size_t i = 0; i < seen->count; i++)
		if (seen->items[i].alive)
			seen->items[kept++] = seen->items[i];
	seen->count = kept;
}

/* The entry of pid when its maps need no look (already looked at twice
 * as the process it is now), else NULL after readying it for a look. */
static seen_process_t *seen_unchanged(pr_binary_seen_t *seen, long pid, seen_process_t **entry)
{
	struct stat exe;
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/exe", pid);
	unsigned long long start = pr_process_start_time((pid_t)pid);
	if (stat(path, &exe) != 0)
		memset(&exe, 0, sizeof exe); /* a kernel thread; or gone: its start time says */
	seen_process_t *e = seen_entry(seen, pid);
	*entry = e;
	if (!e)
		return NULL;
	e->alive = 1;
	if (e->start != start || e->exe_dev != (unsigned long long)exe.st_dev ||
	    e->exe_ino != (unsigned long long)exe.st_ino) {
		*e = (seen_process_t){ pid, start, (unsigned long long)exe.st_dev, (unsigned long long)exe.st_ino, 0, 0, 1 };
	}
	return e->looks >= 2 ? e : NULL;
}

long pr_binary_scan(const char *path, pr_binary_known_fn known, pr_binary_found_fn found, void *ctx)
{
	return pr_binary_scan_seen(path, NULL, known, found, ctx);
}

long pr_binary_scan_seen(const char *path, pr_binary_seen_t *seen, pr_binary_known_fn known,
                         pr_binary_found_fn found, void *ctx)
{
	if (!path || path[0] != '/')
		return 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	for (size_t i = 0; seen && i < seen->count; i++)
		seen->items[i].alive = 0;
	long processes = 0;
	struct dirent *d;
	while ((d = readdir(proc)) != NULL) {
		char *endp;
		long pid = strtol(d->d_name, &endp, 10);
		if (*endp || pid <= 0 || pid == (long)getpid())
			continue;
		pr_binary_file_t file;
		struct stat seen_at_path, real;
		seen_process_t *entry = NULL;
		memset(&file, 0, sizeof file);
		if ((size_t)snprintf(file.root_path, sizeof file.root_path, "/proc/%ld/root%s", pid, path) >=
		        sizeof file.root_path ||
		    stat(file.root_path, &seen_at_path) != 0 || !S_ISREG(seen_at_path.st_mode))
			continue;
		if (seen && seen_unchanged(seen, pid, &entry)) {
			processes += entry->maps;
			continue;
		}
		if (seen && !entry) {
			processes = -1; /* out of memory */
			break;
		}
		if (entry)
			entry->looks++;
		int is_known = known && known((unsigned long long)seen_at_path.st_dev,
		                              (unsigned long long)seen_at_path.st_ino, ctx);
		if (!maps_path((int)pid, path, &seen_at_path, &real))
			continue; /* it has the file but does not run it */
		processes++;
		if (entry)
			entry->maps = 1;
		if (is_known || (known && known((unsigned long long)real.st_dev, (unsigned long long)real.st_ino, ctx)))
			continue;
		file.pid = (int)pid;
		file.dev = (unsigned long long)real.st_dev;
		file.ino = (unsigned long long)real.st_ino;
		file.path_dev = (unsigned long long)seen_at_path.st_dev;
		file.path_ino = (unsigned long long)seen_at_path.st_ino;
		if (found && found(&file, ctx) != 0) {
			processes = -1;
			break;
		}
	}
	closedir(proc);
	if (seen && processes >= 0)
		seen_forget_gone(seen);
	return processes;
}
