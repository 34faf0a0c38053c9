// SPDX-License-Identifier: MIT
/*
 * billing_exporter.bpf.c -- the kernel side of billing-exporter: one USDT
 * program per probe the metrics need, each adding its fire into a per-CPU
 * hash map keyed by the probe's label arguments.
 *
 * The maps, their keys and values and the programs are generated from
 * billing.d's metric declarations; this file holds what they share.
 *
 * Per-CPU maps: uprobe programs run with preemption off, so a plain add on
 * this CPU's copy can never lose an increment to another CPU; user space
 * sums the copies.  Only the arguments a metric needs are read
 * (bpf_usdt_arg per position, not BPF_USDT(), which fetches every argument
 * up to the last one named).  Strings are read bounded into fixed-size
 * key fields; all decoding and escaping happens in user space.
 *
 * Kernel types: only UAPI headers (linux/bpf.h, asm/ptrace.h through
 * bpf_tracing.h), no vmlinux.h: nothing here reads kernel structures, so
 * the build needs neither /sys/kernel/btf/vmlinux nor CO-RE.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

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

/* Fires whose label set found its map full, one slot per map (BX_MAP_*). */
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

/* Zeroes for a new row of any map. */
static const union bx_value_any zero_value;

static __always_inline long arg(struct pt_regs *ctx, __u64 n)
{
	long v = 0;

	bpf_usdt_arg(ctx, n, &v);
	return v;
}

static __always_inline void arg_str(struct pt_regs *ctx, __u64 n, char *dst, __u32 size)
{
	bpf_probe_read_user_str(dst, size, (const void *)arg(ctx, n));
}

/* The row for key, created zeroed on first sight; NULL when the map is
 * full, or when the fire is another user's than --uid's. */
static __always_inline void *row(void *map, const void *key, __u32 drop_slot)
{
	if (bx_filter_uid && (__u32)bpf_get_current_uid_gid() != bx_only_uid)
		return NULL;
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, &zero_value, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v) {
		__u64 *d = bpf_map_lookup_elem(&m_dropped, &drop_slot);
		if (d)
			*d += 1;
	}
	return v;
}

/* The maps and programs, generated from billing.d's metric declarations
 * (provider/metrics.py): each reads its label arguments into the key and
 * counts the fire, and observes its quantities (bx_observe_*, shared with
 * the stats writer), in the row for that key. */
#include "billing_exporter_programs.h"
