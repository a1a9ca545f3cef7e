/*
 * vk_internal.h -- what vk_instance.c (loader, instance, physical and logical devices) shares with vk_layer.c
 * (a layer's buffers, descriptor set, command buffer). Built only with the Vulkan module. Every Vulkan
 * function is called through the tables below, loaded from libvulkan.so.1 at run time (VK_NO_PROTOTYPES).
 */
#ifndef MPL_VK_INTERNAL_H
#define MPL_VK_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <pthread.h>
#include <vulkan/vulkan.h>

#include "vk_runtime.h"

/* Most physical devices recorded. */
#define MPL_VK_MAX_DEVICES 16


/* The device functions the module calls (loaded with vkGetDeviceProcAddr for each logical device). */
typedef struct mpl_vk_fns {
    PFN_vkDestroyDevice DestroyDevice;
    PFN_vkGetDeviceQueue GetDeviceQueue;
    PFN_vkCreateBuffer CreateBuffer;
    PFN_vkDestroyBuffer DestroyBuffer;
    PFN_vkGetBufferMemoryRequirements GetBufferMemoryRequirements;
    PFN_vkAllocateMemory AllocateMemory;
    PFN_vkFreeMemory FreeMemory;
    PFN_vkBindBufferMemory BindBufferMemory;
    PFN_vkMapMemory MapMemory;
    PFN_vkUnmapMemory UnmapMemory;
    PFN_vkCreateShaderModule CreateShaderModule;
    PFN_vkDestroyShaderModule DestroyShaderModule;
    PFN_vkCreateDescriptorSetLayout CreateDescriptorSetLayout;
    PFN_vkCreatePipelineLayout CreatePipelineLayout;
    PFN_vkCreateComputePipelines CreateComputePipelines;
    PFN_vkGetPipelineExecutablePropertiesKHR GetPipelineExecutablePropertiesKHR; /* NULL without the extension */
    PFN_vkGetPipelineExecutableStatisticsKHR GetPipelineExecutableStatisticsKHR;
    PFN_vkDestroyPipeline DestroyPipeline;
    PFN_vkCreateDescriptorPool CreateDescriptorPool;
    PFN_vkDestroyDescriptorPool DestroyDescriptorPool;
    PFN_vkAllocateDescriptorSets AllocateDescriptorSets;
    PFN_vkUpdateDescriptorSets UpdateDescriptorSets;
    PFN_vkCreateCommandPool CreateCommandPool;
    PFN_vkDestroyCommandPool DestroyCommandPool;
    PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
    PFN_vkBeginCommandBuffer BeginCommandBuffer;
    PFN_vkEndCommandBuffer EndCommandBuffer;
    PFN_vkCmdBindPipeline CmdBindPipeline;
    PFN_vkCmdBindDescriptorSets CmdBindDescriptorSets;
    PFN_vkCmdPushConstants CmdPushConstants;
    PFN_vkCmdDispatch CmdDispatch;
    PFN_vkCmdCopyBuffer CmdCopyBuffer;
    PFN_vkCmdFillBuffer CmdFillBuffer;
    PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
    PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
    PFN_vkCmdResetQueryPool CmdResetQueryPool;
    PFN_vkCreateQueryPool CreateQueryPool;
    PFN_vkDestroyQueryPool DestroyQueryPool;
    PFN_vkGetQueryPoolResults GetQueryPoolResults;
    PFN_vkCreateFence CreateFence;
    PFN_vkDestroyFence DestroyFence;
    PFN_vkResetFences ResetFences;
    PFN_vkWaitForFences WaitForFences;
    PFN_vkQueueSubmit QueueSubmit;
} mpl_vk_fns;

/* One logical device: created on first use of its physical device, kept for the process. */
typedef struct mpl_vk_device {
    int index;
    VkDevice dev;
    VkQueue queue;
    pthread_mutex_t queue_mu; /* vkQueueSubmit needs the queue externally synchronized */
    uint32_t queue_family;
    mpl_vk_fns fn;
    VkPhysicalDeviceMemoryProperties mem;
    VkPhysicalDeviceLimits limits;
    int timestamps;           /* the queue family's timestampValidBits > 0 */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipelines[MPL_VK_SHADERS];
    uint32_t gemv_wg, gemv_rows, gemv_unroll, gemv_prefetch, gemv_blocks; /* the W4A16 GEMV pipeline's shape (default: vk_runtime.h's MPL_VK_GEMV_*) */
    int pipeline_stats; /* VK_KHR_pipeline_executable_properties enabled */
    int gemv_captured;  /* the GEMV pipeline was created capturing its statistics */
} mpl_vk_device;

/* The SPIR-V of the shaders, embedded at build time (cmake/mpl_embed_spirv.cmake writes them). */
extern const uint32_t mpl_vk_spv_w4a16_gemv[];
extern const size_t mpl_vk_spv_w4a16_gemv_bytes;
extern const uint32_t mpl_vk_spv_w4a16_tiled[];
extern const size_t mpl_vk_spv_w4a16_tiled_bytes;
extern const uint32_t mpl_vk_spv_w4a8_gemv[];
extern const size_t mpl_vk_spv_w4a8_gemv_bytes;
extern const uint32_t mpl_vk_spv_w4a8_tiled[];
extern const size_t mpl_vk_spv_w4a8_tiled_bytes;

/* The logical device of physical device i (created on first call; thread-safe). */
mpl_status mpl_vk_device_open(int i, mpl_vk_device **out);
/* An MPL status from a VkResult: out-of-memory results are MPL_ERR_OUT_OF_MEMORY, the rest MPL_ERR_INTERNAL
 * with the call's name and the result's. */
mpl_status mpl_vk_fail(VkResult r, const char *what);

#endif
