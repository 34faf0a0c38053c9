/*
 * proc_maps.c -- the probes of a live process, from /proc/PID.
 *
 * /proc/PID/maps names every mapped file.  Each ELF among them is opened
 * through /proc/PID/map_files (the very inode mapped, even if replaced or
 * deleted on disk; needs CAP_SYS_ADMIN), else /proc/PID/root/PATH (the
 * process's view of the file system, e.g. inside a container), else PATH.
 * A semaphore's run-time address is the mapping of the same file that
 * covers the semaphore's file offset; its 16-bit value is read with
 * process_vm_readv, else from /proc/PID/mem.  A process can exit at any
 * point: every read failing with ESRCH/ENOENT becomes "exited while
 * being read", never a partial answer.
 */
#include "proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elf_probes.h"
#include "probe_set.h"

typedef struct mapping {
	uint64_t start, end, offset;
	unsigned long inode;
	char dev[16];
	char *path;
	size_t module; /* index in the target, (size_t)-1 if not an ELF */
} mapping_t;

typedef struct maps {
	mapping_t *items;
	size_t count, cap;
} maps_t;

static void maps_free(maps_t *m)
{
	for (size_t i = 0; i < m->count; i++)
		free(m->items[i].path);
	free(m->items);
}

/* 1 when PID runs (its /proc/PID/stat reads, and says neither zombie Z
 * nor dead X), with its start time (field 22) in *start. */
static int running_since(pid_t pid, unsigned long long *start)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	/* "pid (comm) S ...": comm may hold spaces and parentheses. */
	char buf[1024];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *close = strrchr(buf, ')');
	char state;
	if (!close || close[1] == '\0')
		return 0;
	/* fields 3 (state) to 22 (starttime) */
	if (sscanf(close + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &state,
	           start) != 2)
		return 0;
	return state != 'Z' && state != 'X';
}

/* 1 when PID has exited or is a zombie (its /proc/PID/stat says Z or X). */
static int pr_process_gone(pid_t pid)
{
	unsigned long long start;
	return !running_since(pid, &start);
}

unsigned long long pr_process_start_time(pid_t pid)
{
	unsigned long long start;
	return running_since(pid, &start) ? start : 0;
}

static int read_maps(pid_t pid, maps_t *m, char *err, size_t errlen)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT || errno == ESRCH)
			snprintf(err, errlen, "no such process");
		else if (errno == EACCES || errno == EPERM)
			snprintf(err, errlen, "permission denied reading %s (run as the process's user or as root)", path);
		else
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	int rc = 0;
	errno = 0;
	while ((len = getline(&line, &linecap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		uint64_t start, end, offset;
		char perms[8], dev[16];
		unsigned long inode;
		int consumed = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %15s %lu %n",
		           &start, &end, perms, &offset, dev, &inode, &consumed) < 6)
			continue;
		const char *name = line + consumed;
		if (inode == 0 || name[0] != '/')
			continue; /* anonymous, [heap], [vdso], ... */
		if (m->count == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 64;
			mapping_t *items = realloc(m->items, cap * sizeof *items);
			if (!items) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
				break;
			}
			m->items = items;
			m->cap = cap;
		}
		mapping_t *mp = &m->items[m->count];
		mp->start = start;
		mp->end = end;
		mp->offset = offset;
		mp->inode = inode;
		snprintf(mp->dev, sizeof mp->dev, "%s", dev);
		mp->path = strdup(name);
		mp->module = (size_t)-1;
		if (!mp->path) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			break;
		}
		m->count++;
	}
	int read_errno = errno;
	free(line);
	fclose(f);
	if (rc == 0 && read_errno != 0 && read_errno != ENOENT) {
		if (read_errno == ESRCH) {
			snprintf(err, errlen, "process exited while being read");
		} else {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(read_errno));
		}
		return -1;
	}
	if (rc == 0 && m->count == 0) {
		if (pr_process_gone(pid))
			snprintf(err, errlen, "process has exited (zombie or gone)");
		else
			snprintf(err, errlen, "maps no files (a kernel thread?)");
		return -1;
	}
	return rc;
}

/* Open path only if it is a regular file: a mapped device (a GPU, a
 * frame buffer) is not ours to open, and opening may have effects. */
static int open_regular(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

/* Open the file behind mapping mp, the most faithful way we may. */
static int open_mapped_file(pid_t pid, const mapping_t *mp)
{
	char path[4200];
	snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, mp->start, mp->end);
	int fd = open_regular(path);
	if (fd >= 0)
		return fd;
	/* " (deleted)": only map_files reaches the old inode. */
	size_t n = strlen(mp->path);
	if (n > 10 && strcmp(mp->path + n - 10, " (deleted)") == 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, mp->path);
	fd = open_regular(path);
	if (fd >= 0)
		return fd;
	return open_regular(mp->path);
}

/* The file's inode must be the one mapped, or offsets mean nothing. */
static int same_inode(int fd, const mapping_t *mp)
{
	struct stat st;
	return fstat(fd, &st) == 0 && (unsigned long)st.st_ino == mp->inode;
}

/* A path in our own mount namespace that reaches the inode fd has open:
 * the mapped path itself (same namespace, or a chroot-style container
 * sharing it), else the path inside the process's root.  NULL when
 * neither does (or out of memory). */
static char *attach_path(pid_t pid, const mapping_t *mp, int fd)
{
	struct stat want, st;
	if (fstat(fd, &want) != 0)
		return NULL;
	if (stat(mp->path, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino)
		return strdup(mp->path);
	char path[4200];
	snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, mp->path);
	if (stat(path, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino)
		return strdup(path);
	return NULL;
}

/* 1 when the file starts with the ELF magic: only those can carry probes
 * (a process also maps locale archives, fonts, caches). */
static int is_elf_file(int fd)
{
	unsigned char magic[4];
	return pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic && memcmp(magic, "\177ELF", 4) == 0;
}

/* Mappings that are never a program or library: memfd and System V
 * shared memory, devices.  Unopenable ones are skipped without a word. */
static int not_a_program_file(const char *path)
{
	return strncmp(path, "/memfd:", 7) == 0 || strncmp(path, "/SYSV", 5) == 0 || strncmp(path, "/dev/", 5) == 0;
}

/* A mapped ELF file whose probes we cannot know: one line in the set. */
static int note_unreadable(pr_probe_set_t *t, const mapping_t *mp, const char *why, char *err, size_t errlen)
{
	if (pr_probe_set_add_unreadable(t, mp->path, why) == 0)
		return 0;
	snprintf(err, errlen, "out of memory");
	return -1;
}

static uint64_t runtime_address(const maps_t *m, size_t module, int64_t file_offset)
{
	if (file_offset < 0)
		return 0;
	for (size_t i = 0; i < m->count; i++) {
		const mapping_t *mp = &m->items[i];
		if (mp->module != module)
			continue;
		if ((uint64_t)file_offset >= mp->offset && (uint64_t)file_offset - mp->offset < mp->end - mp->start)
			return mp->start + ((uint64_t)file_offset - mp->offset);
	}
	return 0;
}

int pr_proc_read_memory(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n };
	struct iovec remote = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got == (ssize_t)n)
		return 0;
	if (got < 0 && errno == ESRCH)
		return -1;
	/* process_vm_readv may be filtered (seccomp) or refused where
	 * /proc/PID/mem is allowed: try that before giving up. */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = pread(fd, buf, n, (off_t)addr);
	int saved = errno;
	close(fd);
	errno = saved;
	if (got == (ssize_t)n)
		return 0;
	if (got >= 0)
		errno = EIO;
	return -1;
}

/* Read the 16-bit semaphore (sys/sdt.h: unsigned short); 0 ok, -1 with errno. */
static int read_semaphore(pid_t pid, uint64_t addr, unsigned short *value)
{
	return pr_proc_read_memory(pid, addr, value, sizeof *value);
}

static int load_modules(pid_t pid, maps_t *m, pr_probe_set_t *t, char *err, size_t errlen)
{
	for (size_t i = 0; i < m->count; i++) {
		mapping_t *mp = &m->items[i];
		/* Same file seen already: share its module. */
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++) {
			if (m->items[j].inode == mp->inode && strcmp(m->items[j].dev, mp->dev) == 0) {
				mp->module = m->items[j].module;
				seen = 1;
			}
		}
		if (seen)
			continue;
		int fd = open_mapped_file(pid, mp);
		if (fd < 0) {
			int open_errno = errno;
			if (pr_process_gone(pid)) {
				snprintf(err, errlen, "process exited while being read");
				return -1;
			}
			if (open_errno == EINVAL || not_a_program_file(mp->path))
				continue; /* a device, shared memory: not ours to open, never a program */
			char why[200];
			snprintf(why, sizeof why, "cannot open the mapped file (%s): its probes are not listed",
			         strerror(open_errno));
			if (note_unreadable(t, mp, why, err, errlen) != 0)
				return -1;
			continue;
		}
		if (!same_inode(fd, mp)) {
			close(fd);
			if (note_unreadable(t, mp, "the file at this path is not the one mapped (replaced?): its probes are not listed",
			                    err, errlen) != 0)
				return -1;
			continue;
		}
		if (!is_elf_file(fd)) {
			close(fd);
			continue;
		}
		size_t module = pr_probe_set_add_module(t, mp->path);
		if (module == (size_t)-1) {
			close(fd);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		struct stat st;
		if (fstat(fd, &st) == 0) {
			t->modules[module].dev = (unsigned long long)st.st_dev;
			t->modules[module].ino = (unsigned long long)st.st_ino;
		}
		t->modules[module].attach_path = attach_path(pid, mp, fd);
		size_t before = t->probe_count;
		char why[256];
		if (pr_elf_read_probes(fd, t, module, why, sizeof why) != 0) {
			/* Drop whatever the broken file yielded, and say so. */
			pr_probe_set_truncate(t, before);
			if (note_unreadable(t, mp, why, err, errlen) != 0) {
				close(fd);
				return -1;
			}
		}
		close(fd);
		mp->module = module;
	}
	return 0;
}

int pr_probe_set_load_pid(pid_t pid, pr_probe_set_t *t, char *err, size_t errlen)
{
	maps_t m = { NULL, 0, 0 };
	t->is_process = 1;
	t->pid = (int)pid;
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		snprintf(err, errlen, "no such process");
		return -1;
	}
	int rc = read_maps(pid, &m, err, errlen);
	if (rc == 0)
		rc = load_modules(pid, &m, t, err, errlen);
	for (size_t i = 0; rc == 0 && i < t->probe_count; i++) {
		pr_probe_t *p = &t->probes[i];
		p->runtime_address = runtime_address(&m, p->module, p->address_offset);
		p->traced = -1;
		if (!p->semaphore)
			continue; /* no semaphore: always "on", nothing to read */
		p->runtime_semaphore = runtime_address(&m, p->module, p->semaphore_offset);
		if (!p->runtime_semaphore)
			continue;
		unsigned short value;
		if (read_semaphore(pid, p->runtime_semaphore, &value) != 0) {
			if (errno == ESRCH || errno == ENOENT || pr_process_gone(pid))
				snprintf(err, errlen, "process exited while being read");
			else if (errno == EPERM || errno == EACCES)
				snprintf(err, errlen, "permission denied reading its memory (need root, or the same user and ptrace access)");
			else
				snprintf(err, errlen, "cannot read semaphore of %s:%s at 0x%" PRIx64 ": %s",
				         p->provider, p->name, p->runtime_semaphore, strerror(errno));
			rc = -1;
			break;
		}
		p->semaphore_value = value;
		p->traced = value > 0;
	}
	/* Exited after the last read: what we have may be half a process. */
	if (rc == 0 && pr_process_gone(pid)) {
		snprintf(err, errlen, "process exited while being read");
		rc = -1;
	}
	maps_free(&m);
	return rc;
}
