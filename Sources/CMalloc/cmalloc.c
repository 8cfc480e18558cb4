#include <stdlib.h>
#include "cmalloc.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void cm_tune(void) {
#if defined(__GLIBC__)
    mallopt(M_ARENA_MAX, 4);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 8 << 20);
#endif
}

int cm_trim(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}
