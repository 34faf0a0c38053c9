/*
 * billing_exporter.h -- what the BPF programs and user space both see:
 * the key of each map, the one value layout, the histogram bounds and the
 * position of each probe argument a program reads.
 *
 * C99 and BPF C alike; no libc.  The argument positions are checked
 * against billing.d's run-time catalogue at start-up (metric_table.c), so
 * a probe argument moved in billing.d stops the exporter instead of
 * producing wrong labels.
 */
#ifndef BILLING_EXPORTER_H
#define BILLING_EXPORTER_H

#ifdef __bpf__
#  include <linux/types.h>
typedef __u64 bx_u64;
typedef __s64 bx_s64;
typedef __s32 bx_s32;
#else
#  include <stdint.h>
typedef uint64_t bx_u64;
typedef int64_t bx_s64;
typedef int32_t bx_s32;
#endif

/* Bounded string reads: longer values are cut (the cut is visible in the
 * label, never a fault).  Currency codes are ISO 4217, three letters. */
#define BX_STR 32
#define BX_CURRENCY 8

/* Every map holds at most this many label sets; a fire whose new label
 * set does not fit is counted in the "dropped" array instead. */
#define BX_MAX_ENTRIES 16384

/* Histogram upper bounds ("le").  Durations in nanoseconds, chosen so the
 * SLO thresholds 50 ms, 100 ms, 250 ms, 500 ms and 1 s are exact; amounts
 * in minor units.  The last bucket is +Inf. */
#define BX_DUR_BOUNDS 14
#define BX_DUR_BUCKETS (BX_DUR_BOUNDS + 1)
#define BX_DUR_BOUND_LIST \
  500000ULL, 1000000ULL, 2500000ULL, 5000000ULL, 10000000ULL, 25000000ULL, \
      50000000ULL, 100000000ULL, 250000000ULL, 500000000ULL, 1000000000ULL, \
      2500000000ULL, 5000000000ULL, 10000000000ULL
#define BX_AMOUNT_BOUNDS 10
#define BX_AMOUNT_BUCKETS (BX_AMOUNT_BOUNDS + 1)
#define BX_AMOUNT_BOUND_LIST \
  100LL, 500LL, 1000LL, 5000LL, 10000LL, 50000LL, 100000LL, 500000LL, \
      1000000LL, 10000000LL

/* One value layout for every map (per CPU): fires, the sum of the
 * probe's amount, the amount histogram, and the duration histogram over
 * the fires that measured one (duration_ns 0 is "not measured"). */
struct bx_value {
	bx_u64 count;
	bx_s64 amount_sum;
	bx_u64 amount_buckets[BX_AMOUNT_BUCKETS];
	bx_u64 dur_count;
	bx_u64 dur_sum_ns;
	bx_u64 dur_buckets[BX_DUR_BUCKETS];
};

/* Keys: the label-bearing arguments of one probe, fixed size. */
struct bx_key_request {
	char handler[BX_STR];
	bx_s32 status;
	bx_s32 pad;
};
struct bx_key_transaction {
	char kind[BX_STR];
	bx_s32 status;
	bx_s32 pad;
};
struct bx_key_currency {
	char currency[BX_CURRENCY];
};
struct bx_key_payment {
	char gateway[BX_STR];
	char currency[BX_CURRENCY];
	bx_s32 result;
	bx_s32 pad;
};
struct bx_key_refund {
	char reason[BX_STR];
	char currency[BX_CURRENCY];
};
struct bx_key_error {
	char component[BX_STR];
	bx_s32 code;
	bx_s32 pad;
};
struct bx_key_db {
	char operation[BX_STR];
};
struct bx_key_gateway {
	char gateway[BX_STR];
	char operation[BX_STR];
};

/* Slots of the m_dropped array: fires whose new label set found its map
 * full, per map. */
enum { BX_DROP_REQUEST,
       BX_DROP_TRANSACTION,
       BX_DROP_INVOICE,
       BX_DROP_PAYMENT,
       BX_DROP_REFUND,
       BX_DROP_ERROR,
       BX_DROP_DB,
       BX_DROP_GATEWAY,
       BX_DROP_SLOTS };

/* Which argument each program reads (0-based, billing.d order). */
#define BX_ARG_REQUEST_DONE_HANDLER 1
#define BX_ARG_REQUEST_DONE_STATUS 2
#define BX_ARG_REQUEST_DONE_DURATION 3
#define BX_ARG_TRANSACTION_DONE_KIND 1
#define BX_ARG_TRANSACTION_DONE_STATUS 2
#define BX_ARG_TRANSACTION_DONE_DURATION 3
#define BX_ARG_INVOICE_CREATE_AMOUNT 2
#define BX_ARG_INVOICE_CREATE_CURRENCY 3
#define BX_ARG_PAYMENT_AUTH_AMOUNT 1
#define BX_ARG_PAYMENT_AUTH_CURRENCY 2
#define BX_ARG_PAYMENT_AUTH_GATEWAY 3
#define BX_ARG_PAYMENT_AUTH_RESULT 4
#define BX_ARG_PAYMENT_AUTH_DURATION 5
#define BX_ARG_REFUND_PROCESS_AMOUNT 2
#define BX_ARG_REFUND_PROCESS_CURRENCY 3
#define BX_ARG_REFUND_PROCESS_REASON 4
#define BX_ARG_ERROR_COMPONENT 1
#define BX_ARG_ERROR_CODE 2
#define BX_ARG_DB_QUERY_DONE_OPERATION 1
#define BX_ARG_DB_QUERY_DONE_DURATION 3
#define BX_ARG_GATEWAY_CALL_DONE_GATEWAY 1
#define BX_ARG_GATEWAY_CALL_DONE_OPERATION 2
#define BX_ARG_GATEWAY_CALL_DONE_DURATION 4

#endif /* BILLING_EXPORTER_H */
