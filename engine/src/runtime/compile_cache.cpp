#include "runtime/compile_cache.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <unordered_set>

#include "loom/error.h"
#include "runtime/disk_cache.h"

namespace loom::runtime {

namespace {

// The program in e's cache file, its trailer checked; nullptr, with `error`
// set, when the file is missing or unusable.
std::shared_ptr<const Program> open_entry(const KernelCompiler &c, const CacheEntry &e, std::string &error) {
  const std::optional<std::string> object = read_cache_object(e.path, e.key);
  if (!object) {
    error = "its cache file is missing or does not match";
    return nullptr;
  }
  return c.load(e, *object, error);
}

// The program in e's cache file; nullptr when there is none, or when the file
// is unusable (corrupt, truncated, another compiler's): then it is deleted so
// that it is built again, and *healed is set.
std::shared_ptr<const Program> load_entry(const KernelCompiler &c, const CacheEntry &e, bool *healed) {
  if (!std::filesystem::exists(e.path)) return nullptr;
  std::string error;
  if (auto p = open_entry(c, e, error)) return p;
  std::error_code ec;
  std::filesystem::remove(e.path, ec);
  *healed = true;
  return nullptr;
}

// Builds the batch into one object, published under each kernel's cache path
// (hard links to one file whose trailer names every kernel).
void build_batch(const KernelCompiler &c, const std::vector<const CacheEntry *> &batch) {
  const std::string object = c.build(batch);
  std::vector<std::string> keys, paths;
  for (const CacheEntry *e : batch) keys.push_back(e->key), paths.push_back(e->path);
  const std::string tmp = unique_temp_path(batch[0]->path);
  {
    std::ofstream f(tmp, std::ios::binary);
    f << object << cache_trailer(keys, object);
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw Error("cannot write compiled kernel " + tmp);
    }
  }
  if (!publish_cache_file(tmp, paths)) throw Error("cannot move a compiled kernel into " + cache_dir());
}

// Builds the distinct kernels among `which` in batch_count batches, in
// parallel. A batch that fails builds again kernel by kernel, so the error
// shows the kernel at fault.
void build_misses(const KernelCompiler &c, const std::vector<CacheEntry> &entries, const std::vector<size_t> &which) {
  std::vector<const CacheEntry *> todo;
  std::unordered_set<std::string> seen;
  for (size_t i : which)
    if (seen.insert(entries[i].key).second) todo.push_back(&entries[i]);
  if (todo.empty()) return;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency()), limit = std::max<size_t>(1, c.batch_limit());
  const size_t n = batch_count(todo.size(), limit, cores);
  std::vector<std::vector<const CacheEntry *>> batches(n);
  for (size_t i = 0; i < todo.size(); ++i) batches[i % n].push_back(todo[i]);
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  build_parallel(all, [&](size_t b) {
    try {
      build_batch(c, batches[b]);
    } catch (const InternalError &) {
      if (batches[b].size() == 1) throw;
      for (const CacheEntry *e : batches[b]) build_batch(c, {e});
    }
  });
}

}  // namespace

size_t batch_count(size_t kernels, size_t limit, size_t cores) {
  const size_t wanted = std::max(cores, (kernels + limit - 1) / limit);
  return std::min(kernels, (wanted + cores - 1) / cores * cores);
}

std::string compile_shared_object(const std::vector<std::string> &command, const std::vector<std::string> &libs,
                                  const std::string &source, const std::string &near, const char *suffix,
                                  const std::string &what) {
  const std::string tmp = unique_temp_path(near), file = tmp + suffix, so = tmp + ".so";
  std::error_code ec;
  {
    std::ofstream f(file);
    f << source;
    if (!f) {
      std::filesystem::remove(file, ec);
      throw Error("cannot write kernel source " + file);
    }
  }
  std::vector<std::string> argv = command;
  argv.insert(argv.end(), {"-o", so, file});
  argv.insert(argv.end(), libs.begin(), libs.end());
  const ProcessResult r = run_process(argv);
  const std::optional<std::string> object = r.status == 0 ? read_file(so) : std::nullopt;
  std::filesystem::remove(file, ec);
  std::filesystem::remove(so, ec);
  if (!object) throw InternalError(what + ":\n" + r.output + "\nsource:\n" + source);
  return *object;
}

void *open_symbol(const std::string &path, const std::string &symbol, void *&handle, std::string &error) {
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = dlerror();
    return nullptr;
  }
  if (void *fn = dlsym(handle, symbol.c_str())) return fn;
  error = "no symbol " + symbol + " in " + path;
  dlclose(handle);
  handle = nullptr;
  return nullptr;
}

CacheEntry cache_entry(const KernelCompiler &c, const KernelSource &k) {
  CacheEntry e;
  e.kernel = &k;
  e.key = hash_hex(c.key_text(k));
  e.path = cache_dir() + "/" + e.key + c.extension();
  return e;
}

std::vector<std::shared_ptr<const Program>> compile_cached(const KernelCompiler &c,
                                                           const std::vector<KernelSource> &kernels,
                                                           CompileStats &stats) {
  std::vector<CacheEntry> entries;
  for (const KernelSource &k : kernels) entries.push_back(cache_entry(c, k));
  std::vector<std::shared_ptr<const Program>> out(kernels.size());
  std::vector<size_t> misses;
  for (size_t i = 0; i < kernels.size(); ++i) {
    bool healed = false;
    out[i] = load_entry(c, entries[i], &healed);
    stats.cache_healed += healed;
    if (!out[i]) misses.push_back(i);
  }
  build_misses(c, entries, misses);
  for (size_t i : misses) {
    std::string error;
    out[i] = open_entry(c, entries[i], error);
    if (!out[i]) throw InternalError("kernel " + kernels[i].name + " unusable right after compiling it: " + error);
    stats.compiled++;
  }
  return out;
}

}  // namespace loom::runtime
