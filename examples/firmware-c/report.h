#ifndef REPORT_H
#define REPORT_H

/* Writes one line (a newline is added): %s, %u (unsigned), %U (uint64_t),
 * %x (unsigned, as hex), %d (int). */
void say(const char *fmt, ...);

#endif
