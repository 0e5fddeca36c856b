#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <type_traits>

#include "loom/error.h"
#include "runtime/library.h"

namespace loom::runtime::cuda {

namespace {

struct State {
  Driver d{};
  GpuInfo gpu;
  std::string missing;  // "" when usable
};

// Names for the results a driver that cannot describe itself (the toolkit's
// link-time stub, which cuGetErrorName does not know) returns at cuInit.
std::string fallback_text(CUresult r) {
  switch (r) {
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY (out of memory)";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED (initialization error)";
    case 34: return "CUDA_ERROR_STUB_LIBRARY (libcuda is the toolkit's stub, not a real NVIDIA driver)";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER (the NVIDIA driver is older than this CUDA version)";
    case 100: return "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)";
    default: return "CUDA error " + std::to_string(r);
  }
}

std::string text_of(const Driver &d, CUresult r) {
  const char *name = nullptr, *what = nullptr;
  if (!d.GetErrorName || d.GetErrorName(r, &name) != kCudaSuccess || !name) return fallback_text(r);
  std::string s = name;
  if (d.GetErrorString && d.GetErrorString(r, &what) == kCudaSuccess && what) s += std::string(" (") + what + ")";
  return s;
}

// Resolves every entry point, then initializes the driver and reads GPU 0's
// properties; the first failure becomes `missing`. The library stays loaded.
State load() {
  State s;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    const std::string first = e ? e : "unknown error";
    lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      s.missing = "CUDA: libcuda.so.1 not found (no NVIDIA driver installed): " + first;
      return s;
    }
  }
  Driver &d = s.d;
  Symbols need(lib, "CUDA: libcuda", " (the NVIDIA driver is too old)");
  need(d.Init, "cuInit");
  need(d.GetErrorName, "cuGetErrorName");
  need(d.GetErrorString, "cuGetErrorString");
  need(d.DeviceGetCount, "cuDeviceGetCount");
  need(d.DeviceGet, "cuDeviceGet");
  need(d.DeviceGetName, "cuDeviceGetName");
  need(d.DeviceGetAttribute, "cuDeviceGetAttribute");
  need(d.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  need(d.CtxSetCurrent, "cuCtxSetCurrent");
  need(d.CtxSynchronize, "cuCtxSynchronize");
  need(d.MemAlloc, "cuMemAlloc_v2");
  need(d.MemFree, "cuMemFree_v2");
  need(d.MemGetInfo, "cuMemGetInfo_v2");
  need(d.MemcpyHtoD, "cuMemcpyHtoD_v2");
  need(d.MemcpyDtoH, "cuMemcpyDtoH_v2");
  need(d.MemcpyDtoD, "cuMemcpyDtoD_v2");
  need(d.ModuleLoadData, "cuModuleLoadData");
  need(d.ModuleGetFunction, "cuModuleGetFunction");
  need(d.ModuleUnload, "cuModuleUnload");
  need(d.LaunchKernel, "cuLaunchKernel");
  need(d.EventCreate, "cuEventCreate");
  need(d.EventRecord, "cuEventRecord");
  need(d.EventSynchronize, "cuEventSynchronize");
  need(d.EventElapsedTime, "cuEventElapsedTime");
  need(d.EventDestroy, "cuEventDestroy_v2");
  auto optional = [lib](auto &fn, const char *symbol) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol)); };
  optional(d.FuncGetParamInfo, "cuFuncGetParamInfo");
  optional(d.GraphCreate, "cuGraphCreate");
  optional(d.GraphAddKernelNode, "cuGraphAddKernelNode_v2");
  optional(d.GraphInstantiate, "cuGraphInstantiateWithFlags");
  optional(d.GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
  optional(d.GraphLaunch, "cuGraphLaunch");
  optional(d.GraphExecDestroy, "cuGraphExecDestroy");
  optional(d.GraphDestroy, "cuGraphDestroy");
  std::string &m = s.missing;
  m = need.missing;
  if (!m.empty()) return s;

  auto failed = [&](const char *what, CUresult r) {
    m = std::string("CUDA: ") + what + " failed: " + text_of(d, r);
    return s;
  };
  if (CUresult r = d.Init(0); r != kCudaSuccess) return failed("cuInit", r);
  int count = 0;
  if (CUresult r = d.DeviceGetCount(&count); r != kCudaSuccess) return failed("cuDeviceGetCount", r);
  if (count < 1) {
    m = "CUDA: no GPU found";
    return s;
  }
  GpuInfo &g = s.gpu;
  if (CUresult r = d.DeviceGet(&g.device, 0); r != kCudaSuccess) return failed("cuDeviceGet", r);
  char name[256] = {};
  if (CUresult r = d.DeviceGetName(name, sizeof name - 1, g.device); r != kCudaSuccess)
    return failed("cuDeviceGetName", r);
  g.name = name;
  if (CUresult r = d.DeviceGetAttribute(&g.major, kAttrComputeCapabilityMajor, g.device); r != kCudaSuccess)
    return failed("cuDeviceGetAttribute", r);
  if (CUresult r = d.DeviceGetAttribute(&g.minor, kAttrComputeCapabilityMinor, g.device); r != kCudaSuccess)
    return failed("cuDeviceGetAttribute", r);
  return s;
}

const State &state() {
  static const State s = load();
  return s;
}

const State &usable() {
  const State &s = state();
  if (!s.missing.empty()) throw Error(s.missing);
  return s;
}

}  // namespace

const std::string &driver_missing() { return state().missing; }

const Driver &driver() { return usable().d; }

std::string error_text(CUresult r) { return text_of(state().d, r); }

void check(CUresult r, const char *what) {
  if (r != kCudaSuccess) throw Error(std::string("CUDA: ") + what + " failed: " + error_text(r));
}

const GpuInfo &gpu() { return usable().gpu; }

void bind_context() {
  thread_local bool bound = false;
  if (bound) return;
  // The primary context is the one the CUDA runtime (and so cuBLAS) uses too;
  // retained once and never released, like the device itself.
  static const CUcontext ctx = [] {
    CUcontext c = nullptr;
    check(driver().DevicePrimaryCtxRetain(&c, gpu().device), "cuDevicePrimaryCtxRetain");
    return c;
  }();
  check(driver().CtxSetCurrent(ctx), "cuCtxSetCurrent");
  bound = true;
}

}  // namespace loom::runtime::cuda
