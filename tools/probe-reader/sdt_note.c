/*
 * sdt_note.c -- stapsdt note descriptors and argument specs, from bytes.
 *
 * Everything here is bounds-checked against the length it is given and
 * rejects what sys/sdt.h would never emit, because the input is whatever
 * an ELF file on disk says: the fuzz target in tests/fuzz drives it.
 */
#include "sdt_note.h"

#include <stdio.h>
#include <string.h>

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

static uint64_t read_address(const unsigned char *p, int is64, int big_endian)
{
	size_t n = is64 ? 8 : 4;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		size_t byte = big_endian ? i : n - 1 - i;
		v = (v << 8) | p[byte];
	}
	return v;
}

/* A NUL-terminated string starting at *pos within len; advances *pos. */
static const char *take_string(const unsigned char *desc, size_t len, size_t *pos)
{
	if (*pos >= len)
		return NULL;
	const unsigned char *start = desc + *pos;
	const unsigned char *nul = memchr(start, '\0', len - *pos);
	if (!nul)
		return NULL;
	*pos += (size_t)(nul - start) + 1;
	return (const char *)start;
}

/* Provider and probe names are C identifiers in every sys/sdt.h. */
static int is_identifier(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

int pr_sdt_note_parse(const unsigned char *desc, size_t len, int is64, int big_endian,
                      pr_sdt_note_t *out, char *err, size_t errlen)
{
	size_t addr_size = is64 ? 8 : 4;
	if (!desc || len < 3 * addr_size) {
		set_err(err, errlen, "stapsdt note too short for its three addresses");
		return -1;
	}
	out->pc = read_address(desc, is64, big_endian);
	out->base = read_address(desc + addr_size, is64, big_endian);
	out->semaphore = read_address(desc + 2 * addr_size, is64, big_endian);

	size_t pos = 3 * addr_size;
	out->provider = take_string(desc, len, &pos);
	out->name = out->provider ? take_string(desc, len, &pos) : NULL;
	out->args = out->name ? take_string(desc, len, &pos) : NULL;
	if (!out->args) {
		set_err(err, errlen, "stapsdt note strings not NUL-terminated within the note");
		return -1;
	}
	if (!is_identifier(out->provider)) {
		set_err(err, errlen, "stapsdt note has an empty or malformed provider name");
		return -1;
	}
	if (!is_identifier(out->name)) {
		set_err(err, errlen, "stapsdt note has an empty or malformed probe name");
		return -1;
	}
	/* Bytes after the argument string are alignment padding; ignored. */
	return 0;
}

uint64_t pr_sdt_adjust_address(uint64_t addr, uint64_t recorded_base, uint64_t base_section_addr)
{
	if (addr == 0 || base_section_addr == 0)
		return addr;
	/* Unsigned wrap-around is the intended two's-complement arithmetic. */
	return addr + (base_section_addr - recorded_base);
}

/* --- argument specs ------------------------------------------------------ */

/*
 * An operand is what the compiler printed for an asm operand (constraint
 * "nor", "nZr" on POWER, "g" on 32-bit ARM), so every form an assembler
 * may print appears somewhere:
 *
 *   x86-64, i386   %rax  $5  $-3  $sym+8  -8(%rbp)  40+sym(%rip)  sym(%rip)
 *                  (%rax,%rbx,2)  16(%rax,%rbx,8)  (,%rax,4)  %fs:var@tpoff
 *                  sym (absolute, non-PIC i386)
 *   arm64          x0  w1  sp  [sp]  [sp, 8]  [x29, -8]  [sp, #8]  5 (constant)
 *   32-bit ARM     r0  #5  [r0, #4]
 *   POWER, s390    3 (register 3)  -12(31)  %r2  160(%r15)
 *
 * An operand that fits none of these, or a size that is not 1, 2, 4 or 8
 * bytes, makes that one argument PR_SDT_ARG_UNKNOWN: listed as written,
 * never read.  Only an argument string that cannot be split at all (more
 * than 12 arguments) fails as a whole.
 */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}
static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* sigil, then letters and digits (a letter first when letter_first). */
static int is_register(const char *s, size_t n, char sigil, int letter_first)
{
	if (n < 2 || s[0] != sigil || (letter_first && !is_alpha(s[1])))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]))
			return 0;
	return 1;
}

/* "%rax", "%r12d", "%xmm0", "%st": a percent sign, a letter, letters/digits. */
static int is_x86_register(const char *s, size_t n)
{
	return is_register(s, n, '%', 1);
}

/* Length of a number at s (decimal, or 0x hexadecimal), 0 when none. */
static size_t number_len(const char *s, size_t n)
{
	size_t i = 0;
	if (n >= 3 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && is_hex(s[2])) {
		for (i = 2; i < n && is_hex(s[i]); i++)
			;
		return i;
	}
	for (; i < n && is_digit(s[i]); i++)
		;
	return i;
}

/* Length of a symbol at s: "CheckpointStats", ".LC0", "_ZN3foo3barE",
 * with an optional relocation suffix ("sym@GOTPCREL", "var@tpoff"). */
static size_t symbol_len(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0 || !(is_alpha(s[0]) || s[0] == '.'))
		return 0;
	for (; i < n && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '.' || s[i] == '$'); i++)
		;
	if (i + 1 < n && s[i] == '@' && is_alpha(s[i + 1]))
		for (i++; i < n && (is_alpha(s[i]) || is_digit(s[i])); i++)
			;
	return i;
}

/* An assembler expression: [+-] TERM ([+-] TERM)*, TERM a number or a
 * symbol.  "-8", "40+CheckpointStats", "sym-0x10", ".L5+4".  Empty is
 * not an expression. */
static int is_expression(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0)
		return 0;
	if (s[0] == '-' || s[0] == '+')
		i++;
	for (;;) {
		size_t t = number_len(s + i, n - i);
		if (t == 0)
			t = symbol_len(s + i, n - i);
		if (t == 0)
			return 0;
		i += t;
		if (i == n)
			return 1;
		if (s[i] != '+' && s[i] != '-')
			return 0;
		i++;
	}
}

/* A base register in parentheses: x86 "%rbp", POWER's bare "31", MIPS
 * "$fp", "$sp", "$29". */
static int is_base_register(const char *s, size_t n)
{
	return is_x86_register(s, n) || is_register(s, n, '$', 0) || (n > 0 && n <= 2 && number_len(s, n) == n);
}

/* "disp(%base)", "disp(%base,%index,scale)", "(%base)", "disp(,%index,scale)",
 * "-12(31)" (POWER), each optionally after a segment "%fs:"; or "%fs:disp". */
static int is_paren_memory(const char *s, size_t n)
{
	/* a segment override: "%fs:", "%gs:" */
	const char *colon = memchr(s, ':', n);
	if (colon) {
		size_t seg = (size_t)(colon - s);
		if (!is_x86_register(s, seg))
			return 0;
		s = colon + 1;
		n -= seg + 1;
		if (n > 0 && s[n - 1] != ')')
			return is_expression(s, n); /* "%fs:0x28", "%fs:var@tpoff" */
	}
	if (n < 2 || s[n - 1] != ')')
		return 0;
	const char *open = memchr(s, '(', n);
	if (!open)
		return 0;
	size_t disp_len = (size_t)(open - s);
	if (disp_len && !is_expression(s, disp_len))
		return 0;
	const char *inner = open + 1;
	size_t inner_len = n - disp_len - 2;
	if (inner_len == 0 || memchr(inner, '(', inner_len) || memchr(inner, ')', inner_len))
		return 0;
	/* up to three comma-separated parts: base register, index register, scale */
	size_t part = 0, start = 0;
	for (size_t i = 0; i <= inner_len; i++) {
		if (i < inner_len && inner[i] != ',')
			continue;
		const char *p = inner + start;
		size_t plen = i - start;
		if (part == 0 && !(plen == 0 || is_base_register(p, plen)))
			return 0;
		if (part == 1 && !is_x86_register(p, plen))
			return 0;
		if (part == 2 && !(plen == 1 && (p[0] == '1' || p[0] == '2' || p[0] == '4' || p[0] == '8')))
			return 0;
		if (part > 2)
			return 0;
		part++;
		start = i + 1;
	}
	/* "(,%idx,4)" and "(%rax,%rbx)" are fine; "(%rax,)" and "()" failed
	 * above; an index needs an x86 base or none, not a POWER number or a
	 * MIPS register. */
	if (part > 1 && inner[0] != '%' && inner[0] != ',')
		return 0;
	return 1;
}

/* arm64 / ARM: "[sp]", "[x29, -8]", "[sp, #8]", "[x0, x1, lsl #3]",
 * "[x0, #:lo12:sym]". */
static int is_bracket_memory(const char *s, size_t n)
{
	if (n < 3 || s[0] != '[' || s[n - 1] != ']')
		return 0;
	for (size_t i = 1; i + 1 < n; i++) {
		char c = s[i];
		if (!(is_alpha(c) || is_digit(c) || c == ',' || c == ' ' || c == '-' || c == '+' || c == '#' ||
		      c == ':' || c == '.'))
			return 0;
	}
	return is_alpha(s[1]);
}

/* A register without a sigil: arm64 "x0", "w30", "sp", ARM "r3", RISC-V
 * "a0": a letter or two, then digits only, at most 4 characters; or one
 * of the named ones. */
static int is_bare_register(const char *s, size_t n)
{
	static const char *const named[] = { "sp", "wsp", "fp", "lr", "xzr", "wzr", "pc", "ip" };
	for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
		if (strlen(named[k]) == n && memcmp(named[k], s, n) == 0)
			return 1;
	size_t i = 0;
	while (i < n && i < 2 && s[i] >= 'a' && s[i] <= 'z')
		i++;
	return i > 0 && n <= 4 && i < n && number_len(s + i, n - i) == n - i;
}

static int is_number(const char *s, size_t n)
{
	size_t sign = n > 0 && s[0] == '-';
	return n > sign && number_len(s + sign, n - sign) == n - sign;
}

/* Returns 0 with the operand's kind, or -1 when it is no form we know.
 * The forms a bare word or "$N" take differ by architecture: with the
 * ELF machine known they are decided, else the x86 reading and "other". */
static int classify_operand(const char *s, size_t n, int machine, pr_sdt_arg_kind_t *kind)
{
	if (n == 0)
		return -1;
	if (machine == PR_SDT_MACHINE_MIPS && is_register(s, n, '$', 0)) {
		*kind = PR_SDT_ARG_REGISTER; /* MIPS "$2", "$sp" */
		return 0;
	}
	if (is_number(s, n) && machine != PR_SDT_MACHINE_UNKNOWN) {
		/* POWER: register N; arm64, MIPS, RISC-V...: the constant N */
		*kind = machine == PR_SDT_MACHINE_POWER ? PR_SDT_ARG_REGISTER : PR_SDT_ARG_IMMEDIATE;
		return 0;
	}
	if (s[0] == 'i' && is_number(s + 1, n - 1) &&
	    (machine == PR_SDT_MACHINE_POWER || machine == PR_SDT_MACHINE_UNKNOWN)) {
		*kind = PR_SDT_ARG_IMMEDIATE; /* POWER's constants: "i5" (no architecture names a register so) */
		return 0;
	}
	if (is_x86_register(s, n))
		*kind = PR_SDT_ARG_REGISTER;
	else if ((s[0] == '$' || s[0] == '#') && is_expression(s + 1, n - 1))
		*kind = PR_SDT_ARG_IMMEDIATE; /* "$5" (x86), "#5" (ARM) */
	else if (s[0] == '[' && is_bracket_memory(s, n))
		*kind = PR_SDT_ARG_MEMORY;
	else if (is_paren_memory(s, n))
		*kind = PR_SDT_ARG_MEMORY;
	else if (is_bare_register(s, n))
		*kind = PR_SDT_ARG_REGISTER;
	else if (number_len(s + (s[0] == '-'), n - (s[0] == '-')) == n - (s[0] == '-') && n > (size_t)(s[0] == '-'))
		*kind = PR_SDT_ARG_OTHER; /* "5": an arm64 constant, POWER's register 5 */
	else if (is_expression(s, n) && s[0] != '-' && s[0] != '+')
		*kind = PR_SDT_ARG_MEMORY; /* "counter", "counter+4": an absolute address */
	else
		return -1;
	return 0;
}

/* The argument as written, for a listing: printable ASCII only (anything
 * else becomes '?'), cut with "..." when longer than the field. */
static void keep_location(pr_sdt_arg_t *arg, const char *s, size_t n)
{
	size_t keep = n < PR_SDT_MAX_LOCATION ? n : PR_SDT_MAX_LOCATION - 4;
	for (size_t i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)s[i];
		arg->location[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	if (keep < n) {
		memcpy(arg->location + keep, "...", 3);
		keep += 3;
	}
	arg->location[keep] = '\0';
}

/* The size before '@': "[-]DIGITS[f]", 1, 2, 4 or 8 bytes ("f": floating
 * point, systemtap 4.x).  0, or -1 when it is none of these. */
static int parse_size(const char *s, size_t n, pr_sdt_arg_t *arg)
{
	size_t i = 0;
	if (i < n && s[i] == '-') {
		arg->is_signed = 1;
		i++;
	}
	size_t digits = number_len(s + i, n - i);
	if (digits == 0 || digits > 2 || (digits == 2 && !is_digit(s[i + 1])))
		return -1;
	int size = s[i] - '0';
	if (digits == 2)
		size = size * 10 + (s[i + 1] - '0');
	i += digits;
	if (i < n && s[i] == 'f') {
		arg->is_float = 1;
		i++;
	}
	if (i != n || (size != 1 && size != 2 && size != 4 && size != 8) ||
	    (arg->is_float && size != 4 && size != 8))
		return -1;
	arg->size = size;
	return 0;
}

/* One spec "[-]SIZE[f]@OPERAND", or an old sdt.h's bare OPERAND, of
 * length n.  Never fails: what it cannot decode is PR_SDT_ARG_UNKNOWN,
 * with the whole spec as its location. */
static void parse_one(const char *s, size_t n, int machine, pr_sdt_arg_t *arg)
{
	memset(arg, 0, sizeof *arg);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			goto unknown;
	}
	const char *operand = s;
	size_t operand_len = n;
	const char *at = memchr(s, '@', n);
	/* A size is made of '-', digits and 'f'; anything else before the
	 * '@' is a sizeless operand's own ("sym@GOTPCREL(%rip)"). */
	for (const char *c = s; at && c < at; c++)
		if (*c != '-' && *c != 'f' && !is_digit(*c))
			at = NULL;
	if (at) {
		if (parse_size(s, (size_t)(at - s), arg) != 0)
			goto unknown;
		operand = at + 1;
		operand_len = n - (size_t)(operand - s);
	}
	if (operand_len == 0 || operand_len >= PR_SDT_MAX_LOCATION ||
	    classify_operand(operand, operand_len, machine, &arg->kind) != 0)
		goto unknown;
	memcpy(arg->location, operand, operand_len);
	arg->location[operand_len] = '\0';
	return;
unknown:
	memset(arg, 0, sizeof *arg);
	arg->kind = PR_SDT_ARG_UNKNOWN;
	keep_location(arg, s, n);
}

int pr_sdt_args_parse(const char *args, pr_sdt_arg_t out[PR_SDT_MAX_ARGS], char *err, size_t errlen)
{
	return pr_sdt_args_parse_machine(args, PR_SDT_MACHINE_UNKNOWN, out, err, errlen);
}

int pr_sdt_machine_of_elf(unsigned elf_machine)
{
	switch (elf_machine) {
	case 3:  /* EM_386 */
	case 62: /* EM_X86_64 */
		return PR_SDT_MACHINE_X86;
	case 8: /* EM_MIPS */
		return PR_SDT_MACHINE_MIPS;
	case 20: /* EM_PPC */
	case 21: /* EM_PPC64 */
		return PR_SDT_MACHINE_POWER;
	case 183: /* EM_AARCH64 */
	case 40:  /* EM_ARM */
	case 243: /* EM_RISCV */
	case 22:  /* EM_S390 */
		return PR_SDT_MACHINE_OTHER;
	default:
		return PR_SDT_MACHINE_UNKNOWN;
	}
}

int pr_sdt_args_parse_machine(const char *args, int machine, pr_sdt_arg_t out[PR_SDT_MAX_ARGS], char *err,
                              size_t errlen)
{
	int count = 0;
	const char *p = args;

	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		/* A spec ends at a space outside brackets: "[x29, -8]" is one.
		 * Unbalanced brackets run to the end: one unknown argument. */
		const char *end = p;
		int depth = 0;
		for (; *end && (depth > 0 || *end != ' '); end++) {
			if (*end == '[')
				depth++;
			else if (*end == ']' && depth > 0)
				depth--;
		}
		if (count == PR_SDT_MAX_ARGS) {
			set_err(err, errlen, "more than 12 arguments in one probe");
			return -1;
		}
		parse_one(p, (size_t)(end - p), machine, &out[count]);
		count++;
		p = end;
	}
	return count;
}

const char *pr_sdt_arg_type_name(const pr_sdt_arg_t *arg)
{
	if (arg->is_float)
		return arg->size == 4 ? "float32" : arg->size == 8 ? "float64"
		                                                   : "?";
	switch (arg->size) {
	case 1: return arg->is_signed ? "int8" : "uint8";
	case 2: return arg->is_signed ? "int16" : "uint16";
	case 4: return arg->is_signed ? "int32" : "uint32";
	case 8: return arg->is_signed ? "int64" : "uint64";
	default: return "?";
	}
}

const char *pr_sdt_arg_kind_name(pr_sdt_arg_kind_t kind)
{
	switch (kind) {
	case PR_SDT_ARG_REGISTER: return "register";
	case PR_SDT_ARG_IMMEDIATE: return "immediate";
	case PR_SDT_ARG_MEMORY: return "memory";
	case PR_SDT_ARG_OTHER: return "other";
	case PR_SDT_ARG_UNKNOWN: return "unknown";
	}
	return "?";
}
