// SPDX-License-Identifier: MIT
/*
 * billing_exporter.bpf.c -- the kernel side of billing-exporter: one USDT
 * program per probe the metrics need, each adding its fire into a per-CPU
 * hash map keyed by the probe's label arguments.
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

#define BX_HASH(name, keytype) \
  struct { \
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH); \
    __uint(max_entries, BX_MAX_ENTRIES); \
    __uint(map_flags, BPF_F_NO_PREALLOC); \
    __type(key, struct keytype); \
    __type(value, struct bx_value); \
  } name SEC(".maps")

BX_HASH(m_request_done, bx_key_request);
BX_HASH(m_transaction_done, bx_key_transaction);
BX_HASH(m_invoice_create, bx_key_currency);
BX_HASH(m_payment_auth, bx_key_payment);
BX_HASH(m_refund_process, bx_key_refund);
BX_HASH(m_error, bx_key_error);
BX_HASH(m_db_query_done, bx_key_db);
BX_HASH(m_gateway_call_done, bx_key_gateway);

/* Fires whose label set found its map full, one slot per map (BX_DROP_*). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BX_DROP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} m_dropped SEC(".maps");

static const struct bx_value zero_value;
static const __u64 dur_bounds[BX_DUR_BOUNDS] = { BX_DUR_BOUND_LIST };
static const __s64 amount_bounds[BX_AMOUNT_BOUNDS] = { BX_AMOUNT_BOUND_LIST };

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

/* The row for key, created zeroed on first sight; NULL when the map is full. */
static __always_inline struct bx_value *row(void *map, const void *key, __u32 drop_slot)
{
	struct bx_value *v = bpf_map_lookup_elem(map, key);

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

static __always_inline void observe_duration(struct bx_value *v, __u64 ns)
{
	__u32 i = 0;

	if (ns == 0)
		return; /* not measured: never observed */
#pragma unroll
	for (int b = 0; b < BX_DUR_BOUNDS; b++)
		i += ns > dur_bounds[b];
	v->dur_count += 1;
	v->dur_sum_ns += ns;
	if (i < BX_DUR_BUCKETS)
		v->dur_buckets[i] += 1;
}

static __always_inline void observe_amount(struct bx_value *v, __s64 amount)
{
	__u32 i = 0;

#pragma unroll
	for (int b = 0; b < BX_AMOUNT_BOUNDS; b++)
		i += amount > amount_bounds[b];
	v->amount_sum += amount;
	if (i < BX_AMOUNT_BUCKETS)
		v->amount_buckets[i] += 1;
}

SEC("usdt")
int request__done(struct pt_regs *ctx)
{
	struct bx_key_request k = {};

	arg_str(ctx, BX_ARG_REQUEST_DONE_HANDLER, k.handler, sizeof k.handler);
	k.status = (__s32)arg(ctx, BX_ARG_REQUEST_DONE_STATUS);
	struct bx_value *v = row(&m_request_done, &k, BX_DROP_REQUEST);
	if (!v)
		return 0;
	v->count += 1;
	observe_duration(v, (__u64)arg(ctx, BX_ARG_REQUEST_DONE_DURATION));
	return 0;
}

SEC("usdt")
int transaction__done(struct pt_regs *ctx)
{
	struct bx_key_transaction k = {};

	arg_str(ctx, BX_ARG_TRANSACTION_DONE_KIND, k.kind, sizeof k.kind);
	k.status = (__s32)arg(ctx, BX_ARG_TRANSACTION_DONE_STATUS);
	struct bx_value *v = row(&m_transaction_done, &k, BX_DROP_TRANSACTION);
	if (!v)
		return 0;
	v->count += 1;
	observe_duration(v, (__u64)arg(ctx, BX_ARG_TRANSACTION_DONE_DURATION));
	return 0;
}

SEC("usdt")
int invoice__create(struct pt_regs *ctx)
{
	struct bx_key_currency k = {};

	arg_str(ctx, BX_ARG_INVOICE_CREATE_CURRENCY, k.currency, sizeof k.currency);
	struct bx_value *v = row(&m_invoice_create, &k, BX_DROP_INVOICE);
	if (!v)
		return 0;
	v->count += 1;
	observe_amount(v, (__s64)arg(ctx, BX_ARG_INVOICE_CREATE_AMOUNT));
	return 0;
}

SEC("usdt")
int payment__auth(struct pt_regs *ctx)
{
	struct bx_key_payment k = {};

	arg_str(ctx, BX_ARG_PAYMENT_AUTH_GATEWAY, k.gateway, sizeof k.gateway);
	arg_str(ctx, BX_ARG_PAYMENT_AUTH_CURRENCY, k.currency, sizeof k.currency);
	k.result = (__s32)arg(ctx, BX_ARG_PAYMENT_AUTH_RESULT);
	struct bx_value *v = row(&m_payment_auth, &k, BX_DROP_PAYMENT);
	if (!v)
		return 0;
	v->count += 1;
	observe_amount(v, (__s64)arg(ctx, BX_ARG_PAYMENT_AUTH_AMOUNT));
	observe_duration(v, (__u64)arg(ctx, BX_ARG_PAYMENT_AUTH_DURATION));
	return 0;
}

SEC("usdt")
int refund__process(struct pt_regs *ctx)
{
	struct bx_key_refund k = {};

	arg_str(ctx, BX_ARG_REFUND_PROCESS_REASON, k.reason, sizeof k.reason);
	arg_str(ctx, BX_ARG_REFUND_PROCESS_CURRENCY, k.currency, sizeof k.currency);
	struct bx_value *v = row(&m_refund_process, &k, BX_DROP_REFUND);
	if (!v)
		return 0;
	v->count += 1;
	observe_amount(v, (__s64)arg(ctx, BX_ARG_REFUND_PROCESS_AMOUNT));
	return 0;
}

SEC("usdt")
int error(struct pt_regs *ctx)
{
	struct bx_key_error k = {};

	arg_str(ctx, BX_ARG_ERROR_COMPONENT, k.component, sizeof k.component);
	k.code = (__s32)arg(ctx, BX_ARG_ERROR_CODE);
	struct bx_value *v = row(&m_error, &k, BX_DROP_ERROR);
	if (v)
		v->count += 1;
	return 0;
}

SEC("usdt")
int db__query__done(struct pt_regs *ctx)
{
	struct bx_key_db k = {};

	arg_str(ctx, BX_ARG_DB_QUERY_DONE_OPERATION, k.operation, sizeof k.operation);
	struct bx_value *v = row(&m_db_query_done, &k, BX_DROP_DB);
	if (!v)
		return 0;
	v->count += 1;
	observe_duration(v, (__u64)arg(ctx, BX_ARG_DB_QUERY_DONE_DURATION));
	return 0;
}

SEC("usdt")
int gateway__call__done(struct pt_regs *ctx)
{
	struct bx_key_gateway k = {};

	arg_str(ctx, BX_ARG_GATEWAY_CALL_DONE_GATEWAY, k.gateway, sizeof k.gateway);
	arg_str(ctx, BX_ARG_GATEWAY_CALL_DONE_OPERATION, k.operation, sizeof k.operation);
	struct bx_value *v = row(&m_gateway_call_done, &k, BX_DROP_GATEWAY);
	if (!v)
		return 0;
	v->count += 1;
	observe_duration(v, (__u64)arg(ctx, BX_ARG_GATEWAY_CALL_DONE_DURATION));
	return 0;
}
