/*
 * settings_examples.c -- the stats writer's settings, read from this
 * process's environment as a service reads them when the library loads
 * (lib/stats_settings.c): their lines on stderr, then "on" or "off" on
 * stdout.  No segment is made and no directory touched, so the docs'
 * examples run as written anywhere (test_settings_examples.py).
 */
#include <stdio.h>

#include "stats_settings.h"

int main(void)
{
	bs_settings_t s;
	bs_settings_read(&s);
	puts(s.off ? "off" : "on");
	return 0;
}
