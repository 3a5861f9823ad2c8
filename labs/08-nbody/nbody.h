// Lab 08 contract. Do not edit: the grader compiles your nbody.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

// The largest number of bodies the contract allows: 2^18 = 262144 (4 MiB of float4 in,
// 3 MiB of float3 out; 2^36 interactions per call).
constexpr int NBODY_MAX_BODIES = 1 << 18;

// One all-pairs gravitational acceleration step, in FP32, with G = 1. For every body i:
//
//   a_i = sum over ALL j in [0, n) of  m_j * (p_j - p_i) / (|p_j - p_i|^2 + softening2)^(3/2)
//
// where p_j = (x, y, z) of d_pos_mass[j] and m_j = d_pos_mass[j].w. The j == i term is
// included: p_i - p_i is zero, so it contributes exactly zero (softening2 > 0 keeps its
// denominator away from zero). Bodies at the same position as body i also contribute zero,
// for the same reason. a_i points towards the other bodies (p_j - p_i, not p_i - p_j).
// a_i goes to d_accel[i].
//
// - 1 <= n <= NBODY_MAX_BODIES, any value (not a multiple of any block or tile size).
// - Coordinates are finite with |x|, |y|, |z| <= 1e6; masses are finite, 0 <= m <= 1e6 (a
//   body of mass 0 attracts nothing, but is attracted like any other).
// - softening2 is the squared softening length, 1e-12 <= softening2 <= 1e6: a normal float,
//   so that r^2 = |d|^2 + softening2 is never zero or denormal.
// - d_pos_mass and d_accel are device pointers from cudaMalloc (d_pos_mass is 16-byte aligned;
//   d_accel is 4-byte aligned, an array of 12-byte float3). They do not overlap.
// - Write d_accel[0 .. n) and nothing else (no element past n). Do not modify d_pos_mass.
// - Enqueue all work on `stream`; the function may return before the work finishes. It may
//   use temporary device memory that it allocates itself (cudaMallocAsync/cudaFreeAsync on
//   `stream`, or a buffer kept between calls: calls never overlap in time).
extern "C" void nbody_accel(const float4* d_pos_mass, int n, float softening2, float3* d_accel, cudaStream_t stream);
