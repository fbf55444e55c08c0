// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibration.hpp — the phases of a device calibration (docs/selection.md,
// "Calibration"): eligibility → probe → timed runs → refinement → ordering, one file each
// (calibrate_*.cpp), run in that order by calibrate() (calibrator.cpp). They are split so that
// each rule — and the reason for it — can be read, changed and bounded on its own.
// Thread-safety: the phases share no state beyond their arguments. Calibrations of different
// ops may run at once (SelectionService holds no lock over one); they take turns at the timed
// phases through TimingTurns, since two timing at once would spoil each other's times.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "builtin_plans.hpp"
#include "call_data.hpp"
#include "prediction_model.hpp"
#include "result_check.hpp"
#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/timing_clock.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// What selection needs of the devices: the devices, the backends' statuses (to say why there
/// is no device) and opening a device by id. Runtime gives its service these over its
/// DeviceCatalog (device/device_catalog.hpp), never over itself, so the service that Runtime
/// owns does not call back into Runtime; tests give them over a test runtime. devices and backends
/// probe every backend; backend_devices probes only one, and scope names the backends the
/// runtime may probe without probing any, so that a persisted choice can be followed while the
/// other backends' vendor libraries stay unloaded (issue 17).
struct DeviceSource {
  std::function<std::vector<DeviceInfo>()> devices;
  std::function<std::vector<BackendStatus>()> backends;
  std::function<Device(const std::string& id)> open;
  std::function<std::vector<DeviceInfo>(BackendKind)> backend_devices;
  std::string scope;  // e.g. "cuda,vulkan,opengl,cpu": the compiled-in, allowed backends
};

namespace calibration {

// The clock of what a calibration reports about itself (calibration_seconds); what it measures
// of a device is read on that device's clock (TimingClock: the steady one, or a test backend's
// simulated one), so that a simulated device's times are exact whatever the machine's load.
using Clock = std::chrono::steady_clock;

// Bounds (docs/selection.md lists them). A device whose warm-up call is kWarmupSkip× (or whose
// first timed call, and a second one to confirm it, is kRunSkip×) slower than the best so far
// stops there; a device runs at most kRuns timed calls and stops early once its calls took
// kDeviceBudget seconds.
inline constexpr double kWarmupSkip = 50, kRunSkip = 4;
inline constexpr int kRuns = 3;
inline constexpr double kDeviceBudget = 0.25;
// A device whose trusted prediction model (prediction_model.hpp) predicts more than
// kPredictSkip× the best real time — and more than kRunCheap seconds, so that a model that is
// off cannot exclude a GPU that is merely slow at small sizes — is never run at the real size.
inline constexpr double kPredictSkip = 4, kRunCheap = 0.5;
// The model's probes: work steps 8x apart, from 32³ for matmul, until one takes kProbeEnough
// seconds (past the per-call overheads) or reaches the real work / 8, at most kMaxProbes of
// them; each a warm-up call and the median of kProbeRuns.
inline constexpr double kProbeEnough = 5e-3;
inline constexpr std::size_t kMaxProbes = 6;
inline constexpr int kProbeRuns = 3;
// Separation (issue 17: a choice that is right in every process). Devices whose fastest
// first-pass call is within kContendFactor of the best median are timed again interleaved (the
// fastest call, since noise — a spike, a preempted thread — only ever adds time), one sample each per
// round, at least kMinSamples rounds and then until every contender is either separated from
// the best (their medians' confidence intervals, kMedianZ, are apart and the medians more than
// kTieFactor apart) or a sure tie (its interval's top within kTieFactor of the best's bottom),
// at most kMaxRounds rounds and a time budget: kMinSamples rounds' worth of the first pass's
// times, kSeparateSlack over, clamped to [kSeparateBudget, kSeparateCap] seconds.
inline constexpr double kContendFactor = 2;
inline constexpr int kMinSamples = 5, kMaxRounds = 120;
inline constexpr double kMedianZ = 1.96;
inline constexpr double kSeparateSlack = 2, kSeparateBudget = 0.5, kSeparateCap = 3;
// The choice: among devices whose median is within kTieFactor of the best, the incumbent (the
// previously persisted choice) is kept; without one, the first in the stable order (device
// type, then registry order) within kStableFactor, so that processes agree on a tie.
inline constexpr double kTieFactor = 1.10, kStableFactor = 1.05;

/// How long a calibration waits for another's timing turn before it times anyway: longer than
/// the timed phases of a calibration take (a few device budgets, kRefineBudget, warm-ups), so
/// turns normally never overlap, yet bounded, since a turn runs user code (the factory at a
/// probe shape, CPU kernels) that could itself wait for the calibration waiting here.
inline constexpr std::chrono::seconds kTurnWait{10};

/// Lets calibrations take turns at timing devices. Not a lock that can deadlock: take() waits
/// at most kTurnWait for the turn, then goes ahead without it; a calibration nested in one on
/// the same thread (a factory selecting another op) shares its thread's turn.
/// Thread-safety: safe from any thread.
class TimingTurns {
 public:
  /// The turn while it is held (or the bounded wait that gave up on it).
  class [[nodiscard]] Turn {
   public:
    explicit Turn(TimingTurns* turns) noexcept : turns_(turns) {}
    Turn(Turn&& other) noexcept : turns_(std::exchange(other.turns_, nullptr)) {}
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    Turn& operator=(Turn&&) = delete;
    ~Turn() {
      if (turns_) turns_->give_back();
    }

   private:
    TimingTurns* turns_;
  };
  /// Waits (at most kTurnWait) until no other thread's calibration is timing, and takes the turn.
  Turn take();

 private:
  void give_back() noexcept;
  std::mutex mutex_;  // a leaf: guards owner_ and depth_ only
  std::condition_variable free_;
  std::thread::id owner_;
  int depth_ = 0;
};

/// What is being calibrated: op at shape, its plans from factory, its work (selection_work).
struct Request {
  const std::string& op;
  const Shape& shape;
  const PlanFactory& factory;
  std::uint64_t work;
  /// Where prediction models persist (SelectionService passes its store); null: fitted anew
  /// by every calibration and kept nowhere.
  std::shared_ptr<cache::DiskStore> store = nullptr;
  std::string incumbent{};            // the stored choice being rechecked ("" for none)
  std::function<bool()> cancelled{};  // true: give up at the next step (a background run being stopped)
};

/// One eligible device while it is measured.
struct Candidate {
  DeviceInfo info;
  KernelPlan plan;                                   // at the real shape
  SelectionCandidate result;                         // what explain() will show for it
  std::unique_ptr<PersistentKernel> kernel;          // kept while it may still be a close contender
  std::vector<double> times;                         // timed calls at the real shape (first pass)
  std::vector<double> samples = {};                  // interleaved samples (separation phase)
  std::optional<model::Model> model = std::nullopt;  // its prediction model, once probed or loaded
};

/// The devices sorted by the eligibility phase.
struct Field {
  std::vector<Candidate> eligible;             // likely winners first
  std::vector<SelectionCandidate> ineligible;  // with the reason
  std::vector<SelectionCandidate> skipped;     // demoted in this process: listed last, not run
};

/// Returns whether r's calibration is being stopped (a background one: its runtime is shutting
/// down, or the process exiting).
bool cancelled(const Request& r);
/// Throws unavailable ("cancelled") once r is cancelled. Checked between the steps that call
/// into a driver, so a stop waits for one such call at most; callers let it pass, unlogged.
void stop_if_cancelled(const Request& r);

/// Checks each candidate's first result against a reference of the request's op on the same
/// inputs before the candidate can be chosen (docs/selection.md, "Result check"; issue 29:
/// Mesa's software devices stop shader loops after 65 535 iterations, and their wrong results
/// were timed as the fastest). A built-in op: sampled double-precision values with the op's
/// tolerance (result_check.hpp), at the real shape, on the warm-up call. A user's op: the result
/// of its CPU dialect on vgpu's CPU device (when that device can run it), computed once; for a
/// request bigger than a probe, both run at the probe shape instead, so the reference stays cheap.
/// Other user ops are not checked. A wrong candidate is rejected: not eligible, its note says
/// how wrong, one warning. Thread-safety: none; one calibration uses it from one thread.
class ResultChecker {
 public:
  /// Prepares the checks of r among the eligible candidates (finds the reference device).
  ResultChecker(const Request& r, const DeviceSource& source, const std::vector<Candidate>& eligible);
  /// Whether a candidate's warm-up call at the real shape is its check (else check_apart()).
  bool at_real_shape() const noexcept { return !apart_; }
  /// Returns the data for cand's check call of plan (the calibration's inputs, as made), with
  /// the reference computed for them when it is not yet.
  CallData& prepare(const Candidate& cand, const KernelPlan& plan, HostDataPool& data);
  /// Judges what got holds after cand's check call of plan and records it in cand.result;
  /// returns false when the result is wrong (cand is then rejected).
  bool judge(Candidate& cand, const KernelPlan& plan, const CallData& got);
  /// A user's op bigger than a probe: cand's check call at the probe shape on device, judged;
  /// false when rejected.
  bool check_apart(Candidate& cand, Device& device, HostDataPool& data);

 private:
  const Request& r_;
  const DeviceSource& source_;
  bool builtin_ = false;
  bool apart_ = false;
  std::optional<DeviceInfo> cpu_;  // a user op's reference device (vgpu's CPU device), if eligible
  Shape shape_;                    // where candidates are checked
  bool tried_ = false;             // the reference was attempted
  std::optional<check::Reference> ref_;
  std::string ref_signature_;  // the call data the reference is for
};

/// Returns seconds elapsed since t0.
double seconds_since(Clock::time_point t0);
/// Returns seconds elapsed on clock since t0 (a time read from that clock).
double seconds_since(const TimingClock& clock, TimingClock::time_point t0);
/// Returns the clock the times of kernel's calls are measured on (its device's).
const TimingClock& clock_of(const PersistentKernel& kernel);
/// Returns the median of v (the upper one for an even count); v is not empty.
double median(std::vector<double> v);
/// Returns the first line of s (error messages go into one-line notes).
std::string first_line(const std::string& s);
/// Returns r as "NNx" (notes say how many times slower than the best a device was).
std::string fmt_ratio(double r);

/// Phase 1, eligibility: splits devices into those that can run the request (plan builds,
/// dialect, limits, memory) and those that cannot or are demoted; throws unavailable when none
/// can. Why: a device that cannot run the op must never be timed or chosen.
Field find_eligible(const Request& r, const DeviceSource& source, const std::set<std::string>& demoted);

/// Phase 2, probe: the smaller shape to time first when the request is big, or nothing.
/// Why: running a 4096² matmul on llvmpipe only to learn it is slow would take minutes.
std::optional<Shape> probe_shape(const Request& r);
/// Phase 2, probe: loads (from r.store) or fits cand's prediction model and, when it is trusted
/// and its prediction for the real shape is hopeless against best, records it in cand.result
/// and returns true (cand is then never run at the real size). pshape only says the request
/// is big enough to probe.
bool probe_rules_out(const Request& r, Candidate& cand, Device& device, const Shape& pshape, double best,
                     HostDataPool& data);

/// Returns the median seconds of kProbeRuns calls of factory's plan at shape on device
/// (plan_on), after a warm-up call (the model's probes and the bench's figures go through this
/// one path).
double time_at(const PlanFactory& factory, Device& device, const Shape& shape, HostDataPool& data);
/// Probes device at sizes 8x apart below shape (kProbeEnough, kMaxProbes) and fits op's model;
/// nothing when fewer than two distinct probe shapes fit up to the real work / 8.
std::optional<model::Model> fit_model(const std::string& op, const Shape& shape, const PlanFactory& factory,
                                      Device& device, HostDataPool& data);
/// After cand's timed runs at the real shape: records its model's prediction beside the
/// measurement (untrusting it when off by more than 2x) and stores the model. Why: a model is
/// only as good as its last check, and a later process must know.
void check_model(const Request& r, Candidate& cand);

/// Phase 3, timed runs: a warm-up call and up to kRuns timed calls of cand at the real shape,
/// stopping early by the bounds above; records the median (or why it stopped) in cand.result.
/// Why: one untimed call keeps first-use costs out, the bounds keep a slow device cheap, and a
/// wrong result must never be timed as a fast one. The warm-up call is the result check when
/// checker checks at the real shape; a wrong result stops there. Throws the cancellation
/// (stop_if_cancelled) between calls once r is cancelled.
void time_runs(const Request& r, Candidate& cand, double best, HostDataPool& data, ResultChecker* checker = nullptr);
/// Phases 2 and 3 for one device, with its result check, turning a device error into a "failed"
/// candidate; lowers best (never for a rejected one) and releases kernels that fell out of the
/// close window. Why per device: each device's skip rules need the best time of those measured
/// before it.
void measure(const Request& r, Candidate& cand, const DeviceSource& source, const std::optional<Shape>& pshape,
             double& best, std::vector<Candidate>& all, HostDataPool& data, ResultChecker* checker = nullptr);

/// Whether cand's fastest first-pass call is within kContendFactor of best (a contender).
bool contends(const Candidate& cand, double best);
/// The order-statistic confidence interval of v's median at kMedianZ (v sorted, not empty).
std::pair<double, double> median_interval(const std::vector<double>& sorted);

/// Phase 4, separation: times the devices within kContendFactor of best again, interleaved,
/// until each is separated from the best or a sure tie (bounds above), and takes their medians
/// over those samples. Why: devices timed one after the other a few calls each can be ordered
/// by machine drift or noise; interleaving makes drift hit all alike, and enough samples make
/// the order the same in every process. The rounds stop early once cancelled (when given)
/// returns true: the separation phase can take seconds, and must not hold up a shutdown.
void refine_close(std::vector<Candidate>& cands, double best, HostDataPool& data,
                  const std::function<bool()>& cancelled = {});

/// Phase 5, ordering: the Selection — measured candidates by time, then predicted ones, then
/// failed or ineligible ones, then demoted ones — with the choice (the tie rule above) moved
/// first; throws unavailable when every device failed. Why: explain() and persistence show and
/// keep the whole order, and a persisted choice must be its first eligible candidate.
Selection order_candidates(const Request& r, Field field, Clock::time_point t0);

/// Phase 5 for a single eligible device: it is chosen untimed (source only). Why: with nothing
/// to compare, timing it would only cost (seconds, for a big problem).
Selection single_candidate(const Request& r, Field field, Clock::time_point t0);

/// Runs the phases: times every eligible device for r except the demoted ones and returns the
/// selection, fastest first (a single eligible device is returned untimed, source only).
/// Phases 2-4 run in a turn of turns (when given); eligibility, which asks the factory for
/// every device, runs outside it.
Selection calibrate(const Request& r, const DeviceSource& source, const std::set<std::string>& demoted,
                    TimingTurns* turns = nullptr);

}  // namespace calibration
}  // namespace vgpu::detail
