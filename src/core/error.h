/* Error reporting.
 * Every user-visible failure is reported exactly once, by the code that
 * detects it, through lc_error(); callers above only propagate the failure
 * (non-zero / NULL). The handler is process-wide (mlx_set_error_handler) and
 * guarded by a lock; the last message is also kept per thread so that
 * transforms can attach context. */
#ifndef LC_ERROR_H
#define LC_ERROR_H

#include <stdarg.h>

/* Formats a message, remembers it for this thread and hands it to the
 * handler. Always returns 1 so callers can write `return lc_error(...)`. */
int lc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last message reported on this thread ("" if none). */
const char *lc_last_error(void);

/* How many errors this thread has reported so far (muted ones included). */
unsigned long lc_error_count(void);

/* While > 0 on this thread, messages are recorded but not handed to the
 * handler (used where a failure is expected and handled internally). */
void lc_error_mute(int delta);

#endif
