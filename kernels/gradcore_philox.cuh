// gradcore_philox.cuh: counter-based random numbers, Philox-4x32-10 (Salmon, Moraes,
// Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11; the generator of
// cuRAND's and PyTorch's CUDA dropout). Included by the generated
// kernels/pointwise_backward.cu; the parameter lists are declared in
// gradcore/kernels/philox.py (PHILOX_KERNELS), beside the NumPy twins.
//
// A generator's state is two int64 on the device, (seed, offset): element i of a draw
// takes word i % 4 of Philox(key = seed, counter = offset + i / 4), and the draw then
// moves the offset past the counters it used (philox_advance, a launch of its own, so
// that a CUDA graph draws fresh numbers at every replay).
#pragma once

#include "gradcore_cuda.cuh"

namespace gradcore {

// Ten rounds of Philox-4x32 on the counter c with the key (k0, k1).
__device__ __forceinline__ void philox4x32_10(unsigned int c[4], unsigned int k0,
                                              unsigned int k1) {
    for (int r = 0; r < 10; ++r) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned long long p0 = (unsigned long long)0xD2511F53u * c[0];
        const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c[2];
        const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c[1] ^ k0;
        const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (unsigned int)p1;
        c[3] = (unsigned int)p0;
        c[0] = n0;
        c[2] = n2;
    }
}

// Dropout's scaled mask: out[i] = scale where u_i < keep, else 0, u_i in [0, 1) from the
// word's top 24 bits (exact in float). The state is only read.
template <typename T, typename C>
__device__ __forceinline__ void dropout_mask(T* __restrict__ out,
                                             const long long* __restrict__ state, C keep,
                                             C scale, long long n) {
    const unsigned long long seed = (unsigned long long)state[0];
    const unsigned long long offset = (unsigned long long)state[1];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const unsigned long long ctr = offset + (unsigned long long)(i >> 2);
        unsigned int c[4] = {(unsigned int)ctr, (unsigned int)(ctr >> 32), 0u, 0u};
        philox4x32_10(c, (unsigned int)seed, (unsigned int)(seed >> 32));
        const C u = C(c[i & 3] >> 8) * C(1.0 / 16777216.0);
        out[i] = store<T>(u < keep ? scale : C(0));
    }
}

// Move the state past the counters a draw of n numbers used (one thread).
template <typename T, typename C>
__device__ __forceinline__ void philox_advance(long long* __restrict__ state, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) state[1] += (n + 3) / 4;
}

}  // namespace gradcore
