#ifndef COUNTERSIGN_FUZZ_DRIVER_H
#define COUNTERSIGN_FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry point for programs that have their own main. Weak, so normal builds link without libFuzzer;
/// scripts/fuzz links libclang_rt.fuzzer_no_main and forces the symbol in.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size)) __attribute__((weak));

/// Runs libFuzzer with `callback`, or returns -1 when this binary was built without it.
int countersign_run_fuzzer(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
#endif
