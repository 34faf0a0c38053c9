#include "cli.h"
int bp_cmd_doctor(const bp_options_t *opt){(void)opt;return 0;}
