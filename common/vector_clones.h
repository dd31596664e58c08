#pragma once
// SB_VECTOR_CLONES before a function whose loops vectorise: GCC compiles it once per x86-64
// vector ISA (AVX-512F, AVX2, the baseline) and the CPU's features pick one when the program
// loads (target_clones dispatches on the features named, not on the CPU model). The baseline
// build alone vectorised these loops 2 doubles or 4 floats wide. Elsewhere, one build.

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define SB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SB_VECTOR_CLONES
#endif
