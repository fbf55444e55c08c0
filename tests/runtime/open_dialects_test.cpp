// SPDX-License-Identifier: Apache-2.0
// tests/runtime/open_dialects_test.cpp — the open set of dialects and backends: a KernelSource is a list
// of dialect entries, a device compiles the first of its own dialects the kernel has, and a
// backend vgpu has never heard of (its own kind, name and dialect) runs user kernels and the
// built-in ops through the same core, with no change to core.
#include "support/catch.hpp"
#include <memory>
#include <string>
#include <vector>

#include "support/expect_error.hpp"
#include "support/forwarding_device.hpp"
#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/vgpu.hpp"

namespace {

const vgpu::BackendKind kHostBackend = vgpu::BackendKind::named("host");
constexpr const char* kHostDialect = "host_fn";

// A device of a backend from outside vgpu: it compiles only "host_fn" entries (a callable, as
// the CPU dialect holds) by handing them to the CPU device underneath.
class HostDevice final : public vgpu_test::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::unique_ptr<vgpu::KernelImpl> compile(const vgpu::KernelSource& source, const vgpu::DialectSource& code,
                                            const vgpu::CompileOptions& options) override {
    compiled.push_back(code.dialect);
    vgpu::DialectSource as_cpu = code;
    as_cpu.dialect = std::string(vgpu::dialect::cpu);
    return inner_->compile(source, as_cpu, options);
  }

  std::vector<std::string> compiled;  // the dialect of every entry compile() got
};

// Its op tuner: the built-ins run as the CPU's, but from the backend's own code entry (here the
// CPU built-in under the backend's dialect name), which ops adds to the built-in's sources.
class HostTuner final : public vgpu::OpTuner {
 public:
  explicit HostTuner(std::shared_ptr<const vgpu::OpTuner> cpu) : cpu_(std::move(cpu)) {}
  vgpu::OpTuning tune(const vgpu::OpShape& shape, const vgpu::DeviceInfo& device) const override {
    vgpu::OpTuning t = cpu_->tune(shape, device);
    t.code = vgpu::DialectSource{kHostDialect, {}, std::string(shape.op), {}, "1"};
    return t;
  }

 private:
  std::shared_ptr<const vgpu::OpTuner> cpu_;
};

class HostBackend final : public vgpu::ComputeBackend {
 public:
  HostBackend() : cpu_(vgpu::make_cpu_backend()) {}
  vgpu::BackendKind kind() const noexcept override { return kHostBackend; }
  std::string name() const override { return "host"; }
  vgpu::BackendStatus status() override { return {kHostBackend, true, true, {}}; }
  std::vector<vgpu::DeviceInfo> enumerate() override { return {info()}; }
  std::shared_ptr<const vgpu::OpTuner> op_tuner() const override {
    return std::make_shared<HostTuner>(cpu_->op_tuner());
  }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t) override {
    auto d = std::make_unique<HostDevice>(cpu_->open(0), info());
    last = d.get();
    return d;
  }
  HostDevice* last = nullptr;

 private:
  vgpu::DeviceInfo info() const {
    vgpu::DeviceInfo d = vgpu_test::cpu_device_as(*cpu_, kHostBackend, "host device");
    d.dialects = {kHostDialect};
    return d;
  }
  std::unique_ptr<vgpu::ComputeBackend> cpu_;
};

// out[i] = 2 * in[i] + tag, as a CPU callable.
vgpu::CpuKernelFn doubling(float tag) {
  return [tag](const vgpu::CpuWorkgroup& wg) {
    const float* in = wg.buffer<const float>(0);
    float* out = wg.buffer<float>(1);
    const std::uint64_t n = wg.buffers[0].bytes / 4;
    wg.for_each_invocation([&](auto g, auto) {
      if (g[0] < n) out[g[0]] = 2 * in[g[0]] + tag;
    });
  };
}

vgpu::KernelSource doubling_source() {
  vgpu::KernelSource s;
  s.name = "test.doubling";
  s.bindings = {{0, vgpu::Access::read, "in", {}}, {1, vgpu::Access::write, "out", {}}};
  return s;
}

std::vector<float> run(vgpu::Device& device, const vgpu::KernelSource& source, std::vector<float> in) {
  vgpu::CompileOptions o;
  o.workgroup_size = {8, 1, 1};
  const vgpu::Kernel k = device.compile(source, o);
  vgpu::Buffer a = device.create_buffer(in.size() * 4), b = device.create_buffer(in.size() * 4);
  device.write(a, in.data(), in.size() * 4);
  const std::vector<float> poison(in.size(), -1e30f);
  device.write(b, poison.data(), poison.size() * 4);
  device.dispatch(k, device.bind(k, {{0, a}, {1, b}}), {},
                  vgpu::Groups{static_cast<std::uint32_t>((in.size() + 7) / 8)});
  std::vector<float> out(in.size());
  device.read(b, out.data(), out.size() * 4);
  return out;
}

}  // namespace

TEST_CASE("KernelSource: one entry per dialect, found by name, picked in the device's order", "[dialects]") {
  vgpu::KernelSource s = doubling_source();
  CHECK(s.find(vgpu::dialect::glsl) == nullptr);
  s.add_glsl("void main() {}").add_cuda("extern \"C\" __global__ void k() {}", "k");
  REQUIRE(s.find(vgpu::dialect::glsl) != nullptr);
  CHECK(s.find(vgpu::dialect::glsl)->code == "void main() {}");
  s.add_glsl("void main() { }");  // replaces, never duplicates
  CHECK(s.sources.size() == 2);
  CHECK(s.find(vgpu::dialect::glsl)->code == "void main() { }");
  const std::vector<std::string> cuda_first = {"cuda", "glsl"}, glsl_first = {"glsl", "cuda"}, none = {"cpu"};
  CHECK(s.pick(cuda_first)->dialect == "cuda");
  CHECK(s.pick(glsl_first)->dialect == "glsl");
  CHECK(s.pick(none) == nullptr);
  s.add(vgpu::DialectSource{"cpu", {}, {}, {}, {}});  // an empty entry is no source at all
  CHECK(s.pick(none) == nullptr);
  s.remove(vgpu::dialect::glsl);
  CHECK(s.find(vgpu::dialect::glsl) == nullptr);
  CHECK(s.pick(glsl_first)->dialect == "cuda");
}

TEST_CASE("a kernel without the device's dialect, or with one dialect twice, is refused", "[dialects][errors]") {
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  vgpu::KernelSource s = doubling_source();
  s.add_glsl("void main() {}");
  REQUIRE_VGPU_ERROR(not_supported, "has no cpu source, so it cannot run on cpu device", cpu.compile(s));
  REQUIRE_VGPU_ERROR(not_supported, "(the kernel has glsl)", cpu.compile(s));
  s.add_cpu(doubling(0));
  s.sources.push_back(s.sources.back());  // bypassing add(): two cpu entries
  REQUIRE_VGPU_ERROR(invalid_argument, "two sources in dialect 'cpu'", cpu.compile(s));
}

TEST_CASE("a backend from outside vgpu, with its own kind, name and dialect, runs through core",
          "[dialects][backend]") {
  auto backend = std::make_shared<HostBackend>();
  vgpu::RuntimeOptions options;
  options.backends.push_back(backend);
  vgpu::Runtime runtime(options);
  REQUIRE(runtime.devices().size() == 1);
  CHECK(runtime.devices()[0].id() == "host:0");
  CHECK(vgpu::to_string(kHostBackend) == "host");
  CHECK(vgpu::parse_backend_kind("host") == kHostBackend);
  vgpu::Device device = runtime.open("host:0");

  // It compiles the entry in its dialect, never the CPU one the kernel also carries.
  vgpu::KernelSource s = doubling_source();
  s.add_cpu(doubling(1000));
  s.add(vgpu::DialectSource{kHostDialect, {}, {}, doubling(0), "1"});
  const std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<float> out = run(device, s, in);
  for (std::size_t i = 0; i < in.size(); ++i) CHECK(out[i] == 2 * in[i]);
  REQUIRE(backend->last != nullptr);
  CHECK(backend->last->compiled == std::vector<std::string>{kHostDialect});
  // A kernel with only the CPU entry cannot run there.
  s.remove(kHostDialect);
  REQUIRE_VGPU_ERROR(not_supported, "has no host_fn source", device.compile(s));

  // Built-in ops run from the code the backend's tuner brings.
  vgpu::KernelDatabase db(runtime);
  const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  std::vector<float> sum(3, -1);
  const vgpu::TensorArg args[] = {{a.data(), {3}}, {b.data(), {3}}, {sum.data(), {3}}};
  db.call("add", {3}, args);
  CHECK(sum == std::vector<float>{11, 22, 33});
  CHECK(backend->last->compiled.back() == kHostDialect);

  // One name, one kind: the same name gives the same kind, vgpu's own names their constants,
  // another name another kind; a name that cannot form device ids is refused.
  CHECK(vgpu::BackendKind::named("host") == kHostBackend);
  CHECK(vgpu::BackendKind::named("cpu") == vgpu::BackendKind::cpu);
  CHECK(vgpu::BackendKind::named("host2") != kHostBackend);
  CHECK_FALSE(kHostBackend.builtin());
  REQUIRE_VGPU_ERROR(invalid_argument, "plain word", vgpu::BackendKind::named("a:b"));
  REQUIRE_VGPU_ERROR(invalid_argument, "plain word", vgpu::BackendKind::named(""));
}

// A backend from outside vgpu that brings no op tuner: its devices run kernels of their own
// (the CPU device underneath), but no built-in op.
class BareBackend final : public vgpu::ComputeBackend {
 public:
  inline static const vgpu::BackendKind kKind = vgpu::BackendKind::named("bare");
  BareBackend() : cpu_(vgpu::make_cpu_backend()) {}
  vgpu::BackendKind kind() const noexcept override { return kKind; }
  vgpu::BackendStatus status() override { return {kKind, true, true, {}}; }
  std::vector<vgpu::DeviceInfo> enumerate() override { return {info()}; }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t) override {
    return std::make_unique<BareDevice>(cpu_->open(0), info());
  }

 private:
  class BareDevice final : public vgpu_test::ForwardingDevice {
   public:
    using ForwardingDevice::ForwardingDevice;
  };
  vgpu::DeviceInfo info() const { return vgpu_test::cpu_device_as(*cpu_, kKind, "bare device"); }
  std::unique_ptr<vgpu::ComputeBackend> cpu_;
};

TEST_CASE("the built-in ops take the backend's tuner, not the DeviceInfo's, and a backend without one runs none",
          "[dialects][backend][ops]") {
  auto host = std::make_shared<HostBackend>();
  vgpu::RuntimeOptions options;
  options.backends = {host, std::make_shared<BareBackend>()};
  vgpu::Runtime runtime(options);
  // DeviceInfo is plain data: a copy of the host device's plans with the host backend's rule
  // (recorded when the runtime was given it), which brings the backend's own code entry.
  const vgpu::DeviceInfo host_info = runtime.open("host:0").info();
  const vgpu::KernelPlan add = vgpu::ops::add(host_info, 8);
  CHECK(add.source.find(kHostDialect) != nullptr);
  CHECK(vgpu::ops::plan("add", runtime.open("host:0"), {8}).source.find(kHostDialect) != nullptr);

  // The bare device runs a kernel of its own, but no built-in op, by either form, with a Fix.
  vgpu::Device bare = runtime.open("bare:0");
  vgpu::KernelSource s = doubling_source();
  s.add_cpu(doubling(0));
  const std::vector<float> out = run(bare, s, {1, 2, 3});
  CHECK(out == std::vector<float>{2, 4, 6});
  REQUIRE_VGPU_ERROR(not_supported, "brings no OpTuner", vgpu::ops::add(bare.info(), 8));
  REQUIRE_VGPU_ERROR(not_supported, "Fix:", vgpu::ops::add(bare.info(), 8));
  REQUIRE_VGPU_ERROR(not_supported, "brings no OpTuner", vgpu::ops::plan("matmul", bare, {4, 4, 4}));
  // A KernelDatabase over both runs the op where it can: the host device.
  vgpu::KernelDatabase db(runtime);
  const std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> sum(2, -1);
  const vgpu::TensorArg args[] = {{a.data(), {2}}, {b.data(), {2}}, {sum.data(), {2}}};
  db.call("add", {2}, args);
  CHECK(sum == std::vector<float>{4, 6});
}

// A backend whose name() is not the name its kind was made from (here: the host backend's kind
// under another name), as a copy-pasted backend would be.
class MisnamedBackend final : public vgpu::ComputeBackend {
 public:
  MisnamedBackend() : inner_(std::make_shared<HostBackend>()) {}
  vgpu::BackendKind kind() const noexcept override { return inner_->kind(); }
  std::string name() const override { return "misnamed"; }
  vgpu::BackendStatus status() override { return inner_->status(); }
  std::vector<vgpu::DeviceInfo> enumerate() override { return inner_->enumerate(); }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t index) override { return inner_->open(index); }

 private:
  std::shared_ptr<HostBackend> inner_;
};

TEST_CASE("a backend whose kind belongs to another name is refused, naming both", "[dialects][backend]") {
  vgpu::RuntimeOptions options;
  options.backends.push_back(std::make_shared<MisnamedBackend>());
  REQUIRE_VGPU_ERROR(invalid_argument, "backend 'misnamed' reports the kind of backend 'host'", vgpu::Runtime{options});
  // The default name() is the kind's own name, so a backend need not override it.
  CHECK(HostBackend().vgpu::ComputeBackend::name() == "host");
}
