// SPDX-License-Identifier: Apache-2.0
// tests/support/backend_child.hpp — running vgpu-test-backend-child, the second process of the
// backend suite's cross-process L2 tests, on the scale-add kernel (support/scale_add_kernel.hpp)
// of a backend. Test files that include it define VGPU_BACKEND_CHILD (the child's path, as the
// build made it) and VGPU_TEST_TMP_ROOT.
#pragma once

#include <filesystem>
#include <string>

#include "support/cache_fixtures.hpp"
#include "support/helper_path.hpp"
#include "support/scale_add_kernel.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_BACKEND_CHILD
#error "VGPU_BACKEND_CHILD (path of vgpu-test-backend-child) must be defined by the build"
#endif

namespace vgpu::test {

/// How to run the child beyond its L2 directory.
struct ChildOptions {
  bool disable_l2 = false;           ///< VGPU_CACHE_DISABLE=1
  std::filesystem::path mesa_cache;  ///< non-empty: the child's own MESA_SHADER_CACHE_DIR (Mesa's
                                     ///< shader cache on, whatever this process says)
  bool no_mesa_cache = false;        ///< with mesa_cache: MESA_SHADER_CACHE_DISABLE=true
};

/// Returns the file suffix of backend's scale-add source (".cu" for CUDA C, else ".glsl").
inline std::string scale_add_suffix(BackendKind backend) {
  return vgpu_test::scale_add_dialect(backend) == vgpu::dialect::cuda ? ".cu" : ".glsl";
}

/// Runs vgpu-test-backend-child for backend on its scale-add text (vgpu_test::scale_add_text),
/// written beside cache_dir as <cache_dir><suffix>, with the L2 store in cache_dir and none of
/// this process's other cache settings.
inline ChildRun run_scale_add_child(BackendKind backend, const std::filesystem::path& cache_dir,
                                    const ChildOptions& options = {}) {
  std::string env;
  if (!options.mesa_cache.empty())
    env = "-u MESA_SHADER_CACHE_DISABLE MESA_SHADER_CACHE_DIR=" + quoted(options.mesa_cache.string()) +
          (options.no_mesa_cache ? " MESA_SHADER_CACHE_DISABLE=true" : "");
  return run_backend_child(helper_path(VGPU_BACKEND_CHILD), std::string(to_string(backend)),
                           cache_dir.parent_path() / (cache_dir.filename().string() + scale_add_suffix(backend)),
                           vgpu_test::scale_add_text(backend), cache_dir, options.disable_l2, vgpu_test::kChildN, env);
}

}  // namespace vgpu::test
