// Lab 08 checks: the student's accelerations against a double-precision CPU sum on every
// dataset case, with a tolerance derived from FP32 and n, heavy bodies after the end of the
// input to catch reads past n and guard values after the output to catch writes past it;
// then its speed against the reference solution's on the performance cases.
#include "nbody.h"

#include <labkit/lab.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

namespace {

using labkit::Case;
using labkit::DeviceBuffer;
using Bodies = std::vector<float4>;

// Bodies after d_pos_mass[n - 1], heavy and finite: a kernel whose last tile reads past the
// end picks them up, and its answer is then far off, in a way that names the tile size.
constexpr size_t guard_bodies = 4096;
// float3 after d_accel[n - 1], poisoned like the output: they must come back untouched.
constexpr size_t guard_accels = 1024;
constexpr uint32_t unwritten_bits = 0x01010101u * labkit::poison_byte;  // 0xA5A5A5A5
constexpr uint32_t shared_poison_bits = 0x7FC05EEDu;                    // a quiet NaN
// The tile sizes a kernel is likely to use, the chapter's 256 first: the hints try each one.
// Several can fit one output (n = 1000 leaves 24 bodies past the end with a tile of 32 or of
// 256), and the first that fits is named.
const int tile_sizes[] = {256, 128, 512, 64, 1024, 32};
const char* const axis_names[] = {"x", "y", "z"};

uint32_t bits_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// ---- running on all cores -----------------------------------------------------------------

// Calls body(i) for i in [0, n) on every core: a CPU reference is O(n^2).
void for_each_index(size_t n, const std::function<void(size_t)>& body) {
  const size_t workers = std::min<size_t>(labkit::usable_cpus(), std::max<size_t>(1, n / 16));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  constexpr size_t chunk = 16;
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (size_t begin; (begin = next.fetch_add(chunk)) < n;)
        for (size_t i = begin; i < std::min(n, begin + chunk); ++i) body(i);
    });
  for (std::thread& t : threads) t.join();
}

// ---- inputs -------------------------------------------------------------------------------

struct System {
  Bodies bodies;
  float softening2 = 0;
  size_t n() const { return bodies.size(); }
};

std::vector<float> draw(const labkit::InputSpec& spec, uint64_t salt, size_t n) {
  labkit::InputSpec s = spec;
  s.seed = labkit::splitmix64(spec.seed ^ salt);
  return labkit::generate<float>(n, s);
}

// Positions come from the case's distribution in [lo, hi], one coordinate at a time; then the
// case's `layout` rearranges them:
//   cube      as drawn (the default); with `distribution: all_same` every body is at one point
//   pairs     body 2k + 1 sits exactly on body 2k (different masses)
//   clusters  `clusters` centers drawn in [lo, hi]; each body at its center plus an offset of
//             up to `radius` per axis, concentrated near the center (u^3, u uniform in [-1, 1])
//   line      y = z = 0: the y and z components of every acceleration are exactly zero
// Masses are uniform in [mass_lo, mass_hi]; with `massless_every: k`, every k-th body has mass 0.
System make_system(const Case& c, uint64_t seed_shift = 0) {
  const size_t n = c.n;
  const double softening2 = c.number("softening2");
  if (n < 1 || n > size_t(NBODY_MAX_BODIES) || !(softening2 >= 1e-12 && softening2 <= 1e6))
    throw std::invalid_argument("case " + c.name + " is outside the contract (1 <= n <= 2^18, 1e-12 <= softening2 <= 1e6)");
  labkit::InputSpec spec = c.input;
  spec.seed += seed_shift;
  std::vector<float> x = draw(spec, 1, n), y = draw(spec, 2, n), z = draw(spec, 3, n);
  const labkit::InputSpec mass_spec{labkit::Distribution::uniform, 0, c.number("mass_lo"), c.number("mass_hi")};
  const std::vector<float> m = draw(mass_spec, spec.seed ^ 4, n);

  const std::string layout = c.has("layout") ? c.params.at("layout") : "cube";
  if (layout == "pairs") {
    for (size_t i = 1; i < n; i += 2) x[i] = x[i - 1], y[i] = y[i - 1], z[i] = z[i - 1];
  } else if (layout == "clusters") {
    const size_t count = size_t(c.integer("clusters"));
    const double radius = c.number("radius");
    const labkit::InputSpec unit{labkit::Distribution::uniform, 0, -1.0, 1.0};
    const std::vector<float> ux = draw(unit, spec.seed ^ 5, n), uy = draw(unit, spec.seed ^ 6, n),
                             uz = draw(unit, spec.seed ^ 7, n);
    const std::vector<float> cx(x.begin(), x.begin() + std::min(n, count)), cy(y.begin(), y.begin() + std::min(n, count)),
        cz(z.begin(), z.begin() + std::min(n, count));
    for (size_t i = 0; i < n; ++i) {
      const size_t k = i % cx.size();
      x[i] = float(cx[k] + radius * std::pow(double(ux[i]), 3));
      y[i] = float(cy[k] + radius * std::pow(double(uy[i]), 3));
      z[i] = float(cz[k] + radius * std::pow(double(uz[i]), 3));
    }
  } else if (layout == "line") {
    std::fill(y.begin(), y.end(), 0.f);
    std::fill(z.begin(), z.end(), 0.f);
  } else if (layout != "cube") {
    throw std::invalid_argument("case " + c.name + ": unknown layout '" + layout + "'");
  }
  const long long massless_every = c.integer("massless_every", 0);

  System s;
  s.softening2 = float(softening2);
  s.bodies.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float mass = massless_every > 0 && i % size_t(massless_every) == 0 ? 0.f : m[i];
    s.bodies[i] = make_float4(x[i], y[i], z[i], mass);
  }
  return s;
}

// The heavy bodies that follow the input on the device: each one near an input body, offset
// by a quarter of the system's size, with a thousand times the largest mass (at least 1000).
Bodies make_guard(const Bodies& bodies) {
  float extent = 1.f, heaviest = 1.f;
  for (const float4& b : bodies) {
    extent = std::max({extent, std::fabs(b.x), std::fabs(b.y), std::fabs(b.z)});
    heaviest = std::max(heaviest, b.w);
  }
  Bodies guard(guard_bodies);
  for (size_t g = 0; g < guard_bodies; ++g) {
    const float4& near = bodies[g % bodies.size()];
    guard[g] = make_float4(near.x + 0.25f * extent, near.y - 0.5f * extent, near.z + 0.75f * extent, 1000.f * heaviest);
  }
  return guard;
}

// ---- the CPU reference --------------------------------------------------------------------

// How the CPU sums the interactions. Only the default is the contract; the others are what
// common mistakes compute, to name them when they match.
struct Physics {
  double sign = 1;              // -1: d = p_i - p_j, the acceleration points away
  enum class Mass { of_j, one, of_i } mass = Mass::of_j;
  double softening2 = 0;
  bool skip_coincident = false;  // a term with |d| = 0 is left out (only matters without softening)
};

// One body's sum over `others`, in double, and the sum of the magnitudes of its terms per
// component (for the tolerance).
struct Row {
  double value[3] = {0, 0, 0};
  double magnitude[3] = {0, 0, 0};
};

void add_terms(Row& row, const float4& me, const float4* others, size_t count, const Physics& physics) {
  const double xi = me.x, yi = me.y, zi = me.z;
  for (size_t j = 0; j < count; ++j) {
    const double d[3] = {double(others[j].x) - xi, double(others[j].y) - yi, double(others[j].z) - zi};
    const double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (physics.skip_coincident && d2 == 0) continue;
    const double r2 = d2 + physics.softening2;
    const double mass = physics.mass == Physics::Mass::of_j ? double(others[j].w)
                        : physics.mass == Physics::Mass::one ? 1.0
                                                             : double(me.w);
    const double s = physics.sign * mass / (r2 * std::sqrt(r2));
    for (int a = 0; a < 3; ++a) {
      const double term = d[a] * s;
      row.value[a] += term;
      row.magnitude[a] += std::fabs(term);
    }
  }
}

Physics contract_physics(const System& s) {
  Physics p;
  p.softening2 = double(s.softening2);
  return p;
}

Row row_at(const System& s, size_t i, const Physics& physics) {
  Row row;
  add_terms(row, s.bodies[i], s.bodies.data(), s.n(), physics);
  return row;
}

// The tolerance an FP32 computation earns, per body and component. Each term m_j d / r^3 costs
// a few roundings (d, r^2, 1/sqrt, products: rsqrtf alone is within 2 ulp), well under 64 units
// of 2^-23 relative to its own size, whatever formula is used (rsqrtf, 1/sqrtf, powf). Summing
// n terms in FP32, in any order, adds at most (n - 1) 2^-24 times the sum of their magnitudes
// (Higham, "Accuracy and Stability of Numerical Algorithms", eq. 3.5). So any correct FP32 sum
// lies within (n + 64) 2^-23 sum_j |m_j d_j / r_j^3|: twice the summation bound, plus the terms'
// own error. (n + 64) FLT_MIN covers terms that fall below the normal range. A wrong term (a
// missing body, a body read twice, the wrong sign or softening) costs about its whole size:
// for the nearest bodies, far more than this.
double tolerance_for(size_t n, double magnitude) {
  return (double(n) + 64) * (0x1.0p-23 * magnitude + double(FLT_MIN));
}

struct Expected {
  std::vector<double> value;      // 3 n: x, y, z of each body
  std::vector<double> magnitude;  // 3 n
  double tolerance(size_t n, size_t k) const { return tolerance_for(n, magnitude[k]); }
};

Expected work_out(const System& s) {
  Expected e;
  e.value.resize(3 * s.n());
  e.magnitude.resize(3 * s.n());
  const Physics physics = contract_physics(s);
  for_each_index(s.n(), [&](size_t i) {
    const Row row = row_at(s, i, physics);
    for (int a = 0; a < 3; ++a) {
      e.value[3 * i + a] = row.value[a];
      e.magnitude[3 * i + a] = row.magnitude[a];
    }
  });
  return e;
}

float component(const float3& v, int axis) { return axis == 0 ? v.x : axis == 1 ? v.y : v.z; }

bool close_enough(double expected, double tolerance, float actual) {
  return std::isfinite(actual) && std::fabs(double(actual) - expected) <= tolerance;
}

// ---- guarded device buffers ---------------------------------------------------------------

// The bodies, then the heavy guard bodies, in one DeviceBuffer.
struct DeviceInput {
  explicit DeviceInput(const Bodies& bodies, const Bodies& guard) : count(bodies.size()), buffer(joined(bodies, guard)) {}
  static Bodies joined(const Bodies& bodies, const Bodies& guard) {
    Bodies all = bodies;
    all.insert(all.end(), guard.begin(), guard.end());
    return all;
  }
  bool unchanged(const Bodies& bodies, const Bodies& guard) const {
    const Bodies all = buffer.download(), expected = joined(bodies, guard);
    return std::memcmp(all.data(), expected.data(), all.size() * sizeof(float4)) == 0;
  }
  size_t count;
  DeviceBuffer<float4> buffer;
};

// n float3 of output, then guard_accels more, all poisoned.
struct DeviceOutput {
  explicit DeviceOutput(size_t n) : count(n), buffer(n + guard_accels) {}
  std::vector<float3> all() const { return buffer.download(); }
  size_t count;
  DeviceBuffer<float3> buffer;
};

std::vector<float3> call_student(DeviceInput& in, float softening2, DeviceOutput& out) {
  out.buffer.poison();
  labkit::poison_student_shared_memory(shared_poison_bits);
  labkit::student<decltype(nbody_accel)>("nbody_accel")(in.buffer.data(), int(in.count), softening2, out.buffer.data(),
                                                        nullptr);
  CUDA_CHECK_KERNELS(nullptr);
  return out.all();
}

// ---- verdict and diagnosis ----------------------------------------------------------------

std::string location(size_t k) { return "body " + std::to_string(k / 3) + ", " + axis_names[k % 3]; }

std::string count_of(size_t part, size_t whole, const char* what) {
  return std::to_string(part) + " of " + std::to_string(whole) + " " + what;
}

bool is_unwritten(const float3& v) {
  return bits_of(v.x) == unwritten_bits || bits_of(v.y) == unwritten_bits || bits_of(v.z) == unwritten_bits;
}
bool is_finite(const float3& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }

struct Verification {
  labkit::Comparison comparison;  // per component
  size_t wrong_bodies = 0;
  size_t unwritten_bodies = 0;
  size_t non_finite_bodies = 0;
};

Verification verify(const System& s, const Expected& e, const std::vector<float3>& actual) {
  Verification v;
  v.comparison.checked = 3 * s.n();
  for (size_t i = 0; i < s.n(); ++i) {
    bool body_wrong = false;
    for (int a = 0; a < 3; ++a) {
      const size_t k = 3 * i + a;
      const float got = component(actual[i], a);
      if (bits_of(got) != unwritten_bits && close_enough(e.value[k], e.tolerance(s.n(), k), got)) continue;
      body_wrong = true;
      if (v.comparison.mismatches++ < labkit::mismatches_reported)
        v.comparison.first.push_back({k, labkit::detail::show(e.value[k]) + " (+- " +
                                             labkit::detail::show(e.tolerance(s.n(), k)) + ")",
                                      labkit::detail::show(got)});
    }
    if (!body_wrong) continue;
    ++v.wrong_bodies;
    if (is_unwritten(actual[i])) ++v.unwritten_bodies;
    else if (!is_finite(actual[i])) ++v.non_finite_bodies;
  }
  return v;
}

// Whether `actual` matches, on every body, what `model(i)` says body i should get, within
// the FP32 tolerance of the model's own terms. Stops at the first body that does not.
bool matches_model(size_t n, const std::vector<float3>& actual, const std::function<Row(size_t)>& model) {
  std::atomic<bool> mismatch{false};
  for_each_index(n, [&](size_t i) {
    if (mismatch.load(std::memory_order_relaxed)) return;
    const Row row = model(i);
    for (int a = 0; a < 3; ++a)
      if (!close_enough(row.value[a], tolerance_for(n, row.magnitude[a]), component(actual[i], a))) mismatch = true;
  });
  return !mismatch;
}

// The contract's sums plus (sign +1) or minus (sign -1) the terms of `extra` bodies.
std::function<Row(size_t)> with_extra_bodies(const System& s, const Expected& e, const Bodies& extra, double sign) {
  return [&s, &e, extra, sign](size_t i) {
    Physics physics = contract_physics(s);
    physics.sign = sign;
    Row row;
    add_terms(row, s.bodies[i], extra.data(), extra.size(), physics);
    for (int a = 0; a < 3; ++a) {
      row.value[a] += e.value[3 * i + a];
      row.magnitude[a] += e.magnitude[3 * i + a];
    }
    return row;
  };
}

// The chapter's flaw and its relatives: a last tile of `tile` bodies that is not handled.
std::string diagnose_last_tile(const System& s, const Expected& e, const Bodies& guard, const std::vector<float3>& actual) {
  const size_t n = s.n();
  for (int tile : tile_sizes) {
    const size_t remainder = n % size_t(tile);
    if (remainder == 0) continue;
    const size_t past_end = size_t(tile) - remainder, last_tile = n - remainder;
    const std::string shape = "n = " + std::to_string(n) + " is not a multiple of the tile size " +
                              std::to_string(tile) + " (n % " + std::to_string(tile) + " = " +
                              std::to_string(remainder) + "): the last tile ";
    if (matches_model(n, actual, with_extra_bodies(s, e, Bodies(guard.begin(), guard.begin() + ptrdiff_t(past_end)), 1)))
      return shape + "reads " + std::to_string(past_end) +
             " bodies past the end of d_pos_mass and adds their attraction (the checks put heavy bodies there; in a "
             "real program it is whatever memory follows, or an illegal address). Guard the tile load, and pad the "
             "slots past n with zero-mass bodies: make_float4(0, 0, 0, 0) attracts nothing, so the inner loop needs "
             "no bounds check";
    if (matches_model(n, actual, with_extra_bodies(s, e, Bodies(s.bodies.begin() + ptrdiff_t(last_tile), s.bodies.end()), -1)))
      return shape + "is skipped: the " + std::to_string(remainder) +
             " bodies from index " + std::to_string(last_tile) +
             " on attract nobody (the number of tiles rounded down: use (n + tile - 1) / tile, and pad the "
             "last one with zero-mass bodies)";
    if (n > size_t(tile)) {
      const Bodies stale(s.bodies.begin() + ptrdiff_t(last_tile - past_end), s.bodies.begin() + ptrdiff_t(last_tile));
      if (matches_model(n, actual, with_extra_bodies(s, e, stale, 1)))
        return shape + "counts " + std::to_string(past_end) +
               " bodies of the previous tile a second time: its load is guarded (j < n) but the slots past n keep "
               "what the previous tile left there, and the loop still runs over the whole tile. Write a zero-mass "
               "body into those slots";
    }
  }
  return "";
}

// Whole-computation mistakes: the sign, the mass, the softening.
std::string diagnose_physics(const System& s, const std::vector<float3>& actual) {
  const size_t n = s.n();
  auto model = [&s](Physics physics) { return [&s, physics](size_t i) { return row_at(s, i, physics); }; };
  Physics p = contract_physics(s);
  p.sign = -1;
  if (matches_model(n, actual, model(p)))
    return "every acceleration has the wrong sign: a_i must point towards the other bodies, d = p_j - p_i (the "
           "position of the other body minus your own), not p_i - p_j";
  p = contract_physics(s);
  p.mass = Physics::Mass::one;
  if (matches_model(n, actual, model(p)))
    return "the result is what unit masses give: the chapter's kernel ignores the mass, but the contract weights "
           "each term by m_j = d_pos_mass[j].w";
  p.mass = Physics::Mass::of_i;
  if (matches_model(n, actual, model(p)))
    return "each term is weighted by the mass of body i, not of body j: the attraction of body j is m_j d / r^3 "
           "(body i's own mass cancels out of its acceleration)";
  const std::vector<std::pair<double, std::string>> softenings = {
      {0.0, "softening was left out: r^2 must be |d|^2 + softening2"},
      {double(s.softening2) * double(s.softening2), "softening2 was squared: it is already the square of the "
                                                    "softening length, add it to |d|^2 as it is"},
      {std::sqrt(double(s.softening2)), "the square root of softening2 was added: softening2 is already squared, add "
                                        "it to |d|^2 as it is"},
      {2.0 * double(s.softening2), "softening2 was added twice"},
  };
  for (const auto& [softening2, mistake] : softenings) {
    p = contract_physics(s);
    p.softening2 = softening2;
    p.skip_coincident = true;
    if (matches_model(n, actual, model(p))) return mistake;
  }
  return "";
}

std::string diagnose_non_finite(const System& s, const Verification& v, const std::vector<float3>& actual) {
  const size_t n = s.n();
  std::string message = count_of(v.non_finite_bodies, n, "accelerations") + " are NaN or infinite";
  // Bodies that share their position with another body: with softening left out, 0/0 there.
  std::vector<size_t> coincident_nan;
  {
    std::vector<std::pair<std::array<float, 3>, size_t>> sorted(n);
    for (size_t i = 0; i < n; ++i) sorted[i] = {{s.bodies[i].x, s.bodies[i].y, s.bodies[i].z}, i};
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < n; ++k) {
      const bool twin = (k > 0 && sorted[k - 1].first == sorted[k].first) ||
                        (k + 1 < n && sorted[k + 1].first == sorted[k].first);
      if (twin) coincident_nan.push_back(sorted[k].second);
    }
  }
  size_t non_finite_twins = 0;
  for (size_t i : coincident_nan)
    if (!is_finite(actual[i])) ++non_finite_twins;
  if (v.non_finite_bodies == n)
    return message + ", every one of them. Either softening is missing (the j == i term is then 0 * 1/0 = NaN: the "
                     "contract includes that term, and r^2 = |d|^2 + softening2 keeps it finite and zero), or the "
                     "kernel reads a shared-memory slot no thread wrote (the checks fill shared memory with NaN "
                     "before each call: check the tile load, and pad the slots past n with zero-mass bodies)";
  if (non_finite_twins > 0 && non_finite_twins == v.non_finite_bodies)
    return message + ", exactly the bodies that sit at the same position as another body: 1/|d|^3 with |d| = 0 "
                     "(softening is missing, or a term with d = 0 is skipped only when j == i). With r^2 = "
                     "|d|^2 + softening2 such a term is 0, as the contract says";
  return message + " (hint: a tile slot that no thread wrote holds NaN, since the checks fill shared memory with "
                   "NaN; or a division by a zero distance: add softening2 to r^2)";
}

// Calls the function again on the same input: a race shows as a different output. Sums added
// in a different order (atomics) differ in their last bits too, so only differences larger
// than the tolerance count.
std::string diagnose_race(const Expected& e, const std::vector<float3>& first, const std::vector<float3>& again) {
  const size_t n = first.size();
  size_t moved = 0;
  for (size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) {
      const float x = component(first[i], a), y = component(again[i], a);
      const bool same = bits_of(x) == bits_of(y) ||
                        (std::isfinite(x) && std::isfinite(y) && std::fabs(double(x) - double(y)) <= e.tolerance(n, 3 * i + a));
      if (!same) ++moved;
    }
  if (moved == 0) return "";
  return "two runs on the same input gave different answers (" + std::to_string(moved) +
         " components moved by more than the tolerance): a race. Look for a missing __syncthreads() after the tile "
         "is loaded (some threads read it before it is complete) or before the next tile is loaded (a fast thread "
         "overwrites bodies a slow one still reads)";
}

std::string diagnose(const System& s, const Expected& e, const Bodies& guard, const Verification& v,
                     const std::vector<float3>& actual, const std::function<std::vector<float3>()>& run_again) {
  const size_t n = s.n();
  if (v.unwritten_bodies > 0)
    return count_of(v.unwritten_bodies, n, "bodies") +
           " were never written: their acceleration still holds the 0xA5 bytes the checks filled d_accel with "
           "(hint: the grid must cover every body, (n + bodies_per_block - 1) / bodies_per_block blocks)";
  if (v.non_finite_bodies > 0) return diagnose_non_finite(s, v, actual);
  std::string hint = diagnose_last_tile(s, e, guard, actual);
  if (hint.empty()) hint = diagnose_physics(s, actual);
  if (hint.empty()) {
    const std::vector<float3> again = run_again();
    hint = diagnose_race(e, actual, again);
  }
  if (hint.empty())
    hint = count_of(v.wrong_bodies, n, "bodies") + " are wrong, the same way on every run (hint: check the indexing "
                                                   "of bodies i and j, and that every tile is fully loaded before "
                                                   "it is read)";
  return hint;
}

void check_nbody(const Case& c) {
  const System s = make_system(c);
  const Bodies guard = make_guard(s.bodies);
  const Expected expected = work_out(s);
  std::vector<float> flat(4 * s.n()), expected_flat(3 * s.n());
  std::memcpy(flat.data(), s.bodies.data(), flat.size() * sizeof(float));
  for (size_t k = 0; k < expected_flat.size(); ++k) expected_flat[k] = float(expected.value[k]);
  labkit::export_array(c, "pos_mass", flat, {s.n(), 4});
  labkit::export_array(c, "softening2", std::vector<float>{s.softening2});
  labkit::export_array(c, "expected_accel", expected_flat, {s.n(), 3});

  DeviceInput d_in(s.bodies, guard);
  DeviceOutput d_out(s.n());
  const std::vector<float3> all = call_student(d_in, s.softening2, d_out);

  if (!d_in.unchanged(s.bodies, guard))
    return labkit::verdict(c, false, "nbody_accel modified its input: d_pos_mass is const and must come back unchanged");
  size_t written_past = 0;
  for (size_t i = s.n(); i < all.size(); ++i)
    if (bits_of(all[i].x) != unwritten_bits || bits_of(all[i].y) != unwritten_bits || bits_of(all[i].z) != unwritten_bits)
      ++written_past;
  if (written_past > 0)
    return labkit::verdict(c, false, std::to_string(written_past) +
                                         " float3 past the end of d_accel were overwritten: threads whose body i is "
                                         "n or more still store (hint: guard the store with `if (i < n)`; the grid "
                                         "is rounded up to whole blocks, so the last block has threads past n)");

  const std::vector<float3> actual(all.begin(), all.begin() + ptrdiff_t(s.n()));
  const Verification v = verify(s, expected, actual);
  if (v.comparison.ok()) return labkit::verdict(c, true);
  const auto run_again = [&] {
    std::vector<float3> again = call_student(d_in, s.softening2, d_out);
    again.resize(s.n());
    return again;
  };
  labkit::verdict(c, false, diagnose(s, expected, guard, v, actual, run_again) + ". " + v.comparison.describe(location));
}

// ---- performance --------------------------------------------------------------------------

// How many bodies, picked at random, each timed call is checked on: all n rows would take
// the CPU O(n^2) = 7e10 interactions at 2^18. Every body is also checked for being written
// and finite. The pick is made here, at run time, and the submission cannot see it.
constexpr size_t sampled_bodies = 512;

struct Sample {
  std::vector<size_t> bodies;
  std::vector<Row> rows;
};

std::string check_sampled(size_t n, const Sample& sample, const std::vector<float3>& actual) {
  for (size_t i = 0; i < n; ++i) {
    if (is_unwritten(actual[i])) return "body " + std::to_string(i) + " was never written";
    if (!is_finite(actual[i])) return "body " + std::to_string(i) + " is NaN or infinite";
  }
  for (size_t k = 0; k < sample.bodies.size(); ++k) {
    const size_t i = sample.bodies[k];
    for (int a = 0; a < 3; ++a) {
      const Row& row = sample.rows[k];
      if (!close_enough(row.value[a], tolerance_for(n, row.magnitude[a]), component(actual[i], a)))
        return location(3 * i + size_t(a)) + ": expected " + labkit::detail::show(row.value[a]) + ", got " +
               labkit::detail::show(component(actual[i], a));
    }
  }
  return "";
}

// make_system's bodies on the GPU, from `seed` for the case's: the same rules per axis, so
// the same system for the same seed (clusters up to pow's last bit).
enum class Layout { cube, pairs, clusters, line };

__device__ float& component_of(float4& body, int axis) {
  return axis == 0 ? body.x : axis == 1 ? body.y : axis == 2 ? body.z : body.w;
}

// Axis 0, 1, 2 (x, y, z) or 3 (the mass) of every body, drawn by `rule`.
__global__ void draw_component_kernel(float4* bodies, size_t n, int axis, const labkit::ElementRule<float> rule) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    component_of(bodies[i], axis) = rule(i);
}

// `clusters` on one axis, whose component holds the offset's u in [-1, 1]: body i goes to the
// position drawn for body i % clusters (`center`), plus radius u^3.
__global__ void cluster_component_kernel(float4* bodies, size_t n, int axis, const labkit::ElementRule<float> center,
                                         size_t clusters, double radius) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float& x = component_of(bodies[i], axis);
    x = float(double(center(i % clusters)) + radius * pow(double(x), 3.0));
  }
}

// `pairs` (body 2k + 1 on body 2k), `line` (y = z = 0), and `massless_every`.
__global__ void finish_bodies_kernel(float4* bodies, size_t n, Layout layout, unsigned long long massless_every) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    if (layout == Layout::pairs && i % 2 == 1) {
      bodies[i].x = bodies[i - 1].x;  // component by component: body i - 1's mass may change meanwhile
      bodies[i].y = bodies[i - 1].y;
      bodies[i].z = bodies[i - 1].z;
    }
    if (layout == Layout::line) bodies[i].y = bodies[i].z = 0.f;
    if (massless_every > 0 && i % massless_every == 0) bodies[i].w = 0.f;
  }
}

// draw(spec, salt, n)'s rule: its data, element by element.
labkit::ElementRule<float> rule_of(const labkit::InputSpec& spec, uint64_t salt) {
  labkit::InputSpec s = spec;
  s.seed = labkit::splitmix64(spec.seed ^ salt);
  return labkit::element_rule<float>(s);
}

void draw_bodies(const Case& c, float4* out, uint64_t seed, cudaStream_t stream) {
  const size_t n = c.n;
  const unsigned blocks = unsigned(std::min<size_t>((n + 255) / 256, 4096));
  labkit::InputSpec spec = c.input;
  spec.seed = seed;
  if (spec.distribution == labkit::Distribution::sorted_ascending ||
      spec.distribution == labkit::Distribution::sorted_descending)
    throw std::invalid_argument("case " + c.name + ": sorted coordinates are made on the CPU only, so a performance "
                                "case cannot use them");
  const std::string name = c.has("layout") ? c.params.at("layout") : "cube";
  const Layout layout = name == "pairs" ? Layout::pairs : name == "clusters" ? Layout::clusters
                        : name == "line" ? Layout::line : Layout::cube;
  for (int axis = 0; axis < 3; ++axis) {
    const labkit::InputSpec unit{labkit::Distribution::uniform, 0, -1.0, 1.0};
    // clusters: the offsets' u first, then each body's center and offset
    const labkit::ElementRule<float> rule =
        layout == Layout::clusters ? rule_of(unit, spec.seed ^ uint64_t(5 + axis)) : rule_of(spec, uint64_t(1 + axis));
    draw_component_kernel<<<blocks, 256, 0, stream>>>(out, n, axis, rule);
    if (layout == Layout::clusters)
      cluster_component_kernel<<<blocks, 256, 0, stream>>>(out, n, axis, rule_of(spec, uint64_t(1 + axis)),
                                                           std::min(n, size_t(c.integer("clusters"))),
                                                           c.number("radius"));
  }
  const labkit::InputSpec mass_spec{labkit::Distribution::uniform, 0, c.number("mass_lo"), c.number("mass_hi")};
  draw_component_kernel<<<blocks, 256, 0, stream>>>(out, n, 3, rule_of(mass_spec, spec.seed ^ 4));
  finish_bodies_kernel<<<blocks, 256, 0, stream>>>(out, n, layout,
                                                   (unsigned long long)std::max(0ll, c.integer("massless_every", 0)));
  CUDA_CHECK(cudaGetLastError());
}

// row_at for each of `count` bodies, in double on the GPU: one warp per body.
__global__ void sampled_rows_kernel(const float4* bodies, int n, double softening2, const size_t* sampled,
                                    size_t count, double* rows) {
  const size_t warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= count) return;
  const float4 me = bodies[sampled[warp]];
  double sums[6] = {0, 0, 0, 0, 0, 0};  // value x, y, z, then magnitude x, y, z
  for (int j = lane; j < n; j += 32) {
    const float4 other = bodies[j];
    const double d[3] = {double(other.x) - me.x, double(other.y) - me.y, double(other.z) - me.z};
    const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + softening2;
    const double s = double(other.w) / (r2 * sqrt(r2));
    for (int a = 0; a < 3; ++a) {
      sums[a] += d[a] * s;
      sums[3 + a] += fabs(d[a] * s);
    }
  }
  for (int k = 0; k < 6; ++k) {
    for (int offset = 16; offset > 0; offset /= 2) sums[k] += __shfl_down_sync(0xffffffffu, sums[k], offset);
    if (lane == 0) rows[6 * warp + k] = sums[k];
  }
}

// A timed call's buffers: bodies of the case's kind drawn afresh for every call
// (labkit/fresh_input.h), and the accelerations it writes.
struct PerfBuffers {
  // make_system checks that the case is within the contract.
  explicit PerfBuffers(const Case& c)
      : softening2(make_system(c).softening2),
        bodies(c.n, [&c](float4* out, uint64_t seed, cudaStream_t stream) { draw_bodies(c, out, seed, stream); }),
        accel(c.n), d_sampled(sample_count(c.n)), d_rows(6 * sample_count(c.n)) {}

  // Bodies 0 and n - 1, then random ones up to sampled_bodies in all.
  static size_t sample_count(size_t n) { return std::max<size_t>(2, std::min(sampled_bodies, n)); }

  // Bodies 0 and n - 1 and random ones, picked afresh, and their rows for the drawn bodies.
  Sample sample_rows() {
    const size_t n = bodies.size();
    Sample sample;
    std::mt19937_64 engine{labkit::secret_seed()};
    sample.bodies = {0, n - 1};
    while (sample.bodies.size() < sample_count(n)) sample.bodies.push_back(size_t(engine() % n));
    d_sampled.upload(sample.bodies);
    sampled_rows_kernel<<<unsigned((sample.bodies.size() * 32 + 255) / 256), 256>>>(
        bodies.drawn(), int(n), double(softening2), d_sampled.data(), sample.bodies.size(), d_rows.data());
    CUDA_CHECK_KERNELS(nullptr);
    const std::vector<double> rows = d_rows.download();
    sample.rows.resize(sample.bodies.size());
    for (size_t k = 0; k < sample.rows.size(); ++k)
      for (int a = 0; a < 3; ++a) {
        sample.rows[k].value[a] = rows[6 * k + size_t(a)];
        sample.rows[k].magnitude[a] = rows[6 * k + 3 + size_t(a)];
      }
    return sample;
  }

  float softening2;
  labkit::FreshInput<float4> bodies;
  labkit::TimedOutput<float3> accel;
  DeviceBuffer<size_t> d_sampled;  // the checks' own: which bodies, and their rows in double
  DeviceBuffer<double> d_rows;
};

labkit::PerfSubject perf_subject(labkit::Function<decltype(nbody_accel)> fn, const Case& c, PerfBuffers& b) {
  return {labkit::timed_call([fn, &c, &b](cudaStream_t stream) {
                               fn(b.bodies.data(), int(c.n), b.softening2, b.accel.data(), stream);
                             },
                             {&b.bodies}, {&b.accel}),
          [&c, &b] { return check_sampled(c.n, b.sample_rows(), b.accel.collected()); }};
}

// N-body is compute bound: it reads 16 bytes per body and writes 12, and does n^2 interactions.
// The kit's GB/s column is therefore tiny and says nothing; the figure that matters is the
// time (and n^2 / time interactions per second, which the benchmark prints).
double bytes_moved(const Case& c) { return (sizeof(float4) + sizeof(float3)) * double(c.n); }

// The README's convention (GPU Gems 3, the CUDA nbody sample): 20 floating-point operations
// per interaction, n^2 interactions per call.
constexpr double flops_per_interaction = 20;

}  // namespace

TEST_SUITE("correctness") {
  TEST_CASE("nbody_accel matches a double-precision CPU sum over all pairs") {
    labkit::for_each_correctness_case([](const Case& c) { check_nbody(c); });
  }
}

TEST_SUITE("performance") {
  TEST_CASE("nbody_accel speed against the reference") {
    labkit::for_each_timed_case([&](const Case& c) {
      PerfBuffers buffers(c);
      // The compute floor counts each pair once, as Newton's third law allows (the reference
      // does so from 2^16 bodies on): an honest kernel cannot beat that count at FP32 peak.
      // The reports' TFLOP/s count n^2 interactions, as the README and the benchmark do.
      const double pairs = double(c.n) * double(c.n - 1) / 2;
      const double interactions = double(c.n) * double(c.n);
      const labkit::Work work(bytes_moved(c), flops_per_interaction * pairs, flops_per_interaction * interactions);
      labkit::measure_performance(c, work,
                                  perf_subject(labkit::student<decltype(nbody_accel)>("nbody_accel"), c, buffers),
                                  perf_subject(labkit::reference<decltype(nbody_accel)>("nbody_accel"), c, buffers));
    });
  }
}
