// SPDX-License-Identifier: MIT
/*
 * billing_exporter.bpf.c -- the kernel side of billing-exporter: one uprobe
 * program per probe the metrics need, attached to the probe's USDT sites, each adding its fire into a per-CPU
 * hash map keyed by the probe's label arguments (and, once that map is
 * full, in a small fold map beside it: see billing_exporter_programs.h).
 *
 * The maps, their keys and values and the programs are generated from
 * billing.d's metric declarations; this file holds what they share.
 *
 * Per-CPU maps: uprobe programs run with preemption off, so a plain add on
 * this CPU's copy can never lose an increment to another CPU; user space
 * sums the copies.  Only the arguments a metric needs are read, each from
 * where the site's note says it is: the site's spec (billing_exporter.h,
 * written by usdt_links.c), found by the spec ID in the link's cookie.
 * Strings are read bounded into fixed-size key fields; all decoding and
 * escaping happens in user space.
 *
 * Kernel types: UAPI headers (linux/bpf.h, asm/ptrace.h through
 * bpf_tracing.h) and, for the one kernel structure chain read here (the
 * firing task's executable: --binary's filter), the few fields it reads,
 * declared below for CO-RE: libbpf relocates them against the running
 * kernel's BTF (/sys/kernel/btf/vmlinux) at load, so the build needs no
 * vmlinux.h.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "billing_exporter.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define BX_HASH(name, keytype, valuetype) \
  struct { \
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH); \
    __uint(max_entries, BX_MAX_ENTRIES); \
    __uint(map_flags, BPF_F_NO_PREALLOC); \
    __type(key, struct keytype); \
    __type(value, struct valuetype); \
  } name SEC(".maps")

/* A fold map: its keys are bounded by construction (entries = every key a
 * folded fire can have), and preallocated so an insert never finds the
 * allocator empty: a fold map takes every fire it is given. */
#define BX_FOLD_HASH(name, keytype, valuetype, entries) \
  struct { \
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH); \
    __uint(max_entries, entries); \
    __type(key, struct keytype); \
    __type(value, struct valuetype); \
  } name SEC(".maps")

/* A label's known values ("@@known" in billing.d), filled by user space
 * before any program is attached; looked up only when a fire is folded. */
#define BX_KNOWN(name, keytype, entries) \
  struct { \
    __uint(type, BPF_MAP_TYPE_HASH); \
    __uint(max_entries, entries); \
    __type(key, struct keytype); \
    __type(value, __u8); \
  } name SEC(".maps")

/* Fires not counted at all (a fold map refused them: never, by design),
 * one slot per map (BX_MAP_*). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BX_MAP_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} m_dropped SEC(".maps");

/* --uid: count only fires of processes whose real uid (as the host sees
 * it) is bx_only_uid; set before load. */
const volatile bool bx_filter_uid = false;
const volatile __u32 bx_only_uid = 0;

/* --cgroup: count only fires of processes in the cgroup v2 at index 0 of
 * bx_cgroup (filled by user space before any program is attached) or
 * below it.  The kernel walks the task's cgroup ancestry: no level to
 * know, the same answer in any cgroup namespace; an empty slot counts
 * nothing. */
const volatile bool bx_filter_cgroup = false;

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} bx_cgroup SEC(".maps");

/* --binary PROGRAM: the fires of its files and of the libraries it loads
 * count only in processes running one of its program files, whoever else
 * maps those libraries.  Each of the target's links carries the target's
 * cookie in the high half of its BPF cookie (0 for links without this
 * filter: --pid, a --binary of a library); bx_programs maps each program file user space accepted for a
 * target to that target's cookie.  The firing task's executable is read
 * at each fire, so a worker forked a moment ago, or a process that has
 * just exec'd a known file, counts from its first fire, with nothing for
 * user space to discover first.  bx_filter_programs (set before load):
 * some target has such links; else no fire pays for the cookie. */
const volatile bool bx_filter_programs = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BX_MAX_PROGRAM_FILES);
	__type(key, struct bx_program_key);
	__type(value, __u64);
} bx_programs SEC(".maps");

/* The fields of the chain task->mm->exe_file->f_inode that the filter
 * reads, for CO-RE ("___bx": libbpf matches them to the kernel's types of
 * the name before it). */
struct super_block___bx {
	unsigned int s_dev;
} __attribute__((preserve_access_index));

struct inode___bx {
	unsigned long i_ino;
	struct super_block___bx *i_sb;
} __attribute__((preserve_access_index));

struct file___bx {
	struct inode___bx *f_inode;
} __attribute__((preserve_access_index));

struct mm_struct___bx {
	struct file___bx *exe_file;
} __attribute__((preserve_access_index));

struct task_struct___bx {
	struct mm_struct___bx *mm;
} __attribute__((preserve_access_index));

/* 1 when the firing task runs a program file of the target whose cookie
 * this is. */
static __always_inline int runs_program_of(__u64 cookie)
{
	struct task_struct___bx *task = (void *)bpf_get_current_task();
	struct inode___bx *exe = BPF_CORE_READ(task, mm, exe_file, f_inode);
	struct bx_program_key key = {};

	if (!exe)
		return 0;
	key.dev = BPF_CORE_READ(exe, i_sb, s_dev);
	key.ino = BPF_CORE_READ(exe, i_ino);
	__u64 *target = bpf_map_lookup_elem(&bx_programs, &key);
	return target && *target == cookie;
}

/* Zeroes for a new row of any map. */
static const union bx_value_any zero_value;

/* The argument specs of the sites attached, by spec ID (usdt_links.c
 * writes each before a link uses it). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BX_USDT_MAX_SPECS);
	__type(key, __u32);
	__type(value, struct bx_usdt_spec);
} bx_usdt_specs SEC(".maps");

/* The spec of the site that fired: its ID is the low half of the link's
 * cookie. */
static __always_inline const struct bx_usdt_spec *site_spec(__u64 cookie)
{
	__u32 id = (__u32)cookie;

	return bpf_map_lookup_elem(&bx_usdt_specs, &id);
}

/* Argument n (a constant) of the fire, as its spec says: a constant, a
 * register the uprobe saw, or the bytes at a register plus a
 * displacement; cut to its size and sign- or zero-extended. */
static __always_inline long arg(struct pt_regs *ctx, const struct bx_usdt_spec *spec, __u32 n)
{
	const struct bx_usdt_arg *a = &spec->args[n];
	__u64 v = 0;
	__u32 size = a->size;

	if (a->kind == BX_USDT_CONSTANT)
		return a->value;
	bpf_probe_read_kernel(&v, sizeof v, (char *)ctx + a->reg);
	if (a->kind == BX_USDT_MEMORY) {
		const void *at = (const char *)v + a->value;

		v = 0;
		/* exactly the argument's bytes: no read past them into a page
		 * that may not be mapped */
		if (size > sizeof v)
			return 0;
		bpf_probe_read_user(&v, size, at);
	}
	v <<= a->shift;
	return a->is_signed ? (long)((__s64)v >> a->shift) : (long)(v >> a->shift);
}

static __always_inline void arg_str(struct pt_regs *ctx, const struct bx_usdt_spec *spec, __u32 n, char *dst,
                                    __u32 size)
{
	bpf_probe_read_user_str(dst, size, (const void *)arg(ctx, spec, n));
}

/* 0 for a fire of another user than --uid's, from outside --cgroup's
 * subtree, or (a --binary PROGRAM's link: cookie) of a process not
 * running that program: all must hold. */
static __always_inline int counted(__u64 cookie)
{
	if (bx_filter_uid && (__u32)bpf_get_current_uid_gid() != bx_only_uid)
		return 0;
	if (bx_filter_cgroup && bpf_current_task_under_cgroup(&bx_cgroup, 0) != 1)
		return 0;
	if (!bx_filter_programs)
		return 1;
	cookie >>= 32;
	return !cookie || runs_program_of(cookie);
}

/* The row for key, created zeroed on first sight; NULL when the map is
 * full (or the kernel's allocator had nothing for it). */
static __always_inline void *row(void *map, const void *key)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, &zero_value, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* A folded string field: every byte 0xff, the last one too.  A string read
 * from the service always ends in a NUL within its field, so no value it
 * sends can look folded; user space shows it as "other". */
static __always_inline void fold_str(char *field, __u32 size)
{
	__builtin_memset(field, 0xff, size);
}

static __always_inline int dropped(__u32 slot)
{
	__u64 *d = bpf_map_lookup_elem(&m_dropped, &slot);

	if (d)
		*d += 1;
	return 0;
}

/* The maps and programs, generated from billing.d's metric declarations
 * (provider/metrics.py): each reads its label arguments into the key and
 * counts the fire, and observes its quantities (bx_observe_*, shared with
 * the stats writer), in the row for that key. */
#include "billing_exporter_programs.h"
