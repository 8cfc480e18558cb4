#ifndef COUNTERSIGN_CMALLOC_H
#define COUNTERSIGN_CMALLOC_H

/// Sets glibc's allocator for a long-running server: at most 4 arenas (not 8 per core, each keeping its own freed
/// pages), blocks of 1 MiB and more mapped apart so freeing them gives them back at once, and the heap's top trimmed
/// once 8 MiB of it is free. Call once, before the first threads start; does nothing on other C libraries.
void cm_tune(void);

/// Gives freed memory back to the system (glibc's `malloc_trim(0)`, every arena, not just the heap's top); returns 1
/// when some was given back. Does nothing and returns 0 on other C libraries.
int cm_trim(void);

#endif
