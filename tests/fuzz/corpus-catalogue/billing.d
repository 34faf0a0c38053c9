/*
 * billing.d -- the USDT provider of billing-probes.
 *
 * This file is the only place a probe is defined.  The C macros, the
 * no-op header used when probes are off, the run-time catalogue, the
 * README's probe table and `billing-probes check` are all generated from
 * it or tested against it.  Edit a probe here and rebuild.
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
	 */
	probe transaction__done(unsigned long long, char *, int, unsigned long long);

	/**
	 * invoice-create: an invoice has been created and stored.
	 * @invoice_id opaque invoice ID
	 * @customer_id opaque customer ID
	 * @amount_minor invoice total in minor units of currency
	 * @currency ISO 4217 currency code
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
	 */
	probe payment__auth(unsigned long long, long long, char *, char *, int, unsigned long long);

	/**
	 * refund-process: a refund has been accepted and recorded.
	 * @refund_id opaque refund ID
	 * @payment_id the payment being refunded
	 * @amount_minor refunded amount in minor units of currency
	 * @currency ISO 4217 currency code
	 * @reason reason code, e.g. "duplicate", "fraud", "requested_by_customer"
	 */
	probe refund__process(unsigned long long, unsigned long long, long long, char *, char *);

	/**
	 * error: the service hit an error while serving a request.
	 * @request_id the request it happened in (0: outside any request)
	 * @component where it happened, e.g. "db", "gateway", "validation"
	 * @code the service's error code (never 0)
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
