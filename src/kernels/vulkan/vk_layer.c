/*
 * vk_layer.c -- a vulkan_w4a16 or vulkan_w4a8 layer on its device: the packed weight image in one device-local
 * buffer, and the apply of host pointers: x (permuted to the packed channel order, zero-padded to k_pad) and
 * bias are written into host-visible staging buffers, copied to device-local scratch, one path's shader runs,
 * and y (f32) comes back the same way to be rounded once to the activation type on the host (the exact
 * contract of mplinear.h: fp32 sums, one output rounding, round to nearest even). W4A8 layers quantize x on
 * the host while staging it (mpl_quantize_row_i8, the function ref calls, so q and sx are ref's bits; O(m k)
 * against the shaders' O(m n k)): a row goes up as k_pad int8 values and its sx (shaders/w4a8_common.glsl),
 * half the bytes of a 16-bit row; a row holding inf/NaN comes back as NaN, written on the host as ref does.
 * The W4A16 GEMV gets x as f32 pre-scaled by 16^-(p mod 4) (stage_x_gemv: its decode needs no conversions),
 * the tiled GEMM as 16-bit values.
 * Rows go in chunks whose x and y fit the device's maxStorageBufferRange and a fixed scratch size, so the
 * scratch is bounded for any m; it is allocated on the first apply of a size and kept (later applies allocate
 * nothing). One mutex per layer serializes applies (the command buffer and scratch are per layer state).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

/* Scratch per buffer (x or y) at most: 256 MiB keeps a chunk of m = 512 rows of 70B gate_up's f32 y
 * (117 MB) in one go and bounds the host-visible memory a layer holds. */
#define SCRATCH_MAX ((uint64_t)256 << 20)
/* The GEMVs' rows of x per workgroup (both shaders' MB); the W4A8 GEMV's output channels per workgroup
 * (shaders/w4a8_gemv.comp's ROWS). The W4A16 GEMV's channels per workgroup are its pipeline's (d->gemv_rows). */
#define GEMV_MB 4
#define W4A8_GEMV_ROWS 8
/* The tiled GEMM's tile (shaders/w4a16_tiled.comp). */
#define TILE_M 64
#define TILE_N 64

typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize bytes;
    void *map; /* host-visible buffers: persistently mapped */
} vk_buf;

struct mpl_vk_layer {
    mpl_vk_device *d;
    int64_t k, n, k_pad, n_pad, groups, group_size, zstride; /* packed sizes (8-bit: k = 2 k_in, two planes) */
    int64_t k_in;        /* x's row length: the layer's input channels */
    mpl_act act;
    mpl_mode mode;
    int64_t x_row_bytes; /* the scratch's room per row of x: the largest staged row of the mode's shaders
                          * (x_stride: W4A16 GEMV k_pad f32, W4A16 tiled k_pad 16-bit values, W4A8 k_pad int8 +
                          * a 16-byte sx slot) */
    float *xf;           /* one row of x as f32 [k_in] (staging scratch; applies are serialized) */
    int8_t *xq;          /* W4A8: its quantization [k_in] */
    uint32_t flags;   /* the shaders' FLAG_BF16 | FLAG_ZEROS */
    int32_t *perm;    /* [k] packed position -> input channel (act-order, 8-bit planes) or NULL */
    vk_buf weights;   /* the layout's image */
    size_t qweight_off, qweight_bytes, scales_off, scales_bytes, zeros_off, zeros_bytes;
    int64_t chunk_rows; /* most rows one submission runs */
    pthread_mutex_t mu;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkQueryPool queries;
    int64_t cap_rows; /* rows the scratch below holds (0: none yet) */
    vk_buf x_dev, y_dev, b_dev, x_host, y_host, b_host;
};

enum { FLAG_BF16 = 1, FLAG_ZEROS = 2, FLAG_BIAS = 4, FLAG_GSHIFT_BIT = 8 };

static _Atomic uint64_t g_scratch_max; /* mpl_vk_test_scratch_max; 0: SCRATCH_MAX */

void mpl_vk_test_scratch_max(uint64_t bytes) { g_scratch_max = bytes; }

static int find_memory(const mpl_vk_device *d, uint32_t type_bits, VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++)
        if ((type_bits >> i & 1u) && (d->mem.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    return -1;
}

static void buf_free(const mpl_vk_device *d, vk_buf *b) {
    if (b->map) d->fn.UnmapMemory(d->dev, b->mem);
    if (b->buf) d->fn.DestroyBuffer(d->dev, b->buf, NULL);
    if (b->mem) d->fn.FreeMemory(d->dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

/* host: host-visible + coherent, mapped (staging); else device-local. */
static mpl_status buf_alloc(const mpl_vk_device *d, vk_buf *b, VkDeviceSize bytes, int host, const char *what) {
    memset(b, 0, sizeof *b);
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = bytes,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = d->fn.CreateBuffer(d->dev, &bi, NULL, &b->buf);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, what);
    VkMemoryRequirements req;
    d->fn.GetBufferMemoryRequirements(d->dev, b->buf, &req);
    VkMemoryPropertyFlags want = host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                      : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    int type = find_memory(d, req.memoryTypeBits, want);
    if (type < 0 && !host) type = find_memory(d, req.memoryTypeBits, 0);
    if (type < 0) {
        buf_free(d, b);
        return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: %s: no %s memory type", what, host ? "host-visible" : "device");
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)type};
    r = d->fn.AllocateMemory(d->dev, &ai, NULL, &b->mem);
    if (r == VK_SUCCESS) r = d->fn.BindBufferMemory(d->dev, b->buf, b->mem, 0);
    if (r == VK_SUCCESS && host) r = d->fn.MapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
    if (r != VK_SUCCESS) {
        if (r != VK_SUCCESS) b->map = NULL;
        buf_free(d, b);
        return mpl_vk_fail(r, what);
    }
    b->bytes = bytes;
    return MPL_OK;
}

static void barrier(const mpl_vk_device *d, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access, .dstAccessMask = dst_access};
    d->fn.CmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

static mpl_status begin(mpl_vk_layer *L) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = L->d->fn.BeginCommandBuffer(L->cb, &bi);
    return r == VK_SUCCESS ? MPL_OK : mpl_vk_fail(r, "vkBeginCommandBuffer");
}

/* Ends, submits and waits for the layer's command buffer. */
static mpl_status submit_wait(mpl_vk_layer *L) {
    const mpl_vk_device *d = L->d;
    VkResult r = d->fn.EndCommandBuffer(L->cb);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkEndCommandBuffer");
    r = d->fn.ResetFences(d->dev, 1, &L->fence);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkResetFences");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &L->cb};
    pthread_mutex_lock(&L->d->queue_mu);
    r = d->fn.QueueSubmit(d->queue, 1, &si, L->fence);
    pthread_mutex_unlock(&L->d->queue_mu);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkQueueSubmit");
    r = d->fn.WaitForFences(d->dev, 1, &L->fence, VK_TRUE, UINT64_MAX);
    return r == VK_SUCCESS ? MPL_OK : mpl_vk_fail(r, "vkWaitForFences");
}

static void copy(const mpl_vk_device *d, VkCommandBuffer cb, const vk_buf *src, const vk_buf *dst, VkDeviceSize bytes) {
    VkBufferCopy c = {.srcOffset = 0, .dstOffset = 0, .size = bytes};
    d->fn.CmdCopyBuffer(cb, src->buf, dst->buf, 1, &c);
}

/* Points the descriptor set at the weights and at x, bias, y (device-local). */

/* Points the layer's descriptor set's six storage-buffer bindings at bi[0..5]. */
static void write_set(mpl_vk_layer *L, const VkDescriptorBufferInfo bi[6]) {
    VkWriteDescriptorSet w[6];
    for (uint32_t i = 0; i < 6; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = L->set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    L->d->fn.UpdateDescriptorSets(L->d->dev, 6, w, 0, NULL);
}

static void bind_set(mpl_vk_layer *L, const vk_buf *x, const vk_buf *y) {
    VkDescriptorBufferInfo bi[6] = {
        {L->weights.buf, L->qweight_off, L->qweight_bytes},
        {L->weights.buf, L->scales_off, L->scales_bytes},
        /* no zeros: any valid range (the shaders read none) */
        {L->weights.buf, L->zeros_bytes ? L->zeros_off : L->scales_off, L->zeros_bytes ? L->zeros_bytes : L->scales_bytes},
        {x->buf, 0, x->bytes},
        {L->b_dev.buf, 0, L->b_dev.bytes},
        {y->buf, 0, y->bytes},
    };
    write_set(L, bi);
}

/* Records one path's dispatches for rows [0, m) of the bound buffers (m <= the grid limits, chunk_rows). */
static void record_dispatch(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, int bias) {
    const mpl_vk_device *d = L->d;
    d->fn.CmdBindPipeline(L->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipelines[sh]);
    d->fn.CmdBindDescriptorSets(L->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &L->set, 0, NULL);
    /* both modes' GEMVs have the same workgroup shape, and both tiled GEMMs the same tile */
    const int gemv = sh == MPL_VK_SHADER_GEMV || sh == MPL_VK_SHADER_W4A8_GEMV;
    const int64_t rows = sh == MPL_VK_SHADER_GEMV ? (int64_t)d->gemv_rows : gemv ? W4A8_GEMV_ROWS : TILE_N;
    const int64_t mtile = gemv ? GEMV_MB : TILE_M;
    /* the W4A16 GEMV's workgroups each run gemv_blocks consecutive blocks of rows (the last one's past n_pad
     * are skipped in the shader) */
    const int64_t blocks = sh == MPL_VK_SHADER_GEMV && d->gemv_blocks > 1 ? (int64_t)d->gemv_blocks : 1;
    const int64_t nblk = L->n_pad / rows, nwg = (nblk + blocks - 1) / blocks, mwg = (m + mtile - 1) / mtile;
    const int64_t xmax = d->limits.maxComputeWorkGroupCount[0];
    for (int64_t w0 = 0; w0 < nwg; w0 += xmax) {
        const int64_t cnt = nwg - w0 < xmax ? nwg - w0 : xmax;
        uint32_t pc[9] = {(uint32_t)m, (uint32_t)L->n, (uint32_t)(L->k_pad / 32), (uint32_t)L->groups,
                          (uint32_t)L->group_size, (uint32_t)L->zstride, L->flags | (bias ? FLAG_BIAS : 0u),
                          (uint32_t)(w0 * blocks * rows), 0};
        d->fn.CmdPushConstants(L->cb, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
        if (gemv)
            d->fn.CmdDispatch(L->cb, (uint32_t)cnt, 1, (uint32_t)mwg);
        else
            d->fn.CmdDispatch(L->cb, (uint32_t)cnt, (uint32_t)mwg, 1);
    }
}

void mpl_vk_layer_destroy(mpl_vk_layer *L) {
    if (!L) return;
    const mpl_vk_device *d = L->d;
    vk_buf *bufs[] = {&L->weights, &L->x_dev, &L->y_dev, &L->b_dev, &L->x_host, &L->y_host, &L->b_host};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) buf_free(d, bufs[i]);
    if (L->queries) d->fn.DestroyQueryPool(d->dev, L->queries, NULL);
    if (L->dpool) d->fn.DestroyDescriptorPool(d->dev, L->dpool, NULL);
    if (L->fence) d->fn.DestroyFence(d->dev, L->fence, NULL);
    if (L->pool) d->fn.DestroyCommandPool(d->dev, L->pool, NULL); /* frees the command buffer */
    pthread_mutex_destroy(&L->mu);
    free(L->perm);
    free(L->xf);
    free(L->xq);
    free(L);
}

static mpl_status create_objects(mpl_vk_layer *L) {
    const mpl_vk_device *d = L->d;
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = d->queue_family};
    VkResult r = d->fn.CreateCommandPool(d->dev, &pi, NULL, &L->pool);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = L->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    r = d->fn.AllocateCommandBuffers(d->dev, &ai, &L->cb);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = d->fn.CreateFence(d->dev, &fi, NULL, &L->fence);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateFence");
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 6};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    r = d->fn.CreateDescriptorPool(d->dev, &dpi, NULL, &L->dpool);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = L->dpool,
                                      .descriptorSetCount = 1, .pSetLayouts = &d->set_layout};
    r = d->fn.AllocateDescriptorSets(d->dev, &si, &L->set);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkAllocateDescriptorSets");
    if (d->timestamps) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = 2};
        r = d->fn.CreateQueryPool(d->dev, &qi, NULL, &L->queries);
        if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateQueryPool");
    }
    return MPL_OK;
}

mpl_status mpl_vk_layer_create(int device, const mpl_vulkan_w4a16_layout *l, mpl_act act, mpl_mode mode,
                               mpl_vk_layer **out) {
    *out = NULL;
    const char *kname = mode == MPL_MODE_W4A8 ? "vulkan_w4a8" : "vulkan_w4a16";
    mpl_vk_device *d;
    mpl_status st = mpl_vk_device_open(device, &d);
    if (st != MPL_OK) return st;
    const uint64_t range = d->limits.maxStorageBufferRange;
    if (l->qweight_bytes > range || l->scales_bytes > range || l->zeros_bytes > range)
        return mpl_set_error(MPL_ERR_UNSUPPORTED,
                             "%s: packed weights of %zu bytes exceed device %d's maxStorageBufferRange "
                             "(%llu bytes): splitting a layer over several buffers is not implemented",
                             kname, l->qweight_bytes, device, (unsigned long long)range);
    mpl_vk_layer *L = calloc(1, sizeof *L);
    if (!L) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", kname);
    pthread_mutex_init(&L->mu, NULL);
    L->d = d;
    L->k = l->k, L->k_in = l->k_in, L->n = l->n, L->k_pad = l->k_pad, L->n_pad = l->n_pad;
    L->groups = l->groups, L->group_size = l->group_size, L->zstride = l->zstride;
    L->act = act;
    L->mode = mode;
    /* W4A8: the sx slot is 16 bytes so that every row starts on a uvec4 (k_pad is a multiple of 32) */
    L->x_row_bytes = mode == MPL_MODE_W4A8 ? L->k_pad + 16 : L->k_pad * 4;
    L->flags = (act == MPL_ACT_BF16 ? FLAG_BF16 : 0u) | (l->zeros_bytes ? FLAG_ZEROS : 0u);
    /* bits 8..15: log2 of a power-of-two group size (else 0), so that the W4A16 GEMV finds a chunk's group with a
     * shift instead of an integer division (a dozen instructions and the slow conversion unit on NVIDIA) */
    if (l->group_size >= 16 && (l->group_size & (l->group_size - 1)) == 0) {
        uint32_t lg = 0;
        while (((int64_t)1 << lg) < l->group_size) lg++;
        L->flags |= lg << FLAG_GSHIFT_BIT;
    }
    L->qweight_off = l->qweight_off, L->qweight_bytes = l->qweight_bytes;
    L->scales_off = l->scales_off, L->scales_bytes = l->scales_bytes;
    L->zeros_off = l->zeros_off, L->zeros_bytes = l->zeros_bytes;
    /* rows per submission: x and y of a chunk within the buffer range and SCRATCH_MAX, and a grid the
     * spec's smallest maxComputeWorkGroupCount (65535) can hold */
    const uint64_t scratch = g_scratch_max ? g_scratch_max : SCRATCH_MAX;
    uint64_t cap = range < scratch ? range : scratch;
    uint64_t by_y = cap / ((uint64_t)L->n * 4), by_x = cap / (uint64_t)L->x_row_bytes;
    int64_t rows = (int64_t)(by_y < by_x ? by_y : by_x);
    if (rows > (int64_t)65535 * GEMV_MB) rows = (int64_t)65535 * GEMV_MB;
    if (rows >= TILE_M) rows -= rows % TILE_M;
    L->chunk_rows = rows;
    if (l->perm) {
        L->perm = malloc((size_t)l->k * sizeof(int32_t));
        if (!L->perm) {
            mpl_vk_layer_destroy(L);
            return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", kname);
        }
        memcpy(L->perm, l->perm, (size_t)l->k * sizeof(int32_t));
    }
    L->xf = malloc((size_t)l->k_in * sizeof(float));
    if (mode == MPL_MODE_W4A8) L->xq = malloc((size_t)l->k_in);
    if (!L->xf || (mode == MPL_MODE_W4A8 && !L->xq)) {
        mpl_vk_layer_destroy(L);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", kname);
    }
    vk_buf stage;
    if (rows < 1) st = mpl_set_error(MPL_ERR_UNSUPPORTED, "%s: one row of y (%lld f32) exceeds the device's "
                                     "buffer range", kname, (long long)L->n);
    if (st == MPL_OK) st = create_objects(L);
    if (st == MPL_OK) st = buf_alloc(d, &L->weights, l->bytes, 0, "allocating the packed weights");
    if (st == MPL_OK) st = buf_alloc(d, &L->b_dev, (VkDeviceSize)L->n_pad * 4, 0, "allocating the bias buffer");
    if (st == MPL_OK) st = buf_alloc(d, &L->b_host, (VkDeviceSize)L->n_pad * 4, 1, "allocating the bias staging buffer");
    if (st == MPL_OK) {
        st = buf_alloc(d, &stage, l->bytes, 1, "allocating the weights' staging buffer");
        if (st == MPL_OK) {
            memcpy(stage.map, l->image, l->bytes);
            st = begin(L);
            if (st == MPL_OK) {
                copy(d, L->cb, &stage, &L->weights, l->bytes);
                st = submit_wait(L);
            }
            buf_free(d, &stage);
        }
    }
    if (st != MPL_OK) {
        mpl_vk_layer_destroy(L);
        return st;
    }
    *out = L;
    return MPL_OK;
}

/* Scratch for `rows` rows (kept; grown only). */
static mpl_status ensure_scratch(mpl_vk_layer *L, int64_t rows) {
    if (rows <= L->cap_rows) return MPL_OK;
    const mpl_vk_device *d = L->d;
    vk_buf *bufs[] = {&L->x_dev, &L->y_dev, &L->x_host, &L->y_host};
    for (size_t i = 0; i < 4; i++) buf_free(d, bufs[i]);
    L->cap_rows = 0;
    VkDeviceSize xb = (VkDeviceSize)rows * (VkDeviceSize)L->x_row_bytes, yb = (VkDeviceSize)rows * (VkDeviceSize)L->n * 4;
    mpl_status st = buf_alloc(d, &L->x_dev, xb, 0, "allocating x");
    if (st == MPL_OK) st = buf_alloc(d, &L->y_dev, yb, 0, "allocating y");
    if (st == MPL_OK) st = buf_alloc(d, &L->x_host, xb, 1, "allocating x's staging buffer");
    if (st == MPL_OK) st = buf_alloc(d, &L->y_host, yb, 1, "allocating y's staging buffer");
    if (st != MPL_OK) {
        for (size_t i = 0; i < 4; i++) buf_free(d, bufs[i]);
        return st;
    }
    L->cap_rows = rows;
    bind_set(L, &L->x_dev, &L->y_dev);
    return MPL_OK;
}

/* W4A8: rows [r0, r0 + rows) of x quantized (ref's function, on the row in its own channel order: amax and
 * each q do not depend on the order) into the staging buffer: q in packed channel order, zero past k, then sx
 * in the row's 16-byte slot (NaN for a row holding inf/NaN). */
static void stage_xq(const mpl_vk_layer *L, const void *x, int64_t r0, int64_t rows) {
    const size_t as = mpl_act_size(L->act);
    for (int64_t r = 0; r < rows; r++) {
        int8_t *o = (int8_t *)L->x_host.map + (size_t)r * (size_t)L->x_row_bytes;
        int nonfinite;
        mpl_act_to_f32(L->act, (const char *)x + (size_t)(r0 + r) * (size_t)L->k_in * as, L->xf, L->k_in);
        const float sx = mpl_quantize_row_i8(L->xf, L->k_in, L->xq, &nonfinite);
        if (L->perm)
            for (int64_t p = 0; p < L->k; p++) o[p] = L->xq[L->perm[p]];
        else
            memcpy(o, L->xq, (size_t)L->k);
        memset(o + L->k, 0, (size_t)(L->x_row_bytes - L->k));
        memcpy(o + L->k_pad, &sx, sizeof sx);
    }
}

/* W4A8: a row whose x held inf/NaN gives NaN in every output (mplinear.h). The shaders' sx = NaN makes it
 * NaN already; the row is rewritten with ref's NaN so that its bits do not depend on the device's NaN. */
static void nan_rows(const mpl_vk_layer *L, int64_t rows) {
    for (int64_t r = 0; r < rows; r++) {
        float sx;
        memcpy(&sx, (const char *)L->x_host.map + (size_t)r * (size_t)L->x_row_bytes + (size_t)L->k_pad, sizeof sx);
        if (isnan(sx)) {
            float *yr = (float *)L->y_host.map + (size_t)r * (size_t)L->n;
            for (int64_t j = 0; j < L->n; j++) yr[j] = NAN;
        }
    }
}

/* Bytes per staged row of x for shader sh (the row stride its shader reads). */
static int64_t x_stride(const mpl_vk_layer *L, mpl_vk_shader sh) {
    if (L->mode == MPL_MODE_W4A8) return L->k_pad + 16;
    return sh == MPL_VK_SHADER_GEMV ? L->k_pad * 4 : L->k_pad * 2;
}

/* The W4A16 GEMV's x (shaders/w4a16_gemv.comp): rows [r0, r0 + rows) as f32 in packed channel order, position p
 * multiplied by 16^-(p mod 4) (exact: a power of two; the shader's nibble decode leaves (q - z) * 16^(p mod 4)),
 * zero past k. O(m k) on the host against the shader's O(m n k), and no conversions in the shader's loop. */
static void stage_x_gemv(const mpl_vk_layer *L, const void *x, int64_t r0, int64_t rows) {
    static const float inv16[4] = {1.0f, 0x1p-4f, 0x1p-8f, 0x1p-12f};
    const size_t as = mpl_act_size(L->act);
    for (int64_t r = 0; r < rows; r++) {
        float *o = (float *)L->x_host.map + (size_t)r * (size_t)L->k_pad;
        mpl_act_to_f32(L->act, (const char *)x + (size_t)(r0 + r) * (size_t)L->k_in * as, L->xf, L->k_in);
        for (int64_t p = 0; p < L->k; p++) o[p] = L->xf[L->perm ? L->perm[p] : p] * inv16[p & 3];
        for (int64_t p = L->k; p < L->k_pad; p++) o[p] = 0.0f;
    }
}

/* Rows [r0, r0 + rows) of x into the staging buffer as shader sh reads them: packed channel order, zero past k. */
static void stage_x(const mpl_vk_layer *L, mpl_vk_shader sh, const void *x, int64_t r0, int64_t rows) {
    if (L->mode == MPL_MODE_W4A8) {
        stage_xq(L, x, r0, rows);
        return;
    }
    if (sh == MPL_VK_SHADER_GEMV) {
        stage_x_gemv(L, x, r0, rows);
        return;
    }
    const uint16_t *src = x;
    uint16_t *dst = L->x_host.map;
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *s = src + (size_t)(r0 + r) * (size_t)L->k_in;
        uint16_t *o = dst + (size_t)r * (size_t)L->k_pad;
        if (L->perm)
            for (int64_t p = 0; p < L->k; p++) o[p] = s[L->perm[p]];
        else
            memcpy(o, s, (size_t)L->k * 2);
        memset(o + L->k, 0, (size_t)(L->k_pad - L->k) * 2);
    }
}

mpl_status mpl_vk_layer_apply(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, const void *x, const void *bias, void *y) {
    if (m < 1) return MPL_OK;
    if (pthread_mutex_lock(&L->mu) != 0) return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: layer mutex");
    const mpl_vk_device *d = L->d;
    const size_t as = mpl_act_size(L->act);
    mpl_status st = ensure_scratch(L, m < L->chunk_rows ? m : L->chunk_rows);
    if (st == MPL_OK && bias) mpl_act_to_f32(L->act, bias, L->b_host.map, L->n);
    for (int64_t r0 = 0; st == MPL_OK && r0 < m; r0 += L->chunk_rows) {
        const int64_t rows = m - r0 < L->chunk_rows ? m - r0 : L->chunk_rows;
        stage_x(L, sh, x, r0, rows);
        const VkDeviceSize xb = (VkDeviceSize)rows * (VkDeviceSize)x_stride(L, sh);
        const VkDeviceSize yb = (VkDeviceSize)rows * (VkDeviceSize)L->n * 4;
        st = begin(L);
        if (st != MPL_OK) break;
        copy(d, L->cb, &L->x_host, &L->x_dev, xb);
        if (bias && r0 == 0) copy(d, L->cb, &L->b_host, &L->b_dev, (VkDeviceSize)L->n * 4);
        barrier(d, L->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT);
        record_dispatch(L, sh, rows, bias != NULL);
        barrier(d, L->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
        copy(d, L->cb, &L->y_dev, &L->y_host, yb);
        barrier(d, L->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
        st = submit_wait(L);
        if (st == MPL_OK && L->mode == MPL_MODE_W4A8) nan_rows(L, rows);
        if (st == MPL_OK)
            mpl_f32_to_act(L->act, L->y_host.map, (char *)y + (size_t)r0 * (size_t)L->n * as, rows * L->n);
    }
    pthread_mutex_unlock(&L->mu);
    return st;
}

mpl_status mpl_vk_layer_time(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, double *seconds) {
    const mpl_vk_device *d = L->d;
    if (!L->queries) return mpl_set_error(MPL_ERR_UNSUPPORTED, "vulkan: the compute queue has no timestamps");
    /* device-resident x and y of all m rows in one dispatch: bounded by the buffer range and the grid only */
    const uint64_t range = d->limits.maxStorageBufferRange;
    if (m < 1 || (uint64_t)m * (uint64_t)L->n * 4 > range || (uint64_t)m * (uint64_t)L->x_row_bytes > range ||
        m > (int64_t)65535 * GEMV_MB)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan: time m = %lld: x or y over the device's buffer range",
                             (long long)m);
    if (pthread_mutex_lock(&L->mu) != 0) return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: layer mutex");
    mpl_status st = ensure_scratch(L, m);
    if (st == MPL_OK) st = begin(L);
    if (st == MPL_OK) {
        /* x = 1.0 in both 16-bit types' low bits is irrelevant to the timing; any finite pattern does (W4A8:
         * int8 values 0 and 60, sx 0.0078) */
        d->fn.CmdFillBuffer(L->cb, L->x_dev.buf, 0, (VkDeviceSize)m * (VkDeviceSize)L->x_row_bytes, 0x3c003c00u);
        barrier(d, L->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT);
        d->fn.CmdResetQueryPool(L->cb, L->queries, 0, 2);
        d->fn.CmdWriteTimestamp(L->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, L->queries, 0);
        record_dispatch(L, sh, m, 0);
        d->fn.CmdWriteTimestamp(L->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, L->queries, 1);
        st = submit_wait(L);
    }
    if (st == MPL_OK) {
        uint64_t ts[2];
        VkResult r = d->fn.GetQueryPoolResults(d->dev, L->queries, 0, 2, sizeof ts, ts, sizeof ts[0],
                                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        if (r != VK_SUCCESS) st = mpl_vk_fail(r, "vkGetQueryPoolResults");
        else *seconds = (double)(ts[1] - ts[0]) * (double)d->limits.timestampPeriod * 1e-9;
    }
    pthread_mutex_unlock(&L->mu);
    return st;
}

mpl_status mpl_vk_copy_rate(int device, size_t bytes, double *bytes_per_second) {
    mpl_vk_device *d;
    mpl_status st = mpl_vk_device_open(device, &d);
    if (st != MPL_OK) return st;
    /* a scratch layer object for its command buffer, fence and query pool */
    mpl_vk_layer *L = calloc(1, sizeof *L);
    if (!L) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    pthread_mutex_init(&L->mu, NULL);
    L->d = d;
    vk_buf a = {0}, b = {0};
    st = create_objects(L);
    if (st == MPL_OK && !L->queries) st = mpl_set_error(MPL_ERR_UNSUPPORTED, "vulkan: the compute queue has no timestamps");
    if (st == MPL_OK) st = buf_alloc(d, &a, bytes, 0, "allocating the copy source");
    if (st == MPL_OK) st = buf_alloc(d, &b, bytes, 0, "allocating the copy target");
    double best = 0;
    for (int rep = 0; st == MPL_OK && rep < 5; rep++) {
        st = begin(L);
        if (st != MPL_OK) break;
        d->fn.CmdResetQueryPool(L->cb, L->queries, 0, 2);
        d->fn.CmdWriteTimestamp(L->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, L->queries, 0);
        copy(d, L->cb, &a, &b, bytes);
        d->fn.CmdWriteTimestamp(L->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, L->queries, 1);
        st = submit_wait(L);
        uint64_t ts[2];
        if (st == MPL_OK) {
            VkResult r = d->fn.GetQueryPoolResults(d->dev, L->queries, 0, 2, sizeof ts, ts, sizeof ts[0],
                                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
            if (r != VK_SUCCESS) st = mpl_vk_fail(r, "vkGetQueryPoolResults");
        }
        if (st == MPL_OK) {
            double s = (double)(ts[1] - ts[0]) * (double)d->limits.timestampPeriod * 1e-9;
            double rate = s > 0 ? 2.0 * (double)bytes / s : 0;
            if (rate > best) best = rate;
        }
    }
    buf_free(d, &a);
    buf_free(d, &b);
    mpl_vk_layer_destroy(L);
    if (st == MPL_OK) *bytes_per_second = best;
    return st;
}

/* One timed dispatch of a probe pipeline over [off, off + window) of buffer a (descriptor binding 0; every
 * other binding points there too, binding 5 is the probe's never-taken sink). */
static mpl_status probe_once(mpl_vk_layer *L, VkPipeline pipe, const vk_buf *a, VkDeviceSize off, VkDeviceSize window,
                             double *seconds) {
    const mpl_vk_device *d = L->d;
    const VkDescriptorBufferInfo one = {a->buf, off, window}, bi[6] = {one, one, one, one, one, one};
    write_set(L, bi);
    mpl_status st = begin(L);
    if (st != MPL_OK) return st;
    /* the probe's grid: one 16-byte load per invocation per 2048-load block of 256 invocations x 8 */
    const uint64_t loads = window / 16, per_wg = 256 * 8;
    uint64_t wgs = (loads + per_wg - 1) / per_wg;
    if (wgs > d->limits.maxComputeWorkGroupCount[0]) wgs = d->limits.maxComputeWorkGroupCount[0];
    uint32_t pc[9] = {(uint32_t)loads, 0, 0, 0, 0, 0, 0, 0, 0};
    d->fn.CmdBindPipeline(L->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    d->fn.CmdBindDescriptorSets(L->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &L->set, 0, NULL);
    d->fn.CmdPushConstants(L->cb, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    d->fn.CmdResetQueryPool(L->cb, L->queries, 0, 2);
    d->fn.CmdWriteTimestamp(L->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, L->queries, 0);
    d->fn.CmdDispatch(L->cb, (uint32_t)wgs, 1, 1);
    d->fn.CmdWriteTimestamp(L->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, L->queries, 1);
    st = submit_wait(L);
    if (st != MPL_OK) return st;
    uint64_t ts[2];
    VkResult r = d->fn.GetQueryPoolResults(d->dev, L->queries, 0, 2, sizeof ts, ts, sizeof ts[0],
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkGetQueryPoolResults");
    *seconds = (double)(ts[1] - ts[0]) * (double)d->limits.timestampPeriod * 1e-9;
    return MPL_OK;
}

static int cmp_seconds(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

mpl_status mpl_vk_read_rate(int device, const uint32_t *spv, size_t spv_bytes, size_t bytes, size_t window, int reps,
                            double *bytes_per_second) {
    window -= window % 256; /* a multiple of every minStorageBufferOffsetAlignment, and of 16 */
    if (!spv || spv_bytes % 4 || window == 0 || bytes < window || reps < 1 || reps > 1000 ||
        window / 16 > UINT32_MAX)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan: read probe: bad SPIR-V, window or reps");
    mpl_vk_device *d;
    mpl_status st = mpl_vk_device_open(device, &d);
    if (st != MPL_OK) return st;
    if (window > d->limits.maxStorageBufferRange)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan: read probe: window over the device's buffer range");
    mpl_vk_layer *L = calloc(1, sizeof *L);
    double *t = calloc((size_t)reps, sizeof *t);
    if (!L || !t) {
        free(L), free(t);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    }
    pthread_mutex_init(&L->mu, NULL);
    L->d = d;
    vk_buf a = {0};
    VkPipeline pipe = VK_NULL_HANDLE;
    st = create_objects(L);
    if (st == MPL_OK && !L->queries) st = mpl_set_error(MPL_ERR_UNSUPPORTED, "vulkan: the compute queue has no timestamps");
    if (st == MPL_OK) st = buf_alloc(d, &a, bytes, 0, "allocating the read probe's buffer");
    if (st == MPL_OK) { /* any non-zero pattern (never time zeros) */
        st = begin(L);
        if (st == MPL_OK) {
            d->fn.CmdFillBuffer(L->cb, a.buf, 0, VK_WHOLE_SIZE, 0x5a3c96e1u);
            st = submit_wait(L);
        }
    }
    if (st == MPL_OK) {
        VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = spv_bytes, .pCode = spv};
        VkShaderModule mod;
        VkResult r = d->fn.CreateShaderModule(d->dev, &mi, NULL, &mod);
        if (r == VK_SUCCESS) {
            VkComputePipelineCreateInfo ci = {
                .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                          .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod, .pName = "main"},
                .layout = d->pipeline_layout};
            r = d->fn.CreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, &pipe);
            d->fn.DestroyShaderModule(d->dev, mod, NULL);
        }
        if (r != VK_SUCCESS) st = mpl_vk_fail(r, "creating the read probe's pipeline");
    }
    /* windows rotate over the buffer; one warm-up dispatch first (pipeline, first-touch) */
    const size_t nwin = bytes / window;
    for (int rep = -1; st == MPL_OK && rep < reps; rep++) {
        double s = 0;
        st = probe_once(L, pipe, &a, (VkDeviceSize)((size_t)(rep + 1) % nwin * window), window, &s);
        if (rep >= 0) t[rep] = s;
    }
    if (st == MPL_OK) {
        qsort(t, (size_t)reps, sizeof *t, cmp_seconds);
        *bytes_per_second = t[reps / 2] > 0 ? (double)window / t[reps / 2] : 0;
    }
    if (pipe) d->fn.DestroyPipeline(d->dev, pipe, NULL);
    buf_free(d, &a);
    mpl_vk_layer_destroy(L);
    free(t);
    return st;
}
