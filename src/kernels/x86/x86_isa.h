/*
 * x86_isa.h -- the x86 ISA levels of docs/naming.md as masks of MPL_ISA_* bits. Each level is a
 * folder under src/kernels/x86/ compiled with exactly these features (sources.cmake), and every
 * kernel or path that runs a folder's code requires the whole level (tools/check_isa.sh checks
 * that the objects hold no instruction beyond it).
 */
#ifndef MPL_X86_ISA_H
#define MPL_X86_ISA_H

#include "mplinear.h"

/* avx2/: -mavx2 -mfma -mf16c */
#define MPL_X86_LEVEL_AVX2 (MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C)
/* avxvnni/: avx2 + -mavxvnni */
#define MPL_X86_LEVEL_AVXVNNI (MPL_X86_LEVEL_AVX2 | MPL_ISA_AVX_VNNI)
/* avx512/: avx2 + -mavx512f -mavx512bw -mavx512vl -mavx512dq */
#define MPL_X86_LEVEL_AVX512 \
    (MPL_X86_LEVEL_AVX2 | MPL_ISA_AVX512F | MPL_ISA_AVX512BW | MPL_ISA_AVX512VL | MPL_ISA_AVX512DQ)
/* avx512vnni/: avx512 + -mavx512vnni */
#define MPL_X86_LEVEL_AVX512VNNI (MPL_X86_LEVEL_AVX512 | MPL_ISA_AVX512_VNNI)
/* avx512bf16/: avx512 + -mavx512bf16 */
#define MPL_X86_LEVEL_AVX512BF16 (MPL_X86_LEVEL_AVX512 | MPL_ISA_AVX512_BF16)
/* amx/: avx512 + -mavx512vnni -mavx512bf16 -mamx-tile -mamx-bf16 -mamx-int8. The platform reports
 * the AMX bits only when the OS granted this process tile state (src/platform/cpu.c). */
#define MPL_X86_LEVEL_AMX                                                                                   \
    (MPL_X86_LEVEL_AVX512 | MPL_ISA_AVX512_VNNI | MPL_ISA_AVX512_BF16 | MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | \
     MPL_ISA_AMX_INT8)

#endif
