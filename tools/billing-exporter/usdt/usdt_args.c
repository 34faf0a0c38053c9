/*
 * usdt_args.c -- see usdt_args.h.  The probe reader splits the string and
 * reads each size (sdt_note.h); this file decides where each value is.
 */
#include "usdt_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdt_note.h"

#if defined(__x86_64__)
#  include <asm/ptrace.h>

int bx_usdt_args_built(void)
{
	return 1;
}

/* Each register under its 64-, 32-, 16- and 8-bit names, at its offset
 * in struct pt_regs: what a uprobe program's context points to. */
static const struct {
	const char *names[4];
	unsigned short off;
} regs[] = {
	{ { "rax", "eax", "ax", "al" }, offsetof(struct pt_regs, rax) },
	{ { "rbx", "ebx", "bx", "bl" }, offsetof(struct pt_regs, rbx) },
	{ { "rcx", "ecx", "cx", "cl" }, offsetof(struct pt_regs, rcx) },
	{ { "rdx", "edx", "dx", "dl" }, offsetof(struct pt_regs, rdx) },
	{ { "rsi", "esi", "si", "sil" }, offsetof(struct pt_regs, rsi) },
	{ { "rdi", "edi", "di", "dil" }, offsetof(struct pt_regs, rdi) },
	{ { "rbp", "ebp", "bp", "bpl" }, offsetof(struct pt_regs, rbp) },
	{ { "rsp", "esp", "sp", "spl" }, offsetof(struct pt_regs, rsp) },
	{ { "r8", "r8d", "r8w", "r8b" }, offsetof(struct pt_regs, r8) },
	{ { "r9", "r9d", "r9w", "r9b" }, offsetof(struct pt_regs, r9) },
	{ { "r10", "r10d", "r10w", "r10b" }, offsetof(struct pt_regs, r10) },
	{ { "r11", "r11d", "r11w", "r11b" }, offsetof(struct pt_regs, r11) },
	{ { "r12", "r12d", "r12w", "r12b" }, offsetof(struct pt_regs, r12) },
	{ { "r13", "r13d", "r13w", "r13b" }, offsetof(struct pt_regs, r13) },
	{ { "r14", "r14d", "r14w", "r14b" }, offsetof(struct pt_regs, r14) },
	{ { "r15", "r15d", "r15w", "r15b" }, offsetof(struct pt_regs, r15) },
};

/* "%NAME" of length n: its offset in struct pt_regs, -1 for no general
 * register (%rip, %fs, %xmm0). */
static int reg_offset(const char *s, size_t n)
{
	if (n < 2 || s[0] != '%')
		return -1;
	for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
		for (size_t k = 0; k < 4; k++)
			if (strlen(regs[i].names[k]) == n - 1 && memcmp(regs[i].names[k], s + 1, n - 1) == 0)
				return regs[i].off;
	return -1;
}

/* A whole number in s[0..n) (decimal or 0x hexadecimal, an optional
 * sign), as the assembler prints a constant or a displacement.  0, or -1
 * for anything else (a symbol: "sym+8"). */
static int number(const char *s, size_t n, long long *out)
{
	char buf[32], *end;
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 0);
	if (errno || *end || !(buf[0] == '-' || buf[0] == '+' || (buf[0] >= '0' && buf[0] <= '9')))
		return -1;
	return 0;
}

/* One operand into a; 0, or -1 when it is no form usdt_args.h reads. */
static int operand(const pr_sdt_arg_t *p, struct bx_usdt_arg *a)
{
	const char *s = p->location;
	size_t n = strlen(s);
	long long v = 0;
	int reg;
	if (p->kind == PR_SDT_ARG_IMMEDIATE && s[0] == '$' && number(s + 1, n - 1, &v) == 0) {
		a->kind = BX_USDT_CONSTANT;
		a->value = v;
		return 0;
	}
	if (p->kind == PR_SDT_ARG_REGISTER && (reg = reg_offset(s, n)) >= 0) {
		a->kind = BX_USDT_REGISTER;
		a->reg = (unsigned short)reg;
		return 0;
	}
	/* DISP(%reg) or (%reg): a base register alone inside the brackets */
	const char *open = strchr(s, '(');
	if (p->kind != PR_SDT_ARG_MEMORY || !open || s[n - 1] != ')' || strchr(s, ',') || strchr(s, ':'))
		return -1;
	if (open > s && number(s, (size_t)(open - s), &v) != 0)
		return -1;
	if ((reg = reg_offset(open + 1, (size_t)(s + n - 1 - (open + 1)))) < 0)
		return -1;
	a->kind = BX_USDT_MEMORY;
	a->reg = (unsigned short)reg;
	a->value = v;
	return 0;
}

/* The size in bytes of a value of a declared argument type. */
static int declared_size(billing_arg_type_t t)
{
	return t == BILLING_ARG_INT32 ? 4 : 8; /* integers of their width; a string's pointer */
}

int bx_usdt_args_parse(const char *args, const billing_probe_info_t *declared, struct bx_usdt_spec *spec,
                       char *err, size_t errlen)
{
	pr_sdt_arg_t parsed[PR_SDT_MAX_ARGS];
	char why[200];
	memset(spec, 0, sizeof *spec);
	int count = pr_sdt_args_parse_machine(args, PR_SDT_MACHINE_X86, parsed, why, sizeof why);
	if (count < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if ((size_t)count != declared->nargs) {
		snprintf(err, errlen, "a site of %s has %d arguments, billing.d declares %zu", declared->sdt_name, count,
		         declared->nargs);
		return -1;
	}
	for (int i = 0; i < count; i++) {
		const pr_sdt_arg_t *p = &parsed[i];
		struct bx_usdt_arg *a = &spec->args[i];
		int want = declared_size(declared->args[i].type);
		if (p->kind == PR_SDT_ARG_UNKNOWN || p->is_float || operand(p, a) != 0) {
			snprintf(err, errlen, "argument %d of a site of %s (\"%s\") is in a form the exporter does not read",
			         i + 1, declared->sdt_name, p->location);
			return -1;
		}
		if (p->size != want) {
			snprintf(err, errlen, "argument %d (%s) of a site of %s is %d bytes, billing.d declares %s", i + 1,
			         declared->args[i].name, declared->sdt_name, p->size,
			         billing_arg_type_name(declared->args[i].type));
			return -1;
		}
		a->size = (unsigned char)p->size;
		a->shift = (unsigned char)(64 - 8 * p->size);
		a->is_signed = (unsigned char)p->is_signed;
	}
	return 0;
}
#else
int bx_usdt_args_built(void)
{
	return 0;
}

int bx_usdt_args_parse(const char *args, const billing_probe_info_t *declared, struct bx_usdt_spec *spec,
                       char *err, size_t errlen)
{
	(void)args, (void)declared;
	memset(spec, 0, sizeof *spec);
	snprintf(err, errlen, "USDT argument specs are read on x86-64 only (stats targets work everywhere)");
	return -1;
}
#endif
