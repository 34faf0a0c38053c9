/*
 * sdt_note.h -- a stapsdt note descriptor and its argument specs, parsed
 * from bytes.
 *
 * Pure functions over a buffer: no libelf, no I/O, no global state, so
 * the fuzz target (tests/fuzz) feeds them raw bytes directly.  The layout
 * is systemtap's (sys/sdt.h, "NT_STAPSDT", type 3, owner "stapsdt"):
 *
 *     pc, base, semaphore     three addresses, 4 or 8 bytes each
 *     provider\0 name\0 args\0
 *
 * and args is a space-separated list of "[-]SIZE[f]@OPERAND", e.g.
 * "-4@%edx 8@$5 -8@16(%rbp) 8@40+sym(%rip)" (x86) or "8@x0 -4@[sp, 12]"
 * (arm64).  sdt_note.c lists the operand forms it decodes.
 */
#ifndef PR_SDT_NOTE_H
#define PR_SDT_NOTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PR_SDT_NOTE_TYPE 3
#define PR_SDT_NOTE_OWNER "stapsdt"
/* sys/sdt.h allows at most 12 arguments per probe. */
#define PR_SDT_MAX_ARGS 12
#define PR_SDT_MAX_LOCATION 64

typedef enum pr_sdt_arg_kind {
	PR_SDT_ARG_REGISTER,  /* %rax, x0 */
	PR_SDT_ARG_IMMEDIATE, /* $5 */
	PR_SDT_ARG_MEMORY,    /* -8(%rbp), foo(%rip), [sp, 12] */
	PR_SDT_ARG_OTHER,     /* well-formed but architecture-specific: "3" (POWER r3, arm64 constant 3) */
	PR_SDT_ARG_UNKNOWN,   /* no form we know: location is the spec as written, sanitised */
} pr_sdt_arg_kind_t;

typedef struct pr_sdt_arg {
	int size;      /* bytes: 1, 2, 4 or 8; 0 when the spec gives none */
	int is_signed; /* a leading '-' on the size */
	int is_float;  /* an 'f' after the size: "8f@%xmm0" (systemtap 4.x) */
	pr_sdt_arg_kind_t kind;
	char location[PR_SDT_MAX_LOCATION]; /* the operand as written (unknown: the whole spec) */
} pr_sdt_arg_t;

typedef struct pr_sdt_note {
	uint64_t pc;          /* probe site, as recorded (before base adjustment) */
	uint64_t base;        /* link-time address of .stapsdt.base */
	uint64_t semaphore;   /* is-enabled counter, 0 when the probe has none */
	const char *provider; /* point into the parsed buffer */
	const char *name;
	const char *args; /* the raw argument string, "" for no arguments */
} pr_sdt_note_t;

/* Parse one note descriptor of an ELF with 4-byte (is64 == 0) or 8-byte
 * addresses in the given byte order.  Returns 0, or -1 with a one-line
 * reason in err.  On success the strings of *out point into desc. */
int pr_sdt_note_parse(const unsigned char *desc, size_t len, int is64, int big_endian,
                      pr_sdt_note_t *out, char *err, size_t errlen);

/* Split and decode an argument string into at most PR_SDT_MAX_ARGS specs.
 * An argument that cannot be decoded comes back as PR_SDT_ARG_UNKNOWN
 * (size 0): the others stay usable.  Returns the number of arguments, or
 * -1 with a reason in err only when there are more than 12. */
int pr_sdt_args_parse(const char *args, pr_sdt_arg_t out[PR_SDT_MAX_ARGS], char *err, size_t errlen);

/* The architecture, where it decides what an operand is: a bare "5" is
 * register 5 on POWER and the constant 5 on arm64; "$2" is register 2 on
 * MIPS and the constant 2 on x86. */
enum { PR_SDT_MACHINE_UNKNOWN = 0, /* x86 reading; a bare number is "other" */
       PR_SDT_MACHINE_X86,
       PR_SDT_MACHINE_MIPS,
       PR_SDT_MACHINE_POWER,
       PR_SDT_MACHINE_OTHER /* arm64, ARM, RISC-V, s390x: a bare number is a constant */ };
/* The BP_SDT_MACHINE_* of an ELF e_machine value. */
int pr_sdt_machine_of_elf(unsigned elf_machine);
/* pr_sdt_args_parse for a known architecture. */
int pr_sdt_args_parse_machine(const char *args, int machine, pr_sdt_arg_t out[PR_SDT_MAX_ARGS], char *err,
                              size_t errlen);

/* Apply the prelink adjustment systemtap and readelf document: when the
 * ELF has a .stapsdt.base section at base_section_addr (0: none), an
 * address recorded as addr moves by base_section_addr - note->base.
 * Semaphore 0 means "no semaphore" and stays 0. */
uint64_t pr_sdt_adjust_address(uint64_t addr, uint64_t recorded_base, uint64_t base_section_addr);

/* "int32", "uint64", "float64", ... for a size and signedness; "?" for size 0. */
const char *pr_sdt_arg_type_name(const pr_sdt_arg_t *arg);
/* "register", "immediate", "memory", "other", "unknown". */
const char *pr_sdt_arg_kind_name(pr_sdt_arg_kind_t kind);

#ifdef __cplusplus
}
#endif

#endif /* PR_SDT_NOTE_H */
