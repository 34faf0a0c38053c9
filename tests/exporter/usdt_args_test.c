/*
 * usdt_args_test.c -- the exporter's reading of a site's argument string
 * (tools/billing-exporter/usdt/usdt_args.c): each operand form gcc and clang
 * give an integer or pointer argument on x86-64 decoded to the register
 * offset, displacement, size and sign the BPF programs fetch by; every
 * other form, and a site that does not match billing.d's declaration,
 * refused with a reason.  Exit 0 when all hold, 1 naming each that does
 * not.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <asm/ptrace.h>

#include "usdt_args.h"

static int failures;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	failures += !ok;
}

/* payment-auth as billing.d declares it: the types every form is read as */
static const billing_probe_arg_t six[] = {
	{ "payment_id", BILLING_ARG_UINT64, "" },
	{ "amount_minor", BILLING_ARG_INT64, "" },
	{ "currency", BILLING_ARG_STRING, "" },
	{ "gateway", BILLING_ARG_STRING, "" },
	{ "result", BILLING_ARG_INT32, "" },
	{ "duration_ns", BILLING_ARG_UINT64, "" },
};
static const billing_probe_info_t payment_auth = { "payment-auth", "payment__auth", "", 6, six };

/* One argument's expected reading. */
typedef struct want {
	int kind;
	int reg; /* offset in struct pt_regs; -1 for a constant */
	long long value;
	int size, is_signed;
} want_t;

static void expect(const char *args, const want_t w[6])
{
	struct bx_usdt_spec spec;
	char err[300] = "", what[600];
	int rc = bx_usdt_args_parse(args, &payment_auth, &spec, err, sizeof err);
	snprintf(what, sizeof what, "\"%s\" is read (%s)", args, rc == 0 ? "read" : err);
	check(rc == 0, what);
	for (int i = 0; rc == 0 && i < 6; i++) {
		const struct bx_usdt_arg *a = &spec.args[i];
		int ok = a->kind == w[i].kind && (w[i].reg < 0 || a->reg == w[i].reg) && a->value == w[i].value &&
		         a->size == w[i].size && a->shift == 64 - 8 * w[i].size && a->is_signed == w[i].is_signed;
		snprintf(what, sizeof what, "  argument %d: kind %d reg %d value %lld size %d signed %d (got %d %d %lld %d %d)",
		         i + 1, w[i].kind, w[i].reg, w[i].value, w[i].size, w[i].is_signed, a->kind, a->reg,
		         (long long)a->value, a->size, a->is_signed);
		check(ok, what);
	}
	for (int i = 6; rc == 0 && i < BX_USDT_MAX_ARGS; i++)
		if (spec.args[i].kind != BX_USDT_NONE)
			check(0, "  no argument past the sixth");
}

static void refuse(const char *args, const char *because)
{
	struct bx_usdt_spec spec;
	char err[300] = "", what[700];
	int rc = bx_usdt_args_parse(args, &payment_auth, &spec, err, sizeof err);
	snprintf(what, sizeof what, "\"%s\" is refused, saying \"%s\" (%s)", args, because, rc ? err : "read");
	check(rc != 0 && strstr(err, because) != NULL, what);
}

#define R(name) ((int)offsetof(struct pt_regs, name))

int main(void)
{
	if (!bx_usdt_args_built()) {
		printf("skipped: argument specs are read on x86-64 only\n");
		return 77;
	}
	/* what gcc -O2 gives billingd's payment-auth, and every register width */
	expect("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%r9",
	       (const want_t[6]){ { BX_USDT_REGISTER, R(rdi), 0, 8, 0 }, { BX_USDT_REGISTER, R(rsi), 0, 8, 1 }, { BX_USDT_REGISTER, R(rdx), 0, 8, 0 }, { BX_USDT_REGISTER, R(rcx), 0, 8, 0 }, { BX_USDT_REGISTER, R(r8), 0, 4, 1 }, { BX_USDT_REGISTER, R(r9), 0, 8, 0 } });
	expect("8@%rax -8@%rbx 8@%rbp 8@%rsp 4@%eax 8@%r15",
	       (const want_t[6]){ { BX_USDT_REGISTER, R(rax), 0, 8, 0 }, { BX_USDT_REGISTER, R(rbx), 0, 8, 1 }, { BX_USDT_REGISTER, R(rbp), 0, 8, 0 }, { BX_USDT_REGISTER, R(rsp), 0, 8, 0 }, { BX_USDT_REGISTER, R(rax), 0, 4, 0 }, { BX_USDT_REGISTER, R(r15), 0, 8, 0 } });
	/* memory on the stack, with and without a displacement, and constants */
	expect("8@224(%rsp) -8@-80(%rbp) 8@(%rax) 8@0x10(%rdx) -4@8(%rsp) 8@$0",
	       (const want_t[6]){ { BX_USDT_MEMORY, R(rsp), 224, 8, 0 }, { BX_USDT_MEMORY, R(rbp), -80, 8, 1 }, { BX_USDT_MEMORY, R(rax), 0, 8, 0 }, { BX_USDT_MEMORY, R(rdx), 16, 8, 0 }, { BX_USDT_MEMORY, R(rsp), 8, 4, 1 }, { BX_USDT_CONSTANT, -1, 0, 8, 0 } });
	expect("8@$77 -8@$-9000000000 8@%r12 8@%r13 -4@$-2 8@$0x20",
	       (const want_t[6]){ { BX_USDT_CONSTANT, -1, 77, 8, 0 }, { BX_USDT_CONSTANT, -1, -9000000000LL, 8, 1 }, { BX_USDT_REGISTER, R(r12), 0, 8, 0 }, { BX_USDT_REGISTER, R(r13), 0, 8, 0 }, { BX_USDT_CONSTANT, -1, -2, 4, 1 }, { BX_USDT_CONSTANT, -1, 32, 8, 0 } });

	/* forms read from somewhere this exporter does not compute: refused */
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@(%rax,%rbx,4) 8@%r9", "argument 5");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@16(,%rbx,4) 8@%r9", "does not read");
	refuse("8@counter(%rip) -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%r9", "argument 1");
	refuse("8@40+counter(%rip) -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%r9", "does not read");
	refuse("8@%fs:0x28 -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%r9", "does not read");
	refuse("8@%rdi -8@%rsi 8@$.LC0 8@%rcx -4@%r8d 8@%r9", "argument 3");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8f@%xmm0", "argument 6");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%xmm0", "argument 6");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%rip", "argument 6");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@counter", "argument 6");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d %r9", "argument 6"); /* no size: an old sdt.h */
	/* a site that is not billing.d's payment-auth */
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d", "has 5 arguments, billing.d declares 6");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -4@%r8d 8@%r9 8@%rax", "has 7 arguments, billing.d declares 6");
	refuse("", "has 0 arguments, billing.d declares 6");
	refuse("8@%rdi -8@%rsi 8@%rdx 8@%rcx -8@%r8 8@%r9", "argument 5 (result) of a site of payment__auth is 8 bytes");
	refuse("8@%rdi -4@%esi 8@%rdx 8@%rcx -4@%r8d 8@%r9", "is 4 bytes, billing.d declares int64");
	refuse("8@%rdi -8@%rsi 8@%rdx 1@%cl -4@%r8d 8@%r9", "is 1 bytes, billing.d declares string");
	refuse("8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi 8@%rdi",
	       "more than 12 arguments");
	return failures ? 1 : 0;
}
