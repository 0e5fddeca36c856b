// The CUDA driver API, loaded from libcuda with dlopen on first use, so a
// binary built here runs on machines with or without an NVIDIA driver. Only
// the few types and entry points the CUDA device needs are declared; handles
// are opaque pointers and every call returns a CUresult (0 = success).
#pragma once
#include <cstddef>
#include <string>

namespace loom::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphNode = struct CUgraphNode_st *;
using CUgraphExec = struct CUgraphExec_st *;

// cuda.h's CUDA_KERNEL_NODE_PARAMS_v2: a kernel node's launch (the function
// set, so `kern` and `ctx` are unused).
struct KernelNodeParams {
  CUfunction func;
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  void **params;
  void **extra;
  void *kern;
  CUcontext ctx;
};

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorOutOfMemory = 2;
constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// The entry points, named as in cuda.h without the "cu" prefix; the versioned
// (_v2) symbols are resolved where the driver has them.
struct Driver {
  CUresult (*Init)(unsigned flags);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int ordinal);
  CUresult (*DeviceGetName)(char *, int len, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int attribute, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)();
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);                          // cuMemAlloc_v2
  CUresult (*MemFree)(CUdeviceptr);                                     // cuMemFree_v2
  CUresult (*MemGetInfo)(size_t *free, size_t *total);                  // cuMemGetInfo_v2
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);            // cuMemcpyHtoD_v2
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);                  // cuMemcpyDtoH_v2
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);             // cuMemcpyDtoD_v2
  CUresult (*ModuleLoadData)(CUmodule *, const void *image);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*LaunchKernel)(CUfunction, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                           unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream, void **params,
                           void **extra);
  CUresult (*EventCreate)(CUevent *, unsigned flags);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
  CUresult (*EventDestroy)(CUevent);  // cuEventDestroy_v2
  // Optional (drivers of CUDA 12.4 and later; nullptr before): a kernel
  // parameter's offset and size, an error past the last parameter.
  CUresult (*FuncGetParamInfo)(CUfunction, size_t index, size_t *offset, size_t *size);
  // Optional (nullptr where the driver lacks any of them: drivers before
  // CUDA 12): graphs of kernel nodes, the _v2 entry points.
  CUresult (*GraphCreate)(CUgraph *, unsigned flags);
  CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *deps, size_t ndeps,
                                 const KernelNodeParams *);                         // cuGraphAddKernelNode_v2
  CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long flags);  // cuGraphInstantiateWithFlags
  CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const KernelNodeParams *);  // _v2
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
  bool graphs() const {
    return GraphCreate && GraphAddKernelNode && GraphInstantiate && GraphExecKernelNodeSetParams && GraphLaunch &&
           GraphExecDestroy && GraphDestroy;
  }
};

// Why the driver cannot be used, as a sentence naming what is missing (no
// libcuda, cuInit failing, no GPU); "" when libcuda loaded, cuInit(0)
// succeeded and there is at least one GPU. Computed once, thread-safe.
const std::string &driver_missing();
// The loaded entry points; throws loom::Error(driver_missing()) when unusable.
const Driver &driver();
// Throws loom::Error "CUDA: <what> failed: <error name> (<error string>)"
// unless r is success.
void check(CUresult r, const char *what);
// "<error name> (<error string>)" for a result, e.g.
// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string error_text(CUresult r);

// The GPU used (ordinal 0) and its properties.
struct GpuInfo {
  CUdevice device = 0;
  std::string name;          // cuDeviceGetName
  int major = 0, minor = 0;  // compute capability
  std::string arch() const { return "sm_" + std::to_string(major) + std::to_string(minor); }
};
const GpuInfo &gpu();
// Makes the GPU's primary context current on the calling thread (once per
// thread); every call into the driver that touches memory, modules or
// launches needs it.
void bind_context();

}  // namespace loom::runtime::cuda
