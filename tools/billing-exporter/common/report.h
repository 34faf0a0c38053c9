/*
 * report.h -- the one way billing-exporter tells its operator something:
 * one line on stderr, "billing-exporter: WHAT", every byte of it through
 * the tools' terminal escaper.  Every layer reports through it and it
 * calls none of them (the bottom of the exporter's layers).
 */
#ifndef BX_REPORT_H
#define BX_REPORT_H

/* "billing-exporter: WHAT" on stderr, one line. */
void bx_error(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif /* BX_REPORT_H */
