/* status.c -- status strings, the thread-local last-error message, small helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local char tls_error[1024];

const char *mpl_status_string(mpl_status s) {
    switch (s) {
    case MPL_OK: return "ok";
    case MPL_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MPL_ERR_UNSUPPORTED: return "unsupported";
    case MPL_ERR_NO_HARDWARE: return "required hardware not present";
    case MPL_ERR_OUT_OF_MEMORY: return "out of memory";
    case MPL_ERR_OVERFLOW: return "size overflow";
    case MPL_ERR_IO: return "I/O error";
    case MPL_ERR_FORMAT: return "malformed data";
    case MPL_ERR_CUDA: return "CUDA error";
    case MPL_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *mpl_last_error(void) { return tls_error; }
const char *mpl_version(void) { return MPL_VERSION_STRING; }
int mpl_version_number(void) { return MPL_VERSION_NUMBER; }

mpl_status mpl_set_error(mpl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
    return st;
}

void mpl_clear_error(void) { tls_error[0] = '\0'; }

bool mpl_size_mul3(int64_t a, int64_t b, int64_t c, size_t *out) {
    if (a < 0 || b < 0 || c < 0) return false;
    size_t t;
    if (__builtin_mul_overflow((uint64_t)a, (uint64_t)b, &t)) return false;
    return !__builtin_mul_overflow(t, (uint64_t)c, out);
}

mpl_reason mpl_refuse(char *msg, size_t cap, mpl_reason r, const char *fmt, ...) {
    if (msg && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return r;
}

const char *mpl_reason_name(mpl_reason r) {
    switch (r) {
    case MPL_REASON_OK: return "OK";
    case MPL_REASON_ISA_MISSING: return "ISA_MISSING";
    case MPL_REASON_GROUP_SIZE: return "GROUP_SIZE";
    case MPL_REASON_SHAPE: return "SHAPE";
    case MPL_REASON_ACT_TYPE: return "ACT_TYPE";
    case MPL_REASON_WEIGHT_TYPE: return "WEIGHT_TYPE";
    case MPL_REASON_ZERO_POINTS: return "ZERO_POINTS";
    case MPL_REASON_ACT_ORDER: return "ACT_ORDER";
    case MPL_REASON_DISABLED: return "DISABLED";
    case MPL_REASON_DEVICE: return "DEVICE";
    case MPL_REASON_MODE: return "MODE";
    case MPL_REASON_NOT_BUILT: return "NOT_BUILT";
    }
    return "UNKNOWN";
}

void *mpl_aligned_alloc(size_t bytes) {
    size_t rounded;
    if (mpl_add_overflow_sz(bytes, 63, &rounded)) return NULL;
    rounded &= ~(size_t)63;
    if (rounded == 0) rounded = 64;
    return aligned_alloc(64, rounded);
}

void mpl_aligned_free(void *p) { free(p); }
