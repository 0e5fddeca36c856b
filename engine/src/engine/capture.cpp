#include "engine/capture.h"

#include <cstring>

#include "runtime/device.h"

namespace loom::engine {

namespace {
thread_local Capture *g_capture = nullptr;
}  // namespace

CaptureScope::CaptureScope(Capture &capture) : prev_(g_capture) { g_capture = &capture; }
CaptureScope::~CaptureScope() { g_capture = prev_; }
bool capturing() { return g_capture != nullptr; }

void record_launch(const ExecItem &item) {
  if (g_capture) g_capture->steps.push_back({item, {}});
}

void record_host_step(const HostStep &step) {
  if (g_capture) g_capture->steps.push_back({std::nullopt, step});
}

void write_buffer(uop::Buffer &buf, const void *host, size_t bytes) {
  if (!bytes) return;
  runtime::default_device().copy_in(buffer_data(buf), host, bytes);
  stats().host_writes++;
  stats().host_write_bytes += static_cast<int64_t>(bytes);
  const bool whole = bytes == static_cast<size_t>(buf.size) * itemsize(buf.dtype);
  if (whole && bytes <= kHostCopyBytes && !host_addressable()) {
    const auto *p = static_cast<const std::byte *>(host);
    buf.host_copy = std::make_shared<const std::vector<std::byte>>(p, p + bytes);
  } else {
    buf.host_copy.reset();
  }
}
namespace {
void count_host_read(size_t bytes) {
  stats().host_reads++;
  stats().host_read_bytes += static_cast<int64_t>(bytes);
}
}  // namespace

void read_buffer(void *host, uop::Buffer &buf, size_t bytes) {
  if (!bytes) return;
  runtime::default_device().copy_out(host, buffer_data(buf), bytes);
  count_host_read(bytes);
}

bool host_addressable() { return runtime::default_device().host_addressable(); }

const void *host_bytes(uop::Buffer &buf, size_t bytes, std::vector<std::byte> &scratch) {
  if (buf.host_copy && buf.host_copy->size() >= bytes) {
    if (bytes) count_host_read(bytes);
    return buf.host_copy->data();
  }
  if (!host_addressable()) {
    scratch.resize(bytes);
    read_buffer(scratch.data(), buf, bytes);
    return scratch.data();
  }
  if (bytes) count_host_read(bytes);
  return buffer_data(buf);
}

void copy_buffer(uop::Buffer &dst, uop::Buffer &src) {
  LOOM_CHECK(dst.dtype == src.dtype && dst.size == src.size, "copy_buffer: buffers differ in dtype or size");
  const size_t bytes = static_cast<size_t>(src.size) * itemsize(src.dtype);
  if (bytes) runtime::default_device().copy(buffer_data(dst), buffer_data(src), bytes);
  dst.host_copy = src.host_copy;
}

void copy_in(const std::shared_ptr<uop::Buffer> &buf, const void *host, size_t bytes) {
  write_buffer(*buf, host, bytes);
  if (!g_capture) return;
  // Replayed as the same bytes: data the function uploads is a constant of the capture.
  auto data = std::make_shared<std::vector<std::byte>>(static_cast<const std::byte *>(host),
                                                       static_cast<const std::byte *>(host) + bytes);
  g_capture->steps.push_back(
      {std::nullopt, {buf, [data](uop::Buffer &b) { write_buffer(b, data->data(), data->size()); }, true}});
}

void copy_out(void *host, const std::shared_ptr<uop::Buffer> &buf, size_t bytes) {
  read_buffer(host, *buf, bytes);
  if (!g_capture) return;
  // The function read device values on the host: whatever it decided from
  // them is baked into the capture, so a replay checks they are unchanged.
  auto seen = std::make_shared<std::vector<std::byte>>(static_cast<const std::byte *>(host),
                                                       static_cast<const std::byte *>(host) + bytes);
  g_capture->steps.push_back({std::nullopt,
                              {buf,
                               [seen](uop::Buffer &b) {
                                 std::vector<std::byte> now(seen->size());
                                 read_buffer(now.data(), b, now.size());
                                 if (now != *seen)
                                   throw Error(
                                       "Jit: the captured function read tensor values on the host (item(), "
                                       "to_host(), or an op whose result size depends on values, such as "
                                       "masked_select) and they differ on this call; what it computed from them "
                                       "is baked into the capture. Keep such reads out of the captured function "
                                       "or run it without the JIT (LOOM_JIT=0)");
                               },
                               false}});
}

void capture_refill(const std::shared_ptr<uop::Buffer> &buf, std::function<void(uop::Buffer &)> refill) {
  if (!g_capture) return;
  for (auto it = g_capture->steps.rbegin(); it != g_capture->steps.rend(); ++it)
    if (!it->kernel && it->host.writes && it->host.buf == buf) {
      it->host.fn = std::move(refill);
      return;
    }
  LOOM_CHECK(false, "capture_refill: no captured copy into the buffer");
}

void capture_check(const std::shared_ptr<uop::Buffer> &buf, std::function<void(uop::Buffer &)> check) {
  record_host_step({buf, std::move(check), false});
}

}  // namespace loom::engine
