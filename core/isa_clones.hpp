// Function multi-versioning for the harness's own hot loops (the reference's kernels, the fills).
#pragma once

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
/// One clone per ISA level, chosen at load time (GCC function multi-versioning, the target_clones
/// attribute): the code stays portable (the build targets plain x86-64) yet runs AVX-512 /
/// AVX2+FMA where the CPU has them. Put it on a function that holds the loop, not on one that
/// opens an OpenMP region (the outlined region would not inherit the clone's ISA).
#define SDPA_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SDPA_ISA_CLONES
#endif
