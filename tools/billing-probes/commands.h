/*
 * commands.h -- the commands main() dispatches to, one file each.
 */
#ifndef BP_COMMANDS_H
#define BP_COMMANDS_H

#include "cli.h"

int bp_cmd_list(const bp_options_t *opt);
int bp_cmd_check(const bp_options_t *opt);
int bp_cmd_doctor(const bp_options_t *opt);
int bp_cmd_trace(const bp_options_t *opt);
int bp_cmd_top(const bp_options_t *opt);
int bp_cmd_slow(const bp_options_t *opt);

#endif /* BP_COMMANDS_H */
