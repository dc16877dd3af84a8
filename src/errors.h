/* errors.h - the thread-local detailed message behind cudadent_get_last_error_message(). */
#ifndef CUDADENT_ERRORS_H
#define CUDADENT_ERRORS_H

#include "cudadent.h"

/* Record status with a printf-style message for this thread; returns status. */
cudadent_status_t cudadent_fail(cudadent_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Forget the message of an earlier failure (called at the start of every entry point). */
void cudadent_clear_error(void);

#endif
