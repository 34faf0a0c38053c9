/*
 * billing_exporter.h -- what the BPF programs and user space both see.
 *
 * The keys, values, histogram bounds and argument positions of every map
 * are generated from billing.d's metric declarations
 * (billing_metrics_layout.h, provider/metrics.py); only the exporter's own
 * limits are here.  C99 and BPF C alike; no libc.
 */
#ifndef BILLING_EXPORTER_H
#define BILLING_EXPORTER_H

#include "billing_metrics_layout.h"

/* Every map holds at most this many label sets (billing.d's
 * "@@label-sets"); a fire whose new label set does not fit goes to the
 * map's fold map, and is counted in the "dropped" array (one slot per
 * map, BX_MAP_*) only if that refuses it too. */
#define BX_MAX_ENTRIES BX_LABEL_SETS

/* --binary PROGRAM: a program file, as the kernel's inode names it (its
 * super block's device, MKDEV-encoded as the kernel keeps it, and its
 * inode number); the key of bx_programs, whose value is the USDT cookie
 * of the target that counts the processes running it. */
struct bx_program_key {
	bx_u64 dev;
	bx_u64 ino;
};

/* Program files bx_programs holds at most (every --binary together). */
#define BX_MAX_PROGRAM_FILES 4096

/* --- USDT arguments --------------------------------------------------------
 * Where each argument of a probe site is, as the site's stapsdt note says
 * ("-4@%edx 8@-16(%rbp) 8@$5"): read by user space (usdt_args.c) into a
 * spec, written to the map bx_usdt_specs under a spec ID, and fetched by
 * the programs from the registers the uprobe saw (billing_exporter.bpf.c).
 * Both halves are compiled from this one definition: no other library's
 * layout is involved.  Each link's BPF cookie carries the spec ID of its
 * site (low 32 bits) and its target's cookie (high 32 bits: the --binary
 * filter of bx_programs; 0 none). */
#define BX_USDT_MAX_ARGS 12    /* sys/sdt.h's limit */
#define BX_USDT_MAX_SPECS 1024 /* distinct (probe, argument string), every target together */
#define BX_USDT_NONE 0         /* no such argument: never read (the site was refused) */
#define BX_USDT_CONSTANT 1     /* $5: value */
#define BX_USDT_REGISTER 2     /* %rax: the register at byte offset reg of struct pt_regs */
#define BX_USDT_MEMORY 3       /* -8(%rbp): the size bytes at that register's value + value */

struct bx_usdt_arg {
	bx_s64 value;
	unsigned short reg;
	unsigned char kind;      /* BX_USDT_* */
	unsigned char size;      /* bytes: 1, 2, 4 or 8 */
	unsigned char shift;     /* 64 - 8 * size: the bits above the argument */
	unsigned char is_signed; /* sign-extended from size bytes, else zero-extended */
	unsigned char pad[2];
};

struct bx_usdt_spec {
	struct bx_usdt_arg args[BX_USDT_MAX_ARGS];
};

#endif /* BILLING_EXPORTER_H */
