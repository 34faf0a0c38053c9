/*
 * driver.c -- the request loop.
 *
 * Pacing: with --rate, request n may start at t0 + n/rate (an open-loop
 * schedule that does not slow down when the server does, up to the
 * concurrency limit); without it, every free slot sends at once.
 */
#include "driver.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scenario.h"

/* A response larger than this is cut (billingd's are a few hundred bytes). */
#define RESPONSE_MAX 65536
/* Longest a request may take before it counts as a transport error. */
#define REQUEST_TIMEOUT_MS 15000

typedef struct slot {
	CURL *easy;
	session_t session;
	http_request_t req;
	char url[320];
	char response[RESPONSE_MAX];
	size_t response_len;
	double sent_at;
	int busy;
} slot_t;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *userdata)
{
	slot_t *slot = userdata;
	size_t n = size * nmemb, room = RESPONSE_MAX - slot->response_len;
	memcpy(slot->response + slot->response_len, data, n < room ? n : room);
	slot->response_len += n < room ? n : room;
	return n;
}

static void start_request(CURLM *multi, slot_t *slot, const load_options_t *opts,
                          stats_t *stats)
{
	CURL *e = slot->easy;
	scenario_next(&slot->session, opts, &slot->req);
	snprintf(slot->url, sizeof(slot->url), "%s%s", opts->url, slot->req.path);
	curl_easy_setopt(e, CURLOPT_URL, slot->url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
	if (strcmp(slot->req.method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, slot->req.body ? slot->req.body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)slot->req.body_len);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		if (strcmp(slot->req.method, "GET") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, slot->req.method);
	}
	slot->response_len = 0;
	slot->sent_at = now_s();
	slot->busy = 1;
	stats->requests_sent++;
	curl_multi_add_handle(multi, e);
}

static void finish_request(CURLM *multi, slot_t *slot, CURLcode result,
                           const load_options_t *opts, stats_t *stats)
{
	long status = 0;
	stats_add_latency(stats, (now_s() - slot->sent_at) * 1000.0);
	curl_multi_remove_handle(multi, slot->easy);
	slot->busy = 0;
	if (result != CURLE_OK) {
		stats->transport_errors++;
		if (stats->transport_errors <= 3)
			fprintf(stderr, "billing-load: %s %s: %s\n", slot->req.method, slot->url,
			        curl_easy_strerror(result));
		scenario_abort(&slot->session);
		return;
	}
	curl_easy_getinfo(slot->easy, CURLINFO_RESPONSE_CODE, &status);
	scenario_judge(&slot->session, opts, status, slot->response, slot->response_len, stats);
}

static CURL *new_easy(slot_t *slot, struct curl_slist *headers)
{
	CURL *e = curl_easy_init();
	if (e == NULL)
		return NULL;
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, slot);
	curl_easy_setopt(e, CURLOPT_PRIVATE, slot);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)REQUEST_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_PROXY, ""); /* straight to billingd, whatever the env says */
	return e;
}

int driver_run(const load_options_t *opts, stats_t *stats, volatile int *stop)
{
	struct curl_slist *headers;
	slot_t *slots;
	CURLM *multi;
	double t0, end;
	unsigned int i, busy = 0;
	int running;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "billing-load: cannot initialise libcurl\n");
		return -1;
	}
	slots = calloc(opts->concurrency, sizeof(*slots));
	multi = curl_multi_init();
	headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (slots == NULL || multi == NULL || headers == NULL) {
		fprintf(stderr, "billing-load: out of memory\n");
		return -1;
	}
	curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)opts->concurrency);
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)opts->concurrency);
	for (i = 0; i < opts->concurrency; i++) {
		scenario_init(&slots[i].session, opts->seed, i);
		slots[i].easy = new_easy(&slots[i], headers);
		if (slots[i].easy == NULL) {
			fprintf(stderr, "billing-load: cannot create a libcurl handle\n");
			return -1;
		}
	}

	t0 = now_s();
	end = t0 + opts->duration_s;
	for (;;) {
		CURLMsg *msg;
		int left, timeout_ms = 50;
		double now = now_s();
		int starting = now < end && !*stop;

		for (i = 0; starting && i < opts->concurrency; i++) {
			double due;
			if (slots[i].busy)
				continue;
			due = opts->rate > 0 ? t0 + (double)stats->requests_sent / opts->rate : now;
			if (due > now) {
				int wait_ms = (int)((due - now) * 1000.0) + 1;
				timeout_ms = wait_ms < timeout_ms ? wait_ms : timeout_ms;
				break;
			}
			start_request(multi, &slots[i], opts, stats);
			busy++;
		}
		if (!starting && busy == 0)
			break;

		curl_multi_perform(multi, &running);
		while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
			slot_t *slot = NULL;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&slot);
			finish_request(multi, slot, msg->data.result, opts, stats);
			busy--;
		}
		if (busy == opts->concurrency || opts->rate > 0 || !starting)
			curl_multi_poll(multi, NULL, 0, timeout_ms, NULL);
	}
	stats->elapsed_s = now_s() - t0;

	for (i = 0; i < opts->concurrency; i++)
		curl_easy_cleanup(slots[i].easy);
	curl_multi_cleanup(multi);
	curl_slist_free_all(headers);
	free(slots);
	curl_global_cleanup();
	return 0;
}
