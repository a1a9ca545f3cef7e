/* cpu.c -- CPU feature detection (CPUID + XGETBV, once), the AMX tile-state request, MPL_MAX_ISA cap,
 * platform info. */
#define _DEFAULT_SOURCE /* syscall() for arch_prctl */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/internal.h"
#include "platform.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define MPL_X86 1
#endif

static mpl_platform g_detected;
static uint32_t g_isa_cpuid;
static char g_model[64];
static char g_cap[16];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const mpl_platform *_Atomic g_override;

#ifdef MPL_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static uint32_t detect_isa(void) {
    uint32_t isa = 0;
#ifdef MPL_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (c & (1u << 20)) isa |= MPL_ISA_SSE42;
    int osxsave = (c >> 27) & 1;
    int fma = (c >> 12) & 1, f16c = (c >> 29) & 1, avx = (c >> 28) & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    int os_avx = (xcr0 & 0x6) == 0x6;
    int os_avx512 = (xcr0 & 0xe6) == 0xe6;
    int os_amx = (xcr0 & 0x60000) == 0x60000;
    if (!(avx && os_avx)) return isa;
    if (fma) isa |= MPL_ISA_FMA;
    if (f16c) isa |= MPL_ISA_F16C;
    unsigned maxl = __get_cpuid_max(0, NULL);
    if (maxl < 7) return isa;
    __cpuid_count(7, 0, a, b, c, d);
    if (b & (1u << 5)) isa |= MPL_ISA_AVX2;
    if (os_avx512) {
        if (b & (1u << 16)) isa |= MPL_ISA_AVX512F;
        if (b & (1u << 17)) isa |= MPL_ISA_AVX512DQ;
        if (b & (1u << 30)) isa |= MPL_ISA_AVX512BW;
        if (b & (1u << 31)) isa |= MPL_ISA_AVX512VL;
        if (c & (1u << 11)) isa |= MPL_ISA_AVX512_VNNI;
        if (d & (1u << 23)) isa |= MPL_ISA_AVX512_FP16;
    }
    if (os_amx) {
        if (d & (1u << 24)) isa |= MPL_ISA_AMX_TILE;
        if (d & (1u << 22)) isa |= MPL_ISA_AMX_BF16;
        if (d & (1u << 25)) isa |= MPL_ISA_AMX_INT8;
    }
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    if (a1 & (1u << 4)) isa |= MPL_ISA_AVX_VNNI;
    if (os_avx512 && (a1 & (1u << 5))) isa |= MPL_ISA_AVX512_BF16;
    if (!(isa & MPL_ISA_AVX512F)) isa &= ~(MPL_ISA_AVX512_BF16 | MPL_ISA_AVX512_VNNI | MPL_ISA_AVX512_FP16);
#endif
    return isa;
}

static mpl_cpu_vendor detect_vendor(void) {
#ifdef MPL_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return MPL_CPU_VENDOR_OTHER;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = 0;
    if (!strcmp(v, "GenuineIntel")) return MPL_CPU_VENDOR_INTEL;
    if (!strcmp(v, "AuthenticAMD")) return MPL_CPU_VENDOR_AMD;
#endif
    return MPL_CPU_VENDOR_OTHER;
}

/* CPUID leaf 1's family, the extended family added where the base family is 0xF (as AMD and Intel define it). */
static int detect_family(void) {
#ifdef MPL_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int base = (int)((a >> 8) & 0xf);
    return base == 0xf ? base + (int)((a >> 20) & 0xff) : base;
#else
    return 0;
#endif
}

static void detect_model(void) {
    strcpy(g_model, "unknown");
#ifdef MPL_X86
    unsigned r[12];
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        char buf[49];
        memcpy(buf, r, 48);
        buf[48] = 0;
        const char *p = buf;
        while (*p == ' ') p++;
        snprintf(g_model, sizeof g_model, "%s", p);
    }
#endif
}

/* MPL_MAX_ISA caps features: scalar < sse4.2 < avx2 < avx_vnni < avx512 (F/BW/VL/DQ + VNNI) < avx512_bf16;
 * any other value (or none) leaves every feature, AMX included. */
static uint32_t apply_cap(uint32_t isa, const char *cap) {
    if (!cap || !*cap) return isa;
    const uint32_t avx2_set = MPL_ISA_SSE42 | MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C;
    const uint32_t avx_vnni = MPL_ISA_AVX_VNNI;
    const uint32_t avx512_set = avx2_set | avx_vnni | MPL_ISA_AVX512F | MPL_ISA_AVX512BW | MPL_ISA_AVX512VL |
                                MPL_ISA_AVX512DQ | MPL_ISA_AVX512_VNNI;
    if (!strcasecmp(cap, "scalar") || !strcasecmp(cap, "none")) return 0;
    if (!strcasecmp(cap, "sse4.2") || !strcasecmp(cap, "sse42")) return isa & MPL_ISA_SSE42;
    if (!strcasecmp(cap, "avx2")) return isa & avx2_set;
    if (!strcasecmp(cap, "avx_vnni") || !strcasecmp(cap, "avx-vnni")) return isa & (avx2_set | avx_vnni);
    if (!strcasecmp(cap, "avx512")) return isa & avx512_set;
    if (!strcasecmp(cap, "avx512_bf16") || !strcasecmp(cap, "avx512bf16"))
        return isa & (avx512_set | MPL_ISA_AVX512_BF16);
    return isa; /* unknown value: no cap (mpl_platform_get reports it) */
}

/*
 * Linux hands a process AMX tile state only after it asks (arch_prctl ARCH_REQ_XCOMP_PERM, once per
 * process; the grant covers every thread). Asked here, once, when CPUID and XCR0 report AMX; when
 * refused, the AMX bits leave the usable set, so no kernel or path that needs them is chosen.
 */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
static bool amx_granted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

static void detect(void) {
    g_isa_cpuid = detect_isa();
    g_detected.cpu_vendor = detect_vendor();
    g_detected.cpu_family = detect_family();
    detect_model();
    const char *cap = mpl_env_max_isa();
    snprintf(g_cap, sizeof g_cap, "%s", cap ? cap : "");
    g_detected.isa = apply_cap(g_isa_cpuid, cap);
    const uint32_t amx = MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8;
    if ((g_detected.isa & amx) && !amx_granted()) g_detected.isa &= ~amx;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    g_detected.cpu_threads = nc > 0 ? (int)nc : 1;
    /* CUDA fields stay 0 here: querying devices initialises the CUDA runtime (tens of ms), which a
     * CPU-only user must not pay. The chooser fills them (mpl_platform_for) when CUDA is asked for. */
}

const mpl_platform *mpl_platform_current(void) {
    const mpl_platform *o = g_override;
    if (o) return o;
    pthread_once(&g_once, detect);
    return &g_detected;
}

void mpl_platform_override(const mpl_platform *p) { g_override = p; }

static const struct {
    uint32_t bit;
    const char *name;
} isa_names[] = {
    {MPL_ISA_SSE42, "sse4.2"},       {MPL_ISA_AVX2, "avx2"},           {MPL_ISA_FMA, "fma"},
    {MPL_ISA_F16C, "f16c"},          {MPL_ISA_AVX_VNNI, "avx_vnni"},   {MPL_ISA_AVX512F, "avx512f"},
    {MPL_ISA_AVX512BW, "avx512bw"},  {MPL_ISA_AVX512VL, "avx512vl"},   {MPL_ISA_AVX512DQ, "avx512dq"},
    {MPL_ISA_AVX512_VNNI, "avx512_vnni"}, {MPL_ISA_AVX512_BF16, "avx512_bf16"}, {MPL_ISA_AVX512_FP16, "avx512_fp16"},
    {MPL_ISA_AMX_TILE, "amx_tile"},  {MPL_ISA_AMX_BF16, "amx_bf16"},   {MPL_ISA_AMX_INT8, "amx_int8"},
};

void mpl_isa_string(uint32_t isa, char *buf, size_t cap) {
    size_t used = 0;
    if (!buf || !cap) return;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++) {
        if (!(isa & isa_names[i].bit)) continue;
        int w = snprintf(buf + used, cap - used, "%s%s", used ? " " : "", isa_names[i].name);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
    if (used == 0) snprintf(buf, cap, "(scalar only)");
}

mpl_status mpl_platform_get(mpl_platform_info *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_platform_get: out is NULL");
    memset(out, 0, sizeof *out);
    const mpl_platform *p = mpl_platform_current();
    pthread_once(&g_once, detect);
    snprintf(out->cpu_model, sizeof out->cpu_model, "%s", g_model);
    out->isa = p->isa;
    out->isa_cpuid = g_isa_cpuid;
    out->cpu_threads = p->cpu_threads;
    snprintf(out->isa_cap, sizeof out->isa_cap, "%s", g_cap);
    out->cuda_built = mpl_cuda_query(&out->cuda_devices, &out->cuda_cc, out->cuda_name, sizeof out->cuda_name,
                                     out->cuda_note, sizeof out->cuda_note);
    return MPL_OK;
}

void mpl_platform_for(const mpl_options *opt, mpl_platform *out) {
    const mpl_platform *o = g_override;
    *out = *mpl_platform_current();
    if (opt && opt->device == MPL_DEVICE_VULKAN) {
        if (!o) mpl_vulkan_platform(opt, out); /* a test override's own Vulkan fields are kept */
        return;
    }
    if (!opt || opt->device != MPL_DEVICE_CUDA) return;
    if (!o) out->cuda_devices = mpl_cuda_devices(out->cuda_cc_all, MPL_CUDA_MAX_DEVICES);
    int dev = opt->cuda_device;
    out->cuda_device = dev;
    out->cuda_cc = dev >= 0 && dev < out->cuda_devices && dev < MPL_CUDA_MAX_DEVICES ? out->cuda_cc_all[dev] : 0;
}
