/*
 * ld_cache.c -- glibc's /etc/ld.so.cache (ldconfig's output), read
 * without trusting it: a header, nlibs fixed-size entries, and strings
 * the entries name by offset from the start of the file.
 *
 *     char magic[17] "glibc-ld.so.cache", char version[3] "1.1",
 *     uint32 nlibs, uint32 len_strings, uint8 flags, uint8 pad[3],
 *     uint32 extension_offset, uint32 unused[3]             (48 bytes)
 *     entries: int32 flags, uint32 key, uint32 value,
 *              uint32 osversion, uint64 hwcap               (24 bytes each)
 *
 * Each entry maps a library name (key) to a path (value).  The loader
 * takes the first entry of the right kind; entries with a hwcap are
 * copies for particular CPUs, chosen by features this reader does not
 * model.  Byte order is the host's (ldconfig writes the cache for the
 * host that reads it).
 */
#include "ld_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_file.h"

enum { HEADER_SIZE = 48,
       ENTRY_SIZE = 24,
       /* ld.so.cache flags: the low byte says what kind of library */
       FLAG_TYPE_MASK = 0x00ff,
       FLAG_ELF_LIBC6 = 0x0003 };

static const char magic[] = "glibc-ld.so.cache1.1";

static uint32_t u32_at(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint64_t u64_at(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

void pr_ld_cache_open(pr_ld_cache_t *c, const char *path)
{
	memset(c, 0, sizeof *c);
	size_t len = 0;
	char *text = pr_read_text_file(path, 64u << 20, &len);
	if (!text) {
		c->problem = "cannot be read";
		return;
	}
	c->data = (unsigned char *)text;
	c->size = len;
	if (len < HEADER_SIZE || memcmp(c->data, magic, sizeof magic - 1) != 0) {
		c->problem = "is not in the format this tool reads (glibc-ld.so.cache1.1)";
	} else {
		uint32_t nlibs = u32_at(c->data + 20);
		if (nlibs > (len - HEADER_SIZE) / ENTRY_SIZE)
			c->problem = "is truncated";
		else
			c->nlibs = nlibs;
	}
	if (c->problem) {
		free(c->data);
		c->data = NULL;
		c->size = 0;
	}
}

/* The string at offset off, or NULL when it does not end in the file. */
static const char *string_at(const pr_ld_cache_t *c, uint32_t off)
{
	if (off >= c->size || !memchr(c->data + off, '\0', c->size - off))
		return NULL;
	return (const char *)c->data + off;
}

const char *pr_ld_cache_next(const pr_ld_cache_t *c, const char *name, size_t *pos, size_t *cpu_specific)
{
	for (; c->data && *pos < c->nlibs; (*pos)++) {
		const unsigned char *e = c->data + HEADER_SIZE + *pos * ENTRY_SIZE;
		const char *key = string_at(c, u32_at(e + 4));
		const char *value = string_at(c, u32_at(e + 8));
		if (!key || !value || strcmp(key, name) != 0 || (u32_at(e) & FLAG_TYPE_MASK) != FLAG_ELF_LIBC6)
			continue;
		if (u64_at(e + 16) != 0) {
			(*cpu_specific)++;
			continue;
		}
		(*pos)++;
		return value;
	}
	return NULL;
}

void pr_ld_cache_close(pr_ld_cache_t *c)
{
	free(c->data);
	memset(c, 0, sizeof *c);
}
