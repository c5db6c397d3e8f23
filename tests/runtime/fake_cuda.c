/* fake_cuda.c: a stand-in libcuda.so.1 for the CUDA backend's host side on
 * machines without a GPU (tests/runtime/fake_cuda_cache.sh).  It is an sm_90
 * device with host memory for device memory; modules are copied byte for byte
 * (a truncated image reads past its buffer, which ASan sees) and launches
 * are checked, not run: each kernel's parameters are read from its cubin's
 * .nv.info (EIATTR_KPARAM_INFO records), and a launch aborts whose
 * kernelParams array holds fewer pointers (the real driver would read past
 * it) or passes anything but a tensor map this fake encoded for a 128-byte
 * parameter.  With FAKE_CUDA_LOG=FILE each launch appends a line: the
 * kernel, its parameter count, block size and dynamic shared memory.
 * Defined: the entry points runtime/cuda_backend.c loads, and
 * cuGetExportTable, which NVRTC itself looks up in libcuda.so.1 (told "not
 * supported", it compiles as with no driver). */
#define _GNU_SOURCE
#include <cuda.h>
#include <elf.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MODULE_MAGIC = 0x4d4f44, EIATTR_KPARAM_INFO = 0x17, EIFMT_SVAL = 4 };

typedef struct Function {
    struct Module *module;
    struct Function *next;   /* the module's others */
    char name[256];
} Function;

typedef struct Module {
    int magic;
    size_t size;
    unsigned char *image;    /* a copy: every byte the driver would read */
    Function *functions;     /* freed with the module, as the driver's are */
} Module;

static Module *live(CUmodule m) {
    Module *mod = (Module *)m;
    if (!mod || mod->magic != MODULE_MAGIC) {
        fprintf(stderr, "fake libcuda: a module used after it was unloaded\n");
        abort();
    }
    return mod;
}

/* What cuTensorMapEncodeTiled writes first in a map: a launch checks that
 * each 128-byte parameter points to one. */
static const char map_marker[16] = "fake tensor map";

/* The parameters of kernel `name` in a cubin, or -1 (PTX, or not found);
 * sizes[ordinal] their sizes in bytes (up to max of them). */
static int kernel_params(const Module *mod, const char *name, int *sizes, int max) {
    const unsigned char *p = mod->image;
    if (mod->size < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0) return -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
    const char *names = (const char *)p + sh[eh->e_shstrndx].sh_offset;
    char want[300];
    snprintf(want, sizeof want, ".nv.info.%s", name);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (strcmp(names + sh[i].sh_name, want) != 0) continue;
        const unsigned char *q = p + sh[i].sh_offset, *end = q + sh[i].sh_size;
        int n = 0;
        while (q + 4 <= end) {   /* records: format, attribute, then (SVAL) a 16-bit size and the value */
            if (q[0] == EIFMT_SVAL) {
                /* KPARAM_INFO: index (4 bytes), ordinal (2), offset (2), then a word whose top 14 bits are the size */
                if (q[1] == EIATTR_KPARAM_INFO && q + 16 <= end) {
                    int ordinal = q[8] | q[9] << 8;
                    uint32_t word = (uint32_t)q[12] | (uint32_t)q[13] << 8 | (uint32_t)q[14] << 16 | (uint32_t)q[15] << 24;
                    if (ordinal < max) sizes[ordinal] = (int)((word >> 18) & 0x3fff);
                    n++;
                }
                q += 4 + (q[2] | q[3] << 8);
            } else {
                q += 4;
            }
        }
        return n;
    }
    return -1;
}

static int context;

CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = ordinal; return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDeviceGetName(char *name, int len, CUdevice d) { (void)d; snprintf(name, (size_t)len, "fake sm_90 (tests/runtime/fake_cuda.c)"); return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)&context; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    const unsigned char *p = image;
    size_t size;
    if (memcmp(p, ELFMAG, SELFMAG) == 0) {   /* a cubin: up to its last section or header */
        const Elf64_Ehdr *eh = image;
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
        size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
        for (int i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > size) size = sh[i].sh_offset + sh[i].sh_size;
        if (eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize > size) size = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;
    } else {
        size = strlen(image) + 1;   /* PTX */
    }
    Module *mod = malloc(sizeof *mod);
    if (!mod || !(mod->image = malloc(size))) {
        free(mod);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(mod->image, image, size);
    mod->size = size;
    mod->functions = NULL;
    mod->magic = MODULE_MAGIC;
    *m = (CUmodule)mod;
    return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) {
    Module *mod = live(m);
    mod->magic = 0;
    for (Function *fn = mod->functions, *next; fn; fn = next) {
        next = fn->next;
        free(fn);
    }
    free(mod->image);
    free(mod);
    return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    Module *mod = live(m);
    if (!memmem(mod->image, mod->size, name, strlen(name))) return CUDA_ERROR_NOT_FOUND;
    Function *fn = malloc(sizeof *fn);
    if (!fn) return CUDA_ERROR_OUT_OF_MEMORY;
    fn->module = mod;
    fn->next = mod->functions;
    mod->functions = fn;
    snprintf(fn->name, sizeof fn->name, "%s", name);
    *f = (CUfunction)fn;
    return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    (void)a, (void)v;
    live((CUmodule)((Function *)f)->module);
    return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream stream, void **params, void **extra) {
    (void)gx, (void)gy, (void)gz, (void)stream, (void)extra;
    Function *fn = (Function *)f;
    Module *mod = live((CUmodule)fn->module);
    int sizes[512] = {0};
    int n = kernel_params(mod, fn->name, sizes, 512);
    size_t held = params ? malloc_usable_size(params) / sizeof(void *) : 0;   /* at least what was allocated */
    if (n >= 0 && (size_t)n > held) {
        fprintf(stderr, "fake libcuda: %s takes %d parameters but kernelParams holds %zu: the driver would read past it\n",
                fn->name, n, held);
        abort();
    }
    /* (held rounds up: a tensor map one short is read from past the array's end, or is no map) */
    for (int i = 0; i < n && i < 512; i++)
        if (!params[i] || (sizes[i] == 128 && memcmp(params[i], map_marker, sizeof map_marker) != 0)) {
            fprintf(stderr, "fake libcuda: %s: parameter %d is %s\n", fn->name, i,
                    params[i] ? "not a tensor map, where the kernel takes one" : "NULL");
            abort();
        }
    const char *log = getenv("FAKE_CUDA_LOG");
    FILE *out = log ? fopen(log, "a") : NULL;
    if (out) {
        fprintf(out, "launch %s params %d block %ux%ux%u smem %u\n", fn->name, n, bx, by, bz, smem);
        fclose(out);
    }
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    void *q = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!q) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)q;
    return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return CUDA_SUCCESS; }
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) { *free_bytes = (size_t)100 << 30; *total = (size_t)140 << 30; return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent *e, unsigned flags) { (void)flags; *e = (CUevent)malloc(16); return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; }
CUresult cuEventRecord(CUevent e, CUstream s) { (void)e, (void)s; return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { (void)a, (void)b; *ms = 1.0f; return CUDA_SUCCESS; }
CUresult cuEventDestroy_v2(CUevent e) { free(e); return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fake libcuda error"; return CUDA_SUCCESS; }
/* The driver's rules that tensor maps are checked against (rank, box, alignment, strides). */
CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType dt, cuuint32_t rank, void *addr, const cuuint64_t *dim,
                                const cuuint64_t *stride, const cuuint32_t *box, const cuuint32_t *elem_strides,
                                CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                                CUtensorMapFloatOOBfill oob) {
    (void)dt, (void)elem_strides, (void)il, (void)sw, (void)l2, (void)oob;
    if ((uintptr_t)m % 64 || rank < 1 || rank > 5 || (uintptr_t)addr % 16) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; i++)
        if (box[i] == 0 || box[i] > 256 || dim[i] == 0) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 1 < rank; i++)
        if (stride[i] % 16) return CUDA_ERROR_INVALID_VALUE;
    memset(m, 0, sizeof *m);
    memcpy(m, map_marker, sizeof map_marker);
    return CUDA_SUCCESS;
}
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
    (void)id;
    *table = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}
