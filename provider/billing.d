/*
 * billing.d -- the USDT provider of billing-probes.
 *
 * This file is the only place a probe is defined.  The C macros, the
 * no-op header used when probes are off, the run-time catalogue, the
 * probe table of docs/probes.md and `billing-probes check` are all
 * generated from it or tested against it.  Edit a probe here and rebuild.
 *
 * Conventions every probe keeps (consumers rely on them):
 *   - Names: D writes `request__start` here; consumers spell it
 *     `request-start` (DTrace) or `request__start` (bpftrace).
 *   - IDs are opaque 64-bit integers.  No probe carries personal data:
 *     no names, card numbers, e-mail addresses or free text from a user.
 *   - Money is an integer count of minor units (cents) of the ISO 4217
 *     currency named beside it ("EUR", "USD", "JPY" has no minor unit).
 *     Never floating point.
 *   - status / result / code: 0 is success (for payment-auth: approved);
 *     any other value is a decline or error code chosen by the service.
 *   - duration_ns is measured inside the process with a monotonic clock,
 *     so a consumer needs no thread-local state and work handed between
 *     threads is timed right.  0 means "not measured": the operation
 *     began before anyone was tracing, so its start was not clocked.
 *   - Strings are never NULL at the probe site: the C macros pass "" for
 *     NULL, so copyinstr()/str() never fault.
 *   - At most 6 arguments per probe: bpftrace reads arg0..arg5 only.
 *
 * Types are base C types on purpose: system typedefs such as uint64_t
 * break some dtrace(1) implementations.  unsigned long long is uint64,
 * long long is int64, int is int32, char * is a NUL-terminated string.
 *
 * Each probe is preceded by a doc comment the generator reads:
 *   first line   "name: when the probe fires."
 *   "@arg text"  one line per argument, in order: its name, meaning, units.
 * The declarations themselves leave arguments unnamed, the form every
 * dtrace(1) accepts (systemtap's parser rejects named ones).
 *
 * Metrics.  A probe that feeds always-on metrics (billing-exporter's
 * /metrics, whether read from the stats segment or through USDT) says so
 * in its doc comment, after its arguments; this is the only place a
 * metric is defined (docs/stats.md):
 *   "@@group G"                 the metric group of the probe (--metrics G)
 *   "@@counter NAME count LABELS [if ARG != 0]"      fires
 *   "@@counter NAME sum(ARG) LABELS"                 sum of a quantity
 *   "@@histogram NAME observe(ARG) LABELS"           a quantity's histogram
 *   then the help text on the lines below; a family fed by several probes
 *   gives its help once, at its first declaration.
 * LABELS is "{label, ...}": ARG (the argument's value, under its own
 * name), NAME=ARG, NAME=ARG?NONZERO:ZERO (an integer argument as one of
 * two words) or NAME="constant".  Only string and int arguments make
 * labels: IDs and amounts never do.  A quantity is an argument name with
 * a unit and buckets, declared once here for every probe that carries it:
 *
 * @@quantity duration_ns unit=seconds divide=1000000000 zero=unmeasured
 * @@buckets duration_ns 0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10
 * @@quantity amount_minor unit="minor units" divide=1 signed
 * @@buckets amount_minor 100 500 1000 5000 10000 50000 100000 500000 1000000 10000000
 *
 * @@native duration_ns schema=6 octaves=-20..7
 * @@native amount_minor schema=5 octaves=-1..33
 *
 * Duration bounds make the SLO thresholds 50 ms .. 1 s exact; "zero=
 * unmeasured": a duration_ns of 0 is counted but never observed.  The
 * native (exponential) buckets (provider/native.py) of a duration are
 * 2^(1/64) = 1.0109 times as wide as the one below, so a quantile
 * interpolated inside one is off by under 1.1 % (schema 5's 2^(1/32)
 * would allow 2.2 %), from 2^-20 s (0.95 us) to 2^7 s (128 s); an
 * amount's are 2^(1/32) wide, from 1 to 2^33 minor units.
 * String labels are read bounded (longer values are cut, visibly): 31
 * bytes, and 7 for a currency code:
 *
 * @@label-bytes default=32 currency=8
 *
 * Label values are bounded: past 64 values a label's new ones count as
 * "other", and a map full of label sets (16384 in the exporter's BPF maps)
 * folds a new one's labels into "other":
 *
 * @@label-values 64
 * @@label-sets 16384
 *
 * A label's known values are exempt: they always keep their own series,
 * however much else a service sends.  Known values are declared here, read
 * from a file beside this one (one value a line):
 *
 * @@known currency file=iso4217.txt
 *
 * Each probe's "@@group" is one of these metric groups (billing-exporter
 * --metrics), in the order the exporter lists them; "*" marks the ones it
 * serves by default:
 *
 * @@groups business* requests* db gateway
 *
 * Slow requests.  A stats build keeps the trail of probes of each request
 * over its handler's threshold (lib/stats_trail.h; `billing-probes
 * slow` prints them, the exporter's exemplars point at them); the SLO
 * rules in monitoring/ count the same threshold's bucket.  Seconds, each a
 * bound of duration_ns's buckets: a default, then per handler
 * (HANDLER=SECONDS); BILLING_STATS_SLOW overrides them at run time:
 *
 * @@slow-threshold default=0.25
 */

provider billing {
	/**
	 * request-start: a request handler begins serving a request.
	 * @request_id opaque request ID, unique within the process
	 * @handler handler name, e.g. "payment.authorize"
	 */
	probe request__start(unsigned long long, char *);

	/**
	 * request-done: a request handler has produced its response.
	 * @request_id the request ID given to request-start
	 * @handler handler name, as in request-start
	 * @status 0 on success, otherwise the service's error code (billingd: the HTTP status)
	 * @duration_ns time since request-start, in nanoseconds (0: not measured)
	 * @@group requests
	 * @@counter billing_requests_total count {handler, status}
	 *     Requests served, by handler and status (0: success; billingd: the HTTP status otherwise).
	 * @@histogram billing_request_duration_seconds observe(duration_ns) {handler}
	 *     Time from request-start to request-done (measured ones only).
	 */
	probe request__done(unsigned long long, char *, int, unsigned long long);

	/**
	 * transaction-start: a money-moving transaction begins.
	 * @tx_id opaque transaction ID
	 * @kind transaction kind: "invoice", "payment", "refund"
	 * @amount_minor amount in minor units of currency
	 * @currency ISO 4217 currency code, e.g. "EUR"
	 */
	probe transaction__start(unsigned long long, char *, long long, char *);

	/**
	 * transaction-done: a transaction has committed or failed.
	 * @tx_id the transaction ID given to transaction-start
	 * @kind transaction kind, as in transaction-start
	 * @status 0 when committed, otherwise the service's error code
	 * @duration_ns time since transaction-start, in nanoseconds (0: not measured)
	 * @@group business
	 * @@counter billing_transactions_total count {kind, outcome=status?failed:committed}
	 *     Money-moving transactions finished, committed or failed (transaction-done fires).
	 * @@histogram billing_transaction_duration_seconds observe(duration_ns) {kind}
	 *     Time from transaction-start to transaction-done (measured ones only).
	 */
	probe transaction__done(unsigned long long, char *, int, unsigned long long);

	/**
	 * invoice-create: an invoice has been created and stored.
	 * @invoice_id opaque invoice ID
	 * @customer_id opaque customer ID
	 * @amount_minor invoice total in minor units of currency
	 * @currency ISO 4217 currency code
	 * @@group business
	 * @@counter billing_invoices_total count {currency}
	 *     Invoices created (invoice-create fires).
	 * @@counter billing_invoice_amount_minor_total sum(amount_minor) {currency}
	 *     Sum of invoice totals, in minor units of the currency.
	 * @@histogram billing_transaction_amount_minor observe(amount_minor) {kind="invoice", currency}
	 *     Amounts of invoices created, payments put to authorisation (approved or declined)
	 *     and refunds processed, in minor units.
	 */
	probe invoice__create(unsigned long long, unsigned long long, long long, char *);

	/**
	 * payment-auth: a payment authorisation has been answered by the card gateway.
	 * @payment_id opaque payment ID
	 * @amount_minor amount to authorise, in minor units of currency
	 * @currency ISO 4217 currency code
	 * @gateway gateway name, e.g. "stripe-sim"
	 * @result 0 when approved, otherwise the decline or error code
	 * @duration_ns time the authorisation took, in nanoseconds (0: not measured)
	 * @@group business
	 * @@counter billing_payments_total count {gateway, currency, outcome=result?declined:approved}
	 *     Payment authorisations answered by the gateway (payment-auth fires).
	 * @@counter billing_payment_declines_total count {gateway, code=result} if result != 0
	 *     Declined payment authorisations by decline code.
	 * @@counter billing_payment_amount_minor_total sum(amount_minor) {gateway, currency, outcome=result?declined:approved}
	 *     Sum of amounts put to authorisation, in minor units of the currency.
	 * @@histogram billing_payment_auth_duration_seconds observe(duration_ns) {gateway}
	 *     Time a payment authorisation took (measured ones only).
	 * @@histogram billing_transaction_amount_minor observe(amount_minor) {kind="payment", currency}
	 */
	probe payment__auth(unsigned long long, long long, char *, char *, int, unsigned long long);

	/**
	 * refund-process: a refund has been accepted and recorded.
	 * @refund_id opaque refund ID
	 * @payment_id the payment being refunded
	 * @amount_minor refunded amount in minor units of currency
	 * @currency ISO 4217 currency code
	 * @reason reason code, e.g. "duplicate", "fraud", "requested_by_customer"
	 * @@group business
	 * @@counter billing_refunds_total count {reason, currency}
	 *     Refunds accepted (refund-process fires).
	 * @@counter billing_refund_amount_minor_total sum(amount_minor) {reason, currency}
	 *     Sum of refunded amounts, in minor units of the currency.
	 * @@histogram billing_transaction_amount_minor observe(amount_minor) {kind="refund", currency}
	 */
	probe refund__process(unsigned long long, unsigned long long, long long, char *, char *);

	/**
	 * error: the service hit an error while serving a request.
	 * @request_id the request it happened in (0: outside any request)
	 * @component where it happened, e.g. "db", "gateway", "validation"
	 * @code the service's error code (never 0)
	 * @@group business
	 * @@counter billing_errors_total count {component, code}
	 *     Errors the service reported (error fires).
	 */
	probe error(unsigned long long, char *, int);

	/**
	 * db-query-start: a database statement begins.
	 * @request_id the request it serves (0: outside any request)
	 * @operation statement name, e.g. "invoice.insert" (never SQL text: it may hold data)
	 */
	probe db__query__start(unsigned long long, char *);

	/**
	 * db-query-done: a database statement has finished.
	 * @request_id as in db-query-start
	 * @operation as in db-query-start
	 * @status 0 on success, otherwise the database's error code
	 * @duration_ns time since db-query-start, in nanoseconds (0: not measured)
	 * @@group db
	 * @@histogram billing_db_query_duration_seconds observe(duration_ns) {operation}
	 *     Time a database statement took (measured ones only).
	 */
	probe db__query__done(unsigned long long, char *, int, unsigned long long);

	/**
	 * gateway-call-start: a call to an external payment gateway begins.
	 * @request_id the request it serves (0: outside any request)
	 * @gateway gateway name
	 * @operation gateway operation, e.g. "authorize", "refund"
	 */
	probe gateway__call__start(unsigned long long, char *, char *);

	/**
	 * gateway-call-done: a call to an external payment gateway has returned.
	 * @request_id as in gateway-call-start
	 * @gateway as in gateway-call-start
	 * @operation as in gateway-call-start
	 * @status 0 on success, otherwise the gateway's error or decline code
	 * @duration_ns time since gateway-call-start, in nanoseconds (0: not measured)
	 * @@group gateway
	 * @@histogram billing_gateway_call_duration_seconds observe(duration_ns) {gateway, operation}
	 *     Time a payment gateway call took (measured ones only).
	 */
	probe gateway__call__done(unsigned long long, char *, char *, int, unsigned long long);
};

/*
 * Stability (see "Stability" in the DTrace guide).  Names and arguments
 * are Evolving: they change only in a release whose notes say so, and an
 * argument is only ever appended, never reordered.  Module and function
 * names are where a probe happens to be compiled, so they are Private.
 */
#pragma D attributes Evolving/Evolving/Common provider billing provider
#pragma D attributes Private/Private/Unknown provider billing module
#pragma D attributes Private/Private/Unknown provider billing function
#pragma D attributes Evolving/Evolving/Common provider billing name
#pragma D attributes Evolving/Evolving/Common provider billing args
