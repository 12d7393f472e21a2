// host_emulation.h: build the CUDA kernel sources for the host (GRADCORE_HOST_BUILD).
// Hand-written; see docs/kernels.md.
//
// Defines the CUDA keywords away, gives blockIdx/threadIdx/blockDim/gridDim as
// thread-local globals, stores float16 as _Float16 and offers a launcher that runs every
// thread of every block in turn. This lets the exact kernel source that nvcc compiles
// run on the CPU, where the tests compare it with the NumPy twins. Kernels that
// cooperate within a block (__shared__ memory, __syncthreads) run through
// launch_cooperative: each thread of a block is a fiber (ucontext) and __syncthreads
// switches to the next one, so every thread reaches the barrier before any passes it.
#pragma once

#ifdef GRADCORE_HOST_BUILD

#include <math.h>
#include <stdlib.h>
#include <ucontext.h>

#include <functional>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
// one copy per block: blocks run one after another, and a block's threads (fibers) all
// run on the launching OS thread
#define __shared__ static

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

// ---- cooperative launches: threads as fibers, __syncthreads as a round-robin switch
struct Fiber {
    ucontext_t context;
    bool done;
};
inline thread_local ucontext_t* scheduler = nullptr;
inline thread_local Fiber* running = nullptr;
inline thread_local const std::function<void()>* fiber_body = nullptr;

inline void fiber_main() {
    (*fiber_body)();
    running->done = true;  // returning switches to uc_link, the scheduler
}

// Every thread of `block` runs `thread_body` until its next __syncthreads (or its end);
// then the next thread runs; rounds repeat until all have finished. A __syncthreads
// reached by some threads of a block and not others hangs on a GPU; here it aborts.
template <typename F>
void launch_cooperative(int grid, int block, F thread_body) {
    const size_t stack_size = 64 * 1024;
    std::vector<Fiber> fibers(block);
    std::vector<char> stacks((size_t)block * stack_size);
    std::function<void()> body = thread_body;
    ucontext_t here;
    fiber_body = &body;
    scheduler = &here;
    gridDim = {(unsigned int)grid, 1, 1};
    blockDim = {(unsigned int)block, 1, 1};
    for (int b = 0; b < grid; ++b) {
        blockIdx = {(unsigned int)b, 0, 0};
        for (int t = 0; t < block; ++t) {
            Fiber& f = fibers[t];
            f.done = false;
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = &stacks[(size_t)t * stack_size];
            f.context.uc_stack.ss_size = stack_size;
            f.context.uc_link = &here;
            makecontext(&f.context, fiber_main, 0);
        }
        for (int live = block; live > 0;) {
            int finished = 0;
            for (int t = 0; t < block; ++t) {
                if (fibers[t].done) continue;
                threadIdx = {(unsigned int)t, 0, 0};
                running = &fibers[t];
                swapcontext(&here, &fibers[t].context);
                finished += fibers[t].done;
            }
            if (finished && finished != live) abort();  // a barrier not all threads reach
            live -= finished;
        }
    }
    running = nullptr;
    scheduler = nullptr;
}

}  // namespace gradcore_host

inline void __syncthreads() {
    if (gradcore_host::running == nullptr) abort();  // only in cooperative launches
    swapcontext(&gradcore_host::running->context, gradcore_host::scheduler);
}

#endif  // GRADCORE_HOST_BUILD
