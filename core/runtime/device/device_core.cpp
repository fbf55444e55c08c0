// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_core.cpp — validation, counters and the L1 cache in front of every backend.
#include "device_core.hpp"

#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "variant_choice.hpp"
#include "feature_gate.hpp"
#include "reflected_bindings.hpp"
#include "vgpu/config.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {
namespace {

using std::to_string;

std::string device_label(const DeviceInfo& info) {
  return std::string(vgpu::to_string(info.backend)) + " device '" + info.name + "'";
}

// "glsl, cuda" (or "none") for a message.
std::string joined(const std::vector<std::string>& names, const char* separator = ", ") {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : separator) + n;
  return out.empty() ? "none" : out;
}

std::vector<std::string> dialects_of(const KernelSource& source) {
  std::vector<std::string> out;
  for (const DialectSource& s : source.sources)
    if (s.present()) out.push_back(s.dialect);
  return out;
}

void check_range(const BufferState& b, std::uint64_t offset, std::uint64_t bytes, const char* op) {
  if (offset > b.size || bytes > b.size - offset) {
    fail(ErrorCategory::invalid_argument,
         std::string(op) + " of " + to_string(bytes) + " bytes at offset " + to_string(offset) +
             " runs past the end of a " + to_string(b.size) + "-byte buffer.",
         "keep offset + bytes within Buffer::size(), or create a larger buffer.");
  }
}

}  // namespace

// Coverage tried on copies of buffers' lost ranges, to check a call before anything of it runs.
class DeviceCore::TriedContents {
 public:
  LostContents& of(const BufferState& b) {
    for (auto& [buf, lc] : tried_)
      if (buf == &b) return lc;
    return tried_.emplace_back(&b, b.lost).second;
  }

 private:
  std::vector<std::pair<const BufferState*, LostContents>> tried_;
};

template <class F>
auto DeviceCore::guarded(const char* what, F&& f) -> decltype(f()) {
  // Backends may throw std::bad_alloc for host-side allocations; report it like any other OOM.
  try {
    return f();
  } catch (const std::bad_alloc&) {
    fail(ErrorCategory::out_of_memory, std::string("host memory ran out while ") + what + ".",
         "free memory or use smaller buffers.");
  } catch (const Error& e) {
    if (e.category() == ErrorCategory::device_lost) {
      impl().mark_lost(e.problem());
      note_loss();
      // The backend's own fix predates in-place recovery: say what to do now.
      throw Error(ErrorCategory::device_lost, e.problem(),
                  "call again: the next call on this Device recreates it and rebuilds its kernels, binding sets and "
                  "batches (a PersistentKernel, KernelDatabase or Cache call retries once by itself); write the "
                  "buffers you filled again.");
    }
    if (impl().lost()) note_loss();  // a wait that gave up with work in flight (timeout)
    throw;
  }
}

void DeviceCore::note_loss() noexcept {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::int64_t none = 0;
  loss_seen_ns_.compare_exchange_strong(none, now == 0 ? 1 : now, std::memory_order_relaxed);
}

void DeviceCore::force_lost(const std::string& why) {
  // Under the recovery lock (shared): the impl marked is the current one, not one recovery is replacing.
  std::shared_lock lock(recovery_mutex_);
  impl().mark_lost(why);
  note_loss();
}

bool DeviceCore::inside_here() const noexcept {
  for (const Inside* in = inside_; in; in = in->outer)
    if (in->core == this) return true;
  return false;
}

void DeviceCore::check_not_inside() const {
  if (inside_here() || DeviceImpl::runs_kernel_of(current_impl_.load(std::memory_order_acquire)))
    fail(ErrorCategory::invalid_argument,
         "a call on " + device_label(info()) +
             " was made from inside another call on the same device (a CPU kernel calling its own device?).",
         "call the device from outside its kernels: a device runs one call at a time, so the inner call would wait "
         "for the outer one forever.");
}

template <class F>
auto DeviceCore::entered(bool call_lock, F&& f) -> decltype(f()) {
  check_not_inside();
  for (;;) {
    {
      std::shared_lock recovery(recovery_mutex_);
      if (!impl().lost()) {
        // Marks this thread as inside a call on this core, so that a nested call is refused
        // before it takes the recovery lock again.
        const Inside inside(this);
        if (!call_lock) return f();
        const CallLock call = host_->lock();
        // A call before this one may have lost the device while this one waited for the lock.
        if (!impl().lost()) return f();
      }
    }
    recover();
  }
}

Deadline DeviceCore::deadline_for(std::chrono::milliseconds limit, const char* call) {
  if (limit.count() < 0)
    fail(ErrorCategory::invalid_argument,
         std::string(call) + " got a negative time limit (" + to_string(limit.count()) + " ms).",
         "pass a limit of 0 ms (no limit) or more.");
  return Deadline::after(limit);
}

void DeviceCore::set_device_timing(bool on) {
  if (on && !can_time_dispatches())
    fail(ErrorCategory::not_supported,
         std::string(to_string(info().backend)) + " device '" + info().name +
             "' cannot time dispatches on the device (its backend reads no device timer).",
         "check Device::can_time_dispatches() first, or time the calls on the host (counters, std::chrono).");
  times_->set_enabled(on);
}

void DeviceCore::set_timeout(std::chrono::milliseconds limit) {
  deadline_for(limit, "Device::set_timeout");
  std::shared_lock lock(recovery_mutex_);  // recovery copies the limit to the fresh device
  timeout_ms_.store(limit.count());
  impl().set_timeout(limit);
}

void validate_dispatch(const DeviceInfo& info, const KernelState& kernel, const BindingSetState& bindings,
                       const ParamsBlock& params, const Groups& groups) {
  const KernelSource& src = kernel.source;
  if (bindings.kernel.get() != &kernel) {
    // A binding set made for another kernel works only when its slot layout is identical.
    const auto& other = bindings.kernel->source.bindings;
    bool same = other.size() == src.bindings.size();
    for (std::size_t i = 0; same && i < other.size(); ++i)
      same = other[i].slot == src.bindings[i].slot && other[i].access == src.bindings[i].access;
    if (!same)
      fail(ErrorCategory::invalid_argument,
           "binding set was made for kernel '" + bindings.kernel->source.name +
               "', whose binding slots differ from kernel '" + src.name + "'.",
           "create the binding set with Device::bind() for the kernel you dispatch.");
  }
  if (params.size() != src.params_size) {
    fail(ErrorCategory::invalid_argument,
         "kernel '" + src.name + "' expects a " + to_string(src.params_size) + "-byte params block but got " +
             to_string(params.size()) + " bytes.",
         "pass ParamsBlock::of(your_params_struct) with the struct the kernel declares (KernelSource::params_size).");
  }
  const std::uint32_t g[3] = {groups.x, groups.y, groups.z};
  for (int d = 0; d < 3; ++d) {
    if (g[d] == 0)
      fail(ErrorCategory::invalid_argument,
           "dispatch of kernel '" + src.name + "' has zero workgroups along " + "xyz"[d] + ".",
           "use at least 1 group per dimension; skip the dispatch when there is no work.");
    if (g[d] > info.limits.max_workgroup_count[d])
      fail(ErrorCategory::invalid_argument,
           "dispatch of kernel '" + src.name + "' asks for " + to_string(g[d]) + " workgroups along " + "xyz"[d] +
               " but " + device_label(info) + " allows " + to_string(info.limits.max_workgroup_count[d]) + ".",
           "spread the groups over x, y and z, or give each group more work.");
  }
  // Group counts × local size: every invocation the backend runs is counted in 64 bits (a
  // CPU loop over them, a GPU's grid); a product past that would run a wrapped, smaller grid.
  try {
    const auto& ws = kernel.workgroup_size;
    const std::uint64_t total = checked_mul(checked_mul(g[0], g[1], "workgroups x·y"), g[2], "workgroups x·y·z");
    const std::uint64_t local = checked_mul(checked_mul(ws[0], ws[1], "local size x·y"), ws[2], "local size x·y·z");
    (void)checked_mul(total, local, "workgroups × local size");
  } catch (const Error& e) {
    const auto& ws = kernel.workgroup_size;
    fail(ErrorCategory::invalid_argument,
         "dispatch of kernel '" + src.name + "' asks for " + to_string(g[0]) + "x" + to_string(g[1]) + "x" +
             to_string(g[2]) + " workgroups of " + to_string(ws[0]) + "x" + to_string(ws[1]) + "x" + to_string(ws[2]) +
             " invocations: " + e.problem(),
         "split the work over several dispatches, or give each invocation more work.");
  }
  for (const BindingDecl& decl : src.bindings) {
    if (!decl.required_bytes) continue;
    std::uint64_t need = 0;
    try {
      need = decl.required_bytes(params, groups);  // a size past 64 bits throws (ops' declarations check)
    } catch (const Error& e) {
      if (e.category() != ErrorCategory::invalid_argument) throw;
      throw Error(e.category(),
                  "kernel '" + src.name + "' slot " + to_string(decl.slot) + " ('" + decl.name + "'): " + e.problem(),
                  e.fix());
    }
    const auto& buf = bindings.by_slot.at(decl.slot);
    if (buf->size < need) {
      fail(ErrorCategory::invalid_argument,
           "kernel '" + src.name + "' slot " + to_string(decl.slot) + " ('" + decl.name + "') holds " +
               to_string(buf->size) + " bytes but this dispatch needs " + to_string(need) + " bytes.",
           "bind a buffer of at least " + to_string(need) + " bytes, or shrink the problem described by the params.");
    }
  }
}

DeviceCore::DeviceCore(std::unique_ptr<DeviceImpl> impl, const Config& config, Reopen reopen,
                       std::shared_ptr<cache::DiskStore> store, std::shared_ptr<const OpTuner> op_tuner)
    : identity_(std::make_shared<DeviceIdentity>(DeviceIdentity{impl->info()})),
      counters_(std::make_shared<Counters>()),
      times_(std::make_shared<DispatchTimeLog>()),
      // The process-wide store is never destroyed: shared, never deleted.
      store_(store ? std::move(store)
                   : std::shared_ptr<cache::DiskStore>(&cache::DiskStore::global(), [](cache::DiskStore*) {})),
      op_tuner_(std::move(op_tuner)),
      tune_(config.tune),
      persistent_limits_(config.persistent_limits()),
      reopen_(std::move(reopen)),
      timeout_ms_(config.timeout.count()),
      host_(make_device_host(std::move(impl), counters_, times_)),
      current_impl_(&host_->impl()),
      clock_(host_->impl().timing_clock()),
      l1_(config.l1_capacity) {
  host_->impl().set_timeout(config.timeout);  // also for a backend made without the runtime's settings
  // VGPU_DEVICE_TIMING turns timing on where the backend has a timer; elsewhere it stays off
  // quietly (Device::can_time_dispatches says which).
  times_->set_enabled(config.device_timing && host_->impl().can_time_dispatches());
  variants_ = std::make_unique<VariantTable>();
}

template <class State>
void DeviceCore::enlist(std::vector<std::weak_ptr<State>>& list, const std::shared_ptr<State>& state) {
  std::lock_guard lock(registry_mutex_);
  // Expired entries go whenever the list would grow, so it stays within twice the live states.
  if (list.size() == list.capacity()) std::erase_if(list, [](const std::weak_ptr<State>& w) { return w.expired(); });
  list.push_back(state);
}

// The L1 cache's kernels are retired to the host, which outlives this core while handles live.
DeviceCore::~DeviceCore() = default;

namespace {

/// Returns a handle's state once it is set (else invalid_argument: empty(), fix_empty) and made
/// for owner (else invalid_argument: foreign(), fix_foreign); no message is built unless a check fails.
template <class State, class Empty, class Foreign>
State& checked_state(const std::shared_ptr<State>& state, const std::shared_ptr<const DeviceIdentity>& owner,
                     Empty&& empty, const char* fix_empty, Foreign&& foreign, const char* fix_foreign) {
  if (!state) fail(ErrorCategory::invalid_argument, empty(), fix_empty);
  if (state->owner != owner) fail(ErrorCategory::invalid_argument, foreign(), fix_foreign);
  return *state;
}

}  // namespace

BufferState& DeviceCore::own(const Buffer& buffer, const char* what) const {
  return checked_state(
      buffer.state_, identity_, [&] { return std::string(what) + " is an empty Buffer handle."; },
      "pass a buffer returned by Device::create_buffer().",
      [&] { return std::string(what) + " belongs to another device than " + device_label(info()) + "."; },
      "create the buffer on the device you use it with, or copy its data through the host.");
}

KernelState& DeviceCore::own(const Kernel& kernel) const {
  return checked_state(
      kernel.state_, identity_, [] { return std::string("empty Kernel handle."); },
      "pass a kernel returned by Device::compile().",
      [&] { return "kernel '" + kernel.state_->source.name + "' was compiled for another device."; },
      "compile the kernel on the device you dispatch it on.");
}

BindingSetState& DeviceCore::own(const BindingSet& bindings) const {
  return checked_state(
      bindings.state_, identity_, [] { return std::string("empty BindingSet handle."); },
      "pass a binding set returned by Device::bind().",
      [] { return std::string("binding set belongs to another device."); },
      "bind buffers on the device you dispatch on.");
}

BatchState& DeviceCore::own(const Batch& batch) const {
  return checked_state(
      batch.state_, identity_, [] { return std::string("empty Batch handle."); },
      "pass a batch returned by Device::create_batch().",
      [] { return std::string("batch was created on another device."); },
      "submit a batch to the device that created it.");
}

Buffer DeviceCore::create_buffer(std::uint64_t bytes, bool internal) {
  if (bytes == 0)
    fail(ErrorCategory::invalid_argument, "cannot create a zero-byte buffer.",
         "pass the size in bytes (> 0) of the data the buffer will hold.");
  const std::uint64_t max = info().limits.max_buffer_bytes;
  if (max != 0 && bytes > max)
    fail(ErrorCategory::out_of_memory,
         "buffer of " + to_string(bytes) + " bytes exceeds the " + to_string(max) + "-byte limit of " +
             device_label(info()) + ".",
         "split the data into smaller buffers or use a device with more memory (vgpu-probe lists limits).");
  auto state = std::make_shared<BufferState>();
  state->owner = identity_;
  state->size = bytes;
  state->internal = internal;
  entered(true, [&] {
    state->impl = guarded("allocating a buffer", [&] { return impl().create_buffer(bytes); });
    // Counted with the allocation: from here on the state's end counts it freed.
    counters_->allocated_bytes.fetch_add(bytes, std::memory_order_relaxed);
    state->device = host_;
    enlist(buffers_, state);
  });
  counters_->allocations.fetch_add(1, std::memory_order_relaxed);
  return Buffer(std::move(state));
}

Buffer DeviceCore::import_memory(void* data, std::uint64_t bytes, std::shared_ptr<void> owner, bool device_memory) {
  if (data == nullptr || bytes == 0)
    fail(ErrorCategory::invalid_argument,
         "cannot use " + to_string(bytes) + " bytes at a null or empty range in place.",
         "pass the address and size (> 0) of memory the array's elements fill.");
  auto state = std::make_shared<BufferState>();
  state->owner = identity_;
  state->size = bytes;
  const bool made = entered(true, [&] {
    state->impl = guarded("using memory in place", [&] {
      return device_memory ? impl().import_device(data, bytes) : impl().import_host(data, bytes);
    });
    if (!state->impl) return false;
    state->device = host_;
    state->imported = data;
    state->imported_device = device_memory;
    state->external = std::move(owner);
    enlist(buffers_, state);
    return true;
  });
  if (!made) return Buffer();
  return Buffer(std::move(state));
}

BufferAddress DeviceCore::address(const Buffer& buffer) {
  BufferState& b = own(buffer, "the buffer");
  return entered(true, [&] { return impl().address(*b.impl); });
}

void DeviceCore::set_label(const Buffer& buffer, const std::string& label) {
  BufferState& b = own(buffer, "the buffer");
  entered(true, [&] {
    b.label = label;
    impl().set_label(*b.impl, label);
  });
}

BufferState* DeviceCore::checked_write(const Buffer& buffer, const void* data, std::uint64_t bytes,
                                       std::uint64_t offset, const char* what) const {
  BufferState& b = own(buffer, what);
  check_range(b, offset, bytes, "write");
  if (bytes == 0) return nullptr;
  if (data == nullptr)
    fail(ErrorCategory::invalid_argument, "write of " + to_string(bytes) + " bytes from a null pointer.",
         "pass a pointer to at least that many readable bytes.");
  return &b;
}

BufferState* DeviceCore::checked_read(const Buffer& buffer, const void* out, std::uint64_t bytes, std::uint64_t offset,
                                      const char* what) const {
  BufferState& b = own(buffer, what);
  check_range(b, offset, bytes, "read");
  if (bytes == 0) return nullptr;
  if (out == nullptr)
    fail(ErrorCategory::invalid_argument, "read of " + to_string(bytes) + " bytes into a null pointer.",
         "pass a pointer to at least that many writable bytes.");
  return &b;
}

void DeviceCore::check_contents(const BufferState& b, const LostContents& lost, std::uint64_t offset,
                                std::uint64_t bytes, const char* what) const {
  if (lost.empty() || !lost.overlaps(offset, bytes)) return;
  std::string why = loss_reason_;
  while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
  fail(ErrorCategory::device_lost,
       std::string(what) + " (a " + to_string(b.size) + "-byte buffer) has lost its contents with the device: " +
           device_label(info()) + " (" + info().id() + ") was lost (" + why + ") and recreated, and " +
           to_string(lost.lost_bytes()) + " of its bytes have not been written since.",
       "write the data again (Device::write covering the whole buffer) before reading it, copying from it or binding "
       "it as a kernel input.");
}

void DeviceCore::write(const Buffer& buffer, const void* data, std::uint64_t bytes, std::uint64_t offset) {
  entered(true, [&] {
    BufferState* b = checked_write(buffer, data, bytes, offset, "write target");
    if (!b) return;
    const Deadline deadline = impl().default_deadline();
    guarded("writing a buffer", [&] { impl().write(*b->impl, offset, data, bytes, deadline); });
    cover(*b, offset, bytes);
    counters_->bytes_up.fetch_add(bytes, std::memory_order_relaxed);
  });
}

void DeviceCore::read(const Buffer& buffer, void* out, std::uint64_t bytes, std::uint64_t offset) {
  entered(true, [&] {
    BufferState* b = checked_read(buffer, out, bytes, offset, "read source");
    if (!b) return;
    check_contents(*b, b->lost, offset, bytes, "read source");
    const Deadline deadline = impl().default_deadline();
    guarded("reading a buffer", [&] { impl().read(*b->impl, offset, out, bytes, deadline); });
    counters_->bytes_down.fetch_add(bytes, std::memory_order_relaxed);
  });
}

void DeviceCore::copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes, std::uint64_t src_offset,
                      std::uint64_t dst_offset) {
  entered(true, [&] {
    BufferState& s = own(src, "copy source");
    BufferState& d = own(dst, "copy destination");
    check_range(s, src_offset, bytes, "copy read");
    check_range(d, dst_offset, bytes, "copy write");
    if (bytes == 0) return;
    if (&s == &d && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes)
      fail(ErrorCategory::invalid_argument, "copy source and destination ranges overlap in one buffer.",
           "copy through a second buffer, or use ranges that do not overlap.");
    check_contents(s, s.lost, src_offset, bytes, "copy source");
    const Deadline deadline = impl().default_deadline();
    guarded("copying a buffer", [&] { impl().copy(*s.impl, src_offset, *d.impl, dst_offset, bytes, deadline); });
    cover(d, dst_offset, bytes);
  });
}

const DialectSource& DeviceCore::check_compilable(const KernelSource& source, const CompileOptions& options) const {
  const DeviceInfo& di = info();
  if (source.name.empty())
    fail(ErrorCategory::invalid_argument, "kernel source has no name.",
         "set KernelSource::name; it appears in errors, logs and reports.");
  const DialectSource* code = source.pick(di.dialects);
  if (!code)
    fail(ErrorCategory::not_supported,
         "kernel '" + source.name + "' has no " + joined(di.dialects, " or ") + " source, so it cannot run on " +
             device_label(di) + " (the kernel has " + joined(dialects_of(source)) + ").",
         "add a source in one of those dialects to the KernelSource, or run it on a backend it has "
         "(VGPU_BACKEND=...).");
  if (source.params_size > kMaxParamsBytes)
    fail(ErrorCategory::invalid_argument,
         "kernel '" + source.name + "' declares a " + to_string(source.params_size) + "-byte params block; at most " +
             to_string(kMaxParamsBytes) + " bytes are allowed.",
         "move large or variable-size arguments into a buffer binding.");
  // Unset: the backend takes the shader's own size (checked against the limits by its driver)
  // or the default, which every device supports.
  const std::array<std::uint32_t, 3> size = options.workgroup_size_or_default();
  std::uint64_t invocations = 1;
  for (int d = 0; d < 3; ++d) {
    const auto w = size[d];
    if (w == 0 || w > di.limits.max_workgroup_size[d])
      fail(ErrorCategory::invalid_argument,
           "workgroup size " + to_string(w) + " along " + "xyz"[d] + " for kernel '" + source.name +
               "' is outside 1.." + to_string(di.limits.max_workgroup_size[d]) + " on " + device_label(di) + ".",
           "choose a workgroup size within the device limits (vgpu-probe prints them).");
    invocations *= w;
  }
  if (invocations > di.limits.max_workgroup_invocations)
    fail(ErrorCategory::invalid_argument,
         "workgroup of " + to_string(invocations) + " invocations for kernel '" + source.name + "' exceeds " +
             to_string(di.limits.max_workgroup_invocations) + " on " + device_label(di) + ".",
         "use a smaller workgroup size.");
  std::set<std::uint32_t> slots;
  for (const BindingDecl& b : source.bindings) {
    if (b.slot >= di.limits.max_bindings)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + source.name + "' declares slot " + to_string(b.slot) + " but " + device_label(di) +
               " supports slots 0.." + to_string(di.limits.max_bindings - 1) + ".",
           "number binding slots from 0 without gaps.");
    if (!slots.insert(b.slot).second)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + source.name + "' declares slot " + to_string(b.slot) + " twice.",
           "give each BindingDecl its own slot.");
  }
  std::set<std::string_view> dialects;
  for (const DialectSource& s : source.sources)
    if (!dialects.insert(s.dialect).second)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + source.name + "' has two sources in dialect '" + s.dialect + "'.",
           "give each dialect one entry (KernelSource::add replaces an earlier one).");
  return *code;
}

std::shared_ptr<KernelState> DeviceCore::build_kernel(const KernelSource& source, const DialectSource& code,
                                                      const CompileOptions& options, const cache::KernelKey& key) {
  auto state = std::make_shared<KernelState>();
  state->owner = identity_;
  state->source = source;
  state->compiled = source;
  state->options = options;
  state->key = key;
  state->impl = guarded("compiling a kernel", [&] { return impl().compile(source, code, options); });
  state->impl->name = source.name;
  state->device = host_;
  counters_->compiles.fetch_add(1, std::memory_order_relaxed);
  state->workgroup_size = options.workgroup_size_or_default();
  if (const KernelReflection* r = state->impl->reflection()) {
    // A mismatch throws here: the state (and the backend's kernel with it) is retired, and L1
    // keeps nothing for the key.
    apply_reflection(state->source, options, *r, info());
    state->reflection = *r;
    state->workgroup_size = r->local_size;
  }
  enlist(kernels_, state);
  return state;
}

Kernel DeviceCore::compile(const KernelSource& source, const CompileOptions& options) {
  Kernel kernel = compile_unchecked(source, options);
  // After the compile, outside its locks: the capabilities the module declares are known, and
  // a probe of one of them compiles and runs on this device like any kernel.
  if (const KernelReflection* r = kernel.reflection(); r && !r->capabilities.empty())
    check_kernel_features(*this, *r, source.name);
  return kernel;
}

Kernel DeviceCore::compile_unchecked(const KernelSource& source, const CompileOptions& options) {
  const DialectSource& code = check_compilable(source, options);
  const cache::KernelKey key = cache::make_kernel_key(source, code, options, info().fingerprint);
  // No call lock (a long compile must not hold up dispatches), but the recovery lock: the kernel
  // lands on the current host, and a recovery waits for it and then rebuilds it.
  return entered(false, [&] {
    // A host callable has nothing to compile, and its captured state cannot be hashed: two
    // lambdas of one type may behave differently, so it bypasses L1 rather than risk a stale hit.
    if (code.fn) {
      counters_->l1_misses.fetch_add(1, std::memory_order_relaxed);
      return Kernel(build_kernel(source, code, options, key));
    }
    const auto before = l1_.stats().evictions;
    auto [state, how] = l1_.get_or_build(key, [&] { return build_kernel(source, code, options, key); });
    if (how == cache::Lookup::built)
      counters_->l1_misses.fetch_add(1, std::memory_order_relaxed);
    else
      counters_->l1_hits.fetch_add(1, std::memory_order_relaxed);
    if (const auto after = l1_.stats().evictions; after > before)
      counters_->l1_evictions.fetch_add(after - before, std::memory_order_relaxed);
    return Kernel(std::move(state));
  });
}

BindingSet DeviceCore::bind(const Kernel& kernel, std::span<const Binding> bindings) {
  return entered(true, [&] {
    KernelState& k = own(kernel);
    std::uint32_t max_slot = 0;
    for (const BindingDecl& d : k.source.bindings) max_slot = std::max(max_slot, d.slot + 1);
    auto state = std::make_shared<BindingSetState>();
    state->owner = identity_;
    state->kernel = kernel.state_;
    state->by_slot.resize(max_slot);
    for (const Binding& b : bindings) {
      const bool declared = std::any_of(k.source.bindings.begin(), k.source.bindings.end(),
                                        [&](const BindingDecl& d) { return d.slot == b.slot; });
      if (!declared)
        fail(ErrorCategory::invalid_argument,
             "kernel '" + k.source.name + "' has no binding slot " + to_string(b.slot) + ".",
             "bind only the slots the kernel declares (Kernel::bindings() lists them).");
      if (state->by_slot[b.slot])
        fail(ErrorCategory::invalid_argument, "slot " + to_string(b.slot) + " is bound twice.", "bind each slot once.");
      const std::string what = "buffer for slot " + to_string(b.slot);
      own(b.buffer, what.c_str());
      state->by_slot[b.slot] = b.buffer.state_;
    }
    std::vector<BufferImpl*> raw(max_slot, nullptr);
    for (const BindingDecl& d : k.source.bindings) {
      if (!state->by_slot[d.slot])
        fail(ErrorCategory::invalid_argument,
             "kernel '" + k.source.name + "' needs a buffer at slot " + to_string(d.slot) + " ('" + d.name +
                 "') but none was bound.",
             "add Binding{" + to_string(d.slot) + ", buffer} to the bind() call.");
      raw[d.slot] = state->by_slot[d.slot]->impl.get();
    }
    state->impl = guarded("binding buffers", [&] { return impl().bind(*k.impl, raw); });
    state->device = host_;
    enlist(binding_sets_, state);
    counters_->binds.fetch_add(1, std::memory_order_relaxed);
    return BindingSet(std::move(state));
  });
}

void DeviceCore::check_commands(std::span<const BatchCommand> commands, TriedContents* tried) {
  if (lost_buffers_ == 0) return;  // the common case: nothing lost since the last recovery
  // In command order: a command that writes a buffer at a write-only slot makes it valid for the
  // commands after it. With tried, the coverage is tried on copies (nothing has run yet).
  for (const BatchCommand& c : commands) {
    for (const BindingDecl& d : c.kernel->source.bindings) {
      BufferState* b = c.bindings->by_slot.at(d.slot).get();
      if (!b || b->lost.empty()) continue;
      LostContents& lc = tried ? tried->of(*b) : b->lost;
      if (d.access == Access::write) {
        lc.cover(0, b->size);
        if (!tried && lc.empty()) --lost_buffers_;
      } else if (!lc.empty()) {
        const std::string what =
            "the buffer at slot " + to_string(d.slot) + " ('" + d.name + "') of kernel '" + c.kernel->source.name + "'";
        check_contents(*b, lc, 0, b->size, what.c_str());
      }
    }
  }
}

void DeviceCore::check_trip(std::span<const HostWrite> writes, const BatchState& s, std::span<const HostRead> reads) {
  TriedContents tried;
  for (const HostWrite& w : writes)
    if (w.bytes && !w.buffer.state_->lost.empty()) tried.of(*w.buffer.state_).cover(w.offset, w.bytes);
  check_commands(s.commands, &tried);
  for (const HostRead& r : reads)
    if (r.bytes && !r.buffer.state_->lost.empty())
      check_contents(*r.buffer.state_, tried.of(*r.buffer.state_), r.offset, r.bytes, "round-trip read source");
}

void DeviceCore::cover(BufferState& b, std::uint64_t offset, std::uint64_t bytes) {
  if (b.lost.empty()) return;
  b.lost.cover(offset, bytes);
  if (b.lost.empty()) --lost_buffers_;
}

void DeviceCore::dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups) {
  entered(true, [&] {
    KernelState& k = own(kernel);
    BindingSetState& b = own(bindings);
    validate_dispatch(info(), k, b, params, groups);
    const BatchCommand one{kernel.state_, bindings.state_, params, groups};
    if (lost_buffers_ != 0) {
      TriedContents tried;
      check_commands(std::span<const BatchCommand>(&one, 1), &tried);
    }
    const DispatchCommand cmd{k.impl.get(), b.impl.get(), params, groups};
    const Deadline deadline = impl().default_deadline();
    guarded("dispatching", [&] {
      // A one-off batch: retired right away, so it is freed once its run has completed. Retired
      // on failure too, since the backend may have queued it before failing.
      std::unique_ptr<RecordedBatchImpl> once = impl().record(std::span<const DispatchCommand>(&cmd, 1));
      try {
        impl().submit(*once, deadline);
      } catch (...) {
        host_->retire(std::move(once));
        throw;
      }
      host_->retire(std::move(once));
    });
    check_commands(std::span<const BatchCommand>(&one, 1), nullptr);
  });
  counters_->submits.fetch_add(1, std::memory_order_relaxed);
  counters_->dispatches.fetch_add(1, std::memory_order_relaxed);
}

Batch DeviceCore::create_batch() {
  auto state = std::make_shared<BatchState>();
  state->owner = identity_;
  entered(false, [&] {
    state->device = host_;
    enlist(batches_, state);
  });
  return Batch(std::move(state));
}

void DeviceCore::submit(const Batch& batch) {
  std::size_t commands = 0;
  entered(true, [&] {
    BatchState& s = own(batch);
    std::lock_guard lock(s.mutex);
    if (s.commands.empty()) return;
    if (lost_buffers_ != 0) {
      TriedContents tried;
      check_commands(s.commands, &tried);
    }
    const Deadline deadline = impl().default_deadline();
    guarded("submitting a batch", [&] {
      record_locked(s);
      impl().submit(*s.recorded, deadline);
    });
    check_commands(s.commands, nullptr);
    commands = s.commands.size();
  });
  if (commands == 0) return;
  counters_->submits.fetch_add(1, std::memory_order_relaxed);
  counters_->dispatches.fetch_add(commands, std::memory_order_relaxed);
}

void DeviceCore::record_locked(BatchState& s) {
  if (s.recorded) return;
  std::vector<DispatchCommand> cmds;
  cmds.reserve(s.commands.size());
  for (const BatchCommand& c : s.commands)
    cmds.push_back(DispatchCommand{c.kernel->impl.get(), c.bindings->impl.get(), c.params, c.groups});
  s.recorded = impl().record(cmds);
}

void DeviceCore::round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads,
                            std::chrono::milliseconds limit) {
  entered(true, [&] {
    const Deadline deadline = deadline_for(limit, "Device::round_trip");  // the trip's start, once it has the device
    // Everything is checked before anything runs, so a bad argument leaves buffers untouched.
    // The op lists are this device's, reused under its call lock, so a steady round trip
    // allocates nothing; never per thread: a CPU kernel of this trip runs on this thread and may
    // make a round trip on another device meanwhile (and a call on this one is refused).
    std::vector<HostWriteOp>& write_ops = trip_writes_;
    std::vector<HostReadOp>& read_ops = trip_reads_;
    write_ops.clear();
    read_ops.clear();
    std::uint64_t up = 0, down = 0;
    for (const HostWrite& w : writes) {
      if (BufferState* b = checked_write(w.buffer, w.data, w.bytes, w.offset, "round-trip write target")) {
        write_ops.push_back(HostWriteOp{b->impl.get(), w.offset, w.data, w.bytes});
        up += w.bytes;
      }
    }
    for (const HostRead& r : reads) {
      if (BufferState* b = checked_read(r.buffer, r.out, r.bytes, r.offset, "round-trip read source")) {
        read_ops.push_back(HostReadOp{b->impl.get(), r.offset, r.out, r.bytes});
        down += r.bytes;
      }
    }
    BatchState& s = own(batch);
    std::lock_guard lock(s.mutex);
    if (lost_buffers_ != 0) check_trip(writes, s, reads);
    guarded("running a round trip", [&] {
      RecordedBatchImpl* recorded = nullptr;
      if (!s.commands.empty()) {
        record_locked(s);
        recorded = s.recorded.get();
      }
      impl().round_trip(write_ops, recorded, read_ops, deadline);
    });
    counters_->bytes_up.fetch_add(up, std::memory_order_relaxed);
    counters_->bytes_down.fetch_add(down, std::memory_order_relaxed);
    if (!s.commands.empty()) {
      counters_->submits.fetch_add(1, std::memory_order_relaxed);
      counters_->dispatches.fetch_add(s.commands.size(), std::memory_order_relaxed);
    }
    if (lost_buffers_ != 0) {  // it ran: the writes and write-only slots covered what they wrote
      for (const HostWrite& w : writes)
        if (w.bytes) cover(*w.buffer.state_, w.offset, w.bytes);
      check_commands(s.commands, nullptr);
    }
  });
}

void DeviceCore::synchronize(std::chrono::milliseconds limit) {
  entered(true, [&] {
    const Deadline deadline = deadline_for(limit, "Device::synchronize");
    guarded("synchronizing", [&] { impl().synchronize(deadline); });
  });
}

}  // namespace vgpu::detail
