/*
 * service.c -- a pre-fork billing service written against an installed
 * billing-probes kit, the README's way, as a team outside the project
 * would write it: built with
 *
 *     cc service.c $(pkg-config --cflags --libs billing-probes) -o service
 *
 * (the tests add -pthread and -Wl,-rpath,$(pkg-config --variable=libdir
 * billing-probes)), it fires its probes through <billing/probes.h> and
 * times requests, transactions, database queries and gateway calls with
 * <billing/timing.h>, the helpers that live in libbillingprobes.so.
 *
 *     service [--workers N] [--threads T] --books DIR
 *
 * A supervising parent forks N workers (default 3), each serving with a
 * pool of T threads (default 2); the parent serves no request itself.
 * Commands, one a line on the parent's standard input:
 *     batch B OPS   every worker runs batch B: each of its threads serves
 *                   OPS requests, a schedule that depends only on the
 *                   worker's slot, the thread, B and the request's index
 *     end of input  the workers write their books and exit, then the parent
 * Lines on standard output (each one write(), whole on a shared pipe):
 *     worker SLOT GEN PID   a worker is up and waits for commands
 *     parent PID            every first worker is up
 *     done SLOT GEN PID B   a worker has served batch B and written its books
 *     died SLOT PID SIG     a worker died (killed): the parent forks
 *                           another for the slot, generation GEN + 1
 *
 * Books: each worker keeps a ledger of every billing event it emitted,
 * with the arguments it passed (the durations the timing helpers
 * returned, the amounts, the IDs), and writes it to
 * DIR/books-SLOT-GEN-PID.json after every batch and at exit: written to a
 * temporary file and renamed, so a reader sees the last whole version,
 * also of a worker killed between batches.  The JSON is
 *     {"slot": S, "gen": G, "pid": P, "batches": [B, ...],
 *      "events": {"payment-auth": [[B, REQUEST, arg0, arg1, ...], ...], ...}}
 * one list per probe, each event its batch, the request it served and
 * the probe's arguments in billing.d's order.
 *
 * IDs are above 2^40 (2^32 is where a 32-bit print would cut them) and
 * some amounts above 2^31 and 2^32 minor units.
 */
#define _GNU_SOURCE
#include <billing/probes.h>
#include <billing/timing.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 8
#define MAX_THREADS 8

/* --- output and text ----------------------------------------------------- */

static void die(const char *what)
{
	fprintf(stderr, "service: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* One line on stdout in one write(): lines of several processes never mix. */
static void say(const char *fmt, ...)
{
	char line[160];
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof line || write(STDOUT_FILENO, line, (size_t)len) != len)
		_exit(3);
}

struct text {
	char *data;
	size_t len, cap;
};

static void text_add(struct text *t, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->data ? t->data + t->len : NULL, t->data ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			die("formatting the books");
		if (t->data && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = (t->cap + (size_t)n + 1) * 2;
		char *grown = realloc(t->data, cap);
		if (!grown)
			die("growing the books");
		t->data = grown;
		t->cap = cap;
	}
}

/* --- the ledger ---------------------------------------------------------- */

/* The events the service emits, named as billing.d names its probes. */
enum event {
	EV_REQUEST_START,
	EV_REQUEST_DONE,
	EV_TRANSACTION_START,
	EV_TRANSACTION_DONE,
	EV_INVOICE_CREATE,
	EV_PAYMENT_AUTH,
	EV_REFUND_PROCESS,
	EV_ERROR,
	EV_DB_QUERY_START,
	EV_DB_QUERY_DONE,
	EV_GATEWAY_CALL_START,
	EV_GATEWAY_CALL_DONE,
#ifdef BILLING_COUPON_APPLY /* a kit built from the copy of billing.d with a team's own probe */
	EV_COUPON_APPLY,
#endif
	EV_COUNT
};

static const char *const event_names[EV_COUNT] = {
	"request-start",
	"request-done",
	"transaction-start",
	"transaction-done",
	"invoice-create",
	"payment-auth",
	"refund-process",
	"error",
	"db-query-start",
	"db-query-done",
	"gateway-call-start",
	"gateway-call-done",
#ifdef BILLING_COUPON_APPLY
	"coupon-apply",
#endif
};

struct thread {
	pthread_t handle;
	struct worker *worker;
	unsigned index;
	unsigned batch;
	struct text ledger[EV_COUNT]; /* "[B,REQUEST,args...]," per event */
	uint64_t captured_id;         /* the last approved payment, for refunds */
	int64_t captured_amount;
	const char *captured_currency;
};

/* Appends one event: its batch, its request and the probe's arguments as
 * JSON values (the format says how many and which). */
static void record(struct thread *t, enum event ev, uint64_t request_id, const char *fmt, ...)
{
	char args[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof args)
		die("an event too long for the books");
	text_add(&t->ledger[ev], "[%u,%" PRIu64 ",%s],", t->batch, request_id, args);
}

/* --- the business, with its probes --------------------------------------- */

struct worker {
	unsigned slot, gen, threads;
	const char *books_dir;
	pthread_mutex_t lock;
	pthread_cond_t wake, finished;
	unsigned batch, ops, started, running, quit;
	struct thread thread[MAX_THREADS];
	struct text batches;
};

enum id_kind { ID_REQUEST = 1,
	       ID_INVOICE,
	       ID_PAYMENT,
	       ID_REFUND,
	       ID_TRANSACTION,
	       ID_CUSTOMER };

/* Unique across the service's processes and batches, and above 2^40. */
static uint64_t make_id(const struct thread *t, enum id_kind kind, unsigned i)
{
	return (UINT64_C(1) << 40) | ((uint64_t)kind << 44) | ((uint64_t)(t->worker->slot & 15) << 36) |
	       ((uint64_t)(t->worker->gen & 15) << 32) | ((uint64_t)(t->batch & 0xfff) << 20) |
	       ((uint64_t)(t->index & 15) << 16) | (i & 0xffff);
}

/* Which variant of a request this is: the schedule's variety comes from
 * the batch, the round of 8 requests and the thread. */
static unsigned turn(const struct thread *t, unsigned i)
{
	return t->batch + i / 8 + t->index;
}

static void pause_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static const char *const currencies[] = { "EUR", "USD", "JPY", "GBP" };

/* Amounts in minor units: small ones and ones past 2^31 and 2^32. */
static int64_t amount_for(const struct thread *t, unsigned i)
{
	static const int64_t base[] = { 1250, 99999, INT64_C(2147483648), INT64_C(4294967296) + 12345,
		                        7500, INT64_C(5000000123), 250000, 12000000 };
	return base[(turn(t, i) + i) % 8] + (int64_t)(t->worker->slot * 1000 + i);
}

static void db_query(struct thread *t, uint64_t request_id, const char *operation, long us)
{
	billing_db_query_t q;
	billing_db_query_begin(&q, request_id, operation);
	record(t, EV_DB_QUERY_START, request_id, "%" PRIu64 ",\"%s\"", request_id, operation);
	pause_us(us);
	uint64_t d = billing_db_query_end(&q, 0);
	record(t, EV_DB_QUERY_DONE, request_id, "%" PRIu64 ",\"%s\",0,%" PRIu64, request_id, operation, d);
}

struct tx {
	billing_transaction_t span;
	uint64_t id, request_id;
	const char *kind;
};

static void tx_begin(struct thread *t, struct tx *x, uint64_t request_id, const char *kind, unsigned i,
                     int64_t amount, const char *currency)
{
	x->id = make_id(t, ID_TRANSACTION, i);
	x->request_id = request_id;
	x->kind = kind;
	billing_transaction_begin(&x->span, x->id, kind, amount, currency);
	record(t, EV_TRANSACTION_START, request_id, "%" PRIu64 ",\"%s\",%" PRId64 ",\"%s\"", x->id, kind,
	       amount, currency);
}

static void tx_end(struct thread *t, struct tx *x, int32_t status)
{
	uint64_t d = billing_transaction_end(&x->span, status);
	record(t, EV_TRANSACTION_DONE, x->request_id, "%" PRIu64 ",\"%s\",%" PRId32 ",%" PRIu64, x->id,
	       x->kind, status, d);
}

static int32_t create_invoice(struct thread *t, uint64_t rid, unsigned i)
{
	int64_t amount = amount_for(t, i);
	const char *currency = currencies[(t->batch + i) % 4];
	uint64_t invoice_id = make_id(t, ID_INVOICE, i), customer_id = make_id(t, ID_CUSTOMER, i % 5);
	struct tx x;
	tx_begin(t, &x, rid, "invoice", i, amount, currency);
	db_query(t, rid, "invoice.insert", turn(t, i) % 4 == 3 ? 25000 : 150); /* a slow round: 25 ms */
	BILLING_INVOICE_CREATE(invoice_id, customer_id, amount, currency);
	record(t, EV_INVOICE_CREATE, rid, "%" PRIu64 ",%" PRIu64 ",%" PRId64 ",\"%s\"", invoice_id,
	       customer_id, amount, currency);
#ifdef BILLING_COUPON_APPLY
	if (i % 3 != 2) {
		const char *campaign = i % 3 ? "spring" : "welcome";
		BILLING_COUPON_APPLY(invoice_id, campaign);
		record(t, EV_COUPON_APPLY, rid, "%" PRIu64 ",\"%s\"", invoice_id, campaign);
	}
#endif
	tx_end(t, &x, 0);
	return 0;
}

/* The card gateway: answers after a latency that depends on the schedule
 * (one round in four slow: 25 ms). */
static int32_t gateway_authorize(const struct thread *t, unsigned i, int32_t decline)
{
	static const long latency_us[] = { 300, 900, 2600, 25000 };
	pause_us(latency_us[turn(t, i) % 4]);
	return decline;
}

static int32_t authorize_payment(struct thread *t, uint64_t rid, unsigned i, const char *gateway,
                                 int32_t decline)
{
	int64_t amount = amount_for(t, i + 3);
	const char *currency = currencies[(t->batch + i + 1) % 4];
	uint64_t payment_id = make_id(t, ID_PAYMENT, i);
	struct tx x;
	tx_begin(t, &x, rid, "payment", i, amount, currency);

	billing_gateway_call_t call;
	billing_gateway_call_begin(&call, rid, gateway, "authorize");
	record(t, EV_GATEWAY_CALL_START, rid, "%" PRIu64 ",\"%s\",\"authorize\"", rid, gateway);
	/* the README's pattern: the clock is read only when it is wanted */
	uint64_t t0 = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED());
	int32_t result = gateway_authorize(t, i, decline);
	uint64_t call_ns = billing_gateway_call_end(&call, result);
	record(t, EV_GATEWAY_CALL_DONE, rid, "%" PRIu64 ",\"%s\",\"authorize\",%" PRId32 ",%" PRIu64, rid,
	       gateway, result, call_ns);
	uint64_t auth_ns = billing_elapsed_ns(t0);
	BILLING_PAYMENT_AUTH(payment_id, amount, currency, gateway, result, auth_ns);
	record(t, EV_PAYMENT_AUTH, rid, "%" PRIu64 ",%" PRId64 ",\"%s\",\"%s\",%" PRId32 ",%" PRIu64,
	       payment_id, amount, currency, gateway, result, auth_ns);
	if (result != 0) {
		BILLING_ERROR(rid, "gateway", result);
		record(t, EV_ERROR, rid, "%" PRIu64 ",\"gateway\",%" PRId32, rid, result);
	} else {
		t->captured_id = payment_id;
		t->captured_amount = amount;
		t->captured_currency = currency;
	}
	tx_end(t, &x, result);
	return result != 0 ? 402 : 0;
}

static int32_t refund(struct thread *t, uint64_t rid, unsigned i, int too_much)
{
	static const char *const reasons[] = { "duplicate", "requested_by_customer", "fraud" };
	if (t->captured_id == 0 || too_much) {
		/* nothing captured to refund, or more than was: refused */
		BILLING_ERROR(rid, "validation", 22);
		record(t, EV_ERROR, rid, "%" PRIu64 ",\"validation\",22", rid);
		return 422;
	}
	int64_t amount = t->captured_amount / 2 + 1;
	uint64_t refund_id = make_id(t, ID_REFUND, i);
	const char *reason = reasons[turn(t, i) % 3];
	struct tx x;
	tx_begin(t, &x, rid, "refund", i, amount, t->captured_currency);
	db_query(t, rid, "refund.insert", 120);
	BILLING_REFUND_PROCESS(refund_id, t->captured_id, amount, t->captured_currency, reason);
	record(t, EV_REFUND_PROCESS, rid, "%" PRIu64 ",%" PRIu64 ",%" PRId64 ",\"%s\",\"%s\"", refund_id,
	       t->captured_id, amount, t->captured_currency, reason);
	tx_end(t, &x, 0);
	t->captured_id = 0;
	return 0;
}

static int32_t read_invoice(struct thread *t, uint64_t rid, unsigned i)
{
	db_query(t, rid, "invoice.select", 80);
	if (turn(t, i) % 3 == 0) {
		BILLING_ERROR(rid, "lookup", 404);
		record(t, EV_ERROR, rid, "%" PRIu64 ",\"lookup\",404", rid);
		return 404;
	}
	return 0;
}

/* Every other one takes 30 ms.  The slow requests of the schedule: these,
 * and the invoices and payments of one round in four. */
static int32_t export_report(struct thread *t, uint64_t rid, unsigned i)
{
	db_query(t, rid, "report.select", (i / 8) % 2 == 0 ? 30000 : 1000);
	return 0;
}

static void serve(struct thread *t, unsigned i)
{
	static const char *const handlers[] = { "invoice.create", "payment.authorize", "payment.authorize",
		                                "refund.create", "invoice.get", "refund.create",
		                                "payment.authorize", "report.export" };
	uint64_t rid = make_id(t, ID_REQUEST, i);
	const char *handler = handlers[i % 8];
	billing_request_t r;
	billing_request_begin(&r, rid, handler);
	record(t, EV_REQUEST_START, rid, "%" PRIu64 ",\"%s\"", rid, handler);
	int32_t status = 0;
	switch (i % 8) {
	case 0: status = create_invoice(t, rid, i); break;
	case 1: status = authorize_payment(t, rid, i, "stripe-sim", 0); break;
	case 2: status = authorize_payment(t, rid, i, "stripe-sim", 51); break;
	case 3: status = refund(t, rid, i, 0); break;
	case 4: status = read_invoice(t, rid, i); break;
	case 5: status = refund(t, rid, i, 1); break;
	case 6: status = authorize_payment(t, rid, i, "adyen-sim", turn(t, i) % 3 == 0 ? 5 : 0); break;
	default: status = export_report(t, rid, i); break;
	}
	uint64_t d = billing_request_end(&r, status);
	record(t, EV_REQUEST_DONE, rid, "%" PRIu64 ",\"%s\",%" PRId32 ",%" PRIu64, rid, handler, status, d);
}

/* --- a worker: a thread pool, a command pipe, the books ------------------- */

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	struct worker *w = t->worker;
	unsigned done_batch = 0;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->quit && w->started == done_batch)
			pthread_cond_wait(&w->wake, &w->lock);
		if (w->quit)
			break;
		done_batch = w->started;
		t->batch = w->batch;
		unsigned ops = w->ops;
		pthread_mutex_unlock(&w->lock);
		for (unsigned i = 0; i < ops; i++)
			serve(t, i);
		pthread_mutex_lock(&w->lock);
		if (--w->running == 0)
			pthread_cond_signal(&w->finished);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void write_books(struct worker *w)
{
	struct text out = { 0 };
	text_add(&out, "{\"slot\":%u,\"gen\":%u,\"pid\":%d,\"batches\":[%.*s],\"events\":{", w->slot, w->gen,
	         (int)getpid(), w->batches.len ? (int)w->batches.len - 1 : 0, w->batches.data ? w->batches.data : "");
	for (int ev = 0; ev < EV_COUNT; ev++) {
		text_add(&out, "%s\"%s\":[", ev ? "," : "", event_names[ev]);
		size_t mark = out.len;
		for (unsigned k = 0; k < w->threads; k++) {
			const struct text *l = &w->thread[k].ledger[ev];
			if (l->len)
				text_add(&out, "%.*s", (int)l->len, l->data);
		}
		if (out.len > mark)
			out.len--; /* the last event's comma */
		text_add(&out, "]");
	}
	text_add(&out, "}}\n");

	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/books-%u-%u-%d.json", w->books_dir, w->slot, w->gen, (int)getpid());
	snprintf(tmp, sizeof tmp, "%s/.books-%u-%u-%d.tmp", w->books_dir, w->slot, w->gen, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		die(tmp);
	for (size_t off = 0; off < out.len;) {
		ssize_t n = write(fd, out.data + off, out.len - off);
		if (n < 0 && errno != EINTR)
			die(tmp);
		off += n > 0 ? (size_t)n : 0;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0)
		die(path);
	free(out.data);
}

static void run_batch(struct worker *w, unsigned batch, unsigned ops)
{
	pthread_mutex_lock(&w->lock);
	w->batch = batch;
	w->ops = ops;
	w->running = w->threads;
	w->started++;
	pthread_cond_broadcast(&w->wake);
	while (w->running > 0)
		pthread_cond_wait(&w->finished, &w->lock);
	pthread_mutex_unlock(&w->lock);
	text_add(&w->batches, "%u,", batch);
	write_books(w);
}

static void worker_main(unsigned slot, unsigned gen, unsigned threads, const char *books_dir, int cmd_fd)
{
	static struct worker w; /* one per process */
	w.slot = slot;
	w.gen = gen;
	w.threads = threads;
	w.books_dir = books_dir;
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.wake, NULL);
	pthread_cond_init(&w.finished, NULL);
	for (unsigned k = 0; k < threads; k++) {
		w.thread[k].worker = &w;
		w.thread[k].index = k;
		if (pthread_create(&w.thread[k].handle, NULL, thread_main, &w.thread[k]) != 0)
			die("pthread_create");
	}
	write_books(&w);
	say("worker %u %u %d\n", slot, gen, (int)getpid());

	FILE *cmd = fdopen(cmd_fd, "r");
	if (!cmd)
		die("fdopen");
	char line[128];
	while (fgets(line, sizeof line, cmd)) {
		unsigned batch, ops;
		if (sscanf(line, "batch %u %u", &batch, &ops) == 2 && batch > 0) {
			run_batch(&w, batch, ops);
			say("done %u %u %d %u\n", slot, gen, (int)getpid(), batch);
		}
	}
	pthread_mutex_lock(&w.lock);
	w.quit = 1;
	pthread_cond_broadcast(&w.wake);
	pthread_mutex_unlock(&w.lock);
	for (unsigned k = 0; k < threads; k++)
		pthread_join(w.thread[k].handle, NULL);
	write_books(&w);
	exit(0);
}

/* --- the parent: supervise, pass commands on, replace the dead ------------ */

struct slot {
	pid_t pid;
	unsigned gen;
	int cmd_fd; /* the write end of the worker's command pipe */
};

static struct slot slots[MAX_WORKERS];
static unsigned nworkers, nthreads;
static const char *books;
static int child_events = -1; /* signalfd of SIGCHLD */

static void start_worker(unsigned s, const sigset_t *parent_mask)
{
	int p[2];
	if (pipe(p) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(p[1]);
		close(child_events);
		for (unsigned k = 0; k < nworkers; k++)
			if (k != s && slots[k].cmd_fd >= 0)
				close(slots[k].cmd_fd);
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, STDIN_FILENO) < 0)
			die("/dev/null");
		close(null);
		sigprocmask(SIG_UNBLOCK, parent_mask, NULL);
		worker_main(s, slots[s].gen, nthreads, books, p[0]);
	}
	close(p[0]);
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	slots[s].pid = pid;
	slots[s].cmd_fd = p[1];
}

/* Reaps every worker that has ended; replaces it unless quitting.
 * Returns how many still run. */
static unsigned reap(int quitting, const sigset_t *mask)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (unsigned s = 0; s < nworkers; s++) {
			if (slots[s].pid != pid)
				continue;
			slots[s].pid = 0;
			if (slots[s].cmd_fd >= 0)
				close(slots[s].cmd_fd);
			slots[s].cmd_fd = -1;
			if (!quitting) {
				say("died %u %d %d\n", s, (int)pid, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
				slots[s].gen++;
				start_worker(s, mask);
			}
		}
	}
	unsigned running = 0;
	for (unsigned s = 0; s < nworkers; s++)
		running += slots[s].pid != 0;
	return running;
}

static void pass_on(const char *line, size_t len)
{
	for (unsigned s = 0; s < nworkers; s++)
		if (slots[s].cmd_fd >= 0 && write(slots[s].cmd_fd, line, len) != (ssize_t)len)
			fprintf(stderr, "service: worker %u did not take a command: %s\n", s, strerror(errno));
}

static int usage(void)
{
	fprintf(stderr, "usage: service [--workers 1..%d] [--threads 1..%d] --books DIR\n", MAX_WORKERS,
	        MAX_THREADS);
	return 2;
}

int main(int argc, char **argv)
{
	nworkers = 3;
	nthreads = 2;
	for (int a = 1; a < argc; a++) {
		if (a + 1 < argc && strcmp(argv[a], "--workers") == 0)
			nworkers = (unsigned)atoi(argv[++a]);
		else if (a + 1 < argc && strcmp(argv[a], "--threads") == 0)
			nthreads = (unsigned)atoi(argv[++a]);
		else if (a + 1 < argc && strcmp(argv[a], "--books") == 0)
			books = argv[++a];
		else
			return usage();
	}
	if (!books || nworkers < 1 || nworkers > MAX_WORKERS || nthreads < 1 || nthreads > MAX_THREADS)
		return usage();

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
		die("sigprocmask");
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	child_events = signalfd(-1, &chld, SFD_CLOEXEC);
	if (child_events < 0)
		die("signalfd");

	for (unsigned s = 0; s < nworkers; s++)
		slots[s].cmd_fd = -1;
	for (unsigned s = 0; s < nworkers; s++)
		start_worker(s, &mask);
	say("parent %d\n", (int)getpid());

	char buf[512];
	size_t have = 0;
	for (;;) {
		struct pollfd fds[2] = { { STDIN_FILENO, POLLIN, 0 }, { child_events, POLLIN, 0 } };
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (fds[1].revents) {
			struct signalfd_siginfo info;
			if (read(child_events, &info, sizeof info) < 0 && errno != EAGAIN)
				die("signalfd");
			reap(0, &mask);
		}
		if (!fds[0].revents)
			continue;
		ssize_t n = read(STDIN_FILENO, buf + have, sizeof buf - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		char *nl;
		while ((nl = memchr(buf, '\n', have)) != NULL) {
			size_t len = (size_t)(nl - buf) + 1;
			pass_on(buf, len);
			memmove(buf, buf + len, have - len);
			have -= len;
		}
		if (have == sizeof buf)
			have = 0; /* a line longer than any command: dropped */
	}

	/* End of input: the workers finish on end of their commands. */
	for (unsigned s = 0; s < nworkers; s++) {
		if (slots[s].cmd_fd >= 0)
			close(slots[s].cmd_fd);
		slots[s].cmd_fd = -1;
	}
	while (reap(1, &mask) > 0) {
		struct signalfd_siginfo info;
		if (read(child_events, &info, sizeof info) < 0 && errno != EINTR)
			die("signalfd");
	}
	return 0;
}
