/*
 * request_deadline.h -- close connections that do not deliver a whole
 * request in time (slow clients holding connection slots).
 */
#ifndef BILLINGD_REQUEST_DEADLINE_H
#define BILLINGD_REQUEST_DEADLINE_H

#include <microhttpd.h>
#include <stdint.h>

/* Starts the reaper thread.  A connection that has not delivered a whole
 * request (headers and body) timeout_s seconds after it opened or after
 * its last reply is closed; once max_connections * 3/4 connections are
 * open, after one second.  0 on success. */
int request_deadline_start(unsigned int timeout_s, unsigned int max_connections);
void request_deadline_stop(void);

/* MHD_OPTION_NOTIFY_CONNECTION callback: tracks every connection. */
void request_deadline_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode code);

/* A whole request is in: the connection is not waiting from now on.  -1
 * when the reaper shut the connection down before the request was whole:
 * the request must not be carried out, as its client never hears the
 * answer (an HTTP client that retries on a fresh connection would have it
 * carried out twice: a payment charged twice). */
int request_deadline_answering(struct MHD_Connection *conn);
/* The reply is done: the connection waits for the next request. */
void request_deadline_waiting(struct MHD_Connection *conn);

/* Connections closed for missing the deadline, since start. */
uint64_t request_deadline_closed(void);

#endif /* BILLINGD_REQUEST_DEADLINE_H */
