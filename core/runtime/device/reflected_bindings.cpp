// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/reflected_bindings.cpp — binding declarations from reflection, and the checks of
// hand-written ones against it: a wrong declaration is an error at compile time, never a
// dispatch that reads or writes past a buffer.
#include "reflected_bindings.hpp"

#include <algorithm>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu::detail {
namespace {

using std::to_string;

// The access's name ("read", "write", "read_write"), as a string to join messages with.
std::string access_name(Access a) { return std::string(vgpu::to_string(a)); }

// How the shader declares the binding, in its own words.
std::string shader_words(const ReflectedBinding& r) {
  std::string what = r.kind == ResourceKind::uniform_buffer ? "uniform block" : "storage buffer";
  if (!r.name.empty()) what += " '" + r.name + "'";
  what += " (set " + to_string(r.set) + ", binding " + to_string(r.binding) + ")";
  return what;
}

// The access a binding must be declared with: readonly (and uniform blocks) → read, writeonly
// → write; a buffer with neither may be declared any way (a shader that only reads need not
// say readonly).
bool contradicts(Access declared, Access reflected) {
  if (reflected == Access::read_write) return false;
  return declared != reflected;
}

// The bytes a reflected binding needs whatever the dispatch: its fixed part (a block with a
// runtime array needs at least what precedes the array).
RequiredBytesFn at_least(std::uint64_t fixed, RequiredBytesFn declared) {
  if (fixed == 0) return declared;
  if (!declared) return [fixed](const ParamsBlock&, const Groups&) { return fixed; };
  return [fixed, declared = std::move(declared)](const ParamsBlock& p, const Groups& g) {
    return std::max(fixed, declared(p, g));
  };
}

void check_workgroup_size(const KernelSource& source, const CompileOptions& options, const KernelReflection& r) {
  if (!options.has_workgroup_size() || options.workgroup_size == r.local_size) return;
  auto text = [](const std::array<std::uint32_t, 3>& s) {
    return to_string(s[0]) + "x" + to_string(s[1]) + "x" + to_string(s[2]);
  };
  fail(ErrorCategory::invalid_argument,
       "kernel '" + source.name + "' runs with local size " + text(r.local_size) +
           " but CompileOptions::workgroup_size asks for " + text(options.workgroup_size) + ".",
       "leave CompileOptions::workgroup_size unset ({0, 0, 0}) to take the shader's own, or make the two match.");
}

void derive(KernelSource& source, const KernelReflection& r) {
  for (const ReflectedBinding& b : r.bindings) {
    BindingDecl d;
    d.slot = b.binding;
    d.access = b.kind == ResourceKind::uniform_buffer ? Access::read : b.access;
    d.name = b.name;
    d.required_bytes = at_least(b.fixed_bytes, nullptr);
    source.bindings.push_back(std::move(d));
  }
  std::sort(source.bindings.begin(), source.bindings.end(),
            [](const BindingDecl& a, const BindingDecl& b) { return a.slot < b.slot; });
  if (source.params_size == 0) source.params_size = r.push_constant_bytes;
}

void check(KernelSource& source, const KernelReflection& r) {
  const std::string kernel = "kernel '" + source.name + "'";
  for (BindingDecl& d : source.bindings) {
    const auto it = std::find_if(r.bindings.begin(), r.bindings.end(),
                                 [&](const ReflectedBinding& b) { return b.binding == d.slot; });
    if (it == r.bindings.end())
      fail(ErrorCategory::invalid_argument,
           kernel + " declares slot " + to_string(d.slot) + " ('" + d.name + "') but its shader has no binding " +
               to_string(d.slot) + ".",
           "remove that BindingDecl or fix its slot number; or leave KernelSource::bindings empty to take the "
           "shader's own (Kernel::bindings() lists them).");
    const Access reflected = it->kind == ResourceKind::uniform_buffer ? Access::read : it->access;
    if (contradicts(d.access, reflected))
      fail(ErrorCategory::invalid_argument,
           kernel + " declares slot " + to_string(d.slot) + " ('" + d.name + "') as " + access_name(d.access) +
               " but the shader's " + shader_words(*it) + " is " + access_name(reflected) + "-only.",
           "declare slot " + to_string(d.slot) + " with Access::" + access_name(reflected) +
               ", or change the shader's readonly/writeonly qualifier.");
    d.required_bytes = at_least(it->fixed_bytes, std::move(d.required_bytes));
  }
  for (const ReflectedBinding& b : r.bindings) {
    const bool declared = std::any_of(source.bindings.begin(), source.bindings.end(),
                                      [&](const BindingDecl& d) { return d.slot == b.binding; });
    if (!declared)
      fail(ErrorCategory::invalid_argument,
           kernel + " uses slot " + to_string(b.binding) + " (its " + shader_words(b) +
               ") but KernelSource::bindings does not declare it.",
           "add BindingDecl{" + to_string(b.binding) +
               ", ...} to KernelSource::bindings, or leave the list empty to take the shader's own.");
  }
  if (source.params_size == 0) {
    source.params_size = r.push_constant_bytes;
  } else if (source.params_size < r.push_constant_bytes) {
    fail(ErrorCategory::invalid_argument,
         kernel + " declares a " + to_string(source.params_size) +
             "-byte params block but its push-constant block "
             "takes " +
             to_string(r.push_constant_bytes) + " bytes.",
         "set KernelSource::params_size to " + to_string(r.push_constant_bytes) +
             " (the C struct must match the block's std430 layout), or leave it 0 to take the shader's.");
  }
}

}  // namespace

void apply_reflection(KernelSource& source, const CompileOptions& options, const KernelReflection& reflection,
                      const DeviceInfo& device) {
  check_workgroup_size(source, options, reflection);
  if (source.bindings.empty())
    derive(source, reflection);
  else
    check(source, reflection);
  for (const BindingDecl& d : source.bindings)
    if (d.slot >= device.limits.max_bindings)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + source.name + "' uses binding " + to_string(d.slot) + " but the device supports slots 0.." +
               to_string(device.limits.max_bindings - 1) + ".",
           "renumber the shader's bindings from 0.");
  if (source.params_size > kMaxParamsBytes)
    fail(ErrorCategory::invalid_argument,
         "kernel '" + source.name + "' has a " + to_string(source.params_size) + "-byte push-constant block; at most " +
             to_string(kMaxParamsBytes) + " bytes are allowed.",
         "move large or variable-size arguments into a buffer binding.");
}

}  // namespace vgpu::detail
