// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_device.hpp — one OpenGL device (a GL context on its own thread) as a
// vgpu DeviceImpl, and the capabilities a context reports.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gl_api.hpp"
#include "gl_capabilities.hpp"
#include "gl_context.hpp"
#include "gl_worker.hpp"
#include "vgpu/backend/device_impl.hpp"

namespace vgpu::opengl {

/// What one GL context reports. A plain value, filled on the context's thread.
struct GlCaps {
  int major = 0, minor = 0;  ///< the version the context was created with (what devices ask for)
  std::string vendor, renderer, version, glsl_version;
  int glsl = 0;                       ///< GLSL version as a number, e.g. 450
  bool dsa = false;                   ///< GL 4.5 direct state access (else bind-to-edit)
  bool nvx_memory = false;            ///< GL_NVX_gpu_memory_info
  bool gl_spirv = false;              ///< GL_ARB_gl_spirv
  bool reset_notification = false;    ///< the context learns of GPU resets (GL_LOSE_CONTEXT_ON_RESET)
  std::vector<GLint> binary_formats;  ///< GL_PROGRAM_BINARY_FORMATS (empty: no L2 for GL)
  GLint ssbo_bindings = 0;            ///< GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS
  GLint compute_ssbo_blocks = 0;      ///< GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS
  GLint ssbo_alignment = 0;           ///< GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT
  GLint64 ssbo_block_size = 0;        ///< GL_MAX_SHADER_STORAGE_BLOCK_SIZE
  std::array<GLint, 3> wg_size{}, wg_count{};
  GLint wg_invocations = 0, shared_memory = 0;
  GLint64 memory_kib = 0;   ///< GL_NVX_gpu_memory_info's total, 0 when unknown
  GLint sm_count = 0;       ///< GL_NV_shader_thread_group's SM count, 0 when unknown
  GLint subgroup_size = 0;  ///< GL_KHR_shader_subgroup's (else NV warp) size, 0 when unknown
  /// GL_EXT_memory_object's device and driver UUIDs as hex, empty when unknown.
  std::string device_uuid, driver_uuid;
  GlCapabilityContext shader_features;  ///< version and extensions the SPIR-V capability tables read

  /// Returns the binding reserved for the params block: the last SSBO binding.
  GLuint params_binding() const noexcept { return static_cast<GLuint>(ssbo_bindings - 1); }
};

/// Makes sure every open GL device releases its context when the process exits, before the
/// driver's own exit handlers run (NVIDIA's unmap code that a later GL call would jump into):
/// registers an atexit handler, which runs before every handler registered earlier. Called
/// after discovery and after each context creation, when a driver may have added handlers.
void register_exit_handler();

/// Queries the capabilities of the context current on this thread (version major.minor).
GlCaps query_caps(int major, int minor);

/// One usable device: the display it lives on, what its context reports, its DeviceInfo.
struct GlDeviceDesc {
  GlContextSource source;
  GlCaps caps;
  DeviceInfo info;
};

class GlDevice;

/// A GL buffer object. Thread-safety: owned by core's BufferState; its GL name is deleted on
/// the device's worker after every task queued before the deletion.
class GlBufferImpl final : public BufferImpl {
 public:
  GlBufferImpl(GlDevice& device, GLuint name, std::uint64_t size) : device_(device), name(name), size(size) {}
  ~GlBufferImpl() override;
  GlDevice& device_;
  GLuint name;
  std::uint64_t size;
};

/// A complete shader's or SPIR-V kernel's module as one device keeps it, per (dialect, code,
/// entry, defines): built once, specialised per compile. Thread-safety: immutable once made.
struct GlModule {
  std::vector<std::uint32_t> source_words;  ///< as the front end gave them (what reflection reads)
  std::vector<std::uint32_t> words;         ///< for GL: params block at the params binding, every set 0
  KernelReflection reflection;              ///< of the user's module, at its defaults
  bool via_spirv = false;                   ///< path A (GL_ARB_gl_spirv); else path B (SPIRV-Cross GLSL)
  std::string spirv_refusal;                ///< why path A may not take it (a capability), empty when it may
};

/// A linked compute program. Thread-safety: immutable after compile.
class GlKernelImpl final : public DeviceBound<KernelImpl, GlDevice> {
 public:
  using DeviceBound::DeviceBound;
  ~GlKernelImpl() override;
  GLuint program = 0;
  std::uint32_t params_size = 0;
};

/// One buffer at one binding: a shader storage block's, or a uniform block's (uniform).
struct SlotBuffer {
  GLuint slot = 0;
  GLuint buffer = 0;
  bool uniform = false;
};

/// Buffers by binding; shared with the recorded commands that use them (GL names only, so a
/// queued command never touches a freed C++ object). Thread-safety: immutable after bind.
class GlBindingSetImpl final : public BindingSetImpl {
 public:
  std::shared_ptr<const std::vector<SlotBuffer>> buffers;
};

/// One prepared dispatch: everything the worker needs, by value.
struct GlCommand {
  GLuint program = 0;
  std::string kernel;  // its name, which a timed dispatch's time is reported under
  std::shared_ptr<const std::vector<SlotBuffer>> buffers;
  ParamsBlock params;
  Groups groups;
};

/// A recorded batch: prepared commands replayed on the worker at each submit.
/// Thread-safety: immutable after record; a submit shares the list with its queued task.
class GlBatchImpl final : public RecordedBatchImpl {
 public:
  std::shared_ptr<const std::vector<GlCommand>> commands;
};

/// One opened OpenGL device: a GL 4.3+ core context owned by a private worker thread, which
/// makes every GL call (a context is current on one thread at a time). Each DeviceImpl member
/// marshals its work to that thread: run() waits for the result (compile, buffer creation,
/// read, write, copy, synchronize), submit() queues the dispatches and returns, and object
/// deletion is queued too. Tasks run in queue order, which gives the device's call-order
/// semantics across threads. Programs are built from GLSL with GlslTarget::opengl (the body
/// form), or from a complete shader's or SPIR-V's module (kept per source in RAM, so a new
/// specialization value only specialises and links), via the L2 program-binary cache when
/// the driver offers binary formats. Params go through a
/// device-wide ring SSBO at the reserved last binding, refreshed with glBufferSubData before
/// each dispatch, so steady calls allocate nothing. Devices still open at process exit
/// release their context from an atexit handler (register_exit_handler).
/// Time limits: every member waits for the worker only until its deadline (the call's, or
/// timeout() for compile and create_buffer), and the worker bounds its own waits for the GPU by
/// it too: a read, a write after dispatches and synchronize() first wait on a fence with
/// glClientWaitSync. A task that could not even start in time means the worker is stuck (on
/// llvmpipe a dispatch runs to its end inside glDispatchCompute), and a fence that did not
/// signal means work is still running: either way the device is marked lost and the worker
/// abandoned (queued tasks dropped). Shutting down waits at most 2 × timeout() for the worker;
/// a worker still busy then is left to end by itself, and the device object is leaked for it.
/// Destruction: deleting a GL object is queued behind the tasks that use it, and GL keeps an
/// object that queued commands use alive until they have run, so core's deferred destruction
/// has nothing to wait for here (the default submitted_serial/completed_serial).
/// Thread-safety: core's call lock serialises the DeviceImpl members except compile(), which
/// may run beside them; either way each member marshals its GL work to the worker, whose queue
/// is thread-safe. Members ending in _w and every GL object run on the worker thread only.
class GlDevice final : public DeviceImpl {
 public:
  /// Starts the worker, creates the context on desc's display and the params ring, with its
  /// runtime's settings; throws unavailable when the context cannot be created there.
  GlDevice(const GlDeviceDesc& desc, std::shared_ptr<const BackendSettings> settings);
  /// Deletes the remaining GL objects and the context on the worker, then joins it.
  ~GlDevice() override;

  const DeviceInfo& info() const override { return desc_.info; }
  VGPU_DEVICE_IMPL_OVERRIDES;
  /// Runs a whole trip with one wait for the worker: the writes (staged) and the batch as one
  /// queued task, the reads as one waited-for task behind it, one fence (gl_dispatch.cpp).
  void round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* batch, std::span<const HostReadOp> reads,
                  const Deadline& deadline) override;
  /// Shuts down within twice timeout() (the context's own last wait takes up to one); false
  /// when the worker is still busy then (the device is then leaked).
  bool release() noexcept override;
  /// True where the context's GL_TIMESTAMP queries have a counter (GL_QUERY_COUNTER_BITS > 0).
  bool can_time_dispatches() const noexcept override { return timer_bits_ > 0; }

  /// Releases the context and ends the worker now, while the driver is intact (process exit),
  /// waiting for the worker until deadline; returns false when it is still busy then.
  bool shut_down(const Deadline& deadline);

  /// Labels the buffer's GL object (GL_KHR_debug, core in 4.3), queued on the worker.
  void set_label(BufferImpl& buffer, const std::string& label) noexcept override;
  /// Queues glObjectLabel(kind, name, text) on the worker: what GL debuggers (apitrace, RenderDoc,
  /// Nsight) show for the object. Never fails a call.
  void label_object(GLenum kind, GLuint name, const std::string& text) noexcept;
  /// Queues deletion of a buffer (called by GlBufferImpl's destructor).
  void release_buffer(GLuint name);
  /// Queues deletion of a program (called by GlKernelImpl's destructor).
  void release_program(GLuint program);

 private:
  /// Returns the module of a complete shader or SPIR-V entry (code) with options' defines:
  /// from this device's RAM, else compiled (GLSL: one source compile), validated, reflected
  /// and rewritten for GL (gl_module.cpp). Any thread.
  std::shared_ptr<const GlModule> module_for(const KernelSource& source, const DialectSource& code,
                                             const CompileOptions& options);
  /// Sets module's path from its capabilities (path A only for what OpenGL's SPIR-V
  /// environment takes); throws not_supported naming the capability neither path can run.
  void choose_path(const KernelSource& source, GlModule& module) const;
  /// Resolves options' specialization against module (errors before any driver work), and
  /// gives kernel the reflection with the local size it runs with; returns (id, bits) pairs.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> specialise(const KernelSource& source, const GlModule& module,
                                                                  const CompileOptions& options, GlKernelImpl& kernel);
  /// Builds the program of module specialised by spec: path A (glShaderBinary +
  /// glSpecializeShader) or path B (SPIRV-Cross GLSL compiled by the driver), counted in
  /// pipeline_builds; fills *binary when given. Any thread (GL work goes to the worker).
  GLuint program_from_module(const KernelSource& source, const DialectSource& code, const GlModule& module,
                             const std::vector<std::pair<std::uint32_t, std::uint32_t>>& spec,
                             std::vector<std::uint8_t>* binary);
  /// Runs f on the worker within deadline; when it could not start by then, loses the device
  /// and throws timeout (what says what the call was doing).
  template <class F>
  auto call(const Deadline& deadline, const char* what, F&& f, bool report_deferred = true) {
    try {
      return worker_.run(std::forward<F>(f), deadline, report_deferred);
    } catch (const GlWorker::Expired&) {
      lose(deadline, what);
    }
  }
  /// Marks the device lost, abandons the worker's queue and throws timeout (any thread).
  [[noreturn]] void lose(const Deadline& deadline, const char* what);

  // Worker-thread halves of the members above.
  /// Creates the context, makes it current, loads GL and creates the params ring.
  void start_w();
  /// Deletes the params ring, waits for the GPU and destroys the context.
  void stop_w();
  /// Creates a zero-filled buffer; throws out_of_memory.
  GLuint create_buffer_w(std::uint64_t bytes);
  /// Issues the memory barrier a dispatch since the last one requires, if any.
  void barrier_w();
  /// Copies bytes between host memory and buffer name at offset (into the buffer when
  /// into_buffer, else out of it), after barrier_w(); DSA where the context has it.
  void transfer_w(GLuint name, std::uint64_t offset, std::uint64_t bytes, void* host, bool into_buffer);
  /// Replays recorded commands: program, bindings, params slot, dispatch, barrier; with timed,
  /// a GL_TIMESTAMP query before and after each dispatch (read by collect_timers_w).
  void replay_w(const std::vector<GlCommand>& commands, bool timed);
  /// Reports the times of timed dispatches whose queries have their results (after a wait).
  void collect_timers_w() noexcept;
  /// Throws the vgpu::Error matching a pending GL error (out of memory, context lost, ...).
  void check_errors_w(const char* what);
  /// Waits on a fence for every command issued so far, until deadline; false when it passed
  /// first (the work still runs). Throws device_lost when the wait fails.
  bool wait_gpu_w(const Deadline& deadline);
  /// Returns the context's reset status: glGetGraphicsResetStatus (GL 4.5 or
  /// GL_ARB_robustness; GL_NO_ERROR without either), or GL_UNKNOWN_CONTEXT_RESET once for a
  /// simulated loss (inject_loss).
  GLenum reset_status_w();
  /// Marks the device lost after a context reset (status: what reset_status_w said) and
  /// throws device_lost (what: what the call was doing).
  [[noreturn]] void context_lost_w(GLenum status, const char* what);
  /// Before touching memory that dispatches may still use (or always, with force): waits for
  /// the GPU within deadline, or loses the device and throws timeout.
  void finish_w(const Deadline& deadline, const char* what, bool force = false);

  GlDeviceDesc desc_;
  GlWorker worker_;
  bool l2_binaries_ = false;  // the driver offers program binary formats
  bool spirv_path_ = false;   // modules go to the driver as SPIR-V (GL_ARB_gl_spirv and VGPU_GL_SPIRV)
  std::mutex modules_mutex_;  // guards modules_
  std::map<std::string, std::shared_ptr<const GlModule>> modules_;  // by module_key (gl_module.cpp)
  bool shut_down_ = false;  // guarded by the live-device registry's mutex while in it (gl_device.cpp)
  bool stopped_ = false;    // the worker ended and was joined (same guard)

  // Worker-thread state.
  GlContext context_;
  bool gl_ready_ = false;         // context current and GL entry points loaded
  bool barrier_pending_ = false;  // a dispatch wrote SSBOs since the last glMemoryBarrier
  bool unfinished_ = false;       // GPU work issued since the last completed fence wait
  GLuint current_program_ = 0;
  std::vector<GLuint> bound_;          // buffer bound at each SSBO binding (0: unknown/none)
  std::vector<GLuint> bound_uniform_;  // buffer bound at each uniform-buffer binding (grows)
  GLuint params_ring_ = 0;
  GLsizeiptr params_stride_ = 0;
  // A round trip's writes, copied so the queued task owns them (round_trip; caller fills them
  // under core's call lock, only after the previous trip's read task, which ran after its writes).
  struct StagedWrite {
    GLuint buffer = 0;
    std::uint64_t offset = 0, bytes = 0, at = 0;  // at: offset in trip_staging_
  };
  // Larger writes take the separate calls: copying them would cost more than the hand-offs saved.
  static constexpr std::uint64_t kTripStagingBytes = std::uint64_t{64} << 10;
  std::vector<StagedWrite> trip_writes_;
  std::vector<std::uint8_t> trip_staging_;
  std::uint32_t params_slots_ = 0, params_head_ = 0;
  ParamsBlock last_params_;    // the block last uploaded into the ring (replay_w)
  bool params_bound_ = false;  // the params binding still holds last_params_'s ring slot
  GLint timer_bits_ = 0;       // GL_QUERY_COUNTER_BITS of GL_TIMESTAMP (set by start_w, then constant)
  /// A timed dispatch's two GL_TIMESTAMP queries, read once the GPU has passed them.
  struct PendingTimer {
    GLuint begin = 0, end = 0;
    std::string kernel;
  };
  std::vector<PendingTimer> timers_;  // in issue order
  std::vector<GLuint> free_queries_;  // query names to reuse
};

}  // namespace vgpu::opengl
