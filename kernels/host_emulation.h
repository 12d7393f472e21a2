// host_emulation.h: build the CUDA kernel sources for the host (GRADCORE_HOST_BUILD).
// Hand-written; see docs/kernels.md.
//
// Defines the CUDA keywords away, gives blockIdx/threadIdx/blockDim/gridDim as
// thread-local globals, stores float16 as _Float16 and offers a launcher that runs every
// thread of every block in turn. This lets the exact kernel source that nvcc compiles
// run on the CPU, where the tests compare it with the NumPy twins. Only the features
// the pointwise kernels use are emulated: no shared memory, no __syncthreads.
#pragma once

#ifdef GRADCORE_HOST_BUILD

#include <math.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict

struct gradcore_dim3 {
    unsigned int x, y, z;
};
inline thread_local gradcore_dim3 blockIdx = {0, 0, 0};
inline thread_local gradcore_dim3 threadIdx = {0, 0, 0};
inline thread_local gradcore_dim3 blockDim = {1, 1, 1};
inline thread_local gradcore_dim3 gridDim = {1, 1, 1};

#if defined(__FLT16_MAX__)
// GCC >= 12 and Clang on x86-64 (and AArch64): IEEE binary16, like CUDA's __half and
// NumPy's float16. Conversions round to nearest even, as __float2half_rn does.
typedef _Float16 gc_half;
#else
// No _Float16 in this compiler: the float16 kernels are left out of the host build.
#define GRADCORE_NO_float16 1
#endif

namespace gradcore_host {

// Run `thread_body` (a kernel call) once per thread of a 1-D grid, block by block.
template <typename F>
void launch(int grid, int block, F thread_body) {
    gridDim = {(unsigned int)grid, 1, 1};
    blockDim = {(unsigned int)block, 1, 1};
    for (int b = 0; b < grid; ++b) {
        blockIdx = {(unsigned int)b, 0, 0};
        for (int t = 0; t < block; ++t) {
            threadIdx = {(unsigned int)t, 0, 0};
            thread_body();
        }
    }
}

}  // namespace gradcore_host

#endif  // GRADCORE_HOST_BUILD
