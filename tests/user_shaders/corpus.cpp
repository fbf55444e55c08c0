// SPDX-License-Identifier: Apache-2.0
// tests/user_shaders/corpus.cpp — the harness of the user-shader tests (see corpus.hpp).
#include "user_shaders/corpus.hpp"

#include "support/catch.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <stdexcept>

#include "support/expect_error.hpp"

namespace vgpu_test {
namespace {

std::mutex g_mutex;
std::map<std::string, std::string> g_tally;  // "device shader form" -> outcome

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

void record(const vgpu::Device& device, std::string_view shader, Form form, std::string outcome) {
  std::lock_guard lock(g_mutex);
  g_tally[device.info().id() + " " + std::string(shader) + " " + to_string(form)] = std::move(outcome);
}

}  // namespace

const char* to_string(Form form) { return form == Form::glsl_shader ? "glsl_shader" : "spirv"; }

std::vector<Form> forms() {
  std::vector<Form> f{Form::glsl_shader};
  if (!corpus().empty() && !corpus().front().spirv.empty()) f.push_back(Form::spirv);
  return f;
}

vgpu::KernelSource corpus_source(std::string_view name, Form form) {
  auto it = std::find_if(corpus().begin(), corpus().end(), [&](const CorpusShader& s) { return s.name == name; });
  if (it == corpus().end()) throw std::logic_error("no corpus shader named " + std::string(name));
  vgpu::KernelSource source;
  source.name = "corpus." + std::string(name);
  if (form == Form::glsl_shader) {
    source.add_glsl_shader(std::string(it->glsl.begin(), it->glsl.end()));
  } else {
    // glslc writes little-endian words; copy them out of the byte array (no alignment assumed).
    std::vector<std::uint32_t> words(it->spirv.size() / 4);
    std::memcpy(words.data(), it->spirv.data(), words.size() * 4);
    source.add_spirv(words);
  }
  return source;
}

void run_once(vgpu::Device& device, const vgpu::Kernel& kernel, std::vector<HostBuffer>& buffers,
              const vgpu::ParamsBlock& params, vgpu::Groups groups) {
  std::vector<vgpu::Binding> bindings;
  for (const HostBuffer& hb : buffers) {
    vgpu::Buffer b = device.create_buffer(hb.bytes.size());
    device.write(b, hb.bytes.data(), hb.bytes.size());
    bindings.push_back({hb.slot, b});
  }
  device.dispatch(kernel, device.bind(kernel, bindings), params, groups);
  for (std::size_t i = 0; i < buffers.size(); ++i)
    device.read(bindings[i].buffer, buffers[i].bytes.data(), buffers[i].bytes.size());
}

std::optional<vgpu::Kernel> compile_unless_refused(vgpu::Device& device, const vgpu::KernelSource& source,
                                                   const vgpu::CompileOptions& options,
                                                   std::initializer_list<std::string_view> capabilities) {
  try {
    return device.compile(source, options);
  } catch (const vgpu::Error& e) {
    const std::string what = lower(e.what());
    const bool names_capability = std::any_of(capabilities.begin(), capabilities.end(), [&](std::string_view c) {
      return what.find(lower(c)) != std::string::npos;
    });
    if (e.category() != vgpu::ErrorCategory::not_supported || !names_capability) throw;
    check_error(e, vgpu::ErrorCategory::not_supported, "");
    const Form form = source.find(vgpu::dialect::spirv) ? Form::spirv : Form::glsl_shader;
    record(device, source.name, form, std::string("refused: ") + e.what());
    WARN(device.info().id() << " refused " << source.name << " (" << to_string(form) << "): " << e.what());
    return std::nullopt;
  }
}

void note_ran(const vgpu::Device& device, std::string_view shader, Form form) {
  record(device, "corpus." + std::string(shader), form, "ran, results checked");
}

std::vector<std::string> tally() {
  std::lock_guard lock(g_mutex);
  std::vector<std::string> lines;
  for (const auto& [what, outcome] : g_tally) lines.push_back(what + ": " + outcome);
  return lines;
}

}  // namespace vgpu_test
