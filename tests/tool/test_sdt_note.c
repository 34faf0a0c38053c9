/*
 * test_sdt_note.c -- the note and argument-spec parsers on known input:
 * both ELF classes and byte orders, the .stapsdt.base adjustment, the
 * argument forms sys/sdt.h emits on x86-64 and arm64, and what must be
 * rejected.
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
	bp_sdt_note_t note;
	for (int is64 = 0; is64 <= 1; is64++) {
		for (int be = 0; be <= 1; be++) {
			size_t n = make_note(buf, is64, be, "billing", "payment__auth", "8@%rdi -4@%esi");
			int rc = bp_sdt_note_parse(buf, n, is64, be, &note, err, sizeof err);
			CHECK(rc == 0 && note.pc == 0x1234 && note.base == 0x3b40 && note.semaphore == 0x5030 &&
			          strcmp(note.provider, "billing") == 0 && strcmp(note.name, "payment__auth") == 0 &&
			          strcmp(note.args, "8@%rdi -4@%esi") == 0,
			      "%d-bit %s-endian note parses", is64 ? 64 : 32, be ? "big" : "little");
			/* every truncation fails cleanly */
			int all_fail = 1;
			for (size_t cut = 0; cut < n; cut++)
				all_fail &= bp_sdt_note_parse(buf, cut, is64, be, &note, err, sizeof err) == -1;
			CHECK(all_fail, "%d-bit %s-endian: each of %zu truncations rejected", is64 ? 64 : 32,
			      be ? "big" : "little", n);
		}
	}
	size_t n = make_note(buf, 1, 0, "billing", "", "");
	CHECK(bp_sdt_note_parse(buf, n, 1, 0, &note, err, sizeof err) == -1 && strstr(err, "probe name"),
	      "empty probe name rejected: %s", err);
	n = make_note(buf, 1, 0, "bil-ling", "x", "");
	CHECK(bp_sdt_note_parse(buf, n, 1, 0, &note, err, sizeof err) == -1 && strstr(err, "provider"),
	      "malformed provider rejected: %s", err);
	n = make_note(buf, 1, 0, "billing", "x", "");
	CHECK(bp_sdt_note_parse(buf, n, 1, 0, &note, err, sizeof err) == 0 && note.args[0] == '\0',
	      "a probe without arguments parses");
}

static void test_adjust(void)
{
	/* prelink moved .stapsdt.base from 0x3b40 (recorded) to 0x13b40. */
	CHECK(bp_sdt_adjust_address(0x1234, 0x3b40, 0x13b40) == 0x11234, "pc moves with .stapsdt.base");
	CHECK(bp_sdt_adjust_address(0x5030, 0x3b40, 0x2b40) == 0x4030, "an address moves down too");
	CHECK(bp_sdt_adjust_address(0, 0x3b40, 0x13b40) == 0, "semaphore 0 (none) stays 0");
	CHECK(bp_sdt_adjust_address(0x1234, 0x3b40, 0) == 0x1234, "no .stapsdt.base section: no adjustment");
	CHECK(bp_sdt_adjust_address(0x1234, 0x3b40, 0x3b40) == 0x1234, "not prelinked: unchanged");
}

static void test_args(void)
{
	bp_sdt_arg_t a[BP_SDT_MAX_ARGS];
	char err[200];
	int n = bp_sdt_args_parse("-4@%edx 8@$5 -8@16(%rbp) 8@%rax 1@-1(%rip) 8@foo+8(%rip) 2@(%rax,%rbx,2) 4@$-3", a, err,
	                          sizeof err);
	CHECK(n == 8, "eight x86-64 specs parse (%d: %s)", n, n < 0 ? err : "");
	if (n == 8) {
		CHECK(a[0].size == 4 && a[0].is_signed && a[0].kind == BP_SDT_ARG_REGISTER && !strcmp(a[0].location, "%edx"),
		      "-4@%%edx: int32 register %%edx");
		CHECK(!strcmp(bp_sdt_arg_type_name(&a[0]), "int32") && !strcmp(bp_sdt_arg_type_name(&a[1]), "uint64"),
		      "type names int32, uint64");
		CHECK(a[1].kind == BP_SDT_ARG_IMMEDIATE && !strcmp(a[1].location, "$5"), "8@$5: immediate");
		CHECK(a[2].kind == BP_SDT_ARG_MEMORY && a[2].is_signed && !strcmp(a[2].location, "16(%rbp)"),
		      "-8@16(%%rbp): signed memory");
		CHECK(a[5].kind == BP_SDT_ARG_MEMORY && a[6].kind == BP_SDT_ARG_MEMORY, "symbol+offset(%%rip) and (%%rax,%%rbx,2)");
	}
	n = bp_sdt_args_parse("8@x0 -4@[sp, 12] 8@[x29, -8] 4@w1", a, err, sizeof err);
	CHECK(n == 4 && a[1].kind == BP_SDT_ARG_MEMORY && !strcmp(a[1].location, "[sp, 12]") &&
	          a[0].kind == BP_SDT_ARG_REGISTER,
	      "arm64 specs, brackets with a space, parse (%d)", n);
	CHECK(bp_sdt_args_parse("", a, err, sizeof err) == 0 && bp_sdt_args_parse("   ", a, err, sizeof err) == 0,
	      "empty argument string: 0 arguments");
	CHECK(bp_sdt_args_parse("%eax", a, err, sizeof err) == 1 && a[0].size == 0, "a spec without size (old sdt.h)");

	static const char *const bad[] = {
		"8@",
		"@%rax",
		"3@%rax",
		"16@%rax",
		"x@%rax",
		"-@%rax",
		"8@%",
		"8@%1ax",
		"8@16(%rbp",
		"8@16(%rbp))",
		"8@(%rax,)",
		"8@[sp, 12",
		"8@sp]",
		"8@$",
		"8@%rax\t8@%rbx",
		"8@a(b)",
		"8@%rax,%rbx",
		"8@%r1 8@%r2 8@%r3 8@%r4 8@%r5 8@%r6 8@%r7 8@%r8 8@%r9 8@%r10 8@%r11 8@%r12 8@%r13",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = bp_sdt_args_parse(bad[i], a, err, sizeof err);
		CHECK(n == -1 && err[0], "rejected \"%s\": %s", bad[i], n == -1 ? err : "(accepted)");
	}
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
