// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_dispatch.cpp — binding sets, recorded batches, their replay on the
// worker, and synchronisation.

#include <algorithm>
#include <cstring>

#include "gl_device.hpp"
#include "vgpu/error.hpp"

namespace vgpu::opengl {

std::unique_ptr<BindingSetImpl> GlDevice::bind(KernelImpl& kernel, std::span<BufferImpl* const> by_slot) {
  // Buffer bindings are context state, set at each dispatch: a binding set is just the list.
  // A slot the kernel's reflection names a uniform block binds as a uniform buffer.
  const KernelReflection* reflection = static_cast<GlKernelImpl&>(kernel).reflection();
  auto is_uniform = [&](std::size_t slot) {
    if (!reflection) return false;
    return std::any_of(reflection->bindings.begin(), reflection->bindings.end(), [&](const ReflectedBinding& b) {
      return b.binding == slot && b.kind == ResourceKind::uniform_buffer;
    });
  };
  auto list = std::make_shared<std::vector<SlotBuffer>>();
  for (std::size_t slot = 0; slot < by_slot.size(); ++slot)
    if (by_slot[slot])
      list->push_back(
          SlotBuffer{static_cast<GLuint>(slot), static_cast<GlBufferImpl*>(by_slot[slot])->name, is_uniform(slot)});
  auto set = std::make_unique<GlBindingSetImpl>();
  set->buffers = std::move(list);
  return set;
}

std::unique_ptr<RecordedBatchImpl> GlDevice::record(std::span<const DispatchCommand> commands) {
  auto list = std::make_shared<std::vector<GlCommand>>();
  list->reserve(commands.size());
  for (const DispatchCommand& c : commands)
    list->push_back(GlCommand{static_cast<GlKernelImpl*>(c.kernel)->program, c.kernel->name,
                              static_cast<GlBindingSetImpl*>(c.bindings)->buffers, c.params, c.groups});
  auto batch = std::make_unique<GlBatchImpl>();
  batch->commands = std::move(list);
  return batch;
}

void GlDevice::submit(RecordedBatchImpl& recorded, const Deadline& /*deadline*/) {
  // Queued, not waited for (so nothing here can run past a limit): the task shares the command list, and holds GL names
  // only, so the batch, its kernels and buffers may go before it runs (their deletion is queued after it).
  worker_.post([this, commands = static_cast<GlBatchImpl&>(recorded).commands, timed = timing_dispatches()] {
    replay_w(*commands, timed);
  });
}

void GlDevice::replay_w(const std::vector<GlCommand>& commands, bool timed) {
  const GLuint params_binding = desc_.caps.params_binding();
  for (const GlCommand& c : commands) {
    barrier_w();  // each dispatch sees the writes of the one before
    if (c.program != current_program_) {
      glUseProgram(c.program);
      current_program_ = c.program;
    }
    for (const SlotBuffer& b : *c.buffers) {
      std::vector<GLuint>& bound = b.uniform ? bound_uniform_ : bound_;
      if (bound.size() <= b.slot) bound.resize(b.slot + 1, 0);
      if (bound[b.slot] != b.buffer) {
        glBindBufferBase(b.uniform ? GL_UNIFORM_BUFFER : GL_SHADER_STORAGE_BUFFER, b.slot, b.buffer);
        bound[b.slot] = b.buffer;
        if (!b.uniform && b.slot == params_binding) params_bound_ = false;
      }
    }
    // A dispatch whose params equal the last uploaded block reuses its ring slot: nothing has
    // written that slot since (the ring only moves on at an upload), and it is still bound.
    // Saves an upload and a rebind per dispatch of a batch that repeats one dispatch.
    const bool same_params = params_bound_ && c.params.size() == last_params_.size() &&
                             std::memcmp(c.params.data(), last_params_.data(), c.params.size()) == 0;
    if (c.params.size() > 0 && !same_params) {
      // A fresh ring slot per dispatch; glBufferSubData into a slot an earlier, still queued
      // dispatch reads is ordered by GL itself (the driver renames or waits).
      const GLintptr offset = static_cast<GLintptr>(params_head_) * params_stride_;
      params_head_ = (params_head_ + 1) % params_slots_;
      const auto size = static_cast<GLsizeiptr>(c.params.size());
      if (desc_.caps.dsa) {
        glNamedBufferSubData(params_ring_, offset, size, c.params.data());
      } else {
        glBindBuffer(GL_COPY_WRITE_BUFFER, params_ring_);
        glBufferSubData(GL_COPY_WRITE_BUFFER, offset, size, c.params.data());
        glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
      }
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, params_binding, params_ring_, offset, params_stride_);
      bound_[params_binding] = 0;
      last_params_ = c.params;
      params_bound_ = true;
    }
    PendingTimer timer;
    if (timed) {
      // glQueryCounter takes the time once every earlier command has completed, so the pair
      // brackets this dispatch alone (the barrier above finished the one before it).
      GLuint q[2];
      for (GLuint& name : q) {
        if (free_queries_.empty()) {
          glGenQueries(1, &name);
        } else {
          name = free_queries_.back();
          free_queries_.pop_back();
        }
      }
      timer = PendingTimer{q[0], q[1], c.kernel};
      glQueryCounter(timer.begin, GL_TIMESTAMP);
    }
    // The dispatch as a debug group named after its kernel (GL_KHR_debug), which GL debuggers show.
    const bool grouped = glad_glPushDebugGroup != nullptr && !c.kernel.empty();
    if (grouped)
      glPushDebugGroup(GL_DEBUG_SOURCE_APPLICATION, 0,
                       static_cast<GLsizei>(std::min<std::size_t>(c.kernel.size(), 255)), c.kernel.c_str());
    glDispatchCompute(c.groups.x, c.groups.y, c.groups.z);
    if (grouped) glPopDebugGroup();
    if (timed) {
      glQueryCounter(timer.end, GL_TIMESTAMP);
      timers_.push_back(std::move(timer));
    }
    barrier_pending_ = true;
    unfinished_ = true;
  }
  glFlush();  // start the work now rather than at the next sync point
}

bool GlDevice::wait_gpu_w(const Deadline& deadline) {
  // A simulated loss strikes while the work runs, before the fence (the work is abandoned).
  if (const GLenum reset = reset_status_w(); reset != GL_NO_ERROR) context_lost_w(reset, "waiting for submitted work");
  GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (fence == nullptr) check_errors_w("creating a fence");
  GLenum status = GL_TIMEOUT_EXPIRED;
  // Long kernels are legitimate: wait in steps of at most a second, up to the deadline (for
  // as long as it takes without one).
  while (status == GL_TIMEOUT_EXPIRED) {
    status = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT,
                              std::min<std::uint64_t>(deadline.remaining_ns(), 1'000'000'000ull));
    if (status == GL_TIMEOUT_EXPIRED && deadline.expired()) break;
  }
  glDeleteSync(fence);
  // With GL_LOSE_CONTEXT_ON_RESET a reset ends the wait as if the work were done: ask.
  if (const GLenum reset = reset_status_w(); reset != GL_NO_ERROR) context_lost_w(reset, "waiting for submitted work");
  if (status == GL_WAIT_FAILED) {
    check_errors_w("waiting for submitted work");
    mark_lost("a wait for its OpenGL work failed (GL_WAIT_FAILED)");
    fail(ErrorCategory::device_lost, "waiting for OpenGL work on '" + desc_.info.name + "' failed.",
         "vgpu recreates the device at its next call, but data in its buffers is gone (write it again); if it "
         "recurs, check the driver's log.");
  }
  if (status == GL_TIMEOUT_EXPIRED) return false;
  check_errors_w("running submitted work");
  unfinished_ = false;
  collect_timers_w();
  return true;
}

void GlDevice::collect_timers_w() noexcept {
  std::size_t done = 0;
  for (; done < timers_.size(); ++done) {
    const PendingTimer& t = timers_[done];
    GLuint64 available = 0;  // the later query first: when it is there, so is the earlier one
    glGetQueryObjectui64v(t.end, GL_QUERY_RESULT_AVAILABLE, &available);
    if (!available) break;  // issued in order: the rest are later still
    GLuint64 begin = 0, end = 0;
    glGetQueryObjectui64v(t.begin, GL_QUERY_RESULT, &begin);
    glGetQueryObjectui64v(t.end, GL_QUERY_RESULT, &end);
    report_dispatch_time(t.kernel, begin, end);  // GL_TIMESTAMP counts nanoseconds
    try {
      free_queries_.push_back(t.begin);
      free_queries_.push_back(t.end);
    } catch (...) {  // no room to keep the names: delete them instead
      const GLuint names[2] = {t.begin, t.end};
      glDeleteQueries(2, names);
    }
  }
  timers_.erase(timers_.begin(), timers_.begin() + static_cast<std::ptrdiff_t>(done));
}

void GlDevice::finish_w(const Deadline& deadline, const char* what, bool force) {
  if (!force && !unfinished_) return;
  if (!wait_gpu_w(deadline)) lose(deadline, what);
}

void GlDevice::synchronize(const Deadline& deadline) {
  call(deadline, "waiting for submitted work (synchronize)", [&] {
    barrier_w();
    finish_w(deadline, "waiting for submitted work (synchronize)", true);
  });
}

void GlDevice::round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* batch,
                          std::span<const HostReadOp> reads, const Deadline& deadline) {
  // The default makes each write and the read a task of its own: three or more hand-offs to the
  // worker and back, each a pair of condition-variable wake-ups. Here the writes and the batch
  // go as one queued task and the reads as one waited-for task: one wait per trip. The queued
  // task may not use the caller's memory once run() could give up on it (a dispatch may block
  // in the driver, as llvmpipe's does), so small writes are copied into trip_staging_; the read
  // task, queued behind it, is what the caller waits for within its deadline. Without reads
  // nothing orders the next trip's reuse of trip_staging_ after this one: the default then.
  std::uint64_t staged = 0;
  for (const HostWriteOp& w : writes) staged += w.bytes;
  if (reads.empty() || lost() || staged > kTripStagingBytes) {
    DeviceImpl::round_trip(writes, batch, reads, deadline);
    return;
  }
  trip_writes_.clear();
  trip_staging_.resize(staged);
  std::uint64_t at = 0;
  for (const HostWriteOp& w : writes) {
    std::memcpy(trip_staging_.data() + at, w.data, w.bytes);
    trip_writes_.push_back(StagedWrite{static_cast<GlBufferImpl*>(w.buffer)->name, w.offset, w.bytes, at});
    at += w.bytes;
  }
  std::shared_ptr<const std::vector<GlCommand>> commands;
  if (batch) commands = static_cast<GlBatchImpl*>(batch)->commands;
  if (!trip_writes_.empty() || commands) {
    worker_.post([this, deadline, commands = std::move(commands), timed = timing_dispatches()] {
      if (!trip_writes_.empty()) {
        // A dispatch may still use a buffer, and glBufferSubData would then block without a limit.
        finish_w(deadline, "waiting for earlier dispatches before writing a buffer");
        for (const StagedWrite& w : trip_writes_)
          transfer_w(w.buffer, w.offset, w.bytes, trip_staging_.data() + w.at, true);
      }
      if (commands) replay_w(*commands, timed);
    });
  }
  call(deadline, "reading a buffer", [&] {
    // Waits on one fence for the whole trip (within the deadline), then reads every output.
    finish_w(deadline, "waiting for submitted work to read a buffer");
    for (const HostReadOp& r : reads)
      transfer_w(static_cast<GlBufferImpl*>(r.buffer)->name, r.offset, r.bytes, r.out, false);
    check_errors_w("reading a buffer");
  });
}

}  // namespace vgpu::opengl
