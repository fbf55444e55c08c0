// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/reflect.cpp — a module's interface through SPIRV-Cross's C API: bindings,
// push constants, local size, specialization constants and capabilities.
#include <spirv_cross_c.h>

#include <algorithm>
#include <memory>
#include <set>

#include "toolchain_impl.hpp"
#include "vgpu/error.hpp"

namespace vgpu::toolchain::impl {
namespace {

struct ContextDeleter {
  void operator()(spvc_context c) const noexcept { spvc_context_destroy(c); }
};

/// One SPIRV-Cross session over a module; every call's failure becomes a vgpu Error.
class Session {
 public:
  Session(std::span<const std::uint32_t> words, const std::string& kernel_name) : name_(kernel_name) {
    spvc_context c = nullptr;
    if (spvc_context_create(&c) != SPVC_SUCCESS || !c)
      fail(ErrorCategory::out_of_memory, "SPIRV-Cross could not create a context.", "free host memory and try again.");
    context_.reset(c);
    // SPIRV-Cross would print its errors on stderr; they are read back into the Error instead.
    spvc_context_set_error_callback(
        context_.get(), [](void*, const char*) {}, nullptr);
    spvc_parsed_ir ir = nullptr;
    check(spvc_context_parse_spirv(context_.get(), words.data(), words.size(), &ir), "parse");
    check(spvc_context_create_compiler(context_.get(), SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP,
                                       &compiler_),
          "create a compiler");
  }
  spvc_compiler compiler() const { return compiler_; }
  void check(spvc_result r, const char* what) const {
    if (r == SPVC_SUCCESS) return;
    const char* why = spvc_context_get_last_error_string(context_.get());
    fail(ErrorCategory::compile_error,
         "SPIRV-Cross could not " + std::string(what) + " the SPIR-V of kernel '" + name_ +
             "': " + (why && *why ? why : "no message") + ".",
         "pass a valid SPIR-V compute module (spirv-val checks it).");
  }

 private:
  std::string name_;
  std::unique_ptr<spvc_context_s, ContextDeleter> context_;
  spvc_compiler compiler_ = nullptr;
};

std::string resource_name(spvc_compiler c, const spvc_reflected_resource& r) {
  const char* n = spvc_compiler_get_name(c, r.id);
  if (n && *n) return n;
  n = spvc_compiler_get_name(c, r.base_type_id);
  return n ? n : "";
}

// The block's size without a trailing runtime array, and that array's element stride (0: none).
void block_size(spvc_compiler c, spvc_type_id base, std::uint64_t* fixed, std::uint64_t* stride) {
  const spvc_type t = spvc_compiler_get_type_handle(c, base);
  std::size_t zero = 0, one = 0;
  *fixed = 0;
  *stride = 0;
  // A size that SPIRV-Cross cannot evaluate (an array sized by a spec-constant expression it
  // does not fold) stays 0: "unknown", which the size checks treat as no fixed size.
  if (spvc_compiler_get_declared_struct_size_runtime_array(c, t, 0, &zero) != SPVC_SUCCESS) return;
  if (spvc_compiler_get_declared_struct_size_runtime_array(c, t, 1, &one) != SPVC_SUCCESS) return;
  *fixed = zero;
  *stride = one - zero;
}

SpecValue constant_value(spvc_compiler c, spvc_constant_id id, std::uint32_t spec_id, const std::string& kernel) {
  const spvc_constant k = spvc_compiler_get_constant_handle(c, id);
  const spvc_type t = spvc_compiler_get_type_handle(c, spvc_constant_get_type(k));
  SpecValue v;
  v.bits = spvc_constant_get_scalar_u32(k, 0, 0);
  switch (spvc_type_get_basetype(t)) {
    case SPVC_BASETYPE_BOOLEAN:
      v.type = SpecValue::Type::boolean;
      v.bits = v.bits ? 1u : 0u;
      break;
    case SPVC_BASETYPE_INT32:
      v.type = SpecValue::Type::i32;
      break;
    case SPVC_BASETYPE_UINT32:
      v.type = SpecValue::Type::u32;
      break;
    case SPVC_BASETYPE_FP32:
      v.type = SpecValue::Type::f32;
      break;
    default:
      fail(ErrorCategory::not_supported,
           "kernel '" + kernel + "' declares specialization constant " + std::to_string(spec_id) +
               " of a type other than bool, int, uint or float (32-bit); vgpu cannot specialise it.",
           "declare the constant as bool, int, uint or float and convert it in the shader.");
  }
  return v;
}

}  // namespace

KernelReflection reflect(std::span<const std::uint32_t> words, const std::string& entry, const std::string& kernel_name,
                         std::span<const SpecEntry> spec) {
  const std::vector<std::uint32_t> patched = with_spec_defaults(reflection_view(words), spec);
  Session s(patched, kernel_name);
  const spvc_compiler c = s.compiler();
  KernelReflection out;
  out.entry = entry;

  const spvc_entry_point* entries = nullptr;
  std::size_t n_entries = 0;
  s.check(spvc_compiler_get_entry_points(c, &entries, &n_entries), "list the entry points of");
  bool found = false;
  std::string names;
  for (std::size_t i = 0; i < n_entries; ++i) {
    if (entries[i].execution_model != SpvExecutionModelGLCompute) continue;
    names += (names.empty() ? "" : ", ") + std::string(entries[i].name);
    if (entry == entries[i].name) found = true;
  }
  if (!found)
    fail(ErrorCategory::compile_error,
         "the SPIR-V of kernel '" + kernel_name + "' has no GLCompute entry point '" + entry +
             "' (it has: " + (names.empty() ? std::string("none") : names) + ").",
         "name one of the module's compute entry points as the kernel's entry (KernelSource::add_spirv's entry).");
  s.check(spvc_compiler_set_entry_point(c, entry.c_str(), SpvExecutionModelGLCompute), "select the entry point of");

  spvc_resources resources = nullptr;
  s.check(spvc_compiler_create_shader_resources(c, &resources), "reflect the resources of");
  auto list = [&](spvc_resource_type type) {
    const spvc_reflected_resource* r = nullptr;
    std::size_t n = 0;
    s.check(spvc_resources_get_resource_list_for_type(resources, type, &r, &n), "list the resources of");
    return std::span<const spvc_reflected_resource>(r, n);
  };
  const struct {
    spvc_resource_type type;
    const char* what;
  } unsupported[] = {{SPVC_RESOURCE_TYPE_STORAGE_IMAGE, "storage image"},
                     {SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, "sampled image"},
                     {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, "texture"},
                     {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, "sampler"},
                     {SPVC_RESOURCE_TYPE_ATOMIC_COUNTER, "atomic counter"},
                     {SPVC_RESOURCE_TYPE_SUBPASS_INPUT, "subpass input"},
                     {SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE, "acceleration structure"}};
  for (const auto& u : unsupported)
    for (const auto& r : list(u.type))
      fail(ErrorCategory::not_supported,
           "kernel '" + kernel_name + "' declares " + u.what + " '" + resource_name(c, r) +
               "'; vgpu binds storage buffers, uniform buffers and one push-constant block only.",
           "pass the data through a storage buffer (an SSBO) instead.");

  for (const auto kind : {ResourceKind::storage_buffer, ResourceKind::uniform_buffer}) {
    for (const auto& r : list(kind == ResourceKind::storage_buffer ? SPVC_RESOURCE_TYPE_STORAGE_BUFFER
                                                                   : SPVC_RESOURCE_TYPE_UNIFORM_BUFFER)) {
      ReflectedBinding b;
      b.kind = kind;
      b.set = spvc_compiler_get_decoration(c, r.id, SpvDecorationDescriptorSet);
      b.binding = spvc_compiler_get_decoration(c, r.id, SpvDecorationBinding);
      b.name = resource_name(c, r);
      const spvc_type t = spvc_compiler_get_type_handle(c, r.type_id);
      if (spvc_type_get_num_array_dimensions(t) != 0)
        fail(ErrorCategory::not_supported,
             "kernel '" + kernel_name + "' declares an array of buffers ('" + b.name + "', binding " +
                 std::to_string(b.binding) + "); vgpu binds one buffer per binding.",
             "declare one buffer block per binding.");
      if (kind == ResourceKind::uniform_buffer) {
        b.access = Access::read;
      } else {
        const SpvDecoration* d = nullptr;
        std::size_t nd = 0;
        s.check(spvc_compiler_get_buffer_block_decorations(c, r.id, &d, &nd), "read the decorations of");
        const bool no_write = std::find(d, d + nd, SpvDecorationNonWritable) != d + nd;
        const bool no_read = std::find(d, d + nd, SpvDecorationNonReadable) != d + nd;
        b.access = no_write ? Access::read : no_read ? Access::write : Access::read_write;
      }
      block_size(c, r.base_type_id, &b.fixed_bytes, &b.runtime_stride);
      out.bindings.push_back(std::move(b));
    }
  }
  std::sort(out.bindings.begin(), out.bindings.end(),
            [](const ReflectedBinding& a, const ReflectedBinding& b) { return a.binding < b.binding; });
  for (std::size_t i = 1; i < out.bindings.size(); ++i)
    if (out.bindings[i].binding == out.bindings[i - 1].binding)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + kernel_name + "' declares binding " + std::to_string(out.bindings[i].binding) +
               " twice (sets " + std::to_string(out.bindings[i - 1].set) + " and " +
               std::to_string(out.bindings[i].set) + "); vgpu's slot is the binding number, unique across sets.",
           "give every buffer its own binding number.");

  const auto push = list(SPVC_RESOURCE_TYPE_PUSH_CONSTANT);
  if (push.size() > 1)
    fail(ErrorCategory::not_supported, "kernel '" + kernel_name + "' declares more than one push-constant block.",
         "declare one push-constant block.");
  for (const auto& r : push) {
    std::size_t bytes = 0;
    s.check(spvc_compiler_get_declared_struct_size(c, spvc_compiler_get_type_handle(c, r.base_type_id), &bytes),
            "size the push-constant block of");
    out.push_constant_bytes = static_cast<std::uint32_t>(bytes);
  }

  const spvc_specialization_constant* consts = nullptr;
  std::size_t n_consts = 0;
  s.check(spvc_compiler_get_specialization_constants(c, &consts, &n_consts), "list the specialization constants of");
  for (std::size_t i = 0; i < n_consts; ++i) {
    ReflectedSpecConstant k;
    k.id = consts[i].constant_id;
    const char* n = spvc_compiler_get_name(c, consts[i].id);
    k.name = n ? n : "";
    k.default_value = constant_value(c, consts[i].id, k.id, kernel_name);
    out.spec_constants.push_back(std::move(k));
  }
  // One id may name two constants (glslang gives local_size_x_id = N its own, beside a shader's
  // constant_id = N): both take one value, so one entry, the named one, stands for them.
  std::stable_sort(out.spec_constants.begin(), out.spec_constants.end(),
                   [](const ReflectedSpecConstant& a, const ReflectedSpecConstant& b) {
                     return a.id != b.id ? a.id < b.id : a.name.size() > b.name.size();
                   });
  out.spec_constants.erase(
      std::unique(out.spec_constants.begin(), out.spec_constants.end(),
                  [](const ReflectedSpecConstant& a, const ReflectedSpecConstant& b) { return a.id == b.id; }),
      out.spec_constants.end());

  // Local size: the WorkgroupSize built-in (a composite of constants, some specialisable) wins
  // over the LocalSize execution mode, as in SPIR-V.
  spvc_specialization_constant dims[3]{};
  const spvc_constant_id composite =
      spvc_compiler_get_work_group_size_specialization_constants(c, &dims[0], &dims[1], &dims[2]);
  const spvc_constant_id* parts = nullptr;
  std::size_t n_parts = 0;
  if (composite) spvc_constant_get_subconstants(spvc_compiler_get_constant_handle(c, composite), &parts, &n_parts);
  for (unsigned i = 0; i < 3; ++i) {
    if (dims[i].id) out.local_size_ids[i] = dims[i].constant_id;
    if (composite && n_parts == 3)
      out.local_size[i] = spvc_constant_get_scalar_u32(spvc_compiler_get_constant_handle(c, parts[i]), 0, 0);
    else
      out.local_size[i] = spvc_compiler_get_execution_mode_argument_by_index(c, SpvExecutionModeLocalSize, i);
  }

  const SpvCapability* caps = nullptr;
  std::size_t n_caps = 0;
  s.check(spvc_compiler_get_declared_capabilities(c, &caps, &n_caps), "list the capabilities of");
  std::set<std::string> names_seen;
  for (std::size_t i = 0; i < n_caps; ++i)
    if (names_seen.insert(capability_name(static_cast<std::uint32_t>(caps[i]))).second)
      out.capabilities.push_back(capability_name(static_cast<std::uint32_t>(caps[i])));
  return out;
}

}  // namespace vgpu::toolchain::impl
