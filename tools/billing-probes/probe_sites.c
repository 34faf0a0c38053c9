/*
 * probe_sites.c -- classify the bytes at a probe site (x86-64).
 *
 * sys/sdt.h emits a 1-byte nop (0x90), the fast site a 5-byte nop
 * (0f 1f 44 00 00).  A uprobe replaces the first byte with int3 (0xcc) in
 * every process where a consumer wants it; on kernels that optimize
 * uprobes, a 5-byte nop becomes a call or jmp into the trampoline.
 */
#include "probe_sites.h"

#include <string.h>
#include <unistd.h>

static const char *const site_words[BP_SITE_KINDS] = {
	"1-byte nop",
	"5-byte nop",
	"int3 (uprobe attached, trapping)",
	"call/jmp (optimized uprobe attached)",
	"unexpected instruction",
	"unreadable",
};

const char *bp_site_word(bp_site_kind_t kind)
{
	return kind < BP_SITE_KINDS ? site_words[kind] : "?";
}

static bp_site_kind_t classify(const unsigned char b[5])
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	if (b[0] == 0x90)
		return BP_SITE_NOP1;
	if (memcmp(b, nop5, 5) == 0)
		return BP_SITE_NOP5;
	if (b[0] == 0xcc)
		return BP_SITE_INT3;
	if (b[0] == 0xe8 || b[0] == 0xe9)
		return BP_SITE_OPTIMIZED;
	return BP_SITE_OTHER;
}

bp_site_kind_t bp_site_read(const pr_probe_set_t *set, const pr_probe_t *p, int fd)
{
	unsigned char b[5];
	int ok;
	if (set->is_process)
		ok = p->runtime_address && pr_proc_read_memory(set->pid, p->runtime_address, b, 5) == 0;
	else
		ok = fd >= 0 && p->address_offset >= 0 && pread(fd, b, 5, (off_t)p->address_offset) == 5;
	return ok ? classify(b) : BP_SITE_UNREADABLE;
}

int bp_site_attached(bp_site_kind_t kind)
{
	return kind == BP_SITE_INT3 || kind == BP_SITE_OPTIMIZED;
}

int bp_site_plain(bp_site_kind_t kind)
{
	return kind == BP_SITE_NOP1 || kind == BP_SITE_NOP5;
}
