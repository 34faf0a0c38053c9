/*
 * test_sdt_note.c -- the note and argument-spec parsers on known input:
 * both ELF classes and byte orders, the .stapsdt.base adjustment, the
 * operand forms gcc and clang print on x86-64, i386, arm64, ARM, POWER,
 * s390x and RISC-V, and what no compiler prints (that argument unknown,
 * the others kept).
 */
#include <stdio.h>
#include <string.h>

#include "sdt_note.h"

static int failures;

#define CHECK(cond, ...) \
  do { \
    if (cond) { \
      printf("ok   "); \
    } else { \
      printf("FAIL "); \
      failures++; \
    } \
    printf(__VA_ARGS__); \
    putchar('\n'); \
  } while (0)

static size_t put_addr(unsigned char *p, unsigned long long v, int is64, int big_endian)
{
	size_t n = is64 ? 8 : 4;
	for (size_t i = 0; i < n; i++)
		p[big_endian ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
	return n;
}

static size_t make_note(unsigned char *buf, int is64, int big_endian, const char *prov, const char *name,
                        const char *args)
{
	size_t n = 0;
	n += put_addr(buf + n, 0x1234, is64, big_endian);
	n += put_addr(buf + n, 0x3b40, is64, big_endian);
	n += put_addr(buf + n, 0x5030, is64, big_endian);
	memcpy(buf + n, prov, strlen(prov) + 1);
	n += strlen(prov) + 1;
	memcpy(buf + n, name, strlen(name) + 1);
	n += strlen(name) + 1;
	memcpy(buf + n, args, strlen(args) + 1);
	return n + strlen(args) + 1;
}

static void test_notes(void)
{
	unsigned char buf[256];
	char err[200];
	pr_sdt_note_t note;
	for (int is64 = 0; is64 <= 1; is64++) {
		for (int be = 0; be <= 1; be++) {
			size_t n = make_note(buf, is64, be, "billing", "payment__auth", "8@%rdi -4@%esi");
			int rc = pr_sdt_note_parse(buf, n, is64, be, &note, err, sizeof err);
			CHECK(rc == 0 && note.pc == 0x1234 && note.base == 0x3b40 && note.semaphore == 0x5030 &&
			          strcmp(note.provider, "billing") == 0 && strcmp(note.name, "payment__auth") == 0 &&
			          strcmp(note.args, "8@%rdi -4@%esi") == 0,
			      "%d-bit %s-endian note parses", is64 ? 64 : 32, be ? "big" : "little");
			/* every truncation fails cleanly */
			int all_fail = 1;
			for (size_t cut = 0; cut < n; cut++)
				all_fail &= pr_sdt_note_parse(buf, cut, is64, be, &note, err, sizeof err) == -1;
			CHECK(all_fail, "%d-bit %s-endian: each of %zu truncations rejected", is64 ? 64 : 32,
			      be ? "big" : "little", n);
		}
	}
	size_t n = make_note(buf, 1, 0, "billing", "", "");
	CHECK(pr_sdt_note_parse(buf, n, 1, 0, &note, err, sizeof err) == -1 && strstr(err, "probe name"),
	      "empty probe name rejected: %s", err);
	n = make_note(buf, 1, 0, "bil-ling", "x", "");
	CHECK(pr_sdt_note_parse(buf, n, 1, 0, &note, err, sizeof err) == -1 && strstr(err, "provider"),
	      "malformed provider rejected: %s", err);
	n = make_note(buf, 1, 0, "billing", "x", "");
	CHECK(pr_sdt_note_parse(buf, n, 1, 0, &note, err, sizeof err) == 0 && note.args[0] == '\0',
	      "a probe without arguments parses");
}

static void test_adjust(void)
{
	/* prelink moved .stapsdt.base from 0x3b40 (recorded) to 0x13b40. */
	CHECK(pr_sdt_adjust_address(0x1234, 0x3b40, 0x13b40) == 0x11234, "pc moves with .stapsdt.base");
	CHECK(pr_sdt_adjust_address(0x5030, 0x3b40, 0x2b40) == 0x4030, "an address moves down too");
	CHECK(pr_sdt_adjust_address(0, 0x3b40, 0x13b40) == 0, "semaphore 0 (none) stays 0");
	CHECK(pr_sdt_adjust_address(0x1234, 0x3b40, 0) == 0x1234, "no .stapsdt.base section: no adjustment");
	CHECK(pr_sdt_adjust_address(0x1234, 0x3b40, 0x3b40) == 0x1234, "not prelinked: unchanged");
}

static void test_args(void)
{
	pr_sdt_arg_t a[PR_SDT_MAX_ARGS];
	char err[200];
	int n = pr_sdt_args_parse("-4@%edx 8@$5 -8@16(%rbp) 8@%rax 1@-1(%rip) 8@foo+8(%rip) 2@(%rax,%rbx,2) 4@$-3", a, err,
	                          sizeof err);
	CHECK(n == 8, "eight x86-64 specs parse (%d: %s)", n, n < 0 ? err : "");
	if (n == 8) {
		CHECK(a[0].size == 4 && a[0].is_signed && a[0].kind == PR_SDT_ARG_REGISTER && !strcmp(a[0].location, "%edx"),
		      "-4@%%edx: int32 register %%edx");
		CHECK(!strcmp(pr_sdt_arg_type_name(&a[0]), "int32") && !strcmp(pr_sdt_arg_type_name(&a[1]), "uint64"),
		      "type names int32, uint64");
		CHECK(a[1].kind == PR_SDT_ARG_IMMEDIATE && !strcmp(a[1].location, "$5"), "8@$5: immediate");
		CHECK(a[2].kind == PR_SDT_ARG_MEMORY && a[2].is_signed && !strcmp(a[2].location, "16(%rbp)"),
		      "-8@16(%%rbp): signed memory");
		CHECK(a[5].kind == PR_SDT_ARG_MEMORY && a[6].kind == PR_SDT_ARG_MEMORY, "symbol+offset(%%rip) and (%%rax,%%rbx,2)");
	}
	n = pr_sdt_args_parse("8@x0 -4@[sp, 12] 8@[x29, -8] 4@w1", a, err, sizeof err);
	CHECK(n == 4 && a[1].kind == PR_SDT_ARG_MEMORY && !strcmp(a[1].location, "[sp, 12]") &&
	          a[0].kind == PR_SDT_ARG_REGISTER,
	      "arm64 specs, brackets with a space, parse (%d)", n);
	CHECK(pr_sdt_args_parse("", a, err, sizeof err) == 0 && pr_sdt_args_parse("   ", a, err, sizeof err) == 0,
	      "empty argument string: 0 arguments");
	CHECK(pr_sdt_args_parse("%eax", a, err, sizeof err) == 1 && a[0].size == 0, "a spec without size (old sdt.h)");

	/* Every operand form gcc and clang print, on the architectures sys/sdt.h knows. */
	static const struct {
		const char *spec;
		pr_sdt_arg_kind_t kind;
		const char *type;
	} forms[] = {
		{ "-4@40+CheckpointStats(%rip)", PR_SDT_ARG_MEMORY, "int32" }, /* postgres, gcc 12 */
		{ "8@CheckpointStats+40(%rip)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "4@NBuffers(%rip)", PR_SDT_ARG_MEMORY, "uint32" },
		{ "-4@-52(%rbp)", PR_SDT_ARG_MEMORY, "int32" },
		{ "8@-0x38(%rbp)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@(%rax,%rbx,8)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "4@16(%rax,%rbx,4)", PR_SDT_ARG_MEMORY, "uint32" },
		{ "4@(,%rax,4)", PR_SDT_ARG_MEMORY, "uint32" },
		{ "8@sym@GOTPCREL(%rip)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@%fs:var@tpoff", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@%fs:0x28", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@%fs:8(%rax)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@.LC0+8(%rip)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@_ZN3foo3barE(%rip)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "4@counter", PR_SDT_ARG_MEMORY, "uint32" }, /* i386, not PIC */
		{ "4@counter+4", PR_SDT_ARG_MEMORY, "uint32" },
		{ "8@$-1", PR_SDT_ARG_IMMEDIATE, "uint64" },
		{ "8@$0x10", PR_SDT_ARG_IMMEDIATE, "uint64" },
		{ "8@$sym+8", PR_SDT_ARG_IMMEDIATE, "uint64" },
		{ "-1@%r12b", PR_SDT_ARG_REGISTER, "int8" },
		{ "2@%r9w", PR_SDT_ARG_REGISTER, "uint16" },
		{ "8f@%xmm0", PR_SDT_ARG_REGISTER, "float64" }, /* systemtap 4.x floating point */
		{ "4f@-20(%rbp)", PR_SDT_ARG_MEMORY, "float32" },
		{ "8@x0", PR_SDT_ARG_REGISTER, "uint64" }, /* arm64 */
		{ "-4@w30", PR_SDT_ARG_REGISTER, "int32" },
		{ "8@sp", PR_SDT_ARG_REGISTER, "uint64" },
		{ "8@[sp]", PR_SDT_ARG_MEMORY, "uint64" },
		{ "-4@[sp, 8]", PR_SDT_ARG_MEMORY, "int32" },
		{ "8@[x29, -8]", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@[sp, #8]", PR_SDT_ARG_MEMORY, "uint64" }, /* clang */
		{ "8@[x0, #:lo12:sym]", PR_SDT_ARG_MEMORY, "uint64" },
		{ "4@5", PR_SDT_ARG_OTHER, "uint32" },      /* arm64 constant, POWER register 5 */
		{ "4@#5", PR_SDT_ARG_IMMEDIATE, "uint32" }, /* 32-bit ARM */
		{ "4@[r0, #4]", PR_SDT_ARG_MEMORY, "uint32" },
		{ "-4@-12(31)", PR_SDT_ARG_MEMORY, "int32" }, /* POWER */
		{ "8@%r2", PR_SDT_ARG_REGISTER, "uint64" },   /* s390x */
		{ "8@160(%r15)", PR_SDT_ARG_MEMORY, "uint64" },
		{ "8@a0", PR_SDT_ARG_REGISTER, "uint64" }, /* RISC-V */
	};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		n = pr_sdt_args_parse(forms[i].spec, a, err, sizeof err);
		const char *want_loc = strchr(forms[i].spec, '@') + 1;
		CHECK(n == 1 && a[0].kind == forms[i].kind && !strcmp(pr_sdt_arg_type_name(&a[0]), forms[i].type) &&
		          !strcmp(a[0].location, want_loc),
		      "\"%s\": %s %s \"%s\"", forms[i].spec, n == 1 ? pr_sdt_arg_kind_name(a[0].kind) : "?",
		      n == 1 ? pr_sdt_arg_type_name(&a[0]) : "?", n == 1 ? a[0].location : "?");
	}

	/* Where the architecture decides: the ELF machine known. */
	static const struct {
		int machine;
		const char *spec;
		pr_sdt_arg_kind_t kind;
	} by_machine[] = {
		{ PR_SDT_MACHINE_POWER, "8@3", PR_SDT_ARG_REGISTER },    /* POWER register 3 */
		{ PR_SDT_MACHINE_POWER, "-4@i5", PR_SDT_ARG_IMMEDIATE }, /* POWER constant 5 */
		{ PR_SDT_MACHINE_POWER, "-4@i-1", PR_SDT_ARG_IMMEDIATE },
		{ PR_SDT_MACHINE_POWER, "8@0(31)", PR_SDT_ARG_MEMORY },
		{ PR_SDT_MACHINE_MIPS, "8@$2", PR_SDT_ARG_REGISTER }, /* MIPS register 2 */
		{ PR_SDT_MACHINE_MIPS, "8@$sp", PR_SDT_ARG_REGISTER },
		{ PR_SDT_MACHINE_MIPS, "-4@96($fp)", PR_SDT_ARG_MEMORY },
		{ PR_SDT_MACHINE_MIPS, "-4@5", PR_SDT_ARG_IMMEDIATE },
		{ PR_SDT_MACHINE_OTHER, "4@5", PR_SDT_ARG_IMMEDIATE }, /* arm64, s390x constant */
		{ PR_SDT_MACHINE_OTHER, "4@[x8]", PR_SDT_ARG_MEMORY },
		{ PR_SDT_MACHINE_OTHER, "4@g", PR_SDT_ARG_MEMORY },   /* ARM: a global */
		{ PR_SDT_MACHINE_X86, "8@$2", PR_SDT_ARG_IMMEDIATE }, /* x86 constant 2 */
		{ PR_SDT_MACHINE_UNKNOWN, "4@5", PR_SDT_ARG_OTHER },  /* no machine: undecided */
	};
	for (size_t i = 0; i < sizeof by_machine / sizeof by_machine[0]; i++) {
		n = pr_sdt_args_parse_machine(by_machine[i].spec, by_machine[i].machine, a, err, sizeof err);
		CHECK(n == 1 && a[0].kind == by_machine[i].kind, "machine %d, \"%s\": %s", by_machine[i].machine,
		      by_machine[i].spec, n == 1 ? pr_sdt_arg_kind_name(a[0].kind) : "?");
	}
	CHECK(pr_sdt_machine_of_elf(62) == PR_SDT_MACHINE_X86 && pr_sdt_machine_of_elf(21) == PR_SDT_MACHINE_POWER &&
	          pr_sdt_machine_of_elf(8) == PR_SDT_MACHINE_MIPS && pr_sdt_machine_of_elf(183) == PR_SDT_MACHINE_OTHER &&
	          pr_sdt_machine_of_elf(9999) == PR_SDT_MACHINE_UNKNOWN,
	      "ELF machines: x86-64, PPC64, MIPS, AArch64, unknown");

	/* What no compiler prints: that argument is unknown, the others stay. */
	static const char *const bad[] = {
		"8@",
		"@%rax",
		"3@%rax",
		"16@%rax",
		"2f@%xmm0",
		"-@%rax",
		"8@%",
		"8@%1ax",
		"8@16(%rbp",
		"8@16(%rbp))",
		"8@(%rax,)",
		"8@()",
		"8@(31,%rax)",
		"8@[sp, 12",
		"8@sp]",
		"8@$",
		"8@$+",
		"8@%rax\t8@%rbx",
		"8@a(b)",
		"8@%rax,%rbx",
		"8@%fs:",
		"8@1+",
		"8@-sym",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char spec[120];
		/* last: an unbalanced '[' runs to the end of the string */
		snprintf(spec, sizeof spec, "-4@%%edi 8@$1 %s", bad[i]);
		n = pr_sdt_args_parse(spec, a, err, sizeof err);
		CHECK(n == 3 && a[0].kind == PR_SDT_ARG_REGISTER && a[1].kind == PR_SDT_ARG_IMMEDIATE &&
		          a[2].kind == PR_SDT_ARG_UNKNOWN && a[2].size == 0 && !strcmp(pr_sdt_arg_kind_name(a[2].kind), "unknown"),
		      "\"%s\" after two good specs: unknown, shown as \"%s\"", bad[i], n == 3 ? a[2].location : "?");
	}
	n = pr_sdt_args_parse("8@%rax\t8@%rbx", a, err, sizeof err);
	CHECK(n == 1 && !strcmp(a[0].location, "8@%rax?8@%rbx"), "a control byte is shown as '?' (%s)",
	      n == 1 ? a[0].location : "?");
	char longspec[200];
	memset(longspec, 'a', sizeof longspec);
	memcpy(longspec, "8@", 2);
	longspec[sizeof longspec - 1] = '\0';
	n = pr_sdt_args_parse(longspec, a, err, sizeof err);
	CHECK(n == 1 && a[0].kind == PR_SDT_ARG_UNKNOWN && strlen(a[0].location) == PR_SDT_MAX_LOCATION - 1 &&
	          strstr(a[0].location, "...") != NULL,
	      "an operand longer than the field: unknown, cut with \"...\"");
	n = pr_sdt_args_parse("8@%r1 8@%r2 8@%r3 8@%r4 8@%r5 8@%r6 8@%r7 8@%r8 8@%r9 8@%r10 8@%r11 8@%r12 8@%r13", a, err,
	                      sizeof err);
	CHECK(n == -1 && strstr(err, "12"), "13 arguments: the string as a whole is rejected (%s)", err);
}

int main(void)
{
	test_notes();
	test_adjust();
	test_args();
	if (failures)
		printf("%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
