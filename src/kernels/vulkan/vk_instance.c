/*
 * vk_instance.c -- the Vulkan loader and devices for the vulkan_w4a16 and vulkan_w4a8 kernels: libvulkan.so.1
 * opened once per process (dlopen: no loader or no driver is a refusal, never a failed start), one VkInstance
 * (Vulkan 1.1), the physical devices with what mplinear info prints about them, and one logical device per
 * physical device (a compute queue, the descriptor-set layout and the pipelines of every shader of both
 * kernels), created on first use and kept for the process, as the CUDA kernels keep their per-device state.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vk_internal.h"

/* VK_KHR_cooperative_matrix's shape query, declared here: Debian 12's headers (1.3.239) predate it. The
 * struct is the extension's VkCooperativeMatrixPropertiesKHR field for field. */
#define MPL_VK_STYPE_COOPMAT_PROPS_KHR ((VkStructureType)1000506001)
typedef struct mpl_vk_coopmat_props {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    int32_t scope; /* VkScopeKHR */
} mpl_vk_coopmat_props;
typedef VkResult (VKAPI_PTR *mpl_vk_coopmat_query_fn)(VkPhysicalDevice, uint32_t *, mpl_vk_coopmat_props *);

typedef struct phys {
    VkPhysicalDevice pd;
    mpl_vulkan_device_info info;
    uint32_t caps;
    uint32_t queue_family;
    VkPhysicalDeviceLimits limits;
    int timestamps;
    int pipeline_stats; /* VK_KHR_pipeline_executable_properties and its pipelineExecutableInfo feature */
} phys;

static struct {
    pthread_once_t once;
    void *lib;
    char note[128];
    PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
    PFN_vkDestroyInstance DestroyInstance;
    PFN_vkGetDeviceProcAddr GetDeviceProcAddr;
    PFN_vkCreateDevice CreateDevice;
    PFN_vkGetPhysicalDeviceMemoryProperties GetPhysicalDeviceMemoryProperties;
    VkInstance instance;
    int ndev;
    phys dev[MPL_VK_MAX_DEVICES];
    pthread_mutex_t open_mu;
    mpl_vk_device *open[MPL_VK_MAX_DEVICES];
    /* the test hook */
    int validation_asked;
    int validation_missing; /* asked for, but the layer or the extension is not installed: runs without */
    mpl_vk_message_fn message_fn;
    void *message_ctx;
    VkDebugUtilsMessengerEXT messenger;
} G = {.once = PTHREAD_ONCE_INIT, .open_mu = PTHREAD_MUTEX_INITIALIZER};

mpl_status mpl_vk_fail(VkResult r, const char *what) {
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "vulkan: %s: out of %s memory (VkResult %d)", what,
                             r == VK_ERROR_OUT_OF_HOST_MEMORY ? "host" : "device", (int)r);
    return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: %s failed: VkResult %d", what, (int)r);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)severity, (void)type, (void)user;
    if (G.message_fn) G.message_fn(G.message_ctx, data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

static const char *component_name(int32_t t) {
    switch (t) {
    case 0: return "f16";
    case 1: return "f32";
    case 2: return "f64";
    case 3: return "s8";
    case 4: return "s16";
    case 5: return "s32";
    case 7: return "u8";
    case 8: return "u16";
    case 9: return "u32";
    case 1000141000: return "bf16";
    default: return "?";
    }
}

static bool has_extension(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(e[i].extensionName, name) == 0) return true;
    return false;
}

/* Fills d->info, caps, the compute queue family and the limits of one physical device. */
static void describe(phys *d) {
    PFN_vkGetPhysicalDeviceProperties2 props2 =
        (PFN_vkGetPhysicalDeviceProperties2)G.GetInstanceProcAddr(G.instance, "vkGetPhysicalDeviceProperties2");
    PFN_vkGetPhysicalDeviceFeatures2 feats2 =
        (PFN_vkGetPhysicalDeviceFeatures2)G.GetInstanceProcAddr(G.instance, "vkGetPhysicalDeviceFeatures2");
    PFN_vkGetPhysicalDeviceQueueFamilyProperties qfp = (PFN_vkGetPhysicalDeviceQueueFamilyProperties)G.GetInstanceProcAddr(
        G.instance, "vkGetPhysicalDeviceQueueFamilyProperties");
    PFN_vkEnumerateDeviceExtensionProperties exts = (PFN_vkEnumerateDeviceExtensionProperties)G.GetInstanceProcAddr(
        G.instance, "vkEnumerateDeviceExtensionProperties");
    mpl_vulkan_device_info *in = &d->info;
    if (!props2 || !feats2 || !qfp || !exts) {
        snprintf(in->note, sizeof in->note, "the loader lacks Vulkan 1.1 physical-device queries");
        return;
    }
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    props2(d->pd, &p); /* first without the 1.2 struct: a 1.1 device need not know it */
    if (p.properties.apiVersion >= VK_API_VERSION_1_2) {
        sub.pNext = &drv;
        props2(d->pd, &p);
    }
    const VkPhysicalDeviceProperties *pp = &p.properties;
    snprintf(in->name, sizeof in->name, "%s", pp->deviceName);
    if (drv.driverName[0])
        snprintf(in->driver, sizeof in->driver, "%.120s %.120s", drv.driverName, drv.driverInfo);
    else
        snprintf(in->driver, sizeof in->driver, "driver version 0x%x", pp->driverVersion);
    static const char *const types[] = {"other", "integrated", "discrete", "virtual", "cpu"};
    snprintf(in->type, sizeof in->type, "%s", (unsigned)pp->deviceType < 5 ? types[pp->deviceType] : "other");
    in->api_version = pp->apiVersion;
    in->vendor_id = pp->vendorID;
    in->device_id = pp->deviceID;
    in->subgroup_size = (int)sub.subgroupSize;
    in->subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                              (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                              (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    in->max_storage_buffer_range = pp->limits.maxStorageBufferRange;
    d->limits = pp->limits;

    VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
    if (pp->apiVersion >= VK_API_VERSION_1_2) s16.pNext = &f16;
    feats2(d->pd, &f);
    in->shader_float16 = f16.shaderFloat16 == VK_TRUE;
    in->storage_16bit = s16.storageBuffer16BitAccess == VK_TRUE;

    uint32_t nq = 0;
    qfp(d->pd, &nq, NULL);
    VkQueueFamilyProperties q[16];
    if (nq > 16) nq = 16;
    qfp(d->pd, &nq, q);
    int family = -1;
    for (uint32_t i = 0; i < nq && family < 0; i++)
        if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = (int)i;
    d->queue_family = family < 0 ? 0 : (uint32_t)family;
    d->timestamps = family >= 0 && q[family].timestampValidBits > 0;

    uint32_t ne = 0;
    VkExtensionProperties *e = NULL;
    if (exts(d->pd, NULL, &ne, NULL) == VK_SUCCESS && ne) {
        e = calloc(ne, sizeof *e);
        if (e && exts(d->pd, NULL, &ne, e) != VK_SUCCESS) ne = 0;
    }
    if (e && has_extension(e, ne, "VK_KHR_cooperative_matrix")) {
        mpl_vk_coopmat_query_fn query = (mpl_vk_coopmat_query_fn)G.GetInstanceProcAddr(
            G.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
        uint32_t nc = 0;
        mpl_vk_coopmat_props cm[32];
        if (query && query(d->pd, &nc, NULL) >= 0 && nc) {
            if (nc > 32) nc = 32;
            for (uint32_t i = 0; i < nc; i++) cm[i] = (mpl_vk_coopmat_props){.sType = MPL_VK_STYPE_COOPMAT_PROPS_KHR};
            if (query(d->pd, &nc, cm) < 0) nc = 0;
        }
        size_t used = 0;
        for (uint32_t i = 0; i < nc; i++) {
            int w = snprintf(in->coopmat + used, sizeof in->coopmat - used, "%s%ux%ux%u %s*%s+%s->%s%s", used ? ", " : "",
                             cm[i].MSize, cm[i].NSize, cm[i].KSize, component_name(cm[i].AType),
                             component_name(cm[i].BType), component_name(cm[i].CType), component_name(cm[i].ResultType),
                             cm[i].scope == 3 ? "" : " (not subgroup scope)");
            if (w < 0 || (size_t)w >= sizeof in->coopmat - used) break;
            used += (size_t)w;
            if (cm[i].AType == 0 && cm[i].BType == 0 && cm[i].CType == 1 && cm[i].scope == 3) d->caps |= MPL_VK_CAP_COOPMAT;
        }
        if (!nc) snprintf(in->coopmat, sizeof in->coopmat, "extension present, no shapes reported");
    }
    if (e && has_extension(e, ne, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
        VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &pe};
        feats2(d->pd, &f2);
        d->pipeline_stats = pe.pipelineExecutableInfo == VK_TRUE;
    }
    free(e);

    if (pp->apiVersion < VK_API_VERSION_1_1)
        snprintf(in->note, sizeof in->note, "Vulkan %u.%u: needs 1.1", VK_API_VERSION_MAJOR(pp->apiVersion),
                 VK_API_VERSION_MINOR(pp->apiVersion));
    else if (!in->subgroup_arithmetic)
        snprintf(in->note, sizeof in->note, "no subgroup arithmetic in compute shaders");
    else if (family < 0)
        snprintf(in->note, sizeof in->note, "no compute queue");
    else if (in->subgroup_size < 1 || 128 % in->subgroup_size != 0)
        snprintf(in->note, sizeof in->note, "subgroup size %d does not divide the 128-thread workgroups",
                 in->subgroup_size);
    else
        in->usable = 1;
    if (in->usable) d->caps |= MPL_VK_CAP_USABLE;
    if (in->shader_float16) d->caps |= MPL_VK_CAP_FLOAT16;
    if (in->storage_16bit) d->caps |= MPL_VK_CAP_STORAGE16;
}

/* Whether the instance offers layer / extension `name`. */
static bool instance_has(const char *name, bool layer) {
    uint32_t n = 0;
    bool found = false;
    if (layer) {
        PFN_vkEnumerateInstanceLayerProperties f = (PFN_vkEnumerateInstanceLayerProperties)G.GetInstanceProcAddr(
            NULL, "vkEnumerateInstanceLayerProperties");
        if (!f || f(&n, NULL) != VK_SUCCESS || !n) return false;
        VkLayerProperties *l = calloc(n, sizeof *l);
        if (l && f(&n, l) == VK_SUCCESS)
            for (uint32_t i = 0; i < n; i++) found = found || strcmp(l[i].layerName, name) == 0;
        free(l);
    } else {
        PFN_vkEnumerateInstanceExtensionProperties f =
            (PFN_vkEnumerateInstanceExtensionProperties)G.GetInstanceProcAddr(NULL, "vkEnumerateInstanceExtensionProperties");
        if (!f || f(NULL, &n, NULL) != VK_SUCCESS || !n) return false;
        VkExtensionProperties *e = calloc(n, sizeof *e);
        if (e && f(NULL, &n, e) == VK_SUCCESS) found = has_extension(e, n, name);
        free(e);
    }
    return found;
}

static void load(void) {
    /* The loader's soname (Debian's libvulkan1); RTLD_LOCAL keeps its symbols out of the program's scope. */
    G.lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!G.lib) {
        snprintf(G.note, sizeof G.note, "no Vulkan loader: libvulkan.so.1 not found (Debian: libvulkan1)");
        return;
    }
    void *sym = dlsym(G.lib, "vkGetInstanceProcAddr");
    memcpy(&G.GetInstanceProcAddr, &sym, sizeof sym); /* POSIX: a data pointer holds a function's address */
    PFN_vkCreateInstance create =
        G.GetInstanceProcAddr ? (PFN_vkCreateInstance)G.GetInstanceProcAddr(NULL, "vkCreateInstance") : NULL;
    if (!create) {
        snprintf(G.note, sizeof G.note, "libvulkan.so.1 has no vkCreateInstance");
        return;
    }
    const char *layers[1] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[1] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    bool validate = G.validation_asked;
    if (validate && (!instance_has(layers[0], true) || !instance_has(extensions[0], false))) {
        G.validation_missing = 1;
        validate = false;
    }
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "mplinear",
                             .pEngineName = "mplinear",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = validate ? &mi : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validate ? 1u : 0u,
                               .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = validate ? 1u : 0u,
                               .ppEnabledExtensionNames = extensions};
    VkResult r = create(&ci, NULL, &G.instance);
    if (r != VK_SUCCESS) {
        snprintf(G.note, sizeof G.note, "vkCreateInstance: VkResult %d (%s)", (int)r,
                 r == VK_ERROR_INCOMPATIBLE_DRIVER ? "no Vulkan driver (ICD) installed" : "the loader refused");
        G.instance = VK_NULL_HANDLE;
        return;
    }
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT cm =
            (PFN_vkCreateDebugUtilsMessengerEXT)G.GetInstanceProcAddr(G.instance, "vkCreateDebugUtilsMessengerEXT");
        if (cm) cm(G.instance, &mi, NULL, &G.messenger);
    }
    G.DestroyInstance = (PFN_vkDestroyInstance)G.GetInstanceProcAddr(G.instance, "vkDestroyInstance");
    G.GetDeviceProcAddr = (PFN_vkGetDeviceProcAddr)G.GetInstanceProcAddr(G.instance, "vkGetDeviceProcAddr");
    G.CreateDevice = (PFN_vkCreateDevice)G.GetInstanceProcAddr(G.instance, "vkCreateDevice");
    G.GetPhysicalDeviceMemoryProperties = (PFN_vkGetPhysicalDeviceMemoryProperties)G.GetInstanceProcAddr(
        G.instance, "vkGetPhysicalDeviceMemoryProperties");
    PFN_vkEnumeratePhysicalDevices en =
        (PFN_vkEnumeratePhysicalDevices)G.GetInstanceProcAddr(G.instance, "vkEnumeratePhysicalDevices");
    uint32_t n = MPL_VK_MAX_DEVICES;
    VkPhysicalDevice pds[MPL_VK_MAX_DEVICES];
    if (!en || !G.GetDeviceProcAddr || !G.CreateDevice || !G.GetPhysicalDeviceMemoryProperties ||
        (r = en(G.instance, &n, pds)) < 0) {
        snprintf(G.note, sizeof G.note, "vkEnumeratePhysicalDevices failed");
        return;
    }
    if (n == 0) {
        snprintf(G.note, sizeof G.note, "the Vulkan loader reports no physical device (no driver, ICD, answers)");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        G.dev[i].pd = pds[i];
        describe(&G.dev[i]);
    }
    G.ndev = (int)n;
}

static void ensure_loaded(void) { pthread_once(&G.once, load); }

int mpl_vulkan_built(void) { return 1; }

int mpl_vulkan_devices(char *note, size_t cap) {
    ensure_loaded();
    if (note && cap) snprintf(note, cap, "%s", G.ndev ? "" : G.note);
    return G.ndev;
}

mpl_status mpl_vulkan_device_get(int i, mpl_vulkan_device_info *out) {
    ensure_loaded();
    if (!out || i < 0 || i >= G.ndev)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "Vulkan device %d: must be in 0..%d%s%s", i, G.ndev - 1,
                             G.ndev ? "" : ": ", G.ndev ? "" : G.note);
    *out = G.dev[i].info;
    return MPL_OK;
}

void mpl_vulkan_platform(const mpl_options *opt, mpl_platform *out) {
    ensure_loaded();
    out->vulkan_devices = G.ndev;
    int dev = opt ? opt->vulkan_device : 0;
    const char *name = opt ? opt->vulkan_device_name : NULL;
    if (name && name[0]) {
        dev = -1;
        size_t nl = strlen(name);
        for (int i = 0; i < G.ndev && dev < 0; i++)
            for (const char *s = G.dev[i].info.name; *s && dev < 0; s++)
                if (strncasecmp(s, name, nl) == 0) dev = i;
    }
    out->vulkan_device = dev;
    bool ok = dev >= 0 && dev < G.ndev;
    out->vulkan_caps = ok ? G.dev[dev].caps : 0;
    out->vulkan_max_range = ok ? G.dev[dev].info.max_storage_buffer_range : 0;
}

mpl_status mpl_vk_test_validation(mpl_vk_message_fn fn, void *ctx) {
    if (pthread_mutex_lock(&G.open_mu) != 0) return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: mutex");
    bool late = G.lib != NULL || G.ndev > 0 || G.note[0];
    if (!late) {
        G.validation_asked = 1;
        G.message_fn = fn;
        G.message_ctx = ctx;
    }
    pthread_mutex_unlock(&G.open_mu);
    if (late) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan: validation must be asked for before first use");
    ensure_loaded();
    if (!G.instance) return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", G.note);
    if (G.validation_missing)
        return mpl_set_error(MPL_ERR_UNSUPPORTED, "vulkan: VK_LAYER_KHRONOS_validation or VK_EXT_debug_utils is not "
                             "installed (Debian: vulkan-validationlayers): running without validation");
    return MPL_OK;
}

/* ---------- logical devices ---------- */

static mpl_status load_fns(mpl_vk_device *d) {
    struct {
        const char *name;
        PFN_vkVoidFunction *slot;
    } const table[] = {
        {"vkDestroyDevice", (PFN_vkVoidFunction *)&d->fn.DestroyDevice},
        {"vkGetDeviceQueue", (PFN_vkVoidFunction *)&d->fn.GetDeviceQueue},
        {"vkCreateBuffer", (PFN_vkVoidFunction *)&d->fn.CreateBuffer},
        {"vkDestroyBuffer", (PFN_vkVoidFunction *)&d->fn.DestroyBuffer},
        {"vkGetBufferMemoryRequirements", (PFN_vkVoidFunction *)&d->fn.GetBufferMemoryRequirements},
        {"vkAllocateMemory", (PFN_vkVoidFunction *)&d->fn.AllocateMemory},
        {"vkFreeMemory", (PFN_vkVoidFunction *)&d->fn.FreeMemory},
        {"vkBindBufferMemory", (PFN_vkVoidFunction *)&d->fn.BindBufferMemory},
        {"vkMapMemory", (PFN_vkVoidFunction *)&d->fn.MapMemory},
        {"vkUnmapMemory", (PFN_vkVoidFunction *)&d->fn.UnmapMemory},
        {"vkCreateShaderModule", (PFN_vkVoidFunction *)&d->fn.CreateShaderModule},
        {"vkDestroyShaderModule", (PFN_vkVoidFunction *)&d->fn.DestroyShaderModule},
        {"vkCreateDescriptorSetLayout", (PFN_vkVoidFunction *)&d->fn.CreateDescriptorSetLayout},
        {"vkCreatePipelineLayout", (PFN_vkVoidFunction *)&d->fn.CreatePipelineLayout},
        {"vkCreateComputePipelines", (PFN_vkVoidFunction *)&d->fn.CreateComputePipelines},
        {"vkDestroyPipeline", (PFN_vkVoidFunction *)&d->fn.DestroyPipeline},
        {"vkCreateDescriptorPool", (PFN_vkVoidFunction *)&d->fn.CreateDescriptorPool},
        {"vkDestroyDescriptorPool", (PFN_vkVoidFunction *)&d->fn.DestroyDescriptorPool},
        {"vkAllocateDescriptorSets", (PFN_vkVoidFunction *)&d->fn.AllocateDescriptorSets},
        {"vkUpdateDescriptorSets", (PFN_vkVoidFunction *)&d->fn.UpdateDescriptorSets},
        {"vkCreateCommandPool", (PFN_vkVoidFunction *)&d->fn.CreateCommandPool},
        {"vkDestroyCommandPool", (PFN_vkVoidFunction *)&d->fn.DestroyCommandPool},
        {"vkAllocateCommandBuffers", (PFN_vkVoidFunction *)&d->fn.AllocateCommandBuffers},
        {"vkBeginCommandBuffer", (PFN_vkVoidFunction *)&d->fn.BeginCommandBuffer},
        {"vkEndCommandBuffer", (PFN_vkVoidFunction *)&d->fn.EndCommandBuffer},
        {"vkCmdBindPipeline", (PFN_vkVoidFunction *)&d->fn.CmdBindPipeline},
        {"vkCmdBindDescriptorSets", (PFN_vkVoidFunction *)&d->fn.CmdBindDescriptorSets},
        {"vkCmdPushConstants", (PFN_vkVoidFunction *)&d->fn.CmdPushConstants},
        {"vkCmdDispatch", (PFN_vkVoidFunction *)&d->fn.CmdDispatch},
        {"vkCmdCopyBuffer", (PFN_vkVoidFunction *)&d->fn.CmdCopyBuffer},
        {"vkCmdFillBuffer", (PFN_vkVoidFunction *)&d->fn.CmdFillBuffer},
        {"vkCmdPipelineBarrier", (PFN_vkVoidFunction *)&d->fn.CmdPipelineBarrier},
        {"vkCmdWriteTimestamp", (PFN_vkVoidFunction *)&d->fn.CmdWriteTimestamp},
        {"vkCmdResetQueryPool", (PFN_vkVoidFunction *)&d->fn.CmdResetQueryPool},
        {"vkCreateQueryPool", (PFN_vkVoidFunction *)&d->fn.CreateQueryPool},
        {"vkDestroyQueryPool", (PFN_vkVoidFunction *)&d->fn.DestroyQueryPool},
        {"vkGetQueryPoolResults", (PFN_vkVoidFunction *)&d->fn.GetQueryPoolResults},
        {"vkCreateFence", (PFN_vkVoidFunction *)&d->fn.CreateFence},
        {"vkDestroyFence", (PFN_vkVoidFunction *)&d->fn.DestroyFence},
        {"vkResetFences", (PFN_vkVoidFunction *)&d->fn.ResetFences},
        {"vkWaitForFences", (PFN_vkVoidFunction *)&d->fn.WaitForFences},
        {"vkQueueSubmit", (PFN_vkVoidFunction *)&d->fn.QueueSubmit},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        *table[i].slot = G.GetDeviceProcAddr(d->dev, table[i].name);
        if (!*table[i].slot) return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: the driver has no %s", table[i].name);
    }
    return MPL_OK;
}

/* One compute pipeline of the shared layout; spec: the GEMV's five specialization constants (ids 0..4:
 * invocations, rows, chunks in flight, prefetch, row blocks per workgroup) or NULL; flags: e.g. capture the
 * driver's statistics (mpl_vk_test_gemv_stats). */
static VkResult make_pipeline(const mpl_vk_device *d, const uint32_t *code, size_t bytes, const uint32_t *spec,
                              VkPipelineCreateFlags flags, VkPipeline *out) {
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = code};
    VkShaderModule mod;
    VkResult r = d->fn.CreateShaderModule(d->dev, &mi, NULL, &mod);
    if (r != VK_SUCCESS) return r;
    const VkSpecializationMapEntry map[5] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}, {3, 12, 4}, {4, 16, 4}};
    const VkSpecializationInfo si = {.mapEntryCount = 5, .pMapEntries = map, .dataSize = 20, .pData = spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = flags,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = "main",
                  .pSpecializationInfo = spec ? &si : NULL},
        .layout = d->pipeline_layout};
    r = d->fn.CreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, out);
    d->fn.DestroyShaderModule(d->dev, mod, NULL);
    return r;
}

static mpl_status make_pipelines(mpl_vk_device *d) {
    VkDescriptorSetLayoutBinding b[6];
    for (uint32_t i = 0; i < 6; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo li = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 6, .pBindings = b};
    VkResult r = d->fn.CreateDescriptorSetLayout(d->dev, &li, NULL, &d->set_layout);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 9 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1,
                                     .pSetLayouts = &d->set_layout,
                                     .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pr};
    r = d->fn.CreatePipelineLayout(d->dev, &pi, NULL, &d->pipeline_layout);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreatePipelineLayout");
    const uint32_t *code[MPL_VK_SHADERS] = {
        [MPL_VK_SHADER_GEMV] = mpl_vk_spv_w4a16_gemv, [MPL_VK_SHADER_TILED] = mpl_vk_spv_w4a16_tiled,
        [MPL_VK_SHADER_W4A8_GEMV] = mpl_vk_spv_w4a8_gemv, [MPL_VK_SHADER_W4A8_TILED] = mpl_vk_spv_w4a8_tiled};
    const size_t bytes[MPL_VK_SHADERS] = {
        [MPL_VK_SHADER_GEMV] = mpl_vk_spv_w4a16_gemv_bytes, [MPL_VK_SHADER_TILED] = mpl_vk_spv_w4a16_tiled_bytes,
        [MPL_VK_SHADER_W4A8_GEMV] = mpl_vk_spv_w4a8_gemv_bytes, [MPL_VK_SHADER_W4A8_TILED] = mpl_vk_spv_w4a8_tiled_bytes};
    d->gemv_wg = MPL_VK_GEMV_WG, d->gemv_rows = MPL_VK_GEMV_ROWS, d->gemv_unroll = MPL_VK_GEMV_UNROLL;
    d->gemv_prefetch = MPL_VK_GEMV_PREFETCH, d->gemv_blocks = MPL_VK_GEMV_BLOCKS;
    for (int s = 0; s < MPL_VK_SHADERS; s++) {
        const uint32_t spec[5] = {d->gemv_wg, d->gemv_rows, d->gemv_unroll, d->gemv_prefetch, d->gemv_blocks};
        r = make_pipeline(d, code[s], bytes[s], s == MPL_VK_SHADER_GEMV ? spec : NULL, 0, &d->pipelines[s]);
        if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateComputePipelines");
    }
    return MPL_OK;
}

mpl_status mpl_vk_test_gemv_shape(int device, uint32_t wg, uint32_t rows, uint32_t unroll, uint32_t prefetch,
                                  uint32_t blocks) {
    return mpl_vk_test_gemv_spirv(device, NULL, 0, wg, rows, unroll, prefetch, blocks);
}

mpl_status mpl_vk_test_gemv_spirv(int device, const uint32_t *spv, size_t spv_bytes, uint32_t wg, uint32_t rows,
                                  uint32_t unroll, uint32_t prefetch, uint32_t blocks) {
    mpl_vk_device *d;
    mpl_status st = mpl_vk_device_open(device, &d);
    if (st != MPL_OK) return st;
    if (wg == 0 && rows == 0 && unroll == 0)
        wg = MPL_VK_GEMV_WG, rows = MPL_VK_GEMV_ROWS, unroll = MPL_VK_GEMV_UNROLL, prefetch = MPL_VK_GEMV_PREFETCH,
        blocks = MPL_VK_GEMV_BLOCKS;
    if (blocks == 0) blocks = 1;
    /* rows divides the layout's 64-row padding (no workgroup reads past n_pad) */
    if (rows < 1 || rows > MPL_VULKAN_W4A16_NP || MPL_VULKAN_W4A16_NP % rows != 0 || unroll < 1 || unroll > 8 || prefetch > 2 || (prefetch == 2 && unroll != 1) || wg < 1 ||
        blocks > 1024 || wg > d->limits.maxComputeWorkGroupSize[0] || wg > d->limits.maxComputeWorkGroupInvocations ||
        (uint64_t)wg * rows * 4 * (prefetch == 2 ? 2 : 1) > d->limits.maxComputeSharedMemorySize)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "vulkan: GEMV shape %u invocations x %u rows x %u chunks, prefetch %u, %u row blocks: rows "
                             "must divide %d, chunks 1..8, prefetch 0, 1 or 2 (2: chunks 1), blocks 0..1024, the "
                             "workgroup within the device's limits",
                             wg, rows, unroll, prefetch, blocks, MPL_VULKAN_W4A16_NP);
    const uint32_t spec[5] = {wg, rows, unroll, prefetch, blocks};
    const VkPipelineCreateFlags flags = d->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0;
    VkPipeline p;
    VkResult r = spv ? make_pipeline(d, spv, spv_bytes, spec, flags, &p)
                     : make_pipeline(d, mpl_vk_spv_w4a16_gemv, mpl_vk_spv_w4a16_gemv_bytes, spec, flags, &p);
    if (r != VK_SUCCESS) return mpl_vk_fail(r, "vkCreateComputePipelines");
    d->fn.DestroyPipeline(d->dev, d->pipelines[MPL_VK_SHADER_GEMV], NULL);
    d->pipelines[MPL_VK_SHADER_GEMV] = p;
    d->gemv_wg = wg, d->gemv_rows = rows, d->gemv_unroll = unroll, d->gemv_prefetch = prefetch, d->gemv_blocks = blocks;
    d->gemv_captured = flags != 0;
    return MPL_OK;
}

mpl_status mpl_vk_test_gemv_stats(int device, char *buf, size_t size) {
    if (!buf || size == 0) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan: no buffer for the statistics");
    buf[0] = 0;
    mpl_vk_device *d;
    mpl_status st = mpl_vk_device_open(device, &d);
    if (st != MPL_OK) return st;
    if (!d->gemv_captured || !d->fn.GetPipelineExecutablePropertiesKHR || !d->fn.GetPipelineExecutableStatisticsKHR)
        return mpl_set_error(MPL_ERR_UNSUPPORTED,
                             "vulkan: no pipeline statistics (the driver lacks VK_KHR_pipeline_executable_properties, "
                             "or the GEMV pipeline is not one mpl_vk_test_gemv_shape made)");
    const VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = d->pipelines[MPL_VK_SHADER_GEMV]};
    VkPipelineExecutablePropertiesKHR ex[4];
    uint32_t nex = 4;
    for (uint32_t i = 0; i < 4; i++) ex[i] = (VkPipelineExecutablePropertiesKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
    VkResult r = d->fn.GetPipelineExecutablePropertiesKHR(d->dev, &pi, &nex, ex);
    if (r < 0) return mpl_vk_fail(r, "vkGetPipelineExecutablePropertiesKHR");
    size_t used = 0;
    for (uint32_t e = 0; e < nex; e++) {
        VkPipelineExecutableStatisticKHR sv[32];
        uint32_t ns = 32;
        for (uint32_t i = 0; i < 32; i++) sv[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        const VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                                .pipeline = pi.pipeline, .executableIndex = e};
        r = d->fn.GetPipelineExecutableStatisticsKHR(d->dev, &ei, &ns, sv);
        if (r < 0) return mpl_vk_fail(r, "vkGetPipelineExecutableStatisticsKHR");
        int w = snprintf(buf + used, size - used, "%s%s (subgroup %u):", e ? "; " : "", ex[e].name, ex[e].subgroupSize);
        if (w < 0 || (size_t)w >= size - used) return MPL_OK;
        used += (size_t)w;
        for (uint32_t i = 0; i < ns; i++) {
            const VkPipelineExecutableStatisticValueKHR v = sv[i].value;
            switch (sv[i].format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                w = snprintf(buf + used, size - used, " %s=%s", sv[i].name, v.b32 ? "true" : "false");
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                w = snprintf(buf + used, size - used, " %s=%lld", sv[i].name, (long long)v.i64);
                break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                w = snprintf(buf + used, size - used, " %s=%llu", sv[i].name, (unsigned long long)v.u64);
                break;
            default:
                w = snprintf(buf + used, size - used, " %s=%g", sv[i].name, v.f64);
                break;
            }
            if (w < 0 || (size_t)w >= size - used) return MPL_OK;
            used += (size_t)w;
        }
    }
    return MPL_OK;
}

static mpl_status open_device(int i, mpl_vk_device **out) {
    const phys *p = &G.dev[i];
    mpl_vk_device *d = calloc(1, sizeof *d);
    if (!d) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    d->index = i;
    d->queue_family = p->queue_family;
    d->limits = p->limits;
    d->timestamps = p->timestamps;
    G.GetPhysicalDeviceMemoryProperties(p->pd, &d->mem);
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = p->queue_family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &prio};
    /* VK_KHR_pipeline_executable_properties where the driver has it: the benchmark and tests read the GEMV
     * pipeline's statistics (registers, ...) through mpl_vk_test_gemv_stats */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    const char *dext[1] = {VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = p->pipeline_stats ? &pe : NULL,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = p->pipeline_stats ? 1u : 0u,
                             .ppEnabledExtensionNames = dext};
    VkResult r = G.CreateDevice(p->pd, &ci, NULL, &d->dev);
    if (r != VK_SUCCESS) {
        free(d);
        return mpl_vk_fail(r, "vkCreateDevice");
    }
    mpl_status st = load_fns(d);
    if (st == MPL_OK && p->pipeline_stats) {
        d->fn.GetPipelineExecutablePropertiesKHR = (PFN_vkGetPipelineExecutablePropertiesKHR)G.GetDeviceProcAddr(
            d->dev, "vkGetPipelineExecutablePropertiesKHR");
        d->fn.GetPipelineExecutableStatisticsKHR = (PFN_vkGetPipelineExecutableStatisticsKHR)G.GetDeviceProcAddr(
            d->dev, "vkGetPipelineExecutableStatisticsKHR");
        d->pipeline_stats = d->fn.GetPipelineExecutablePropertiesKHR && d->fn.GetPipelineExecutableStatisticsKHR;
    }
    if (st == MPL_OK) st = make_pipelines(d);
    if (st != MPL_OK) {
        /* the device is leaked rather than torn down half-built; the call fails (as cuda_w4a16's blas_init) */
        return st;
    }
    d->fn.GetDeviceQueue(d->dev, p->queue_family, 0, &d->queue);
    pthread_mutex_init(&d->queue_mu, NULL);
    *out = d;
    return MPL_OK;
}

mpl_status mpl_vk_device_open(int i, mpl_vk_device **out) {
    ensure_loaded();
    *out = NULL;
    if (i < 0 || i >= G.ndev)
        return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: device %d does not exist (%d devices%s%s)", i, G.ndev,
                             G.ndev ? "" : ": ", G.ndev ? "" : G.note);
    if (!(G.dev[i].caps & MPL_VK_CAP_USABLE))
        return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: device %d (%s): %s", i, G.dev[i].info.name, G.dev[i].info.note);
    if (pthread_mutex_lock(&G.open_mu) != 0) return mpl_set_error(MPL_ERR_INTERNAL, "vulkan: mutex");
    mpl_status st = MPL_OK;
    if (!G.open[i]) st = open_device(i, &G.open[i]);
    *out = G.open[i];
    pthread_mutex_unlock(&G.open_mu);
    return st;
}
