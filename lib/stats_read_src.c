/*
 * stats_read_src.c -- the segment reader's source (stats_read_src.h): a
 * range of a file (pread) or of bytes in memory, counted; the header as
 * this reader's layout version has it; the description, within its
 * budget.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stats_read_src.h"

#define FAIL BS_FAIL

int bs_src_get_(const bs_src_t *s, uint64_t off, void *dst, uint64_t n)
{
	if (off > s->size || n > s->size - off)
		return -1;
	s->work->bytes += n;
	s->work->reads++;
	if (s->fd < 0) {
		memcpy(dst, s->mem + off, n);
		return 0;
	}
	unsigned char *d = dst;
	while (n > 0) {
		ssize_t r = pread(s->fd, d, n, (off_t)off);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1; /* shrunk under us: treated as truncated */
		}
		d += r;
		off += (uint64_t)r;
		n -= (uint64_t)r;
	}
	return 0;
}

int bs_src_fd_(int fd, bs_src_t *s, bs_read_work_t *work, char *err, size_t errlen)
{
	struct stat st;
	memset(work, 0, sizeof *work);
	if (fstat(fd, &st) != 0)
		FAIL("%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		FAIL("not a regular file");
	*s = (bs_src_t){ fd, NULL, (uint64_t)st.st_size, (uint64_t)st.st_blocks * 512, work };
	return 0;
}

bs_layout_t *bs_read_layout_(const bs_src_t *s, const struct bs_header *h, char *err, size_t errlen)
{
	if (h->desc_size < 2 || h->desc_size > BS_DESC_MAX + 1 || h->desc_offset < sizeof *h) {
		snprintf(err, errlen, "description of %llu bytes (a reader takes 2 to %u)", (unsigned long long)h->desc_size,
		         BS_DESC_MAX + 1);
		return NULL;
	}
	char *text = malloc(h->desc_size);
	bs_layout_t *l = NULL;
	if (!text)
		snprintf(err, errlen, "out of memory");
	else if (bs_src_get_(s, h->desc_offset, text, h->desc_size) != 0)
		snprintf(err, errlen, "truncated in its description (%llu bytes)", (unsigned long long)s->size);
	else if (text[h->desc_size - 1] != '\0' || memchr(text, '\0', h->desc_size - 1))
		snprintf(err, errlen, "its description is not one text");
	else
		l = bs_layout_get(text, h->desc_size - 1, h->desc_hash, err, errlen);
	free(text);
	return l;
}

int bs_read_header_(const bs_src_t *s, struct bs_header *h, char *err, size_t errlen)
{
	if (bs_src_get_(s, 0, h, sizeof *h) != 0)
		FAIL("too short for a stats segment header (%llu bytes)", (unsigned long long)s->size);
	if (memcmp(h->magic.text, BS_MAGIC, 8) != 0)
		FAIL("not a stats segment (no BILLSTAT magic), or not yet initialised");
	if (h->layout_version != BS_LAYOUT_VERSION)
		FAIL("segment layout version %u; this reader reads %u", h->layout_version, BS_LAYOUT_VERSION);
	if (h->endian != BS_ENDIAN)
		FAIL("segment written with another byte order");
	return 0;
}

int bs_read_path(const char *path, bs_segment_t *out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		FAIL("%s: %s", path, strerror(errno));
	int rc = bs_read_fd(fd, out, err, errlen);
	close(fd);
	return rc;
}
