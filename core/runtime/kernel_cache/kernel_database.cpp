// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/kernel_database.cpp — the exported KernelDatabase: one pointer to
// its implementation (kernel_database_impl.cpp), to which every member forwards.
#include "vgpu/kernel_database.hpp"

#include <memory>
#include <utility>

#include "kernel_database_impl.hpp"

namespace vgpu {

KernelDatabase::KernelDatabase(Device device)
    : impl_(std::make_unique<detail::KernelDatabaseImpl>(std::move(device))) {}

KernelDatabase::KernelDatabase(Runtime& runtime) : impl_(std::make_unique<detail::KernelDatabaseImpl>(runtime)) {}

KernelDatabase::KernelDatabase() : impl_(std::make_unique<detail::KernelDatabaseImpl>()) {}

KernelDatabase::~KernelDatabase() = default;

void KernelDatabase::add(const std::string& id, PlanFactory factory, PlanStability stability) {
  impl_->add(id, std::move(factory), stability);
}

std::shared_ptr<PersistentKernel> KernelDatabase::get(const std::string& id, const Shape& shape) {
  return impl_->get(id, shape);
}

void KernelDatabase::call(const std::string& id, const Shape& shape, std::span<const TensorArg> args) {
  impl_->call(id, shape, args);
}

std::uint64_t KernelDatabase::hits() const { return impl_->hits(); }

std::uint64_t KernelDatabase::misses() const { return impl_->misses(); }

std::uint64_t KernelDatabase::interim_calls() const { return impl_->interim_calls(); }

std::size_t KernelDatabase::size() const { return impl_->size(); }

std::uint64_t KernelDatabase::buffer_bytes() const { return impl_->buffer_bytes(); }

std::uint64_t KernelDatabase::evictions() const { return impl_->evictions(); }

PersistentLimits KernelDatabase::limits() const { return impl_->limits(); }

void KernelDatabase::set_limits(PersistentLimits limits) { impl_->set_limits(limits); }

std::string KernelDatabase::report() const { return impl_->report(); }

void KernelDatabase::evict(const std::string& id) { impl_->evict(id); }

void KernelDatabase::evict() { impl_->evict(); }

Device KernelDatabase::device() const { return impl_->device(); }

bool KernelDatabase::selects() const noexcept { return impl_->selects(); }

}  // namespace vgpu
