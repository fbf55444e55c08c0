// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_backend.cpp — the OpenGL ComputeBackend: finding the places (EGL devices
// and displays, WGL's driver) that give a GL 4.3+ core context, describing them, opening them.

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>

#include "gl_device.hpp"
#include "vgpu/backend/driver_limits.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "vgpu/error.hpp"
#include "vgpu/shader_toolchain.hpp"
#include "vgpu/platform/system_info.hpp"

namespace vgpu {
namespace opengl {
namespace {

/// What the process found: usable devices, or why there are none.
struct Discovery {
  std::vector<GlDeviceDesc> devices;
  std::string reason;
};

// Returns true when haystack holds needle.
bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// Returns the device type GL implies (GL has no such query).
DeviceType device_type(const GlCaps& c, const GlContextSource& src) {
  for (std::string_view sw : {"llvmpipe", "softpipe", "SwiftShader", "lavapipe"})
    if (contains(c.renderer, sw)) return DeviceType::software;
  if (src.software) return DeviceType::software;
  // Judge by vendor, as the drivers' own tools do.
  if (contains(c.vendor, "NVIDIA"))
    return contains(c.renderer, "Tegra") || contains(c.renderer, "Orin") ? DeviceType::integrated_gpu
                                                                         : DeviceType::discrete_gpu;
  if (contains(c.vendor, "Intel"))
    return contains(c.renderer, "Arc") ? DeviceType::discrete_gpu : DeviceType::integrated_gpu;
  if (contains(c.vendor, "AMD") || contains(c.vendor, "ATI")) return DeviceType::discrete_gpu;
  if (contains(c.renderer, "virgl") || contains(c.renderer, "SVGA")) return DeviceType::virtual_gpu;
  return DeviceType::other;
}

// Returns v clamped into uint32 (GL reports limits as signed ints).
std::uint32_t clamp_u32(GLint64 v) { return static_cast<std::uint32_t>(std::clamp<GLint64>(v, 0, 0xffffffffLL)); }

// Returns the DeviceInfo of a context's capabilities on display src.
DeviceInfo describe(const GlCaps& c, const GlContextSource& src, std::uint32_t index) {
  DeviceInfo d;
  d.backend = BackendKind::opengl;
  d.index = index;
  d.name = c.renderer;
  d.vendor = c.vendor;
  d.type = device_type(c, src);
  d.driver_version = c.version;
  d.api_version = "OpenGL " + std::to_string(c.major) + "." + std::to_string(c.minor) + " core";
  if (c.memory_kib > 0) {
    d.memory_bytes = static_cast<std::uint64_t>(c.memory_kib) * 1024;
  } else if (d.type == DeviceType::software) {  // llvmpipe allocates from host memory
    d.memory_bytes = platform::physical_memory_bytes();
  }
  d.compute_units = c.sm_count > 0                   ? static_cast<std::uint32_t>(c.sm_count)
                    : d.type == DeviceType::software ? std::max(1u, std::thread::hardware_concurrency())
                                                     : 0;
  if (c.subgroup_size > 0) d.subgroup_size = static_cast<std::uint32_t>(c.subgroup_size);
  d.device_uuid = c.device_uuid;  // GL tells no PCI ids
  d.driver_uuid = c.driver_uuid;
  DeviceLimits& l = d.limits;
  for (int i = 0; i < 3; ++i) {
    l.max_workgroup_size[i] = clamp_u32(c.wg_size[i]);
    l.max_workgroup_count[i] = clamp_u32(c.wg_count[i]);
  }
  l.max_workgroup_invocations = clamp_u32(c.wg_invocations);
  l.max_shared_memory_bytes = clamp_u32(c.shared_memory);
  l.max_buffer_bytes = static_cast<std::uint64_t>(std::max<GLint64>(c.ssbo_block_size, 0));
  if (d.memory_bytes) l.max_buffer_bytes = std::min(l.max_buffer_bytes, d.memory_bytes);
  // The last binding carries the params block, and a program's blocks (its slots + params)
  // must fit the compute stage's block limit too.
  const GLint usable = std::min(c.ssbo_bindings - 1, c.compute_ssbo_blocks - 1);
  l.max_bindings = std::min<std::uint32_t>(clamp_u32(usable), 32);
  l.max_loop_iterations = loop_iteration_limit_of(c.renderer);  // llvmpipe: Mesa's gallivm cuts loops short
  d.features.push_back(src.feature);
  // The body form first (as before); a module form costs no front-end compile when given as SPIR-V.
  d.dialects = {std::string(dialect::glsl), std::string(dialect::spirv), std::string(dialect::glsl_shader)};
  if (!c.binary_formats.empty()) d.features.push_back("program_binary");
  if (c.dsa) d.features.push_back("direct_state_access");
  if (c.gl_spirv) d.features.push_back("gl_spirv");
  if (c.nvx_memory) d.features.push_back("nvx_gpu_memory_info");
  if (c.reset_notification) d.features.push_back("reset_notification");
  std::string formats;
  for (GLint f : c.binary_formats) formats += (formats.empty() ? "" : ",") + std::to_string(f);
  d.fingerprint = make_fingerprint({{"backend", "opengl"},
                                    {"vendor", c.vendor},
                                    {"renderer", c.renderer},
                                    {"version", c.version},
                                    {"glsl", c.glsl_version},
                                    {"context", std::to_string(c.major) + "." + std::to_string(c.minor)},
                                    {"binary_formats", formats.empty() ? "none" : formats},
                                    {"params_binding", std::to_string(c.params_binding())}});
  return d;
}

// Creates a context on src on this thread, reads what it reports and destroys it; "" when
// the display gives a usable compute context, else why not.
std::string probe(const GlContextSource& src, GlCaps* caps) {
  if (std::string missing = missing_source_features(src); !missing.empty()) return src.label + ": " + missing;
  int major = 0, minor = 0;
  std::string why;
  bool reset_notification = false;  // query_caps reads what the context got
  GlContext ctx = create_context(src, &major, &minor, &reset_notification, &why);
  if (!ctx) return src.label + ": " + why;
  if (!make_current(src, ctx, &why) || !load_gl_functions(major, minor, &why)) {
    destroy_context(src, ctx);
    return src.label + ": " + why;
  }
  *caps = query_caps(major, minor);
  destroy_context(src, ctx);
  if (caps->major * 10 + caps->minor < 43 || caps->wg_invocations <= 0)
    return src.label + ": '" + caps->renderer + "' gives OpenGL " + caps->version + " without compute shaders";
  if (caps->ssbo_bindings < 5 || caps->compute_ssbo_blocks < 5)
    return src.label + ": '" + caps->renderer + "' has too few shader storage bindings (" +
           std::to_string(caps->ssbo_bindings) + ")";
  return "";
}

// Runs once per process on a private thread, so no user thread's current context or bound
// API is touched; no device exists yet, so glad's window-system globals are written with no reader.
Discovery discover_now() {
  Discovery out;
  // Every kernel reaches GL through the SPIR-V toolchain (reflection, GLSL cross-compilation).
  if (!toolchain::shader_toolchain()) {
    out.reason = toolchain::shader_toolchain_problem();
    return out;
  }
  if (!load_context_api(&out.reason)) return out;
  std::string problems;
  auto try_display = [&](const GlContextSource& src) {
    GlCaps caps;
    const std::string why = probe(src, &caps);
    if (!why.empty()) {
      problems += (problems.empty() ? "" : "; ") + why;
      return;
    }
    const auto index = static_cast<std::uint32_t>(out.devices.size());
    out.devices.push_back(GlDeviceDesc{src, caps, describe(caps, src, index)});
  };
  for (const GlContextSource& src : primary_sources(&problems)) try_display(src);
  if (out.devices.empty())  // EGL: Mesa without device enumeration, or devices without GL
    for (const GlContextSource& src : fallback_sources(&problems)) try_display(src);
  if (out.devices.empty())
    out.reason = "no " + std::string(window_system_name()) +
                 " device or display yields an OpenGL 4.3+ core context with compute shaders: " + problems;
  return out;
}

/// Returns the process-wide discovery (EGL displays live as long as the process).
const Discovery& discover() {
  static const Discovery discovery = [] {
    Discovery d;
    std::thread t([&] {
      try {
        d = discover_now();
      } catch (const std::exception& e) {
        d.devices.clear();
        d.reason = std::string("OpenGL discovery failed: ") + e.what();
      }
    });
    t.join();
    if (!d.devices.empty()) register_exit_handler();  // after the driver's own, so it runs first
    return d;
  }();
  return discovery;
}

/// The OpenGL backend. Discovery runs once per process on first status()/enumerate()
/// (on a private thread) and is shared by every backend object and device.
/// Thread-safety: all members are safe to call concurrently.
class OpenGLBackend final : public ComputeBackend {
 public:
  /// Opens its devices with settings (one runtime's).
  explicit OpenGLBackend(std::shared_ptr<const BackendSettings> settings) : settings_(std::move(settings)) {}

  BackendKind kind() const noexcept override { return BackendKind::opengl; }
  /// Returns the rule by which it runs the built-in ops (its registry entry names the same).
  std::shared_ptr<const OpTuner> op_tuner() const override { return kernels::configured_gpu_builtin_tuner(); }

  BackendStatus status() override {
    const Discovery& d = discover();
    BackendStatus st;
    st.kind = BackendKind::opengl;
    st.compiled_in = true;
    st.available = !d.devices.empty();
    st.reason = st.available ? "" : d.reason;
    return st;
  }

  std::vector<DeviceInfo> enumerate() override {
    std::vector<DeviceInfo> out;
    for (const auto& desc : discover().devices) out.push_back(desc.info);
    return out;
  }

  std::unique_ptr<DeviceImpl> open(std::uint32_t index) override {
    const Discovery& d = discover();
    if (d.devices.empty())
      fail(ErrorCategory::unavailable, "OpenGL is unavailable: " + d.reason + ".", "run vgpu-probe for details.");
    if (index >= d.devices.size())
      fail(ErrorCategory::invalid_argument, "there is no OpenGL device " + std::to_string(index) + ".",
           "use an index from vgpu-probe's device list.");
    return std::make_unique<GlDevice>(d.devices[index], settings_);
  }

 private:
  std::shared_ptr<const BackendSettings> settings_;
};

}  // namespace

GlCaps query_caps(int major, int minor) {
  GlCaps c;
  c.major = major;
  c.minor = minor;
  c.vendor = gl_string(GL_VENDOR);
  c.renderer = gl_string(GL_RENDERER);
  c.version = gl_string(GL_VERSION);
  c.glsl_version = gl_string(GL_SHADING_LANGUAGE_VERSION);
  // "4.50 NVIDIA" / "4.50": the number without its dot.
  if (c.glsl_version.size() >= 4 && c.glsl_version[1] == '.')
    c.glsl = (c.glsl_version[0] - '0') * 100 + (c.glsl_version[2] - '0') * 10 + (c.glsl_version[3] - '0');
  const std::vector<std::string> ext = gl_extensions();
  c.dsa = c.major * 10 + c.minor >= 45 || has_extension(ext, "GL_ARB_direct_state_access");
  c.nvx_memory = has_extension(ext, "GL_NVX_gpu_memory_info");
  c.gl_spirv = c.major * 10 + c.minor >= 46 || has_extension(ext, "GL_ARB_gl_spirv");
  // GL 4.5 / GL_ARB_robustness; an older context without it sets GL_INVALID_ENUM, cleared here.
  GLint strategy = 0;
  glGetIntegerv(GL_RESET_NOTIFICATION_STRATEGY, &strategy);
  take_gl_error();
  c.reset_notification = strategy == GL_LOSE_CONTEXT_ON_RESET;
  GLint n = 0;
  glGetIntegerv(GL_NUM_PROGRAM_BINARY_FORMATS, &n);
  if (n > 0) {
    c.binary_formats.resize(static_cast<std::size_t>(n));
    glGetIntegerv(GL_PROGRAM_BINARY_FORMATS, c.binary_formats.data());
  }
  glGetIntegerv(GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS, &c.ssbo_bindings);
  glGetIntegerv(GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS, &c.compute_ssbo_blocks);
  glGetIntegerv(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, &c.ssbo_alignment);
  glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &c.ssbo_block_size);
  for (GLuint i = 0; i < 3; ++i) {
    glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_SIZE, i, &c.wg_size[i]);
    glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, i, &c.wg_count[i]);
  }
  glGetIntegerv(GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS, &c.wg_invocations);
  glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, &c.shared_memory);
  if (c.nvx_memory) {
    GLint kib = 0;
    glGetIntegerv(GL_GPU_MEMORY_INFO_TOTAL_AVAILABLE_MEMORY_NVX, &kib);
    c.memory_kib = kib;
  }
  if (has_extension(ext, "GL_NV_shader_thread_group")) {
    glGetIntegerv(GL_SM_COUNT_NV, &c.sm_count);
    glGetIntegerv(GL_WARP_SIZE_NV, &c.subgroup_size);
  }
  if (has_extension(ext, "GL_KHR_shader_subgroup")) glGetIntegerv(GL_SUBGROUP_SIZE_KHR, &c.subgroup_size);
  // GL_EXT_memory_object tells the same UUIDs as Vulkan (for sharing memory), so the two can be matched.
  if (has_extension(ext, "GL_EXT_memory_object") && glGetUnsignedBytevEXT && glGetUnsignedBytei_vEXT) {
    while (glGetError() != GL_NO_ERROR) {  // only errors of these queries count below
    }
    GLint uuids = 0;
    glGetIntegerv(GL_NUM_DEVICE_UUIDS_EXT, &uuids);
    const auto hex = [](const GLubyte* b) {
      std::string s;
      char two[3];
      for (int i = 0; i < GL_UUID_SIZE_EXT; ++i) {
        std::snprintf(two, sizeof two, "%02x", b[i]);
        s += two;
      }
      return s;
    };
    GLubyte uuid[GL_UUID_SIZE_EXT] = {};
    glGetUnsignedBytevEXT(GL_DRIVER_UUID_EXT, uuid);
    c.driver_uuid = hex(uuid);
    if (uuids > 0) {
      glGetUnsignedBytei_vEXT(GL_DEVICE_UUID_EXT, 0, uuid);
      c.device_uuid = hex(uuid);
    }
    while (glGetError() != GL_NO_ERROR) {  // a driver that lists the extension but refuses: unknown
      c.driver_uuid.clear();
      c.device_uuid.clear();
    }
  }
  c.shader_features.version = c.major * 10 + c.minor;
  c.shader_features.extensions = ext;
  if (c.shader_features.version >= 46 || has_extension(ext, "GL_ARB_spirv_extensions")) {
    GLint spv = 0;
    glGetIntegerv(GL_NUM_SPIR_V_EXTENSIONS, &spv);
    for (GLint i = 0; i < spv; ++i)
      if (const GLubyte* s = glGetStringi(GL_SPIR_V_EXTENSIONS, static_cast<GLuint>(i)))
        c.shader_features.spirv_extensions.emplace_back(reinterpret_cast<const char*>(s));
  }
  take_gl_error();  // a query a driver does not know must not leak into the device's first call
  return c;
}

}  // namespace opengl

std::unique_ptr<ComputeBackend> make_opengl_backend(std::shared_ptr<const BackendSettings> settings) {
  return std::make_unique<opengl::OpenGLBackend>(std::move(settings));
}

}  // namespace vgpu
