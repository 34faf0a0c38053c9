/*
 * stats_writer.c -- the stats writer: the segment, thread slots, fork, and the
 * label rows.  The per-probe entry points billing_stats_<probe>() are
 * generated from billing.d (stats_gen.c); they build a key and count into
 * what bs_cells_() returns.  docs/stats.md is the manual.
 *
 * Hot path: this thread's slot and two per-thread caches, one from the
 * label arguments themselves (pointers to literals: stats_immutable.c), one
 * from key bytes to row (bs_cells_); no lock, no atomic read-modify-write.
 * The lock is taken only by a thread's first event, a key the thread has
 * not cached (first sight of a label set, or a cache conflict), and thread
 * exit.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* syscall(SYS_gettid) */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "billing/stats_gen.h"
#include "span_clock.h"
#include "stats_settings.h"
#include "stats_trail_writer.h"
#include "stats_writer.h"

int billing_stats_off_;
int bs_stats_on_ = 1;
__thread bs_thread_t *bs_self_ BS_TLS_MODEL;
bs_l1_entry_t bs_l1_empty_[BX_MAP_COUNT][BS_L1_ENTRIES];
__thread bs_l1_entry_t (*bs_l1_)[BS_L1_ENTRIES] BS_TLS_MODEL = bs_l1_empty_;
uint64_t bs_map_offset_[BX_MAP_COUNT];
uint64_t *bs_native_[BX_MAP_COUNT];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *seg; /* the mapping; NULL until the first event */
static struct bs_header *hdr;
static size_t seg_size;
static char seg_path[PATH_MAX];
static pthread_key_t thread_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bs_settings_t settings; /* read once: a forked child makes its segment with its parent's */

static void say(const char *what, int err)
{
	fprintf(stderr, "billing-probes: stats off in pid %d: %s%s%s\n", (int)getpid(), what, err ? ": " : "",
	        err ? strerror(err) : "");
}

static void thread_exit(void *p)
{
	bs_thread_t *t = p;

	/* The totals stay in the slot; the next thread to claim it adds to
	 * them.  Release: that thread's loads see this one's last stores. */
	if (t && t->slot && !t->shared)
		__atomic_store_n(&t->slot->state, BS_SLOT_FREE, __ATOMIC_RELEASE);
	free(t);
	bs_self_ = NULL;
	bs_l1_ = bs_l1_empty_;
}

/* fork(): the lock is held across it, so the child's copy is consistent. */
static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

/* The child counts in a segment of its own (made at its first event): its
 * copy of the parent's mapping goes, and so does the forking thread's
 * slot, which is the parent's. */
static void after_fork_child(void)
{
	if (seg)
		munmap(seg, seg_size);
	seg = NULL;
	hdr = NULL;
	free(bs_self_);
	bs_self_ = NULL;
	bs_l1_ = bs_l1_empty_;
	pthread_setspecific(thread_key, NULL);
	bs_trail_forget_();
	pthread_mutex_unlock(&lock);
}

static void mark_exited(void)
{
	if (hdr && getpid() == (pid_t)hdr->pid)
		__atomic_store_n(&hdr->state, BS_EXITED, __ATOMIC_RELEASE);
}

static struct bs_trail_ring *trail_ring(void);

/* The stats turned off (or on, by the settings): both flags at once. */
static void set_off(int off)
{
	billing_stats_off_ = off;
	bs_stats_on_ = !off;
	bs_span_counting_(!off);
}

static void init_once(void)
{
	bs_settings_read(&settings);
	set_off(settings.off);
	bs_trail_prepare_(&settings, trail_ring);
	if (!settings.off)
		bs_immutable_start_();
	pthread_key_create(&thread_key, thread_exit);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	atexit(mark_exited);
}

/* Field 22 of a /proc/PID/stat file: the process's start time, which a
 * later process given the same PID does not share.  0 when unreadable. */
static uint64_t start_time_of(const char *stat_path)
{
	char buf[1024];
	int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

static int create_segment(void);

/* At load: the settings, and unless BILLING_STATS=off, the segment now,
 * not at the first event, so a reader finds it by PID from the process's
 * start (as a JVM's hsperfdata file); a forked child makes its own at its
 * first event. */
__attribute__((constructor)) static void stats_start(void)
{
	pthread_once(&once, init_once);
	pthread_mutex_lock(&lock);
	if (!seg && !billing_stats_off_ && create_segment() != 0)
		set_off(1);
	pthread_mutex_unlock(&lock);
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* Why the directory at path (which fd holds, or -1 when it could not be
 * opened as one) is not the writer's, in one line: another user's (made
 * before the service: squatted), a link or a file, or open to others. */
static void say_not_ours(const char *dir, int fd, const struct stat *st, int err)
{
	struct stat l;
	uid_t me = geteuid();
	if (fd < 0 && lstat(dir, &l) == 0 && !S_ISDIR(l.st_mode))
		fprintf(stderr, "billing-probes: stats off in pid %d: %s is not a directory but a %s of uid %u: not "
		                "used\n",
		        (int)getpid(), dir, S_ISLNK(l.st_mode) ? "symbolic link" : "file", (unsigned)l.st_uid);
	else if (fd >= 0 && st->st_uid != me)
		fprintf(stderr, "billing-probes: stats off in pid %d: %s belongs to uid %u, not to uid %u that runs "
		                "this process: not used (another user made it first? docs/stats.md: a directory taken "
		                "by another user)\n",
		        (int)getpid(), dir, (unsigned)st->st_uid, (unsigned)me);
	else if (fd >= 0)
		fprintf(stderr, "billing-probes: stats off in pid %d: %s is writable by others (mode %04o): not used\n",
		        (int)getpid(), dir, (unsigned)(st->st_mode & 07777));
	else
		say(dir, err);
}

/* The directory: BILLING_STATS_DIR, or /dev/shm/billing-stats-UID (tmpfs:
 * a disk-backed mapping can stall a writer on writeback).  Made 0700 (0750
 * with a group); refused unless it is ours, a real directory, and nobody
 * else can write to it. */
static int open_dir(char *dir, size_t dirlen)
{
	if (settings.dir[0])
		snprintf(dir, dirlen, "%s", settings.dir);
	else
		snprintf(dir, dirlen, "/dev/shm/billing-stats-%u", (unsigned)geteuid());
	if (mkdir(dir, settings.has_group ? 0750 : 0700) != 0 && errno != EEXIST) {
		say(dir, errno);
		return -1;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	memset(&st, 0, sizeof st);
	if (fd >= 0 && fstat(fd, &st) != 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		say_not_ours(dir, fd, &st, errno);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (settings.has_group && (fchown(fd, (uid_t)-1, settings.gid) != 0 || fchmod(fd, 0750) != 0)) {
		say("cannot give the stats directory to BILLING_STATS_GROUP", errno);
		close(fd);
		return -1;
	}
	return fd;
}

/* 1 while process pid runs and is the one that started at start. */
static int writer_alive(uint32_t pid, uint64_t start)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/stat", (unsigned)pid);
	return start != 0 && start_time_of(path) == start;
}

/* Segments of processes that are gone stay for readers (their final
 * counts); once unchanged for BILLING_STATS_KEEP (default an hour) a
 * new process of the service removes them, so the directory does not grow
 * with every restart.  Only files that are segments are touched. */
static void remove_stale(int dfd)
{
	long keep = settings.keep_seconds;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	time_t now = time(NULL);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;
		struct bs_header h;
		if (n < 7 || strcmp(e->d_name + n - 6, ".stats") != 0 ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || now - st.st_mtime < keep)
			continue;
		int sfd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ssize_t got = sfd >= 0 ? pread(sfd, &h, sizeof h, 0) : -1;
		if (sfd >= 0)
			close(sfd);
		if (got == (ssize_t)sizeof h && memcmp(h.magic.text, BS_MAGIC, 8) == 0 &&
		    !writer_alive(h.pid, h.start_time))
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

static int create_segment(void)
{
	char dir[BS_DIR_MAX], name[64];
	int dfd = open_dir(dir, sizeof dir);
	if (dfd < 0)
		return -1;
	remove_stale(dfd);
	snprintf(name, sizeof name, "%d.stats", (int)getpid());
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Left by an earlier process with this PID (it is gone: the PID is ours). */
		unlinkat(dfd, name, 0);
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		say(name, errno);
		close(dfd);
		return -1;
	}
	if (settings.has_group && (fchown(fd, (uid_t)-1, settings.gid) != 0 || fchmod(fd, 0640) != 0)) {
		say("cannot give the segment to BILLING_STATS_GROUP", errno);
		unlinkat(dfd, name, 0);
		close(fd);
		close(dfd);
		return -1;
	}

	size_t desc_size = strlen(billing_stats_desc_) + 1;
	uint64_t cells = 0, map_off[BX_MAP_COUNT];
	for (int m = 0; m < BX_MAP_COUNT; m++) {
		map_off[m] = cells * 8;
		cells += (uint64_t)billing_stats_maps_[m].rows * billing_stats_maps_[m].cells;
	}
	uint64_t slot_size = (BS_SLOT_HEADER + cells * 8 + 63) / 64 * 64;
	uint64_t desc_off = BS_HEADER_SIZE;
	uint64_t dicts_off = (desc_off + desc_size + 63) / 64 * 64;
	uint64_t rows_off = dicts_off + BS_DICTS_SIZE(BX_MAP_COUNT, BS_LABEL_VALUES);
	uint64_t slots_off = (rows_off + BS_ROWS_SIZE + 4095) / 4096 * 4096;
	uint64_t nslots = (uint64_t)settings.threads + 1; /* + the overflow slot */
	uint64_t trail_off = slots_off + nslots * slot_size;
	uint64_t native_off = (trail_off + BS_TRAIL_RING_SIZE + 4095) / 4096 * 4096, native_at[BX_MAP_COUNT];
	uint64_t native_size = 0;
	for (int m = 0; m < BX_MAP_COUNT && !settings.native_off; m++) {
		native_at[m] = native_off + native_size;
		native_size += (uint64_t)billing_stats_maps_[m].rows * billing_stats_maps_[m].native_cells * 8;
	}
	/* Pages no row has counted into stay holes in the file. */
	uint64_t size = (native_off + native_size + 4095) / 4096 * 4096;
	unsigned char *p = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) == 0)
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		say("cannot size or map the segment", errno);
		unlinkat(dfd, name, 0);
		close(fd);
		close(dfd);
		return -1;
	}
	close(fd);
	close(dfd);

	struct bs_header *h = (struct bs_header *)p;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->layout_version = BS_LAYOUT_VERSION;
	h->endian = BS_ENDIAN;
	h->generation = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
	h->size = size;
	h->pid = (uint32_t)getpid();
	h->state = BS_RUNNING;
	h->start_time = start_time_of("/proc/self/stat");
	h->nmaps = BX_MAP_COUNT;
	h->nslots = (uint32_t)nslots;
	h->rows_per_map = BS_GENERAL_ROWS;
	h->label_values = BS_LABEL_VALUES;
	h->desc_offset = desc_off;
	h->desc_size = desc_size;
	h->desc_hash = fnv1a(billing_stats_desc_, desc_size - 1);
	h->dicts_offset = dicts_off;
	h->rows_offset = rows_off;
	h->slots_offset = slots_off;
	h->slot_size = slot_size;
	for (int m = 0; m < BX_MAP_COUNT; m++) {
		h->map_cells_offset[m] = map_off[m];
		bs_map_offset_[m] = map_off[m];
		h->map_cells[m] = (uint32_t)billing_stats_maps_[m].cells;
		/* An int label's value 0 is always entry 0, so a folded ("other")
		 * int value is known to be non-zero: outcome labels stay exact. */
		for (size_t f = 0; f < billing_stats_maps_[m].nfields; f++)
			if (!billing_stats_maps_[m].fields[f].is_string)
				h->dict_count[m][f] = 1;
	}
	memcpy(p + desc_off, billing_stats_desc_, desc_size);
	struct bs_trail_ring *ring = (struct bs_trail_ring *)(p + trail_off);
	bs_trail_ring_init_(ring);
	h->trail_offset = trail_off;
	h->native_offset = native_size ? native_off : 0;
	h->native_size = native_size;
	h->flags = BS_FLAG_NATIVE_FIRST;
	for (int m = 0; m < BX_MAP_COUNT; m++)
		bs_native_[m] = native_size && billing_stats_maps_[m].native_cells ? (uint64_t *)(p + native_at[m]) : NULL;
	/* The magic last: a reader that sees it sees a whole header. */
	uint64_t magic;
	memcpy(&magic, BS_MAGIC, 8);
	__atomic_store_n(&h->magic.word, magic, __ATOMIC_RELEASE);
	snprintf(seg_path, sizeof seg_path, "%s/%s", dir, name);
	seg = p;
	hdr = h;
	seg_size = size;
	return 0;
}

/* Claim a slot for this thread (lock held): a free one keeps its totals. */
static bs_thread_t *thread_start(void)
{
	bs_thread_t *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	uint32_t n = hdr->nslots - 1, i;
	for (i = 0; i < n; i++) {
		struct bs_slot *s = (struct bs_slot *)(seg + hdr->slots_offset + i * hdr->slot_size);
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != BS_SLOT_IN_USE)
			break;
	}
	if (i == n)
		__atomic_store_n(&hdr->overflow_used, 1, __ATOMIC_RELEASE);
	t->shared = i == n;
	t->slot = (struct bs_slot *)(seg + hdr->slots_offset + (uint64_t)i * hdr->slot_size);
	t->cells = (unsigned char *)t->slot + BS_SLOT_HEADER;
	if (!t->shared) {
		__atomic_store_n(&t->slot->state, BS_SLOT_IN_USE, __ATOMIC_RELAXED);
		__atomic_store_n(&t->slot->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
		__atomic_store_n(&t->slot->claims, t->slot->claims + 1, __ATOMIC_RELAXED);
	}
	if (i + 1 > __atomic_load_n(&hdr->slots_used, __ATOMIC_RELAXED))
		__atomic_store_n(&hdr->slots_used, i + 1, __ATOMIC_RELEASE);
	pthread_setspecific(thread_key, t);
	return t;
}

static int cmp_known(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/* The index of a field's value (lock held): a known value's own
 * (BS_IDX_KNOWN + k, no dictionary room taken), else its dictionary
 * entry's, BS_IDX_FOLDED past the cap.  Entries are written before their
 * count is published. */
static unsigned intern(int m, size_t f, const unsigned char *v, size_t size)
{
	const bs_map_info_t *mi = &billing_stats_maps_[m];
	if (mi->fields[f].nknown) {
		/* v is a key field: NUL-terminated within size (bs_copy_label_). */
		const char *const *k = bsearch(v, mi->fields[f].known, mi->fields[f].nknown, sizeof *k, cmp_known);
		if (k)
			return BS_IDX_KNOWN + (unsigned)(k - mi->fields[f].known);
	}
	uint32_t n = hdr->dict_count[m][f];
	for (uint32_t i = 0; i < n; i++)
		if (memcmp(seg + BS_DICT_ENTRY(hdr, m, f, i), v, size) == 0)
			return i;
	if (n == BS_LABEL_VALUES)
		return BS_IDX_FOLDED;
	memcpy(seg + BS_DICT_ENTRY(hdr, m, f, n), v, size);
	__atomic_store_n(&hdr->dict_count[m][f], n + 1, __ATOMIC_RELEASE);
	return n;
}

static uint32_t find_row(int m, const struct bs_row *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (memcmp(seg + BS_ROW_ENTRY(hdr, m, i), r, sizeof *r) == 0)
			return i;
	return UINT32_MAX;
}

/* A label set folded: known values and an int 0 (entry 0) kept, anything
 * else "other".  There are at most BX_FOLD_KEYS_MAX such sets per map. */
static void fold_row(const bs_map_info_t *mi, struct bs_row *r)
{
	for (size_t f = 0; f < mi->nfields; f++) {
		unsigned idx = r->idx[f];
		int known = idx >= BS_IDX_KNOWN && idx < BS_IDX_OVERFLOW;
		if (!known && !(idx == 0 && !mi->fields[f].is_string))
			r->idx[f] = BS_IDX_FOLDED;
	}
}

/* The row of a key (lock held): its label values interned, found among the
 * map's rows or appended.  Past BS_GENERAL_ROWS label sets a new one is
 * folded first (fold_row), into rows reserved for that; past the map's
 * rows but one (which a fold never reaches), the overflow row. */
static uint32_t row_of(int m, const unsigned char *key)
{
	const bs_map_info_t *mi = &billing_stats_maps_[m];
	struct bs_row r;
	memset(&r, 0, sizeof r);
	for (size_t f = 0; f < mi->nfields; f++)
		r.idx[f] = (uint8_t)intern(m, f, key + mi->fields[f].offset, mi->fields[f].size);
	uint32_t n = hdr->row_count[m], i = find_row(m, &r, n);
	if (i != UINT32_MAX)
		return i;
	if (n >= BS_GENERAL_ROWS) {
		fold_row(mi, &r);
		if ((i = find_row(m, &r, n)) != UINT32_MAX)
			return i;
	}
	uint32_t last = (uint32_t)mi->rows - 1;
	if (n >= last) {
		if (n == last) {
			memset(&r, 0, sizeof r);
			for (size_t f = 0; f < mi->nfields; f++)
				r.idx[f] = BS_IDX_OVERFLOW;
			memcpy(seg + BS_ROW_ENTRY(hdr, m, n), &r, sizeof r);
			__atomic_store_n(&hdr->row_count[m], last + 1, __ATOMIC_RELEASE);
		}
		return last;
	}
	memcpy(seg + BS_ROW_ENTRY(hdr, m, n), &r, sizeof r);
	__atomic_store_n(&hdr->row_count[m], n + 1, __ATOMIC_RELEASE);
	return n;
}

void *bs_slow_(int m, const void *key, bs_cache_entry_t *e)
{
	pthread_once(&once, init_once);
	pthread_mutex_lock(&lock);
	if (!seg && !billing_stats_off_ && create_segment() != 0)
		set_off(1);
	if (billing_stats_off_) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	if (!bs_self_ && !(bs_self_ = thread_start())) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	bs_l1_ = bs_self_->l1;
	if (!e)
		e = &bs_self_->cache[0]; /* the caller hashes again next time */
	e->tag = (uint32_t)m + 1;
	e->row = row_of(m, key);
	memcpy(e->key, key, billing_stats_maps_[m].key_size);
	pthread_mutex_unlock(&lock);
	return e;
}

const bs_settings_t *bs_settings_(void)
{
	pthread_once(&once, init_once);
	return &settings;
}

/* The segment's ring for the trails' commits (bs_trail_prepare_): the
 * segment made on a first commit before any other event. */
static struct bs_trail_ring *trail_ring(void)
{
	pthread_once(&once, init_once);
	pthread_mutex_lock(&lock);
	if (!seg && !billing_stats_off_ && create_segment() != 0)
		set_off(1);
	struct bs_trail_ring *ring = billing_stats_off_ ? NULL : (struct bs_trail_ring *)(seg + hdr->trail_offset);
	pthread_mutex_unlock(&lock);
	return ring;
}

/* For tests and tools: where this process's segment is ("" before its
 * first event or with the stats off). */
const char *billing_stats_path(void)
{
	return seg ? seg_path : "";
}
