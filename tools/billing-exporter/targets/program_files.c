/*
 * program_files.c -- program files as the BPF filter sees them
 * (program_files.h).
 */
#include "program_files.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "text_file.h" /* tools/probe-reader */

/* /proc files are small; mountinfo grows with the mounts (a host with
 * thousands of containers has tens of thousands). */
#define FDINFO_MAX (64 * 1024)
#define MOUNTINFO_MAX (64 * 1024 * 1024)

/* The mount ID of the file open on fd. */
static int mount_id(int fd, long *id)
{
	char path[64];
	size_t len;
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	char *text = pr_read_text_file(path, FDINFO_MAX, &len);
	if (!text)
		return -1;
	const char *line = strstr(text, "\nmnt_id:");
	int ok = line && sscanf(line + 8, "%ld", id) == 1;
	free(text);
	return ok ? 0 : -1;
}

/* The device of mount id's super block, as the kernel keeps it (MKDEV:
 * major << 20 | minor), from the mountinfo of process pid (0: ours):
 * "ID PARENT MAJOR:MINOR ...". */
static int mount_device(pid_t pid, long id, unsigned long long *kdev)
{
	char path[64];
	size_t len;
	if (pid > 0)
		snprintf(path, sizeof path, "/proc/%d/mountinfo", (int)pid);
	else
		snprintf(path, sizeof path, "/proc/self/mountinfo");
	char *text = pr_read_text_file(path, MOUNTINFO_MAX, &len);
	if (!text)
		return -1;
	int found = 0;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
		long mid, parent;
		unsigned major, minor;
		if (sscanf(line, "%ld %ld %u:%u", &mid, &parent, &major, &minor) == 4 && mid == id) {
			*kdev = ((unsigned long long)major << 20) | minor;
			found = 1;
		}
	}
	free(text);
	return found ? 0 : -1;
}

int bx_program_file_read(int fd, pid_t pid, bx_program_file_t *out, char *err, size_t errlen)
{
	struct stat st;
	long id = 0;
	memset(out, 0, sizeof *out);
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot stat it: %s", strerror(errno));
		return -1;
	}
	if (mount_id(fd, &id) != 0 || mount_device(pid, id, &out->kdev) != 0) {
		snprintf(err, errlen, "cannot tell the device of its file system as the kernel names it (no mount %ld in "
		                      "the mountinfo of %s)",
		         id, pid > 0 ? "its process" : "this process");
		return -1;
	}
	out->dev = (unsigned long long)st.st_dev;
	out->ino = (unsigned long long)st.st_ino;
	out->kino = (unsigned long long)st.st_ino;
	out->uid = st.st_uid;
	return 0;
}

int bx_process_program(pid_t pid, unsigned long long *dev, unsigned long long *ino)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	if (stat(path, &st) != 0)
		return -1;
	*dev = (unsigned long long)st.st_dev;
	*ino = (unsigned long long)st.st_ino;
	return 0;
}

/* Who made the user namespace that owns pid's mount namespace, as this
 * host numbers users (NS_GET_USERNS, NS_GET_OWNER_UID).  0, or -1. */
static int mount_namespace_owner(pid_t pid, uid_t *owner)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	int mnt = open(path, O_RDONLY | O_CLOEXEC);
	if (mnt < 0)
		return -1;
	int userns = ioctl(mnt, NS_GET_USERNS);
	close(mnt);
	if (userns < 0)
		return -1;
	int rc = ioctl(userns, NS_GET_OWNER_UID, owner);
	close(userns);
	return rc == 0 ? 0 : -1;
}

int bx_foreign_file_trusted(pid_t pid, const struct stat *st, long owner, long only_uid, char *why, size_t whylen)
{
	uid_t ns_owner;
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "writable by %s", st->st_mode & S_IWOTH ? "anyone" : "its group");
		return 0;
	}
	/* the --uid user's own file: his processes are the only ones counted */
	int owners = st->st_uid == 0 || (owner >= 0 && st->st_uid == (uid_t)owner) ||
	             (only_uid >= 0 && st->st_uid == (uid_t)only_uid);
	if (!owners) {
		snprintf(why, whylen, "owned by uid %u, neither root nor the owner of the file at that path here",
		         (unsigned)st->st_uid);
		return 0;
	}
	if (mount_namespace_owner(pid, &ns_owner) != 0) {
		snprintf(why, whylen, "whose mount namespace cannot be told (%s)", strerror(errno));
		return 0;
	}
	if (ns_owner != 0 && (only_uid < 0 || ns_owner != (uid_t)only_uid)) {
		snprintf(why, whylen, "in a mount namespace uid %u made (--uid %u counts it)", (unsigned)ns_owner,
		         (unsigned)ns_owner);
		return 0;
	}
	return 1;
}
