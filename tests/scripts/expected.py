"""The figures scripts-workload (workload*.c) fires, as the scripts must print them.

Change the workload and this file together.  Figures are written out by hand
from the workload's plan, not computed from the same code, so a slip in one
shows up as a failing test.

Every ID is above 2^32 and transaction and invoice IDs above 2^63
(workload.h), amounts reach 5,000,000,000 and go negative (credit notes):
a script printing a 64-bit value through a narrower or signed conversion
prints another number than these.
"""

ID_BASE = 1 << 40       # requests, payments, refunds (workload.h)
BIG_ID_BASE = 1 << 63   # transactions, invoices

# --- business mode -----------------------------------------------------------

# the business events the workload fires: (metric, currency, label, code) ->
# (count, amount_minor); biz_metrics' tables below lay them out
BIZ_ROWS = {
    ("invoices", "EUR", "-", 0): (600, 4620000),  # 120 credit notes of -500 among them
    ("invoices", "USD", "-", 0): (400, 500005370000),  # 100 of 5,000,000,000 among them
    ("approved", "EUR", "stripe-sim", 0): (400, 800000),
    ("approved", "USD", "adyen-sim", 0): (300, 660000000000),  # 2,200,000,000 each
    ("declined", "EUR", "stripe-sim", 51): (200, 1980000),
    ("declined", "USD", "adyen-sim", 5): (100, 1500000),
    ("refunds", "EUR", "duplicate", 0): (30, 30000),
    ("refunds", "USD", "fraud", 0): (19, 47500),
    ("refunds", "USD", "-", 0): (1, 777),  # the empty reason prints as "-"
}

# biz_metrics' table (the same events as BIZ_ROWS, laid out by breakdown):
# payments by (gateway, code), 0 = approved -> count
BIZ_PAYMENTS = {
    ("stripe-sim", 0): 400,
    ("adyen-sim", 0): 300,
    ("stripe-sim", 51): 200,
    ("adyen-sim", 5): 100,
}
# amounts by (currency, metric) -> sum of amount_minor
BIZ_AMOUNTS = {
    ("EUR", "invoices"): 4620000,
    ("USD", "invoices"): 500005370000,
    ("EUR", "approved"): 800000,
    ("USD", "approved"): 660000000000,
    ("EUR", "declined"): 1980000,
    ("USD", "declined"): 1500000,
    ("EUR", "refunds"): 30000,
    ("USD", "refunds"): 48277,  # 19 fraud refunds of 2500 + one of 777
}
# refunds by reason -> count (the empty reason prints as "-")
BIZ_REFUNDS = {"duplicate": 30, "fraud": 19, "-": 1}
BIZ_TOP = 8  # rows of each breakdown an interval prints at most

# biz_metrics' summary at exit: counts and approved / (approved + declined)
BIZ_SUMMARY = {"invoices": 1000, "approved": 700, "declined": 300, "approval_pct": 70,
               "refunds": 50}

# errors TOTAL rows: (component, code) -> count
ERROR_ROWS = {
    ("db", 1205): 7,
    ("gateway", 504): 3,
    ("validation", 400): 12,
    ("-", 1): 2,  # the empty component prints as "-"
}

# amount_dist per (currency, kind): count, sum, integer average, and the
# power-of-two histogram rows with a non-zero count: {"[256, 512)": 120, ...};
# negative amounts in one row, "(..., 0)" (bpftrace's; D's negative rows
# are added up into it)
AMOUNTS = {
    ("EUR", "invoice"): (600, 4620000, 7700,
                         {"(..., 0)": 120, "[1K, 2K)": 120, "[2K, 4K)": 120,
                          "[8K, 16K)": 120, "[16K, 32K)": 120}),
    ("USD", "invoice"): (400, 500005370000, 1250013425,
                         {"[512, 1K)": 100, "[2K, 4K)": 100, "[32K, 64K)": 100,
                          "[4G, 8G)": 100}),
    ("EUR", "payment"): (600, 2780000, 4633, {"[1K, 2K)": 400, "[8K, 16K)": 200}),
    ("USD", "payment"): (400, 660001500000, 1650003750, {"[2G, 4G)": 300, "[8K, 16K)": 100}),
    ("EUR", "refund"): (30, 30000, 1000, {"[512, 1K)": 30}),
    ("USD", "refund"): (20, 48277, 2413, {"[512, 1K)": 1, "[2K, 4K)": 19}),
}

# --- requests mode -----------------------------------------------------------

# Reported durations in microseconds, per handler: [(duration_us, how many)].
REQUESTS = {
    "invoice.create": [(3000, 85), (20000, 10), (150000, 5)],
    "payment.authorize": [(40000, 40), (90000, 6), (250000, 4)],
}
# then one 1 ms request on each of 8 more handlers, one after another:
# request_latency has 7 rows, so extra.6 to extra.8 share the row "(other)"
EXTRA_HANDLERS = ["extra.%d" % k for k in range(1, 9)]
EXTRA_US = 1000
LATENCY_ROWS = 7
UNMEASURED = 3  # report.export requests with duration 0
# the threshold the cases give request_latency and slow_requests (the
# workload's slow requests take 150 and 250 ms; the scripts' default is
# billing.d's @@slow-threshold, 250 ms: tests/style/test_slow_threshold.py)
SLO_THRESHOLD_MS = 100

# power-of-two histogram rows of request_latency (@usecs), non-zero only
LATENCY_HIST = {
    "invoice.create": {"[2K, 4K)": 85, "[16K, 32K)": 10, "[128K, 256K)": 5},
    "payment.authorize": {"[32K, 64K)": 40, "[64K, 128K)": 6, "[128K, 256K)": 4},
}

# slow_requests: the slow request IDs and their trails, (probe, detail) per line
SLOW_INVOICE_IDS = [ID_BASE + i for i in range(1095, 1100)]
SLOW_PAYMENT_IDS = [ID_BASE + i for i in range(2046, 2050)]
DECLINED_PAYMENT_IDS = [ID_BASE + 2048, ID_BASE + 2049]
INVOICE_AMOUNT = -3000000000  # credit notes: signed, beyond 32 bits
PAYMENT_AMOUNT = 4300000000


def slow_trail(rid):
    """The lines slow_requests prints for slow request RID, in order."""
    tx = BIG_ID_BASE + rid
    if rid in SLOW_INVOICE_IDS:
        return [("request-start", "handler=invoice.create"),
                ("transaction-start", "tx=%d kind=invoice amount=%d EUR" % (tx, INVOICE_AMOUNT)),
                ("db-query-start", "op=invoice.insert"),
                ("db-query-done", "op=invoice.insert status=0 duration_us=1000"),
                ("invoice-create", "invoice=%d amount=%d EUR" % (BIG_ID_BASE + (1 << 32) + rid,
                                                                 INVOICE_AMOUNT)),
                ("transaction-done", "tx=%d kind=invoice status=0" % tx),
                ("request-done", "handler=invoice.create status=0 duration_us=150000")]
    code = 51 if rid in DECLINED_PAYMENT_IDS else 0
    return ([("request-start", "handler=payment.authorize"),
             ("transaction-start", "tx=%d kind=payment amount=%d USD" % (tx, PAYMENT_AMOUNT)),
             ("gateway-call-start", "gateway=stripe-sim op=authorize"),
             ("gateway-call-done", "gateway=stripe-sim op=authorize status=%d duration_us=20000" % code),
             ("payment-auth", "amount=%d USD gateway=stripe-sim result=%d" % (PAYMENT_AMOUNT, code))] +
            ([("error", "component=gateway code=402")] if code else []) +
            [("transaction-done", "tx=%d kind=payment status=%d" % (tx, code)),
             ("request-done", "handler=payment.authorize status=%d duration_us=250000"
              % (402 if code else 0))])

# --- long mode: durations no test can wait for ---------------------------------


# Reported durations in microseconds (duration_ns / 1000, as the scripts
# divide), per handler: batch.settle 1 s, 25 min (2^30 to 2^31 us), 50 min
# (2^31 to 2^32 us), 2 h (from 2^32 us); ledger.close 10 days and
# 2^64 - 1000 ns (above 2^63: negative if read signed).
LONG_REQUESTS = {
    "batch.settle": [(1000000, 40), (1500000000, 20), (3000000000, 35), (7200000000, 5)],
    "ledger.close": [(864000000000, 1), (18446744073709550, 1)],
}
# request_latency's @usecs rows, non-zero only, as both twins print them
LONG_HIST = {
    "batch.settle": {"[512K, 1M)": 40, "[1G, 2G)": 20, "[2G, 4G)": 35, "[4G, 8G)": 5},
    "ledger.close": {"[512G, 1T)": 1, "[16P, 32P)": 1},
}

# --- park mode: cswitch's off-CPU times, stretched in the script's state --------

# Microseconds added to the off-CPU time of each of the two parked threads:
# 3,000,000,000 (in [2G, 4G) with the real seconds it sleeps) and 2^33 (in
# [8G, 16G): bpftrace 0.17's hist() filed it in [2G, 4G))
PARK_STRETCH_US = [3000000000, 1 << 33]
PARK_SLEEP_ROWS = {"[2G, 4G)": 1, "[8G, 16G)": 1}   # @offcpu_us[sleep]'s rows from 2^31 us up

# --- bounds mode (slow_requests' bounded memory) -------------------------------

LONG_TRAIL_ID = ID_BASE + 5000
LONG_TRAIL_EVENTS = 82          # request-start, 40 db-query pairs, request-done
LONG_TRAIL_KEPT = 31            # request-start + 30 db-query events, then request-done
LONG_TRAIL_DROPPED = 82 - 1 - 31  # 82 events; request-done has its own slot
BATCH_IDS = [ID_BASE + i for i in range(6000, 6130)]
MAX_IN_FLIGHT = 128             # the 129th and 130th are untracked

# burst mode: 100 slow requests 5 ms apart, the process exiting 300 ms
# after the last: slow_requests prints every trail (d-scripts/README.md)
BURST_IDS = [ID_BASE + i for i in range(8000, 8100)]
BURST_LINGER_MS = 300

# overlap mode: one slow request while 40 fast ones start and finish on its
# thread; its trail, and how long it really took at least (us)
OVERLAP_ID = ID_BASE + 9000
OVERLAP_TRAIL = [("request-start", "handler=report.export"),
                 ("db-query-start", "op=report.page"),
                 ("db-query-done", "op=report.page status=0 duration_us=2000"),
                 ("request-done", "handler=report.export status=0 duration_us=300000")]
OVERLAP_MIN_US = 60000
OVERLAP_MAX_US = 30000000  # far more than it takes; a start time read as 0 gives the uptime

# simultaneous mode: 2 threads x 6 rounds x 8 slow requests, each round's
# request-dones fired on both CPUs at the same instant; every trail alike
SIMULTANEOUS_IDS = [ID_BASE + 10000 + 1000 * k + n for k in range(2) for n in range(6 * 8)]
SIMULTANEOUS_TRAIL = [("request-start", "handler=report.simultaneous"),
                      ("db-query-start", "op=report.page"),
                      ("db-query-done", "op=report.page status=0 duration_us=1000"),
                      ("request-done", "handler=report.simultaneous status=0 duration_us=150000")]

# --- race mode: the same rows from 4 threads at full speed -------------------

RACE_TOTAL = 4 * 20000
RACE_PAYMENTS = {("stripe-sim", 0): RACE_TOTAL}
RACE_AMOUNTS = {("EUR", "approved"): RACE_TOTAL * 1000}
RACE_ERROR_ROWS = {("db", 1205): RACE_TOTAL}
# request-done of handler "race": every 4th 150 ms (slow), the rest 2 ms
RACE_REQUESTS = {"race": [(2000, RACE_TOTAL * 3 // 4), (150000, RACE_TOTAL // 4)]}

# --- tps mode ----------------------------------------------------------------

# (transactions, failed) in three consecutive whole seconds
TPS_SECONDS = [(100, 10), (200, 20), (50, 0)]
TPS_FAIL_PCT = [10, 10, 0]  # FAIL% of those seconds, whole percent

# --- system mode -------------------------------------------------------------

OPENS_OK = 25          # opens of --path, each writing WRITE_SIZE bytes
OPENS_MISSING = 5      # opens of --path.missing: ENOENT (2)
WRITE_SIZE = 8192
SLEEPS = 20            # nanosleeps of 10 ms: voluntary switches, 8-16 ms off CPU
TOUCHED_PAGES = 512    # fresh anonymous pages touched: page faults
BUSY_FUNCTION = "workload_busy_spin"

# begun mode: a request started before the tracer attached ends slow (done,
# not followed: untracked), then one slow request runs whole
BEGUN_UNTRACKED = 1
BEGUN_IDS = [ID_BASE + 12001]
BEGUN_TRAIL = [("request-start", "handler=report.whole"),
               ("request-done", "handler=report.whole status=0 duration_us=300000")]
