/*
 * w4a8_gemm.c -- the amx path of x86_avx512vnni_w4a8 (amx level): AMX-INT8 prefill
 * (tdpbssd: s8 x times s8 weight values u - z unpacked from the packed codes of any width,
 * int32 tiles; 8-bit: u - 128 and a zero-point term in the epilogue), for many rows on CPUs
 * with AMX.
 *
 * Tiles: 0-3 C (32 rows x 32 columns as 2x2 tiles of 16x16 int32), 4-5 A
 * (16 rows of qx x kb bytes), 6-7 B (kb/4 rows x 16 columns x 4 bytes, the
 * VNNI order of the packed layout, codes unpacked to u - z). kb = 64 (the tile
 * maximum) when the group length allows, else 32.
 *
 * Blocking: a 2-panel column block's codes are unpacked once per chunk of
 * rows into a B scratch (k*32 bytes, L2-resident). K is then walked in
 * chunks of K_CHUNK positions whose B slice (16 KiB) stays in L1 while every
 * 32-row block of the row chunk passes over it; a group longer than a chunk
 * parks its partial C tiles in an int32 scratch between chunks. At each
 * group end the C tiles (exact isum) go to memory and AVX-512 adds
 * scale * (float)isum into float accumulators: the same float operations, in
 * the same order, as the VNNI paths (which reach the same isum as
 * sum q*u - z*sum q).
 */
#include "../common/w4a8_zmm.inc"
#include "amx_tile.h"

/* Rows of qx per chunk: ~1 MiB of int8 stays in L2 beside the B scratch (each chunk re-unpacks the
 * weights, so chunks should be tall); at most MPL_X86_W4A8_AMX_ROWS (x86_w4a8_driver.h). */
#define QX_CHUNK_BYTES (1024 * 1024)
/* K positions per inner chunk: the 2-panel B slice (K_CHUNK * 32 bytes = 16 KiB) stays in L1 across row blocks. */
#define K_CHUNK 512

/*
 * Unpack one panel's codes into B-tile rows of signed bytes: u - z for 2-, 3- and 4-bit weights (in
 * [-15, 15]), so the tile products give isum = sum q * (u - z) directly (tdpbssd), with no z * sum(q)
 * correction per output: the subtraction is paid once per weight and column block, not once per output
 * row. 8-bit codes u - z span [-255, 255], more than a byte: they go in as u - 128 (in [-128, 127]; the
 * bias of uint8b128, so its products are again isum), and uint8's zero points are applied in the
 * epilogue, isum = C + (128 - z) * sum(q) (tile_epilogue). Row r of the scratch holds K positions
 * 4r..4r+3 of the 16 columns (VNNI order): plane pl of step st goes to row (st * kstep + 4 * pl) / 4.
 */
static inline __attribute__((always_inline)) void unpack_panel_w(const mpl_x86_w4a8_layout *p, int64_t pan,
                                                                 uint8_t *dst, const int BITS) {
    const uint8_t *src = mpl_x86_w4a8_panel(p, pan);
    const int KS = mpl_x86_w4a8_kstep(BITS), NP = KS / 4, SB = mpl_x86_w4a8_step_bytes(BITS);
    const int64_t ns = p->group_len / KS;
    for (int64_t g = 0; g < p->groups; g++) {
        /* Each column's zero point (or 128 for 8-bit, or the bias) in the 4 bytes of its 32-bit lane. */
        const __m512i z = BITS == 8    ? _mm512_set1_epi8((char)0x80)
                          : p->zeros ? _mm512_mullo_epi32(w4a8_zeros16(p, pan, g), _mm512_set1_epi32(0x01010101))
                                     : _mm512_set1_epi8((char)p->zbias);
        for (int64_t st = g * ns; st < (g + 1) * ns; st++) {
#pragma GCC unroll 8
            for (int pl = 0; pl < NP; pl++)
                _mm512_store_si512((void *)(dst + (st * KS + 4 * pl) * 16),
                                   _mm512_sub_epi8(w4a8_plane16(src + st * SB, BITS, pl), z));
        }
    }
}

static void unpack_panel(const mpl_x86_w4a8_layout *p, int64_t pan, uint8_t *dst) {
    switch (p->bits) {
    case 8: unpack_panel_w(p, pan, dst, 8); break;
    case 3: unpack_panel_w(p, pan, dst, 3); break;
    case 2: unpack_panel_w(p, pan, dst, 2); break;
    default: unpack_panel_w(p, pan, dst, 4); break;
    }
}

/* Float epilogue of one 16x16 C tile (rows row0.., panel pan) for group g into facc (row stride 32):
 * acc + scale * (float)isum, a separate multiply and add as in the reference. uint8 (8-bit with zero
 * points) first adds (128 - z) * sum(q) of each row (unpack_panel): exact in int32, since the result is
 * the true isum (|isum| < 2^31 by config validation) and the wrapping adds are exact modulo 2^32. */
static inline void tile_epilogue(const mpl_x86_w4a8_job *j, const int32_t *c, float *facc, int64_t pan, int64_t g,
                                 int64_t row0) {
    const mpl_x86_w4a8_layout *p = j->p;
    const __m512 sc = _mm512_load_ps(p->scales + (pan * p->groups + g) * MPL_X86_W4A8_PANEL);
    if (p->bits == 8 && p->zeros) {
        const __m512i dz = _mm512_sub_epi32(_mm512_set1_epi32(128), w4a8_zeros16(p, pan, g));
        for (int r = 0; r < 16; r++) {
            __m512i ci = _mm512_load_si512((const void *)(c + r * 16));
            ci = _mm512_add_epi32(ci, _mm512_mullo_epi32(dz, _mm512_set1_epi32(j->sumq[(row0 + r) * p->groups + g])));
            __m512 isum = _mm512_cvtepi32_ps(ci);
            _mm512_store_ps(facc + r * 32, _mm512_add_ps(_mm512_load_ps(facc + r * 32), _mm512_mul_ps(sc, isum)));
        }
        return;
    }
    for (int r = 0; r < 16; r++) {
        __m512 isum = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(c + r * 16)));
        _mm512_store_ps(facc + r * 32, _mm512_add_ps(_mm512_load_ps(facc + r * 32), _mm512_mul_ps(sc, isum)));
    }
}

/*
 * K positions [kc0, kc1) of the 32-row block at m0 and the column block at pan (np panels).
 * Software-pipelined by panel: while one panel's tiles are in the TMUL, the vector units run the
 * epilogue of the other panel's tiles (staged in cbuf a step earlier); the epilogue of four tiles
 * (~450 uops) would otherwise overflow the reorder window and leave the TMUL idle. cacc parks the
 * C tiles of a group that continues in the next chunk (4 tiles of 16x16 int32, tile t at t*256).
 */
static void block32(const mpl_x86_w4a8_job *j, int64_t m0, int64_t pan, int np, const uint8_t *bscr, int kb,
                    int64_t kc0, int64_t kc1, int32_t *cbuf, float *facc, int32_t *cacc) {
    const mpl_x86_w4a8_layout *p = j->p;
    const int64_t K = p->k, gl = p->group_len, lda = j->lda;
    const uint8_t *b0 = bscr, *b1 = bscr + K * 16;
    const int8_t *a0 = j->qx + m0 * lda, *a1 = a0 + 16 * lda;
    int32_t *c01 = cbuf, *c23 = cbuf + 512;
    int64_t pending = -1; /* group whose panel-1 tiles wait in c23 for their epilogue */
    for (int64_t g = kc0 / gl; g * gl < kc1; g++) {
        const int64_t ks = g * gl > kc0 ? g * gl : kc0, ke = (g + 1) * gl < kc1 ? (g + 1) * gl : kc1;
        const int fresh = ks == g * gl, ends = ke == (g + 1) * gl;
        if (fresh) {
            _tile_zero(0);
            _tile_zero(1);
        } else {
            _tile_loadd(0, cacc, 64);
            _tile_loadd(1, cacc + 256, 64);
        }
        for (int64_t k0 = ks; k0 < ke; k0 += kb) {
            _tile_loadd(4, a0 + k0, lda);
            _tile_loadd(5, a1 + k0, lda);
            _tile_loadd(6, b0 + k0 * 16, 64);
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 5, 6);
        }
        if (pending >= 0) {
            tile_epilogue(j, c23, facc + 16, pan + 1, pending, m0);
            tile_epilogue(j, c23 + 256, facc + 16 * 32 + 16, pan + 1, pending, m0 + 16);
            pending = -1;
        }
        _tile_stored(0, ends ? c01 : cacc, 64);
        _tile_stored(1, ends ? c01 + 256 : cacc + 256, 64);
        if (np == 2) {
            if (fresh) {
                _tile_zero(2);
                _tile_zero(3);
            } else {
                _tile_loadd(2, cacc + 512, 64);
                _tile_loadd(3, cacc + 768, 64);
            }
            for (int64_t k0 = ks; k0 < ke; k0 += kb) {
                if (ke - ks != kb) { /* a one-step segment keeps tiles 4 and 5 loaded */
                    _tile_loadd(4, a0 + k0, lda);
                    _tile_loadd(5, a1 + k0, lda);
                }
                _tile_loadd(7, b1 + k0 * 16, 64);
                _tile_dpbssd(2, 4, 7);
                _tile_dpbssd(3, 5, 7);
            }
        }
        if (ends) {
            tile_epilogue(j, c01, facc, pan, g, m0);
            tile_epilogue(j, c01 + 256, facc + 16 * 32, pan, g, m0 + 16);
        }
        if (np == 2) {
            _tile_stored(2, ends ? c23 : cacc + 512, 64);
            _tile_stored(3, ends ? c23 + 256 : cacc + 768, 64);
            if (ends) pending = g;
        }
    }
    if (pending >= 0) {
        tile_epilogue(j, c23, facc + 16, pan + 1, pending, m0);
        tile_epilogue(j, c23 + 256, facc + 16 * 32 + 16, pan + 1, pending, m0 + 16);
    }
}

/* scratch: mpl_x86_w4a8_tile_scratch(k) bytes, laid out as B scratch | 4 staged C tiles | float
 * accumulators | parked int32 C tiles. */
void mpl_x86_w4a8_gemm_amx(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    const mpl_x86_w4a8_layout *p = j->p;
    const int64_t K = p->k, M = j->m, gl = p->group_len;
    const int kb = gl % 64 == 0 ? 64 : 32;
    amx_tile_config cfg;
    amx_tile_init(&cfg);
    for (int t = 0; t < 4; t++) amx_tile_shape(&cfg, t, 16, 64);
    for (int t = 4; t < 6; t++) amx_tile_shape(&cfg, t, 16, kb);
    for (int t = 6; t < 8; t++) amx_tile_shape(&cfg, t, kb / 4, 64);
    amx_tile_load(&cfg);
    uint8_t *bscr = scratch;
    int32_t *cbuf = (int32_t *)(bscr + K * 32);
    float *facc = (float *)(bscr + K * 32 + 4096);
    int32_t *cacc = (int32_t *)(facc + MPL_X86_W4A8_AMX_ROWS * 32);
    int64_t mc = QX_CHUNK_BYTES / j->lda / MPL_X86_W4A8_ROW_PAD * MPL_X86_W4A8_ROW_PAD;
    if (mc < MPL_X86_W4A8_ROW_PAD) mc = MPL_X86_W4A8_ROW_PAD;
    if (mc > MPL_X86_W4A8_AMX_ROWS) mc = MPL_X86_W4A8_AMX_ROWS;
    /* K chunk: whole groups when they are short, else K_CHUNK positions (a multiple of kb). */
    const int64_t kc = gl >= K_CHUNK ? K_CHUNK : K_CHUNK / gl * gl;
    for (int64_t c0 = 0; c0 < M; c0 += mc) {
        int64_t c1 = c0 + mc < M ? c0 + mc : M;
        for (int64_t pan = p0; pan < p1; pan += 2) {
            int np = p1 - pan < 2 ? 1 : 2;
            for (int v = 0; v < np; v++)
                unpack_panel(p, pan + v, bscr + (size_t)v * (size_t)K * 16);
            memset(facc, 0, (size_t)MPL_X86_W4A8_AMX_ROWS * 32 * sizeof(float));
            /* Pull the next column block's codes into L2 a slice per block32 call, so its unpack does not
             * wait on L3/DRAM latency. */
            const char *next = NULL;
            int64_t next_bytes = 0;
            if (pan + 2 < p1) {
                next = (const char *)mpl_x86_w4a8_panel(p, pan + 2);
                next_bytes = (int64_t)((p1 - pan - 2 < 2 ? 1 : 2) * p->panel_bytes);
            }
            const int64_t calls = ((c1 - c0 + 31) / 32) * ((K + kc - 1) / kc);
            const int64_t slice = (next_bytes / calls + 63) / 64 * 64;
            int64_t pf = 0;
            for (int64_t k0 = 0; k0 < K; k0 += kc)
                for (int64_t m = c0; m < c1; m += 32) {
                    for (int64_t e = pf + slice; pf < e && pf < next_bytes; pf += 64) _mm_prefetch(next + pf, _MM_HINT_T1);
                    block32(j, m, pan, np, bscr, kb, k0, k0 + kc < K ? k0 + kc : K, cbuf, facc + (m - c0) * 32,
                            cacc + (m - c0) * 32);
                }
            for (int64_t m = c0; m < c1; m++)
                for (int v = 0; v < np; v++)
                    w4a8_finish16(j, m, (pan + v) * MPL_X86_W4A8_PANEL, _mm512_load_ps(facc + (m - c0) * 32 + v * 16));
        }
    }
    _tile_release();
}
