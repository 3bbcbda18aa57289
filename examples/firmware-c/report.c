/* A small formatter for the firmware's lines, written through semihosting:
 * %s (string), %u (unsigned), %U (uint64_t), %x (unsigned, hex), %d (int).
 * A few hundred bytes, where newlib's printf would add several KB. */
#include <stdarg.h>
#include <stdint.h>

#include "board.h"
#include "report.h"

static char line[160];
static unsigned used;

static void flush(void)
{
    line[used] = 0;
    board_write(line);
    used = 0;
}

static void put(char c)
{
    if (used == sizeof line - 1) {
        flush();
    }
    line[used++] = c;
}

static void put_u64(uint64_t v, unsigned base)
{
    char digits[20];
    unsigned n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        digits[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v != 0);
    while (n > 0) {
        put(digits[--n]);
    }
}

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put(*p);
            continue;
        }
        switch (*++p) {
        case 's':
            for (const char *s = va_arg(ap, const char *); *s; s++) {
                put(*s);
            }
            break;
        case 'u':
            put_u64(va_arg(ap, unsigned), 10);
            break;
        case 'U':
            put_u64(va_arg(ap, uint64_t), 10);
            break;
        case 'x':
            put('0');
            put('x');
            put_u64(va_arg(ap, unsigned), 16);
            break;
        case 'd': {
            int v = va_arg(ap, int);
            if (v < 0) {
                put('-');
            }
            put_u64(v < 0 ? 0u - (unsigned)v : (unsigned)v, 10);
            break;
        }
        default:
            put('%');
            if (*p == 0) {
                p--;
            } else {
                put(*p);
            }
        }
    }
    va_end(ap);
    put('\n');
    flush();
}
