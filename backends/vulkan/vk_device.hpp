// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_device.hpp — one Vulkan device as a vgpu DeviceImpl.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spirv_interface.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/shader/shader_tools.hpp"
#include "vk_instance.hpp"

namespace vgpu::vulkan {

class VulkanDevice;

/// A VkBuffer with its memory; mapped when host-visible. An imported one (host memory used in
/// place, VK_EXT_external_memory_host) spans the whole import-aligned range around the caller's
/// bytes: its data starts at base within the VkBuffer, mapped is the range's first byte (the
/// caller's own memory, never vkMapMemory'd) and size is the caller's byte count.
struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  std::uint64_t size = 0;
  std::uint64_t base = 0;
  bool imported = false;
  /// Returns the host address of the data's byte at offset (mapped allocations only).
  char* host_at(std::uint64_t offset) const { return static_cast<char*>(mapped) + base + offset; }
};

/// A user buffer. Thread-safety: owned by core's BufferState; destroyed once, under the device's
/// call lock, after the work that used it (core's deferred destruction).
class VkBufferImpl final : public BufferImpl {
 public:
  VkBufferImpl(VulkanDevice& device, Allocation a) : device_(device), alloc(a) {}
  ~VkBufferImpl() override;
  VulkanDevice& device_;
  Allocation alloc;
};

/// One descriptor a pipeline layout holds: a buffer at (set, binding); binding is vgpu's slot.
struct Descriptor {
  std::uint32_t set = 0;
  std::uint32_t binding = 0;
  VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  friend bool operator==(const Descriptor&, const Descriptor&) = default;
};

/// A compute pipeline with its layouts. Thread-safety: immutable after compile; destroyed
/// under the call lock once no queued work uses it.
class VkKernelImpl final : public DeviceBound<KernelImpl, VulkanDevice> {
 public:
  using DeviceBound::DeviceBound;
  ~VkKernelImpl() override;
  VkShaderModule module = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;        // owned by the device's layout cache
  std::vector<VkDescriptorSetLayout> set_layouts;  // by set number; owned by the layout cache
  std::vector<Descriptor> descriptors;             // ascending by binding
  std::uint32_t push_bytes = 0;                    // pushed bytes, a multiple of 4
};

/// A descriptor set. Thread-safety: immutable after bind; freed under the call lock once no
/// queued work uses it.
class VkBindingSetImpl final : public DeviceBound<BindingSetImpl, VulkanDevice> {
 public:
  using DeviceBound::DeviceBound;
  ~VkBindingSetImpl() override;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets;  // by set number, from one pool
};

/// The timestamp slots of a batch recorded with timing on: two per dispatch (before and after
/// it), read once a submission that ran it has finished. Shared by the batch and each
/// submission of it in flight, so the pool lives until the last of them is done.
/// Thread-safety: used under the call lock.
struct BatchTimestamps {
  BatchTimestamps(const DeviceFns& fn, VkDevice device) : fn(fn), device(device) {}
  ~BatchTimestamps();
  BatchTimestamps(const BatchTimestamps&) = delete;
  BatchTimestamps& operator=(const BatchTimestamps&) = delete;
  const DeviceFns& fn;
  VkDevice device;
  VkQueryPool pool = VK_NULL_HANDLE;
  std::vector<std::string> kernels;  // dispatch i's kernel; its slots are 2i and 2i+1
};

/// A recorded, resubmittable command buffer. Thread-safety: used under the call lock; its
/// command buffer goes back to the pool once no queued work runs it.
class VkBatchImpl final : public DeviceBound<RecordedBatchImpl, VulkanDevice> {
 public:
  using DeviceBound::DeviceBound;
  ~VkBatchImpl() override;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  std::vector<DispatchCommand> commands;        // as recorded, to record again when timing is switched
  std::shared_ptr<BatchTimestamps> timestamps;  // null: recorded with timing off
};

/// One opened Vulkan device: a queue, memory, pipelines, descriptor sets and submissions.
/// Memory: device-local buffers with a reused staging ring on discrete GPUs; host-visible
/// buffers written in place on integrated and software devices (lavapipe), where that is
/// cheaper. Uploads and submitted batches are recorded and queued together at the next point
/// that needs results (read, synchronize, copy), so a steady upload-dispatch-readback call is
/// one vkQueueSubmit and one fence wait. Work therefore starts at that point, not at submit().
/// Each flush is one submission with a serial and a fence (submitted_serial/completed_serial),
/// which is how core knows when a destroyed object's last use has run: destroying never waits.
/// Time limits: fence waits end at the call's deadline; one that gives up (VK_TIMEOUT) leaves
/// the work running, so the device is marked lost. Its objects are then destroyed only once
/// their work has finished; release() waits for the queue within timeout() (bounded), and a
/// device still busy after that is abandoned: its Vulkan objects are leaked, with a log line,
/// never destroyed under the GPU.
/// Thread-safety: core's call lock serialises every member (queue, command pool, descriptor
/// pools, staging, fences and serials need no lock of their own) except compile(), which may
/// run beside them: it touches only the layout cache (layout_mutex_), the pipeline cache (the
/// driver synchronises it; snapshots to L2 under cache_save_mutex_) and immutable state.
class VulkanDevice final : public DeviceImpl {
 public:
  /// Creates the VkDevice, queue, pools and the pipeline cache (loaded from L2).
  VulkanDevice(std::shared_ptr<Instance> instance, const PhysicalDevice& physical,
               std::shared_ptr<const BackendSettings> settings);
  ~VulkanDevice() override;

  const DeviceInfo& info() const override { return physical_.info; }
  VGPU_DEVICE_IMPL_OVERRIDES;
  /// Host memory in place through VK_EXT_external_memory_host (null where the driver lacks it).
  std::unique_ptr<BufferImpl> import_host(void* data, std::uint64_t bytes) override;
  /// The caller's address for imported host memory; none for the device's own memory.
  BufferAddress address(BufferImpl& buffer) override;
  /// Names the buffer's VkBuffer and its memory (VK_EXT_debug_utils).
  void set_label(BufferImpl& buffer, const std::string& label) noexcept override;
  /// Gives a Vulkan object a debug name (VK_EXT_debug_utils; nothing where the loader lacks it).
  void name_object(VkObjectType type, std::uint64_t handle, const std::string& name) const noexcept;
  /// Uploads, the batch and the readbacks in one vkQueueSubmit and one fence wait.
  void round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* batch, std::span<const HostReadOp> reads,
                  const Deadline& deadline) override;
  /// Builds the shader module and pipeline of k from words with entry point entry, specialised
  /// by spec; returns the failing call's result.
  VkResult build_pipeline(VkKernelImpl& k, const std::vector<std::uint32_t>& words, const std::string& entry,
                          const std::vector<shader::SpecEntry>& spec);
  void on_counters_attached() noexcept override;
  /// The serial the next flush gets while work waits to be flushed, else the last flushed one.
  std::uint64_t submitted_serial() noexcept override;
  /// Retires the submissions whose fences have signalled (never waits); returns the newest.
  std::uint64_t completed_serial() noexcept override;
  /// Waits (within timeout()) for the queue to drain; false when the device is abandoned.
  bool release() noexcept override;
  /// True where the compute queue writes timestamps (timestampValidBits > 0).
  bool can_time_dispatches() const noexcept override { return physical_.timestamp_bits > 0; }

  // Used by the object destructors above (core calls them once no queued work uses the object).
  void destroy_buffer(Allocation& a);
  void destroy_kernel(VkKernelImpl& k);
  void free_binding_set(VkBindingSetImpl& b);
  void release_batch(VkBatchImpl& b);

 private:
  struct InFlight {
    std::uint64_t serial;
    VkFence fence;
    std::vector<VkCommandBuffer> recycle;                 // transient command buffers to reuse after it
    std::vector<std::shared_ptr<BatchTimestamps>> timed;  // timed batches it runs, read when it is retired
  };
  struct Layouts {
    std::vector<VkDescriptorSetLayout> set_layouts;  // by set number (empty ones fill gaps)
    VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  };
  using Words = std::shared_ptr<const std::vector<std::uint32_t>>;
  /// A compiled module and where it came from.
  struct Module {
    Words words;
    bool from_l2 = false;
  };

  enum class MemoryUse { device, shared, upload, readback };  // who reads the memory decides its type
  // A VkBuffer with its memory, both named label at once (before the memory is bound, so the
  // validation layer's messages about binding name it too).
  Allocation allocate(std::uint64_t bytes, MemoryUse use, VkBufferUsageFlags usage, const std::string& label);
  std::uint32_t memory_type(std::uint32_t bits, VkMemoryPropertyFlags want) const;
  Layouts layouts_for(const std::vector<Descriptor>& descriptors, std::uint32_t push_bytes);
  // The SPIR-V of (code, defines): from L3, this device's module cache (RAM), L2 (when
  // use_l2) or the front end (GLSL compiler, SPIR-V validator). Specialization never enters
  // its key, so a new value costs a pipeline, not a compile. A body-form module must fit
  // pipeline (an L2 one that does not is dropped; a compiled one that does not throws).
  Module module_for(const KernelSource& source, const DialectSource& code, const CompileOptions& options,
                    const PipelineInterface* pipeline, bool use_l2);
  // The key of a module: the kernel key of (source, code, options) without the
  // specialization constants, which only pipelines take.
  static cache::KernelKey module_key(const KernelSource& source, const DialectSource& code,
                                     const CompileOptions& options, const DeviceFingerprint& fp);
  void forget_module(const KernelSource& source, const DialectSource& code, const CompileOptions& options);
  // Sets k's descriptors, push bytes, reflection and specialization for a complete shader or
  // SPIR-V module words (the body form: for its declared slots); returns the specialization.
  std::vector<shader::SpecEntry> interface_for(VkKernelImpl& k, const KernelSource& source, const DialectSource& code,
                                               const CompileOptions& options, const std::vector<std::uint32_t>& words);
  // Throws not_supported naming the first capability of r the device's features do not cover.
  void check_capabilities(const KernelReflection& r, const std::string& name) const;
  void load_pipeline_cache();
  void save_pipeline_cache();

  VkCommandBuffer take_cmd();       // a reset command buffer from the free list or the pool
  VkCommandBuffer transient_cmd();  // one begun for one-time submission
  VkCommandBuffer pending_upload();
  // Submitted batches wait in pending_ until the next point that needs their results (a read,
  // synchronize, a copy, a write into memory they may use): then everything pending goes to the
  // queue in one vkQueueSubmit, so a steady write-submit-read call costs one submit, one wait.
  void close_upload();
  void queue_batch(VkBatchImpl& batch);
  std::uint64_t flush(VkCommandBuffer extra = VK_NULL_HANDLE, bool extra_is_transient = false);
  // Retires the first n submissions in flight (their fences have signalled): fences and
  // transient command buffers go back to the free lists.
  void retire_front(std::size_t n);
  // Waits for the submissions up to serial until deadline and retires them; returns false,
  // retiring nothing, when the deadline passed first.
  bool try_wait_serial(std::uint64_t serial, const Deadline& deadline);
  // Marks the device lost (a VK_ERROR_DEVICE_LOST from call) and throws device_lost.
  [[noreturn]] void fail_device(VkResult r, const char* call);
  // try_wait_serial, or: marks the device lost and throws timeout (what: for the message).
  void wait_serial(std::uint64_t serial, const Deadline& deadline, const char* what);
  void finish(const Deadline& deadline, const char* what);  // flush, then wait for everything queued
  bool idle() const;                                        // nothing in flight or waiting to be flushed
  bool idle_pending() const;                                // nothing waiting to be flushed
  // Before the device goes: flushes and waits, within timeout(), for everything queued (on a
  // lost device only for what already runs). Returns false, never throwing, when its objects
  // must be leaked: the process is exiting, or the work did not finish (the device is then
  // abandoned: DeviceImpl::settle).
  bool settle_work() noexcept;
  void ensure_capacity(Allocation& buffer, std::uint64_t bytes, MemoryUse use, const Deadline& deadline);
  // The readback buffer's bytes that reads copy through (those not in mapped memory).
  static std::uint64_t readback_bytes(std::span<const HostReadOp> reads);
  // Queues the copies of reads after the recorded work, submits it all, waits (what names the
  // wait in a timeout) and fills every read's out: read() and round_trip().
  void read_back(std::span<const HostReadOp> reads, const Deadline& deadline, const char* what);
  void barrier(VkCommandBuffer cmd, bool to_host) const;

  std::shared_ptr<Instance> instance_;
  PhysicalDevice physical_;
  DeviceFns fn_{};
  // VK_EXT_external_memory_host's query, loaded only where the extension is enabled.
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties_ = nullptr;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  bool host_visible_buffers_ = false;
  bool yield_while_polling_ = false;  // a software device: the fence poll yields (try_wait_serial)
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::size_t saved_cache_bytes_ = 0;
  std::mutex cache_save_mutex_;                            // serialises pipeline-cache snapshots to L2
  std::uint64_t open_l2_hits_ = 0, open_l2_rejected_ = 0;  // counted before core attached counters

  std::mutex layout_mutex_;  // compile() runs beside other calls: guards layouts_
  std::map<std::string, Layouts> layouts_;
  std::mutex module_mutex_;  // guards modules_ (compile() runs beside other calls)
  std::map<std::pair<std::uint64_t, std::uint64_t>, Words> modules_;  // module key → SPIR-V, for the device's life

  // Used under core's call lock only.
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> free_cmds_;
  std::vector<VkFence> free_fences_;
  std::vector<VkDescriptorPool> descriptor_pools_;
  std::vector<InFlight> in_flight_;
  // Scratch reused by every flush and wait, so a steady round trip allocates nothing.
  std::vector<VkCommandBuffer> submit_scratch_;
  std::vector<VkFence> wait_scratch_, retire_scratch_;
  std::vector<std::vector<VkCommandBuffer>> spare_recycle_;  // retired InFlight::recycle lists
  std::uint64_t next_serial_ = 1, completed_serial_ = 0;
  struct PendingCmd {
    VkCommandBuffer cmd;
    bool transient;                                    // recycled after it runs
    std::shared_ptr<BatchTimestamps> timestamps = {};  // a timed batch's slots
  };
  // Records the timestamp slots of a batch of n dispatches into cmd (timing on); null when the
  // pool cannot be made (the batch then runs untimed).
  std::shared_ptr<BatchTimestamps> begin_timestamps(VkCommandBuffer cmd, std::span<const DispatchCommand> commands);
  // Records batch.commands into batch.cmd (begun here), with timestamps while timing is on.
  void record_commands(VkBatchImpl& batch);
  // Returns the command buffer to submit for batch: recorded again first when timing was
  // switched on or off since it was recorded (the old one goes to retired_cmds_).
  VkCommandBuffer batch_cmd(VkBatchImpl& batch);
  std::vector<VkCommandBuffer> retired_cmds_;  // replaced by batch_cmd, recycled after the next flush
  // Reports the times of a finished submission's timed batches (DeviceImpl::report_dispatch_time).
  void report_timestamps(const InFlight& flight) noexcept;
  // Lets go of the timestamp pools still referenced by work in flight or pending (the
  // destructor): destroyed now, or, for an abandoned device, leaked with it.
  void drop_timestamps(bool destroy) noexcept;
  std::vector<PendingCmd> pending_;                  // recorded work not yet queued, in call order
  VkCommandBuffer pending_upload_ = VK_NULL_HANDLE;  // uploads being recorded for the next flush
  Allocation staging_;                               // host-visible upload ring
  std::uint64_t staging_head_ = 0;
  Allocation readback_;  // host-visible readback area
};

}  // namespace vgpu::vulkan
