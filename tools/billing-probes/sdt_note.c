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

int bp_sdt_note_parse(const unsigned char *desc, size_t len, int is64, int big_endian,
                      bp_sdt_note_t *out, char *err, size_t errlen)
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

uint64_t bp_sdt_adjust_address(uint64_t addr, uint64_t recorded_base, uint64_t base_section_addr)
{
	if (addr == 0 || base_section_addr == 0)
		return addr;
	/* Unsigned wrap-around is the intended two's-complement arithmetic. */
	return addr + (base_section_addr - recorded_base);
}

/* --- argument specs ------------------------------------------------------ */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}
static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* "%rax", "%r12d", "%xmm0": a percent sign and letters/digits. */
static int is_x86_register(const char *s, size_t n)
{
	if (n < 2 || s[0] != '%')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]))
			return 0;
	return is_alpha(s[1]);
}

/* An integer with optional sign, or a symbol with an optional +/-offset:
 * the displacement of "-8(%rbp)", "foo+16(%rip)", or the value of "$5". */
static int is_displacement(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0)
		return 1;
	if (s[0] == '-' || s[0] == '+')
		i++;
	if (i < n && is_digit(s[i])) {
		/* decimal or 0x hexadecimal */
		if (s[i] == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X'))
			i += 2;
		size_t start = i;
		for (; i < n; i++) {
			char c = s[i];
			if (!is_digit(c) && !((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
				return 0;
		}
		return i > start;
	}
	/* symbol[+-offset] */
	if (i >= n || !(is_alpha(s[i]) || s[i] == '.'))
		return 0;
	for (; i < n && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '.' || s[i] == '$' || s[i] == '@'); i++)
		;
	if (i == n)
		return 1;
	if (s[i] != '+' && s[i] != '-')
		return 0;
	i++;
	if (i == n)
		return 0;
	for (; i < n; i++)
		if (!is_digit(s[i]) && !((s[i] >= 'a' && s[i] <= 'f') || s[i] == 'x'))
			return 0;
	return 1;
}

/* "disp(%base)", "disp(%base,%index,scale)", "(%base)", "disp(,%index,scale)". */
static int is_x86_memory(const char *s, size_t n)
{
	const char *open = memchr(s, '(', n);
	if (!open || s[n - 1] != ')')
		return 0;
	size_t disp_len = (size_t)(open - s);
	if (!is_displacement(s, disp_len))
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
		if (part == 0 && !(plen == 0 || is_x86_register(p, plen)))
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
	/* "(,%idx,4)" and "(%rax,%rbx)" are fine; "(%rax,)" failed above. */
	return 1;
}

/* arm64: "[sp]", "[x29, -8]", "[x0, x1]". Letters, digits, ", ", '-', '#'. */
static int is_bracket_memory(const char *s, size_t n)
{
	if (n < 3 || s[0] != '[' || s[n - 1] != ']')
		return 0;
	for (size_t i = 1; i + 1 < n; i++) {
		char c = s[i];
		if (!(is_alpha(c) || is_digit(c) || c == ',' || c == ' ' || c == '-' || c == '#'))
			return 0;
	}
	return is_alpha(s[1]);
}

/* A bare word: "x0", "w1" (arm64), "3" (POWER register number), "r3". */
static int is_bare_word(const char *s, size_t n)
{
	size_t i = (s[0] == '-') ? 1 : 0;
	if (i >= n)
		return 0;
	for (; i < n; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]))
			return 0;
	return 1;
}

static int classify_operand(const char *s, size_t n, bp_sdt_arg_kind_t *kind)
{
	if (n == 0)
		return -1;
	if (s[0] == '%' && is_x86_register(s, n))
		*kind = BP_SDT_ARG_REGISTER;
	else if (s[0] == '$' && n > 1 && is_displacement(s + 1, n - 1))
		*kind = BP_SDT_ARG_IMMEDIATE;
	else if (s[0] == '[' && is_bracket_memory(s, n))
		*kind = BP_SDT_ARG_MEMORY;
	else if (s[n - 1] == ')' && is_x86_memory(s, n))
		*kind = BP_SDT_ARG_MEMORY;
	else if (is_bare_word(s, n))
		*kind = (is_alpha(s[0])) ? BP_SDT_ARG_REGISTER : BP_SDT_ARG_OTHER;
	else
		return -1;
	return 0;
}

/* One spec "[-]SIZE@OPERAND" of length n. */
static int parse_one(const char *s, size_t n, bp_sdt_arg_t *arg, char *err, size_t errlen, int index)
{
	char msg[160];
	const char *at = memchr(s, '@', n);
	const char *operand = s;
	size_t operand_len = n;

	arg->size = 0;
	arg->is_signed = 0;
	if (at) {
		const char *p = s;
		if (*p == '-') {
			arg->is_signed = 1;
			p++;
		}
		size_t digits = (size_t)(at - p);
		if (digits == 0 || digits > 2 || !is_digit(p[0]) || (digits == 2 && !is_digit(p[1]))) {
			snprintf(msg, sizeof msg, "argument %d: size before '@' is not a number", index + 1);
			set_err(err, errlen, msg);
			return -1;
		}
		int size = (p[0] - '0') * (digits == 2 ? 10 : 1) + (digits == 2 ? p[1] - '0' : 0);
		if (size != 1 && size != 2 && size != 4 && size != 8) {
			snprintf(msg, sizeof msg, "argument %d: size %d is not 1, 2, 4 or 8 bytes", index + 1, size);
			set_err(err, errlen, msg);
			return -1;
		}
		arg->size = size;
		operand = at + 1;
		operand_len = n - (size_t)(operand - s);
	}
	if (operand_len == 0) {
		snprintf(msg, sizeof msg, "argument %d: no operand after '@'", index + 1);
		set_err(err, errlen, msg);
		return -1;
	}
	if (operand_len >= BP_SDT_MAX_LOCATION) {
		snprintf(msg, sizeof msg, "argument %d: operand longer than %d bytes", index + 1, BP_SDT_MAX_LOCATION - 1);
		set_err(err, errlen, msg);
		return -1;
	}
	if (classify_operand(operand, operand_len, &arg->kind) != 0) {
		snprintf(msg, sizeof msg, "argument %d: operand \"%.*s\" is not a register, immediate or memory reference",
		         index + 1, (int)(operand_len > 40 ? 40 : operand_len), operand);
		/* keep the message printable whatever the bytes were */
		for (char *m = msg; *m; m++)
			if ((unsigned char)*m < 0x20 || (unsigned char)*m >= 0x7f)
				*m = '?';
		set_err(err, errlen, msg);
		return -1;
	}
	memcpy(arg->location, operand, operand_len);
	arg->location[operand_len] = '\0';
	return 0;
}

int bp_sdt_args_parse(const char *args, bp_sdt_arg_t out[BP_SDT_MAX_ARGS], char *err, size_t errlen)
{
	int count = 0;
	const char *p = args;

	for (const char *c = args; *c; c++) {
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) {
			set_err(err, errlen, "argument string holds a non-printable byte");
			return -1;
		}
	}
	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		/* A spec ends at a space outside brackets: "[x29, -8]" is one. */
		const char *end = p;
		int depth = 0;
		for (; *end && (depth > 0 || *end != ' '); end++) {
			if (*end == '[')
				depth++;
			else if (*end == ']' && --depth < 0)
				break;
		}
		if (depth != 0 || (*end && *end != ' ')) {
			set_err(err, errlen, "argument string has unbalanced brackets");
			return -1;
		}
		if (count == BP_SDT_MAX_ARGS) {
			set_err(err, errlen, "more than 12 arguments in one probe");
			return -1;
		}
		if (parse_one(p, (size_t)(end - p), &out[count], err, errlen, count) != 0)
			return -1;
		count++;
		p = end;
	}
	return count;
}

const char *bp_sdt_arg_type_name(const bp_sdt_arg_t *arg)
{
	switch (arg->size) {
	case 1: return arg->is_signed ? "int8" : "uint8";
	case 2: return arg->is_signed ? "int16" : "uint16";
	case 4: return arg->is_signed ? "int32" : "uint32";
	case 8: return arg->is_signed ? "int64" : "uint64";
	default: return "?";
	}
}

const char *bp_sdt_arg_kind_name(bp_sdt_arg_kind_t kind)
{
	switch (kind) {
	case BP_SDT_ARG_REGISTER: return "register";
	case BP_SDT_ARG_IMMEDIATE: return "immediate";
	case BP_SDT_ARG_MEMORY: return "memory";
	case BP_SDT_ARG_OTHER: return "other";
	}
	return "?";
}
