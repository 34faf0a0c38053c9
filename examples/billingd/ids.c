/*
 * ids.c -- request and transaction IDs.
 */
#include <stdatomic.h>

#include "handlers.h"

static atomic_uint_fast64_t request_counter;
static atomic_uint_fast64_t transaction_counter;

uint64_t next_request_id(void)
{
	return (uint64_t)atomic_fetch_add_explicit(&request_counter, 1, memory_order_relaxed) + 1;
}

uint64_t next_transaction_id(void)
{
	return (uint64_t)atomic_fetch_add_explicit(&transaction_counter, 1, memory_order_relaxed) + 1;
}
