/*
 * bw_probe.cu -- how fast can the SMs READ device memory, and by which mechanism?  (bench_cuda_bw)
 *
 * The decode target of cuda_w4a16 is stated against the copy bandwidth (read + write), but a GEMV only
 * reads. This probe measures, in one run, on a buffer far larger than the 60 MB L2:
 *   copy16      the copy kernel of bench_cuda_w4a16 (the issue's ceiling), bytes read + written
 *   read16      every thread 8 independent 16-byte loads in flight, grid-stride (the plain-load ceiling)
 *   bulk S x B  a persistent grid (one or two blocks per SM), each block streaming its contiguous share
 *               of the window through a ring of S stages of B bytes filled by cp.async.bulk (one thread
 *               issues, an mbarrier per stage completes), 256 consumer threads reading every byte from
 *               shared memory -- the mechanism of the stream path, measured no faster than skinny and
 *               removed (git tag exp/cuda-stream-v7, bench/cuda/NOTES.md v7)
 * over windows of 121 MB and 242 MB (the Llama-3-70B down and gate_up int4 layers) and 61 MB (70B down at 2 bits) rotated over a 1 GiB
 * buffer (cold L2), so the per-launch start and drain are in the figure as they are in a layer's GEMV.
 * Every figure: median of 15 timed repetitions of 8 launches (cudaEvent), in TB/s (1e12 B/s).
 *
 * --patterns: the skinny path's own access pattern without its arithmetic (w4a16_skinny.cu's grid, 2 blocks per
 * SM of 8 warps, NW row tiles of 512-byte blocks per warp and chunk, a per-warp cp.async ring), on the two 70B MLP
 * layers' geometry, against read16 of the same window: what the pattern itself allows, and how three other
 * assignments of the same blocks compare -- chunks interleaved over the warps (a block reads 4 KB contiguous per
 * tile), the loads straight into registers (no ring), and a persistent grid whose warps take equal shares.
 * --mma-sub: whether mma.sync m16n8k16 bf16 takes subnormal A operands exactly (bf16 patterns with exponent field
 * 0 or 1 read as integers times 2^-133) against x scaled by 2^64, checked against double sums.
 *
 *   bench_cuda_bw [--quick | --patterns | --mma-sub]
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "../../src/kernels/cuda/w4a16_common.cuh" /* the kernels' mbarrier, bulk-copy and load helpers */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

/* copy_kernel.cu: the copy kernel of bench_cuda_w4a16 (the issue's ceiling) */
extern "C" int bench_copy_launch(const void *src, void *dst, size_t bytes, int sms, void *stream);

using cuda_w4a16::ldg_stream;

/* 8 loads in flight per thread; the xor of everything goes to out (never 0 in practice: keeps the loads). */
__global__ void probe_read16(const uint4 *__restrict__ src, size_t n, uint32_t *out) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t x = 0;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = ldg_stream(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < 8; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += stride) {
        uint4 v = ldg_stream(src + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) out[0] = x;
}

/* One block per share of the window; thread 0 of warp 8 (the 257th thread) is the producer. */
__global__ void __launch_bounds__(288) probe_bulk(const unsigned char *src, size_t bytes, int S, int B, uint32_t *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) uint64_t full[16], empty[16];
    const size_t units = bytes / B;
    const size_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) cuda_w4a16::mbar_init(cuda_w4a16::smem_addr(&full[s]), 1), cuda_w4a16::mbar_init(cuda_w4a16::smem_addr(&empty[s]), 8);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int warp = threadIdx.x >> 5;
    if (warp == 8) {
        if (threadIdx.x == 256) {
            for (size_t u = u0; u < u1; u++) {
                int s = (int)((u - u0) % S);
                uint32_t ph = (uint32_t)(((u - u0) / S) & 1);
                if (u - u0 >= (size_t)S) cuda_w4a16::mbar_wait(cuda_w4a16::smem_addr(&empty[s]), ph ^ 1);
                cuda_w4a16::mbar_expect_tx(cuda_w4a16::smem_addr(&full[s]), (uint32_t)B);
                cuda_w4a16::bulk_g2s(cuda_w4a16::smem_addr(ring + (size_t)s * B), src + u * B, (uint32_t)B, cuda_w4a16::smem_addr(&full[s]));
            }
        }
        return;
    }
    uint32_t x = 0;
    for (size_t u = u0; u < u1; u++) {
        int s = (int)((u - u0) % S);
        uint32_t ph = (uint32_t)(((u - u0) / S) & 1);
        cuda_w4a16::mbar_wait(cuda_w4a16::smem_addr(&full[s]), ph);
        const uint4 *p = reinterpret_cast<const uint4 *>(ring + (size_t)s * B);
        for (int i = threadIdx.x; i < B / 16; i += 256) {
            uint4 v = p[i];
            x ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        __syncwarp();
        if ((threadIdx.x & 31) == 0) cuda_w4a16::mbar_arrive(cuda_w4a16::smem_addr(&empty[s]));
    }
    if (x == 0x9e3779b9u) out[0] = x;
#else
    (void)src, (void)bytes, (void)S, (void)B, (void)out;
#endif
}


/*
 * The skinny pattern (--patterns). Layer geometry as w4a16_skinny.cu: row tile t's chunk c is the 512-byte block
 * w + (t KC + c) 32 (uint4 units); a block of 8 warps takes NW tiles and split blockIdx.y of gridDim.y of the chunks.
 * MODE 0: each warp a contiguous run of the block's chunks (the skinny path); 1: chunks interleaved over the warps;
 * 2: as 0, loads straight into registers, D chunks ahead (no ring); 3: persistent, each warp an equal share of the
 * flattened (tile group, chunk) space (gridDim.x blocks, gridDim.y 1).
 */
template <int NW, int STAGES, int MODE>
__global__ void __launch_bounds__(256, 2) probe_sk(const uint4 *__restrict__ w, int ntiles, int KC, uint32_t *out) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int first, count, step = 1;
    long long u0 = 0;
    if (MODE == 3) {
        const long long units = (long long)(ntiles / NW) * KC, nw = (long long)gridDim.x * 8, me = (long long)blockIdx.x * 8 + warp;
        u0 = units * me / nw;
        first = 0;
        count = (int)(units * (me + 1) / nw - u0);
    } else {
        const int S = gridDim.y, split = blockIdx.y;
        const int c_begin = (int)((long long)KC * split / S), c_end = (int)((long long)KC * (split + 1) / S);
        if (MODE == 1) {
            first = c_begin + warp;
            step = 8;
            count = first < c_end ? (c_end - first + 7) / 8 : 0;
        } else {
            first = c_begin + (c_end - c_begin) * warp / 8;
            count = c_begin + (c_end - c_begin) * (warp + 1) / 8 - first;
        }
    }
    auto src = [&](int it, int i) -> const uint4 * {
        if (MODE == 3) {
            const long long u = u0 + it;
            const long long tg = u / KC, c = u % KC;
            return w + ((tg * NW + i) * KC + c) * 32 + lane;
        }
        return w + (((long long)blockIdx.x * NW + i) * KC + first + (long long)it * step) * 32 + lane;
    };
    uint32_t x = 0;
    if (MODE == 2) {
        constexpr int D = STAGES;
        uint4 r[D][NW];
#pragma unroll
        for (int d = 0; d < D; d++)
#pragma unroll
            for (int i = 0; i < NW; i++) r[d][i] = d < count ? ldg_stream(src(d, i)) : make_uint4(0, 0, 0, 0);
        for (int it = 0; it < count; it += D) {
#pragma unroll
            for (int d = 0; d < D; d++) {
#pragma unroll
                for (int i = 0; i < NW; i++) {
                    x ^= r[d][i].x ^ r[d][i].y ^ r[d][i].z ^ r[d][i].w;
                    if (it + d + D < count) r[d][i] = ldg_stream(src(it + d + D, i));
                }
            }
        }
    } else {
        unsigned char *ring = smem + warp * STAGES * NW * 512;
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < count)
#pragma unroll
                for (int i = 0; i < NW; i++) cuda_w4a16::cp_async16(ring + (s * NW + i) * 512 + lane * 16, src(s, i), 16);
            cuda_w4a16::cp_async_commit();
        }
        for (int it = 0; it < count; it++) {
            cuda_w4a16::cp_async_wait<STAGES - 2>();
            __syncwarp();
            const int s = it + STAGES - 1;
            if (s < count)
#pragma unroll
                for (int i = 0; i < NW; i++) cuda_w4a16::cp_async16(ring + ((s % STAGES) * NW + i) * 512 + lane * 16, src(s, i), 16);
            cuda_w4a16::cp_async_commit();
#pragma unroll
            for (int i = 0; i < NW; i++) {
                const uint4 v = *reinterpret_cast<const uint4 *>(ring + ((it % STAGES) * NW + i) * 512 + lane * 16);
                x ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
        cuda_w4a16::cp_async_wait<0>();
    }
    if (x == 0x9e3779b9u) out[0] = x;
}

/* --mma-sub: one warp, mma.sync m16n8k16 bf16 with A patterns p (exponent field 0 or 1: the value p 2^-133) and B = x 2^64. */
__global__ void probe_mma_sub(const uint32_t *a, const uint32_t *b, float *d) {
    const int lane = threadIdx.x;
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[lane * 4]), "r"(a[lane * 4 + 1]), "r"(a[lane * 4 + 2]), "r"(a[lane * 4 + 3]), "r"(b[lane * 2]), "r"(b[lane * 2 + 1]));
    for (int e = 0; e < 4; e++) d[lane * 4 + e] = c[e];
}

static int cmpf(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* median time per launch in ms: 2 warm-up and `reps` timed repetitions of 8 launches, launch(w) starting one on window
 * w of nwin (the windows rotate through the buffer, so every launch reads cold memory) */
template <class Launch>
static double median_ms(int reps, size_t nwin, Launch launch) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float t[64];
    const int calls = 8;
    for (int r = -2; r < reps; r++) {
        CK(cudaEventRecord(e0));
        for (int c = 0; c < calls; c++) launch(((size_t)(r + 2) * calls + c) % nwin);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[r] = ms / calls;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmpf);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return t[reps / 2];
}

enum { K_COPY, K_READ, K_BULK };

/* median TB/s of kernel k over windows of `win` bytes rotating through the buffer */
static double measure(int k, unsigned char *buf, size_t total, size_t win, int sms, int S, int B, int bps, uint32_t *out,
                      int reps) {
    const double ms = median_ms(reps, total / (k == K_COPY ? 2 * win : win), [&](size_t w) {
        if (k == K_COPY) {
            unsigned char *s = buf + 2 * w * win;
            CK((cudaError_t)bench_copy_launch(s, s + win, win, sms, NULL));
        } else if (k == K_READ) {
            probe_read16<<<sms * 4, 512>>>((const uint4 *)(buf + w * win), win / 16, out);
        } else {
            probe_bulk<<<sms * bps, 288, (size_t)S * B>>>(buf + w * win, win, S, B, out);
        }
    });
    return (double)win * (k == K_COPY ? 2.0 : 1.0) / (ms * 1e-3) / 1e12;
}

typedef void (*sk_fn)(const uint4 *, int, int, uint32_t *);
struct SkCase {
    const char *name;
    sk_fn fn;
    int nw, stages, mode;
};

/* median TB/s of a skinny-pattern probe over a layer of ntiles x KC blocks (split: gridDim.y), windows rotating */
static double measure_sk(const SkCase &c, unsigned char *buf, size_t total, int ntiles, int KC, int split, int sms, uint32_t *out,
                         int reps) {
    const size_t win = (size_t)ntiles * KC * 512;
    const int smem = c.mode == 2 ? 0 : 8 * c.stages * c.nw * 512;
    CK(cudaFuncSetAttribute(c.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 grid = c.mode == 3 ? dim3(2 * sms) : dim3(ntiles / c.nw, split);
    const double ms = median_ms(reps, total / win, [&](size_t w) {
        c.fn<<<grid, 256, smem>>>((const uint4 *)(buf + w * win), ntiles, KC, out);
    });
    return (double)win / (ms * 1e-3) / 1e12;
}

static int run_patterns(unsigned char *buf, size_t total, int sms, uint32_t *out) {
    const SkCase cases[] = {
        {"skinny: contiguous runs, NW 4, ring 4", probe_sk<4, 4, 0>, 4, 4, 0},
        {"skinny: contiguous runs, NW 4, ring 6", probe_sk<4, 6, 0>, 4, 6, 0},
        {"skinny: contiguous runs, NW 2, ring 8", probe_sk<2, 8, 0>, 2, 8, 0},
        {"interleaved chunks, NW 4, ring 4", probe_sk<4, 4, 1>, 4, 4, 1},
        {"registers, NW 4, 3 chunks ahead", probe_sk<4, 3, 2>, 4, 3, 2},
        {"registers, NW 4, 2 chunks ahead", probe_sk<4, 2, 2>, 4, 2, 2},
        {"persistent equal shares, NW 4, ring 4", probe_sk<4, 4, 3>, 4, 4, 3},
    };
    /* 70B gate_up (3584 tiles x 128 chunks, one split: 896 blocks) and 70B down (512 x 448, split 2: the skinny rule) */
    const int geo[2][3] = {{3584, 128, 1}, {512, 448, 2}};
    const char *gname[2] = {"70B.gate_up (K 8192, N 57344)", "70B.down (K 28672, N 8192)"};
    for (int gi = 0; gi < 2; gi++) {
        const size_t win = (size_t)geo[gi][0] * geo[gi][1] * 512;
        printf("%s, %.1f MB:\n", gname[gi], win / 1e6);
        printf("  read16 (same window)                     %.3f TB/s\n", measure(K_READ, buf, total, win, sms, 0, 0, 0, out, 15));
        for (const SkCase &c : cases)
            printf("  %-40s %.3f TB/s\n", c.name, measure_sk(c, buf, total, geo[gi][0], geo[gi][1], geo[gi][2], sms, out, 15));
    }
    return 0;
}

static uint16_t bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* the values below are exact in bf16 */
}

/* --mma-sub: 4 trials of random A patterns 0..255 (p 2^-133) and B = (j / 128) 2^64, |j| <= 255 */
static int run_mma_sub() {
    uint32_t ha[128], hb[64];
    float hd[128];
    uint32_t *da, *db;
    float *dd;
    CK(cudaMalloc(&da, sizeof ha));
    CK(cudaMalloc(&db, sizeof hb));
    CK(cudaMalloc(&dd, sizeof hd));
    uint32_t rng = 12345u;
    auto next = [&]() { rng = rng * 1664525u + 1013904223u; return rng >> 8; };
    double worst = 0.0;
    int zeros = 0, cells = 0;
    for (int trial = 0; trial < 4; trial++) {
        int pa[16][16], jb[16][8];
        for (int i = 0; i < 16; i++)
            for (int k = 0; k < 16; k++) pa[i][k] = trial == 3 ? (int)(next() % 16) : (int)(next() % 256); /* trial 3: nibbles only */
        for (int k = 0; k < 16; k++)
            for (int n = 0; n < 8; n++) jb[k][n] = (int)(next() % 511) - 255;
        auto A = [&](int i, int k) { return (uint32_t)pa[i][k]; };
        auto B = [&](int k, int n) { return (uint32_t)bf16_bits(ldexpf((float)jb[k][n] / 128.0f, 64)); };
        for (int l = 0; l < 32; l++) {
            const int g = l >> 2, t = l & 3;
            ha[l * 4 + 0] = A(g, 2 * t) | A(g, 2 * t + 1) << 16;
            ha[l * 4 + 1] = A(g + 8, 2 * t) | A(g + 8, 2 * t + 1) << 16;
            ha[l * 4 + 2] = A(g, 2 * t + 8) | A(g, 2 * t + 9) << 16;
            ha[l * 4 + 3] = A(g + 8, 2 * t + 8) | A(g + 8, 2 * t + 9) << 16;
            hb[l * 2 + 0] = B(2 * t, g) | B(2 * t + 1, g) << 16;
            hb[l * 2 + 1] = B(2 * t + 8, g) | B(2 * t + 9, g) << 16;
        }
        CK(cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice));
        probe_mma_sub<<<1, 32>>>(da, db, dd);
        CK(cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost));
        for (int l = 0; l < 32; l++)
            for (int e = 0; e < 4; e++) {
                const int i = (l >> 2) + 8 * (e >> 1), n = 2 * (l & 3) + (e & 1);
                double want = 0.0;
                for (int k = 0; k < 16; k++) want += (double)pa[i][k] * ldexp((double)jb[k][n] / 128.0, 64 - 133);
                const double got = hd[l * 4 + e];
                if (got == 0.0 && want != 0.0) zeros++;
                const double rel = want != 0.0 ? fabs(got - want) / fabs(want) : fabs(got);
                if (rel > worst) worst = rel;
                cells++;
            }
    }
    printf("mma.sync m16n8k16 bf16, subnormal A (p 2^-133) x B (j/128 2^64): %d cells, %d flushed to zero, worst relative error %.3g (%s)\n",
           cells, zeros, worst, worst <= 1e-6 ? "taken exactly" : "NOT exact");
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dd));
    return 0;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const int patterns = argc > 1 && !strcmp(argv[1], "--patterns"), mma_sub = argc > 1 && !strcmp(argv[1], "--mma-sub");
    int sms = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, dev));
    printf("# bench_cuda_bw: %s, %d SMs; TB/s = 1e12 B/s; median of 15 x 8 launches\n", pr.name, sms);
    const size_t total = (size_t)1 << 30;
    unsigned char *buf;
    uint32_t *out;
    CK(cudaMalloc(&buf, total));
    CK(cudaMalloc(&out, 64));
    CK(cudaMemset(buf, 0x5a, total));
    CK(cudaFuncSetAttribute(probe_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    if (mma_sub) return run_mma_sub();
    if (patterns) return run_patterns(buf, total, sms, out);
    /* 70B down, gate_up int4 weights (K * N / 2), then 70B down at 2 bits (K * N / 4: the ceiling at that size, where
     * the fixed launch and ramp weigh more; bench/cuda/NOTES.md v30) */
    const size_t wins[3] = {121634816, 243269632, 60817408};
    const int reps = 15;
    for (int wi = 0; wi < 3; wi++) {
        size_t win = wins[wi];
        printf("window %.1f MB:\n", win / 1e6);
        printf("  copy16 (read + write)            %.3f TB/s\n", measure(K_COPY, buf, total, win, sms, 0, 0, 0, out, reps));
        printf("  read16                           %.3f TB/s\n", measure(K_READ, buf, total, win, sms, 0, 0, 0, out, reps));
        const int cfg[][3] = {{4, 16384, 1}, {8, 16384, 1}, {4, 32768, 1}, {6, 32768, 1}, {12, 16384, 1}, {8, 8192, 1},
                              {16, 8192, 1}, {4, 16384, 2}, {6, 16384, 2}, {3, 32768, 2}, {8, 4096, 2}, {16, 4096, 1}};
        int nc = quick ? 4 : (int)(sizeof cfg / sizeof cfg[0]);
        for (int c = 0; c < nc; c++) {
            int S = cfg[c][0], B = cfg[c][1], bps = cfg[c][2];
            if ((size_t)S * B * bps > 220 * 1024) continue;
            printf("  bulk %2d stages x %5d B, %d/SM    %.3f TB/s  (%d KB in flight per SM)\n", S, B, bps,
                   measure(K_BULK, buf, total, win, sms, S, B, bps, out, reps), S * B * bps / 1024);
        }
    }
    CK(cudaFree(buf));
    CK(cudaFree(out));
    return 0;
}
