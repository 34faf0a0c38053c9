/*
 * command_line.h -- billing-exporter's options: one table (command_line.c)
 * drives their parsing, --help and docs/exporter.md's option table
 * (--print-option-table).
 */
#ifndef BX_COMMAND_LINE_H
#define BX_COMMAND_LINE_H

#include <stddef.h>

#include "http.h"

/* --pid, --binary and --stats-dir: at most so many of each. */
#define BX_MAX_TARGET_ARGS 1024

typedef struct bx_listen {
	char addr[64]; /* without brackets */
	int port;
} bx_listen_t;

typedef struct bx_opts {
	const char *pids[BX_MAX_TARGET_ARGS], *binaries[BX_MAX_TARGET_ARGS], *stats_dirs[BX_MAX_TARGET_ARGS];
	size_t pid_count, binary_count, stats_dir_count;
	int source; /* BX_SOURCE_*: stats_source.h */
	unsigned groups;
	bx_listen_t listen;
	int listen_given, once, format, bpf_stats, verbose;
	unsigned interval; /* seconds; 0: serve, print nothing */
	const char *web_config;
	int listen_insecure;
	long only_uid; /* -1: every user */
	const char *cgroup;
	bx_http_limits_t limits;
	unsigned idle_detach_s; /* --idle-detach */
	int print_metric_table, check_table;
} bx_opts_t;

/* Fills o from argv: OPT_RUN (o says whether to print the metric table
 * instead), OPT_HELP or OPT_TABLE after printing --help or the option
 * table, OPT_REFUSED after one line on stderr (option_table.h). */
int bx_command_line_parse(bx_opts_t *o, int argc, char **argv);

#endif /* BX_COMMAND_LINE_H */
