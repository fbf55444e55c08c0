// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_device.cpp — the device's context on its worker thread, and buffers.
#include "gl_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>

#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::opengl {
namespace {

constexpr std::uint32_t kParamsSlots = 1024;  // dispatches in flight before the ring wraps

// Live devices, so the exit handler can shut them down. The mutex guards the set and the
// shut_down_/stopped_ flags of the devices in it: a device leaves the set (under the mutex)
// before its owner shuts it down, so no wait for one device's worker holds up another device.
std::mutex g_live_mutex;
std::set<GlDevice*> g_live;

// The atexit handler: shuts every live device down while the driver is intact.
void shut_down_live_devices() {
  std::lock_guard lock(g_live_mutex);
  for (GlDevice* device : g_live) device->shut_down(device->default_deadline());
}

// Returns "OpenGL device '<name>'" for messages.
std::string label(const DeviceInfo& info) { return "OpenGL device '" + info.name + "'"; }

}  // namespace

GlBufferImpl::~GlBufferImpl() { device_.release_buffer(name); }

void register_exit_handler() { std::atexit(shut_down_live_devices); }

GlDevice::GlDevice(const GlDeviceDesc& desc, std::shared_ptr<const BackendSettings> settings)
    : DeviceImpl(std::move(settings)), desc_(desc), worker_("vgpu-gl") {
  l2_binaries_ = !desc_.caps.binary_formats.empty();
  try {
    worker_.run([this] { start_w(); }, default_deadline());
  } catch (...) {
    // start_w has returned (a started task is always waited for), so the worker is idle and
    // stopping it cannot hang; it must end before this object's memory goes.
    worker_.stop([this] { stop_w(); }, Deadline());
    throw;
  }
  register_exit_handler();
  std::lock_guard lock(g_live_mutex);
  g_live.insert(this);
}

GlDevice::~GlDevice() {
  {
    std::lock_guard lock(g_live_mutex);
    g_live.erase(this);
  }
  // Core calls release() first, which bounds the wait; a device deleted directly waits for its
  // worker as long as it takes, since the worker's tasks use this object.
  shut_down(Deadline());
}

bool GlDevice::release() noexcept {
  {
    // Out of the set first (a leaked device must not be shut down again at exit); after that
    // only this thread touches the device, so the wait below holds no lock.
    std::lock_guard lock(g_live_mutex);
    g_live.erase(this);
  }
  // The worker's last task (stop_w) itself waits up to timeout() for the GPU: allow for it.
  if (shut_down(Deadline::after(timeout() * 2))) return true;
  try {
    log(LogLevel::warn, "OpenGL device '" + desc_.info.name + "' still runs work after " +
                            std::to_string(2 * timeout().count()) +
                            " ms; its context thread is left to finish on its own and the device is not freed.");
  } catch (...) {  // nothing more to say without memory
  }
  return false;
}

bool GlDevice::shut_down(const Deadline& deadline) {
  if (shut_down_) return stopped_;
  shut_down_ = true;
  // stop_w runs after every queued task (on an abandoned worker: after the one it runs now);
  // the thread's window-system and GL state goes with the thread.
  stopped_ = worker_.stop([this] { stop_w(); }, deadline);
  return stopped_;
}

void GlDevice::lose(const Deadline& deadline, const char* what) {
  mark_lost("a call's " + std::to_string(deadline.limit().count()) + " ms limit passed while " + what +
            ", with its context's thread still busy");
  worker_.abandon();  // what is queued would run behind the stuck work: drop it
  fail_timeout(desc_.info, deadline, what, true);
}

void GlDevice::start_w() {
  const GlContextSource& src = desc_.source;
  int major = desc_.caps.major, minor = desc_.caps.minor;
  std::string why;
  bool reset_notification = false;
  context_ = create_context(src, &major, &minor, &reset_notification, &why);
  bool current = false, context_lost = false;
  if (context_) current = make_current(src, context_, &why, &context_lost);
  if (context_lost)
    fail(ErrorCategory::device_lost, "the new context of " + label(desc_.info) + " was lost at once: " + why + ".",
         "the GPU was reset or suspended: try again, and check the driver's log if it persists.");
  if (!current || !load_gl_functions(major, minor, &why))
    fail(ErrorCategory::unavailable, "cannot open " + label(desc_.info) + " on " + src.label + ": " + why + ".",
         "run vgpu-probe; if it lists the device, another process may hold the GPU exclusively.");
  gl_ready_ = true;
  take_gl_error();
  // SPIR-V goes to the driver where it takes it (4.6 core or GL_ARB_gl_spirv), unless the
  // settings ask for the cross-compiled GLSL path.
  spirv_path_ = desc_.caps.gl_spirv && settings().config.gl_spirv &&
                (glad_glSpecializeShader != nullptr || glad_glSpecializeShaderARB != nullptr);
  bound_.assign(static_cast<std::size_t>(std::max(desc_.caps.ssbo_bindings, 1)), 0);
  // GL_TIMESTAMP is core since 3.3, but a driver may give it no counter bits (no timer).
  glGetQueryiv(GL_TIMESTAMP, GL_QUERY_COUNTER_BITS, &timer_bits_);
  take_gl_error();
  // One ring slot per dispatch holds its params block; a slot is never shorter than the
  // largest block, and starts at the binding offset alignment.
  const GLsizeiptr align = std::max<GLint>(desc_.caps.ssbo_alignment, 16);
  params_stride_ = (static_cast<GLsizeiptr>(kMaxParamsBytes) + align - 1) / align * align;
  params_slots_ = kParamsSlots;
  params_ring_ = create_buffer_w(static_cast<std::uint64_t>(params_stride_) * params_slots_);
}

void GlDevice::stop_w() {
  bool idle = true;
  if (gl_ready_) {
    if (params_ring_) glDeleteBuffers(1, &params_ring_);
    params_ring_ = 0;
    for (const PendingTimer& t : timers_) free_queries_.insert(free_queries_.end(), {t.begin, t.end});
    timers_.clear();
    if (!free_queries_.empty()) glDeleteQueries(static_cast<GLsizei>(free_queries_.size()), free_queries_.data());
    free_queries_.clear();
    // No work may outlive the context: wait for it, within the limit (glFinish has none).
    try {
      idle = wait_gpu_w(default_deadline());
    } catch (const Error&) {  // the wait failed: the context is gone anyway
    }
    gl_ready_ = false;
  }
  if (context_ && !idle) {
    // Work still runs in it: keep the context rather than destroy it under the GPU.
    log(LogLevel::warn, "OpenGL device '" + desc_.info.name + "' still runs work after " +
                            std::to_string(timeout().count()) + " ms; its context is left to the driver.");
    release_thread();
  } else if (context_) {
    destroy_context(desc_.source, context_);
  } else {
    release_thread();
  }
  context_ = GlContext{};
}

GLuint GlDevice::create_buffer_w(std::uint64_t bytes) {
  take_gl_error();
  GLuint name = 0;
  // Whole 32-bit words: GLSL addresses storage in words, and a 16-bit array of odd length ends
  // inside one (core/kernels/glsl/convert.comp reads and writes that word back).
  const auto size = static_cast<GLsizeiptr>((bytes + 3) / 4 * 4);
  if (desc_.caps.dsa) {
    glCreateBuffers(1, &name);
    glNamedBufferStorage(name, size, nullptr, GL_DYNAMIC_STORAGE_BIT);
    glClearNamedBufferData(name, GL_R8UI, GL_RED_INTEGER, GL_UNSIGNED_BYTE, nullptr);  // zero fill
  } else {
    glGenBuffers(1, &name);
    glBindBuffer(GL_COPY_WRITE_BUFFER, name);
    glBufferData(GL_COPY_WRITE_BUFFER, size, nullptr, GL_DYNAMIC_DRAW);
    glClearBufferData(GL_COPY_WRITE_BUFFER, GL_R8UI, GL_RED_INTEGER, GL_UNSIGNED_BYTE, nullptr);
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  }
  if (const GLenum e = take_gl_error(); e != GL_NO_ERROR) {
    glDeleteBuffers(1, &name);
    if (e == GL_OUT_OF_MEMORY)
      fail(ErrorCategory::out_of_memory,
           "OpenGL could not allocate a " + std::to_string(bytes) + "-byte buffer on " + label(desc_.info) + ".",
           "free buffers you no longer need, or use smaller ones.");
    fail(ErrorCategory::internal,
         "OpenGL reported " + gl_error_name(e) + " while allocating a " + std::to_string(bytes) + "-byte buffer.",
         "report this as a vgpu bug, with the output of vgpu-probe.");
  }
  return name;
}

void GlDevice::barrier_w() {
  if (!barrier_pending_) return;
  // Shader writes become visible to later dispatches and to buffer reads, writes and copies.
  glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
  barrier_pending_ = false;
}

void GlDevice::check_errors_w(const char* what) {
  const GLenum e = take_gl_error();
  if (e == GL_NO_ERROR) return;
  const std::string where = std::string(" while ") + what + " on " + label(desc_.info);
  if (e == GL_OUT_OF_MEMORY)
    fail(ErrorCategory::out_of_memory, "OpenGL ran out of memory" + where + ".",
         "free buffers you no longer need, or use smaller ones.");
  if (e == GL_CONTEXT_LOST) context_lost_w(reset_status_w(), what);
  fail(ErrorCategory::internal, "OpenGL reported " + gl_error_name(e) + where + ".",
       "report this as a vgpu bug, with the output of vgpu-probe.");
}

GLenum GlDevice::reset_status_w() {
  if (take_injected_loss()) return GL_UNKNOWN_CONTEXT_RESET;  // the test hook, as a driver reports a reset
  if (glad_glGetGraphicsResetStatus) return glGetGraphicsResetStatus();
  if (glad_glGetGraphicsResetStatusARB) return glGetGraphicsResetStatusARB();
  return GL_NO_ERROR;
}

void GlDevice::context_lost_w(GLenum status, const char* what) {
  const std::string reset = status == GL_GUILTY_CONTEXT_RESET     ? "a reset this context caused"
                            : status == GL_INNOCENT_CONTEXT_RESET ? "a reset another context caused"
                            : status == GL_UNKNOWN_CONTEXT_RESET  ? "a reset of unknown cause"
                                                                  : "GL_CONTEXT_LOST";
  // The context stays dead: queued tasks are harmless no-ops in it, and its GL objects go with
  // it when the device is released (a lost context's fence waits return at once).
  mark_lost("its OpenGL context was lost (" + reset + ") while " + what);
  fail(ErrorCategory::device_lost,
       "the OpenGL context of " + label(desc_.info) + " was lost (" + reset + ") while " + what + ".",
       "vgpu recreates the device at its next call, but data in its buffers is gone (write it again); if it "
       "recurs, check the kernel for out-of-bounds accesses and the driver's log.");
}

std::unique_ptr<BufferImpl> GlDevice::create_buffer(std::uint64_t bytes) {
  const GLuint name = call(default_deadline(), "creating a buffer", [&] { return create_buffer_w(bytes); });
  auto buffer = std::make_unique<GlBufferImpl>(*this, name, bytes);
  label_object(GL_BUFFER, name,
               "vgpu buffer (" + std::to_string(bytes) + " bytes)");  // until Device::set_label names it
  return buffer;
}

void GlDevice::write(BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes,
                     const Deadline& deadline) {
  const GLuint name = static_cast<GlBufferImpl&>(buffer).name;
  call(deadline, "writing a buffer", [&] {
    // A dispatch may still use the buffer, and the driver would then block in glBufferSubData
    // with no limit: wait for it here, within the deadline.
    finish_w(deadline, "waiting for earlier dispatches before writing a buffer");
    transfer_w(name, offset, bytes, const_cast<void*>(data), true);  // only read from, as its const says
  });
}

void GlDevice::read(BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes,
                    const Deadline& deadline) {
  const GLuint name = static_cast<GlBufferImpl&>(buffer).name;
  call(deadline, "reading a buffer", [&] {
    // The read would wait for the dispatches that write the buffer, without a limit: wait for
    // them on a fence first, within the deadline, so it never blocks on GPU work.
    finish_w(deadline, "waiting for submitted work to read a buffer");
    transfer_w(name, offset, bytes, out, false);
    check_errors_w("reading a buffer");
  });
}

void GlDevice::transfer_w(GLuint name, std::uint64_t offset, std::uint64_t bytes, void* host, bool into_buffer) {
  barrier_w();
  const auto at = static_cast<GLintptr>(offset);
  const auto size = static_cast<GLsizeiptr>(bytes);
  if (desc_.caps.dsa) {
    if (into_buffer)
      glNamedBufferSubData(name, at, size, host);
    else
      glGetNamedBufferSubData(name, at, size, host);
    return;
  }
  const GLenum target = into_buffer ? GL_COPY_WRITE_BUFFER : GL_COPY_READ_BUFFER;
  glBindBuffer(target, name);
  if (into_buffer)
    glBufferSubData(target, at, size, host);
  else
    glGetBufferSubData(target, at, size, host);
  glBindBuffer(target, 0);
}

void GlDevice::copy(BufferImpl& src, std::uint64_t src_offset, BufferImpl& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes, const Deadline& deadline) {
  const GLuint from = static_cast<GlBufferImpl&>(src).name, to = static_cast<GlBufferImpl&>(dst).name;
  call(deadline, "copying a buffer", [&] {
    barrier_w();
    unfinished_ = true;  // queued on the GPU like a dispatch
    const auto so = static_cast<GLintptr>(src_offset), d = static_cast<GLintptr>(dst_offset);
    const auto n = static_cast<GLsizeiptr>(bytes);
    if (desc_.caps.dsa) {
      glCopyNamedBufferSubData(from, to, so, d, n);
    } else {
      glBindBuffer(GL_COPY_READ_BUFFER, from);
      glBindBuffer(GL_COPY_WRITE_BUFFER, to);
      glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, so, d, n);
      glBindBuffer(GL_COPY_READ_BUFFER, 0);
      glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    }
  });
}

void GlDevice::release_buffer(GLuint name) {
  if (name == 0) return;
  worker_.post([this, name] {
    glDeleteBuffers(1, &name);
    // Deleting unbinds it; a new buffer may get the same name, so forget the binding.
    std::replace(bound_.begin(), bound_.end(), name, GLuint{0});
    std::replace(bound_uniform_.begin(), bound_uniform_.end(), name, GLuint{0});
  });
}

}  // namespace vgpu::opengl
