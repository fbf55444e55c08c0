// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/variant_choice.hpp — the measured choice among the variants a backend's OpTuner
// offers for one op (OpTuner::candidates(), e.g. the GLSL matmul tilings): chosen once per
// device (id + fingerprint), op and per-dimension size class, by timing every candidate at the
// real shape on the open device, then kept in the device's table (DeviceCore::variant_table)
// and in the runtime's L2 store
// (EntryKind::selection, key text "variant;v=2;..."), so later processes load it. Timing runs
// the candidates' kernels resident on the device (no transfers), a median of up to 7 runs,
// after the warm-up run's result is checked against the op's double-precision reference
// (result_check.hpp): a variant that computes wrong is never chosen (issue 29).
// Thread-safety: every function is safe from any thread. One thread measures a key while the
// others asking for it wait (single flight); no lock is held while a candidate is built or
// timed, so measuring may run inside a KernelDatabase build or a selection's calibration (the
// callers that hold the Device, builtin_plans.hpp). A thread that asks again for the key it is
// measuring gets the rule's pick.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/single_flight.hpp"

namespace vgpu::detail {

class DeviceCore;

/// One device's measured choices in this process (DeviceCore::variant_table()): what it has
/// chosen, by key text, and what it is measuring. A fresh runtime's device starts empty and
/// reads its store, as a new process does.
struct VariantTable {
  std::mutex mutex;                           // a leaf: nothing is built, timed or logged under it
  std::map<std::string, std::string> chosen;  // key text → variant name
  SingleFlight<std::string> measuring;        // measurements in progress, by key text
};

/// Builds the plan of one candidate (the op's plan with that tuning).
using CandidatePlan = std::function<KernelPlan(const OpTuning&)>;

/// Returns the index in candidates (tune()'s pick first, size > 1, distinct non-empty
/// variant names) of the variant to run shape on the open device core: from memory, else its
/// runtime's disk store, else measured now on core (the context its caller holds: ops::plan's
/// Device form). Returns 0 (the rule's pick) when core's runtime has VGPU_TUNE=rules, this
/// thread is already measuring the key, or every candidate failed or computed a wrong result
/// (each is logged as a warning).
std::size_t choose_variant(DeviceCore& core, const OpShape& shape, const std::vector<OpTuning>& candidates,
                           const CandidatePlan& plan);

/// The key text a choice is stored under:
/// "variant;v=2;op=<op>[;dtype=<f16|bf16>][;precision=tf32];class=<cm>x<ck>x<cn>;candidates=<names
/// sorted, |-joined>;devices=<id>=<fingerprint hex>," where each class is ceil(log2) of m, k, n
/// (the tile choice depends on the grid, not only the work), the dtype is named unless it is
/// float32, and the precision where TF32 is allowed and offered.
std::string variant_key_text(const DeviceInfo& device, const OpShape& shape, const std::vector<OpTuning>& candidates);

}  // namespace vgpu::detail
