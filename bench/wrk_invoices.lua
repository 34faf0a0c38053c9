-- wrk stand-in for billing-load (used only when billing-load is not built):
-- every request creates an invoice, which fires request, transaction,
-- db-query and invoice-create probes in billingd.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"customer_id": 42, "amount_minor": 1999, "currency": "EUR"}'
