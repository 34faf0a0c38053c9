/*
 * metric_table.c -- the maps and metrics of billing-exporter, as data.
 * See metric_table.h.  Add a metric here (and, for a new probe, a program
 * in billing_exporter.bpf.c); the exposition and the docs follow.
 */
#include "metric_table.h"

#include <stddef.h>
#include <string.h>

#include "billing_exporter.h"

#define STR(st, f, argname, pos) \
  { \
    argname, pos, BX_KEY_STRING, offsetof(struct st, f), sizeof(((struct st *)0)->f) \
  }
#define INT(st, f, argname, pos) \
  { \
    argname, pos, BX_KEY_INT32, offsetof(struct st, f), sizeof(((struct st *)0)->f) \
  }

enum { M_REQUEST,
       M_TRANSACTION,
       M_INVOICE,
       M_PAYMENT,
       M_REFUND,
       M_ERROR,
       M_DB,
       M_GATEWAY };

/* clang-format off: a table laid out by column */
const bx_map_desc_t bx_maps[] = {
	[M_REQUEST] = { "m_request_done", "request__done", BX_GROUP_REQUESTS, sizeof(struct bx_key_request), BX_DROP_REQUEST, 2, { STR(bx_key_request, handler, "handler", BX_ARG_REQUEST_DONE_HANDLER), INT(bx_key_request, status, "status", BX_ARG_REQUEST_DONE_STATUS) }, BX_NO_ARG, BX_ARG_REQUEST_DONE_DURATION },
	[M_TRANSACTION] = { "m_transaction_done", "transaction__done", BX_GROUP_BUSINESS, sizeof(struct bx_key_transaction), BX_DROP_TRANSACTION, 2, { STR(bx_key_transaction, kind, "kind", BX_ARG_TRANSACTION_DONE_KIND), INT(bx_key_transaction, status, "status", BX_ARG_TRANSACTION_DONE_STATUS) }, BX_NO_ARG, BX_ARG_TRANSACTION_DONE_DURATION },
	[M_INVOICE] = { "m_invoice_create", "invoice__create", BX_GROUP_BUSINESS, sizeof(struct bx_key_currency), BX_DROP_INVOICE, 1, { STR(bx_key_currency, currency, "currency", BX_ARG_INVOICE_CREATE_CURRENCY) }, BX_ARG_INVOICE_CREATE_AMOUNT, BX_NO_ARG },
	[M_PAYMENT] = { "m_payment_auth", "payment__auth", BX_GROUP_BUSINESS, sizeof(struct bx_key_payment), BX_DROP_PAYMENT, 3, { STR(bx_key_payment, gateway, "gateway", BX_ARG_PAYMENT_AUTH_GATEWAY), STR(bx_key_payment, currency, "currency", BX_ARG_PAYMENT_AUTH_CURRENCY), INT(bx_key_payment, result, "result", BX_ARG_PAYMENT_AUTH_RESULT) }, BX_ARG_PAYMENT_AUTH_AMOUNT, BX_ARG_PAYMENT_AUTH_DURATION },
	[M_REFUND] = { "m_refund_process", "refund__process", BX_GROUP_BUSINESS, sizeof(struct bx_key_refund), BX_DROP_REFUND, 2, { STR(bx_key_refund, reason, "reason", BX_ARG_REFUND_PROCESS_REASON), STR(bx_key_refund, currency, "currency", BX_ARG_REFUND_PROCESS_CURRENCY) }, BX_ARG_REFUND_PROCESS_AMOUNT, BX_NO_ARG },
	[M_ERROR] = { "m_error", "error", BX_GROUP_BUSINESS, sizeof(struct bx_key_error), BX_DROP_ERROR, 2, { STR(bx_key_error, component, "component", BX_ARG_ERROR_COMPONENT), INT(bx_key_error, code, "code", BX_ARG_ERROR_CODE) }, BX_NO_ARG, BX_NO_ARG },
	[M_DB] = { "m_db_query_done", "db__query__done", BX_GROUP_DB, sizeof(struct bx_key_db), BX_DROP_DB, 1, { STR(bx_key_db, operation, "operation", BX_ARG_DB_QUERY_DONE_OPERATION) }, BX_NO_ARG, BX_ARG_DB_QUERY_DONE_DURATION },
	[M_GATEWAY] = { "m_gateway_call_done", "gateway__call__done", BX_GROUP_GATEWAY, sizeof(struct bx_key_gateway), BX_DROP_GATEWAY, 2, { STR(bx_key_gateway, gateway, "gateway", BX_ARG_GATEWAY_CALL_DONE_GATEWAY), STR(bx_key_gateway, operation, "operation", BX_ARG_GATEWAY_CALL_DONE_OPERATION) }, BX_NO_ARG, BX_ARG_GATEWAY_CALL_DONE_DURATION },
};
/* clang-format on */
const size_t bx_map_count = sizeof bx_maps / sizeof bx_maps[0];

#define L(n, f) \
  { \
    n, BX_DEC_VALUE, f, NULL \
  }
#define AUTH(f) \
  { \
    "outcome", BX_DEC_OUTCOME_AUTH, f, NULL \
  }
#define TX(f) \
  { \
    "outcome", BX_DEC_OUTCOME_TX, f, NULL \
  }
#define CONST(n, v) \
  { \
    n, BX_DEC_CONSTANT, 0, v \
  }
#define SELF(name, type, unit, labels, help) \
  { \
    name, type, unit, help, -1, BX_SRC_SELF, BX_WHERE_ALL, 0, { L(NULL, 0) }, labels \
  }

/* One family fed by three maps: the entries share name and help. */
#define AMOUNT_HELP "Amounts of invoices created, payments put to authorisation (approved " \
	            "or declined) and refunds processed, in minor units."

/* clang-format off: a table laid out by column */
const bx_metric_t bx_metrics[] = {
	{ "billing_invoices_total", BX_COUNTER, "", "Invoices created (invoice-create fires).", M_INVOICE, BX_SRC_COUNT, BX_WHERE_ALL, 1, { L("currency", 0) }, NULL },
	{ "billing_invoice_amount_minor_total", BX_COUNTER, "minor units", "Sum of invoice totals, in minor units of the currency.", M_INVOICE, BX_SRC_AMOUNT_SUM, BX_WHERE_ALL, 1, { L("currency", 0) }, NULL },
	{ "billing_payments_total", BX_COUNTER, "", "Payment authorisations answered by the gateway (payment-auth fires).", M_PAYMENT, BX_SRC_COUNT, BX_WHERE_ALL, 3, { L("gateway", 0), L("currency", 1), AUTH(2) }, NULL },
	{ "billing_payment_declines_total", BX_COUNTER, "", "Declined payment authorisations by decline code.", M_PAYMENT, BX_SRC_COUNT, 2, 2, { L("gateway", 0), L("code", 2) }, NULL },
	{ "billing_payment_amount_minor_total", BX_COUNTER, "minor units", "Sum of amounts put to authorisation, in minor units of the currency.", M_PAYMENT, BX_SRC_AMOUNT_SUM, BX_WHERE_ALL, 3, { L("gateway", 0), L("currency", 1), AUTH(2) }, NULL },
	{ "billing_payment_auth_duration_seconds", BX_HISTOGRAM, "seconds", "Time a payment authorisation took (measured ones only).", M_PAYMENT, BX_SRC_DUR_HIST, BX_WHERE_ALL, 1, { L("gateway", 0) }, NULL },
	{ "billing_refunds_total", BX_COUNTER, "", "Refunds accepted (refund-process fires).", M_REFUND, BX_SRC_COUNT, BX_WHERE_ALL, 2, { L("reason", 0), L("currency", 1) }, NULL },
	{ "billing_refund_amount_minor_total", BX_COUNTER, "minor units", "Sum of refunded amounts, in minor units of the currency.", M_REFUND, BX_SRC_AMOUNT_SUM, BX_WHERE_ALL, 2, { L("reason", 0), L("currency", 1) }, NULL },
	{ "billing_transactions_total", BX_COUNTER, "", "Money-moving transactions finished, committed or failed (transaction-done fires).", M_TRANSACTION, BX_SRC_COUNT, BX_WHERE_ALL, 2, { L("kind", 0), TX(1) }, NULL },
	{ "billing_transaction_duration_seconds", BX_HISTOGRAM, "seconds", "Time from transaction-start to transaction-done (measured ones only).", M_TRANSACTION, BX_SRC_DUR_HIST, BX_WHERE_ALL, 1, { L("kind", 0) }, NULL },
	{ "billing_transaction_amount_minor", BX_HISTOGRAM, "minor units", AMOUNT_HELP, M_INVOICE, BX_SRC_AMOUNT_HIST, BX_WHERE_ALL, 2, { CONST("kind", "invoice"), L("currency", 0) }, NULL },
	{ "billing_transaction_amount_minor", BX_HISTOGRAM, "minor units", AMOUNT_HELP, M_PAYMENT, BX_SRC_AMOUNT_HIST, BX_WHERE_ALL, 2, { CONST("kind", "payment"), L("currency", 1) }, NULL },
	{ "billing_transaction_amount_minor", BX_HISTOGRAM, "minor units", AMOUNT_HELP, M_REFUND, BX_SRC_AMOUNT_HIST, BX_WHERE_ALL, 2, { CONST("kind", "refund"), L("currency", 1) }, NULL },
	{ "billing_requests_total", BX_COUNTER, "", "Requests served, by handler and status (0: success; billingd: the HTTP status otherwise).", M_REQUEST, BX_SRC_COUNT, BX_WHERE_ALL, 2, { L("handler", 0), L("status", 1) }, NULL },
	{ "billing_request_duration_seconds", BX_HISTOGRAM, "seconds", "Time from request-start to request-done (measured ones only).", M_REQUEST, BX_SRC_DUR_HIST, BX_WHERE_ALL, 1, { L("handler", 0) }, NULL },
	{ "billing_errors_total", BX_COUNTER, "", "Errors the service reported (error fires).", M_ERROR, BX_SRC_COUNT, BX_WHERE_ALL, 2, { L("component", 0), L("code", 1) }, NULL },
	{ "billing_db_query_duration_seconds", BX_HISTOGRAM, "seconds", "Time a database statement took (measured ones only).", M_DB, BX_SRC_DUR_HIST, BX_WHERE_ALL, 1, { L("operation", 0) }, NULL },
	{ "billing_gateway_call_duration_seconds", BX_HISTOGRAM, "seconds", "Time a payment gateway call took (measured ones only).", M_GATEWAY, BX_SRC_DUR_HIST, BX_WHERE_ALL, 2, { L("gateway", 0), L("operation", 1) }, NULL },
	SELF("billing_exporter_target_up", BX_GAUGE, "", "target",
	     "1 while the target (pid:N or binary:PATH) is alive / present, else 0."),
	SELF("billing_exporter_probes_attached", BX_GAUGE, "", "probe",
	     "Probe attachments (one per module and target) per probe."),
	SELF("billing_exporter_label_values_folded_total", BX_COUNTER, "", "map,label",
	     "Distinct label values counted under \"other\" once a label had 64 values."),
	SELF("billing_exporter_dropped_fires_total", BX_COUNTER, "", "map",
	     "Fires not counted because their map was full (16384 label sets)."),
	SELF("billing_exporter_bpf_program_runs_total", BX_COUNTER, "", "program",
	     "Runs of each BPF program (0 unless kernel BPF stats are on: --bpf-stats)."),
	SELF("billing_exporter_bpf_program_run_seconds_total", BX_COUNTER, "seconds", "program",
	     "Time spent in each BPF program (0 unless kernel BPF stats are on: --bpf-stats)."),
	SELF("billing_exporter_bpf_program_recursion_misses_total", BX_COUNTER, "", "program",
	     "Fires the kernel skipped because a BPF program was already running on that CPU."),
	SELF("billing_exporter_scrape_duration_seconds", BX_GAUGE, "seconds", "",
	     "Time the previous snapshot took to read the maps and render."),
};
/* clang-format on */
const size_t bx_metric_count = sizeof bx_metrics / sizeof bx_metrics[0];

static const unsigned long long dur_ns[BX_DUR_BOUNDS] = { BX_DUR_BOUND_LIST };
static const long long amounts[BX_AMOUNT_BOUNDS] = { BX_AMOUNT_BOUND_LIST };
const double bx_dur_bounds_seconds[BX_DUR_BOUNDS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};
const double bx_amount_bounds[BX_AMOUNT_BOUNDS] = {
	100, 500, 1000, 5000, 10000, 50000, 100000, 500000, 1000000, 10000000
};

/* The bounds in seconds must be the kernel's nanosecond bounds exactly. */
typedef char bx_dur_bounds_match[(sizeof dur_ns / sizeof dur_ns[0]) == BX_DUR_BOUNDS ? 1 : -1];
typedef char bx_amount_bounds_match[(sizeof amounts / sizeof amounts[0]) == BX_AMOUNT_BOUNDS ? 1 : -1];

int bx_bounds_consistent(void)
{
	for (int i = 0; i < BX_DUR_BOUNDS; i++)
		if ((unsigned long long)(bx_dur_bounds_seconds[i] * 1e9 + 0.5) != dur_ns[i])
			return 0;
	for (int i = 0; i < BX_AMOUNT_BOUNDS; i++)
		if ((long long)bx_amount_bounds[i] != amounts[i])
			return 0;
	return 1;
}

static const struct {
	const char *name;
	unsigned group;
} groups[] = {
	{ "business", BX_GROUP_BUSINESS },
	{ "requests", BX_GROUP_REQUESTS },
	{ "db", BX_GROUP_DB },
	{ "gateway", BX_GROUP_GATEWAY },
	{ "exporter", BX_GROUP_SELF },
};

unsigned bx_group_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (strcmp(groups[i].name, name) == 0)
			return groups[i].group;
	return 0;
}

const char *bx_group_name(unsigned group)
{
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (groups[i].group == group)
			return groups[i].name;
	return "?";
}

unsigned bx_metric_group(const bx_metric_t *m)
{
	return m->map < 0 ? (unsigned)BX_GROUP_SELF : bx_maps[m->map].group;
}
