/* placeholder: replaced by the trace launcher in the next commit */
#include "commands.h"

int bp_cmd_trace(const bp_options_t *opt)
{
	(void)opt;
	return bp_usage_error("trace: not built yet");
}
