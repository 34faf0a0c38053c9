/*
 * program_files.h -- the program files of a --binary PROGRAM target, as
 * user space and as the BPF filter see them.
 *
 * The BPF programs tell a process running PROGRAM by the inode of its
 * executable (task->mm->exe_file): the device of that inode's super block
 * and its number.  stat() may report another device than the super
 * block's (btrfs reports a subvolume's, overlayfs on several file systems
 * a layer's), so the kernel's device is read where the kernel shows it:
 * the mount the file is open on (/proc/self/fdinfo) and that mount's line
 * in the mountinfo of the process through whose root it was reached.
 */
#ifndef BX_PROGRAM_FILES_H
#define BX_PROGRAM_FILES_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct bx_program_file {
	unsigned long long dev, ino;   /* as stat() shows it: what /proc/PID/exe is compared with */
	unsigned long long kdev, kino; /* its inode's super block device (MKDEV) and number: the BPF filter's key */
	uid_t uid;                     /* its owner */
	int filed;                     /* 1 in the BPF map; -1 refused there (said once) */
	long long run_at;              /* when a look through /proc last found a process running it (s) */
} bx_program_file_t;

/* The program file open on fd, reached through the root of process pid
 * (0: our own).  0, or -1 with a one-line reason in err. */
int bx_program_file_read(int fd, pid_t pid, bx_program_file_t *out, char *err, size_t errlen);

/* What process pid runs, as stat() shows it (through /proc/PID/exe).  0,
 * or -1 with errno (a kernel thread, gone, or another user's without
 * CAP_SYS_PTRACE). */
int bx_process_program(pid_t pid, unsigned long long *dev, unsigned long long *ino);

/* --binary PATH counts the service, not whoever can name a file PATH in
 * a root of his own (docs/security.md): a file at PATH in the root of
 * process pid, other than the file here, counts only when it (st, its
 * stat through that root) is owned by root, by owner (the owner of the
 * file at PATH here; -1 none) or by only_uid, is writable by neither
 * group nor others,
 * and pid's mount namespace belongs to a user namespace root made, or to
 * one the user only_uid (--uid; -1 none) made.  1 when it counts; 0 with
 * a one-line reason in why. */
int bx_foreign_file_trusted(pid_t pid, const struct stat *st, long owner, long only_uid, char *why, size_t whylen);

/* At most this many files per --binary PATH are attached: the file at
 * PATH here (the service's own rollout) always counts beyond it. */
#define BX_FILES_PER_PATH 32

/* A program file that no look through /proc has found a process running
 * for this long (seconds), but the one at PATH here, is detached: the
 * default of --idle-detach. */
#define BX_IDLE_DETACH_S 30

#endif /* BX_PROGRAM_FILES_H */
