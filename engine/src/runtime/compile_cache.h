// The one compile-and-cache routine every device shares: each kernel's cache
// key, the disk cache's entry loaded or healed, the misses built in parallel
// (several kernels to an object where the compiler takes a batch), published
// and loaded again, and the counts of both. A device supplies only what is its
// own: the key's text, how a batch becomes an object and how an object
// becomes a program (runtime/disk_cache.h has the file format).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace loom::runtime {

// A kernel's place in the disk cache.
struct CacheEntry {
  const KernelSource *kernel = nullptr;
  std::string key;   // 32 hex digits, runtime/disk_cache.h's hash_hex
  std::string path;  // in cache_dir()
};

class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  // Everything that determines a kernel's object, hashed into its key: the
  // source and the compiler's identity, flags and target.
  virtual std::string key_text(const KernelSource &k) const = 0;
  // The cache files' extension (".so", ".cubin").
  virtual const char *extension() const = 0;
  // At most this many kernels build into one object (1: each alone).
  virtual size_t batch_limit() const { return 1; }
  // The object holding every kernel of `batch`; throws InternalError with the
  // compiler's complaint when it fails.
  virtual std::string build(const std::vector<const CacheEntry *> &batch) const = 0;
  // The program of `e` from its cache file, whose object (trailer checked and
  // removed) is `object`; nullptr, with `error` set, when it cannot be used.
  virtual std::shared_ptr<const Program> load(const CacheEntry &e, const std::string &object,
                                              std::string &error) const = 0;
};

// For compilers that run a host compiler into a shared object (the CPU's
// kernels, the emulated GPU's): `source` written to a temporary file (named
// `suffix`) beside `near`, compiled by `command` + {-o object, file} + `libs`;
// returns the object. Throws InternalError with `what`, the compiler's output
// and the source when it fails; leaves no temporary file behind.
std::string compile_shared_object(const std::vector<std::string> &command, const std::vector<std::string> &libs,
                                  const std::string &source, const std::string &near, const char *suffix,
                                  const std::string &what);
// The address of `symbol` in the shared object at `path`, its dlopen handle in
// `handle`; nullptr, with `error` set and nothing left open, when either fails.
void *open_symbol(const std::string &path, const std::string &symbol, void *&handle, std::string &error);

CacheEntry cache_entry(const KernelCompiler &c, const KernelSource &k);
// How many objects `kernels` misses build into, in parallel on `cores`: at
// most `limit` kernels each, at least one per core, and a multiple of the
// cores where there are kernels enough (no round of builds leaves a core
// idle: 128 kernels at 48 a batch on 2 cores build as 4 of 32, not 3 of 43).
size_t batch_count(size_t kernels, size_t limit, size_t cores);
// One program per source, in order: from the disk cache where an entry is
// usable (an unusable one is deleted and counted in stats.cache_healed), the
// misses built together (counted in stats.compiled).
std::vector<std::shared_ptr<const Program>> compile_cached(const KernelCompiler &c,
                                                           const std::vector<KernelSource> &kernels,
                                                           CompileStats &stats);

}  // namespace loom::runtime
