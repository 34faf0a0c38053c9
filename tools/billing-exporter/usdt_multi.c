/*
 * usdt_multi.c -- see usdt_multi.h.
 */
#include "usdt_multi.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#if defined(__x86_64__)
#  include <asm/ptrace.h>
#endif

/* usdt.bpf.h's spec layout (libbpf's ABI between its user and BPF
 * halves); attach checks its size against the map's. */
struct usdt_arg_spec {
	uint64_t val_off;
	int arg_type; /* enum __bpf_usdt_arg_type */
	short reg_off;
	bool arg_signed;
	char arg_bitshift;
};
enum { ARG_CONST,
       ARG_REG,
       ARG_REG_DEREF };
#define USDT_MAX_ARGS 12
struct usdt_spec {
	struct usdt_arg_spec args[USDT_MAX_ARGS];
	uint64_t usdt_cookie;
	short arg_cnt;
};

/* BPF_LINK_CREATE's attributes for a multi-uprobe link (Linux 6.6); the
 * installed linux/bpf.h may predate them. */
struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

int bx_usdt_multi_built(void)
{
#if defined(__x86_64__)
	return 1;
#else
	return 0;
#endif
}

#if defined(__x86_64__)
static const struct {
	const char *names[4]; /* 64-, 32-, 16- and 8-bit names */
	short off;
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

static int reg_offset(const char *name)
{
	for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
		for (size_t k = 0; k < 4; k++)
			if (strcmp(regs[i].names[k], name) == 0)
				return regs[i].off;
	return -1;
}

/* 1 when tok matched fmt to its very end (fmt ends in %n into *used). */
#  define WHOLE(n_args, call) ((used = -1), (call) == (n_args) && used >= 0 && tok[used] == 0)

/* One "SIZE@OPERAND" of the forms libbpf reads: $IMM, %REG, OFF(%REG),
 * (%REG).  Anything else (an index register, a segment, %rip) is refused
 * rather than read from the wrong place. */
static int parse_arg(const char *tok, struct usdt_arg_spec *a)
{
	int size, used;
	long off = 0;
	char reg[16];
	memset(a, 0, sizeof *a);
	if (WHOLE(2, sscanf(tok, "%d@$%ld%n", &size, &off, &used))) {
		a->arg_type = ARG_CONST;
		a->val_off = (uint64_t)off;
	} else if (WHOLE(2, sscanf(tok, "%d@%%%15[a-z0-9]%n", &size, reg, &used))) {
		a->arg_type = ARG_REG;
	} else if (WHOLE(3, sscanf(tok, "%d@%ld(%%%15[a-z0-9])%n", &size, &off, reg, &used)) ||
	           WHOLE(2, sscanf(tok, "%d@(%%%15[a-z0-9])%n", &size, reg, &used))) {
		a->arg_type = ARG_REG_DEREF;
		a->val_off = (uint64_t)off;
	} else {
		return -1;
	}
	if (a->arg_type != ARG_CONST) {
		int r = reg_offset(reg);
		if (r < 0)
			return -1;
		a->reg_off = (short)r;
	}
	a->arg_signed = size < 0;
	size = size < 0 ? -size : size;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return -1;
	a->arg_bitshift = (char)(64 - 8 * size);
	return 0;
}

static int parse_spec(const char *args, struct usdt_spec *spec)
{
	char copy[1024];
	memset(spec, 0, sizeof *spec);
	if (strlen(args) >= sizeof copy)
		return -1;
	snprintf(copy, sizeof copy, "%s", args);
	for (char *save = NULL, *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (spec->arg_cnt == USDT_MAX_ARGS || parse_arg(tok, &spec->args[spec->arg_cnt]) != 0)
			return -1;
		spec->arg_cnt++;
	}
	return 0;
}

/* The spec ID of args with cookie: the one given before, or a new one
 * written to the map.  -1 when args cannot be read or the map is full. */
static long spec_id(int specs_fd, size_t specs_max, bx_usdt_specs_t *specs, const char *args, uint64_t cookie,
                    char *err, size_t errlen)
{
	for (size_t i = 0; i < specs->count; i++)
		if (strcmp(specs->args[i], args) == 0 && specs->cookies[i] == cookie)
			return (long)i;
	struct usdt_spec spec;
	if (parse_spec(args, &spec) != 0) {
		snprintf(err, errlen, "argument spec \"%.200s\" is not one usdt.bpf.h reads", args);
		return -1;
	}
	spec.usdt_cookie = cookie;
	if (specs->count == specs_max) {
		snprintf(err, errlen, "more than %zu distinct argument specs", specs_max);
		return -1;
	}
	uint64_t *cookies = realloc(specs->cookies, (specs->count + 1) * sizeof *cookies);
	if (cookies)
		specs->cookies = cookies;
	char **grown = cookies ? realloc(specs->args, (specs->count + 1) * sizeof *grown) : NULL;
	if (!grown || !(grown[specs->count] = strdup(args))) {
		if (grown)
			specs->args = grown;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	specs->args = grown;
	specs->cookies[specs->count] = cookie;
	int key = (int)specs->count;
	if (bpf_map_update_elem(specs_fd, &key, &spec, BPF_ANY) != 0) {
		free(grown[specs->count]);
		snprintf(err, errlen, "cannot write an argument spec: %s", strerror(errno));
		return -1;
	}
	return (long)specs->count++;
}

int bx_usdt_multi_attach(int prog_fd, int specs_fd, size_t specs_max, bx_usdt_specs_t *specs, uint64_t cookie,
                         int pid, const char *path, const bx_module_t *m, size_t probe, char *err, size_t errlen)
{
	struct bpf_map_info info;
	uint32_t info_len = sizeof info;
	memset(&info, 0, sizeof info);
	if (bpf_obj_get_info_by_fd(specs_fd, &info, &info_len) != 0 || info.value_size != sizeof(struct usdt_spec)) {
		snprintf(err, errlen, "libbpf's USDT spec map is not the layout this build knows");
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < m->site_count; i++)
		n += m->sites[i].probe == probe;
	uint64_t *offsets = calloc(n ? n : 1, sizeof *offsets);
	uint64_t *ref_ctrs = calloc(n ? n : 1, sizeof *ref_ctrs);
	uint64_t *cookies = calloc(n ? n : 1, sizeof *cookies);
	int fd = -1;
	if (!offsets || !ref_ctrs || !cookies) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < m->site_count; i++) {
		const bx_site_t *s = &m->sites[i];
		if (s->probe != probe)
			continue;
		if (s->offset < 0 || s->semaphore < 0) {
			snprintf(err, errlen, "a site or semaphore of %s lies outside the file's loaded segments",
			         m->probes[probe]);
			goto out;
		}
		long id = spec_id(specs_fd, specs_max, specs, s->args, cookie, err, errlen);
		if (id < 0)
			goto out;
		offsets[k] = (uint64_t)s->offset;
		ref_ctrs[k] = (uint64_t)s->semaphore;
		cookies[k++] = (uint64_t)id;
	}
	struct link_create_uprobe_multi attr;
	memset(&attr, 0, sizeof attr);
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = BX_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctrs;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = (uint32_t)k;
	attr.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
	if (fd < 0)
		snprintf(err, errlen, "the kernel refused a multi-uprobe link for %s: %s", m->probes[probe], strerror(errno));
out:
	free(offsets);
	free(ref_ctrs);
	free(cookies);
	return fd;
}
#else
int bx_usdt_multi_attach(int prog_fd, int specs_fd, size_t specs_max, bx_usdt_specs_t *specs, uint64_t cookie,
                         int pid, const char *path, const bx_module_t *m, size_t probe, char *err, size_t errlen)
{
	(void)prog_fd, (void)specs_fd, (void)specs_max, (void)specs, (void)cookie, (void)pid, (void)path, (void)m,
	    (void)probe;
	snprintf(err, errlen, "multi-uprobe USDT attach is built for x86-64 only");
	return -1;
}
#endif

void bx_usdt_specs_free(bx_usdt_specs_t *specs)
{
	for (size_t i = 0; i < specs->count; i++)
		free(specs->args[i]);
	free(specs->args);
	free(specs->cookies);
	memset(specs, 0, sizeof *specs);
}
