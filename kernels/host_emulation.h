// host_emulation.h: build the CUDA kernel sources for the host (GRADCORE_HOST_BUILD).
// Hand-written; see docs/kernels.md.
//
// Defines the CUDA keywords away, gives blockIdx/threadIdx/blockDim/gridDim as
// thread-local globals, stores float16 as _Float16 and offers a launcher that runs every
// thread of every block in turn. This lets the exact kernel source that nvcc compiles
// run on the CPU, where the tests compare it with the NumPy twins. Kernels that
// cooperate within a block (__shared__ memory, __syncthreads) run through
// launch_cooperative: each thread of a block is a fiber and __syncthreads switches to
// the next one, so every thread reaches the barrier before any passes it.
#pragma once

#ifdef GRADCORE_HOST_BUILD

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#include <functional>
#include <memory>
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
// A switch is a few register moves on x86-64 (gradcore_switch below). Elsewhere it is
// ucontext's swapcontext, which also saves the signal mask with a system call per
// switch: a softmax row of 32 threads switches about 30 times per thread.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRADCORE_FAST_FIBERS 1
// Save the callee-saved registers on the current stack, store its pointer in *from,
// continue on the stack `to` (saved the same way, or made by fiber_stack below).
__attribute__((naked, noinline)) static void gradcore_switch(void** from, void* to) {
    __asm__ volatile(
        "pushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n\t"
        "movq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n\t"
        "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n\t"
        "ret\n\t");
}
#endif

struct Fiber {
#ifdef GRADCORE_FAST_FIBERS
    void* sp;
#else
    ucontext_t context;
#endif
    bool done;
};
inline thread_local Fiber* running = nullptr;
inline thread_local const std::function<void()>* fiber_body = nullptr;
#ifdef GRADCORE_FAST_FIBERS
inline thread_local void* scheduler_sp = nullptr;

[[noreturn]] inline void fiber_main() {
    (*fiber_body)();
    running->done = true;
    void* unused;
    gradcore_switch(&unused, scheduler_sp);  // never resumed
    abort();
}

// A fresh stack whose first switch "returns" into fiber_main with the ABI's alignment
// (rsp = 8 mod 16 at a function's entry) and six zeroed saved registers.
inline void* fiber_stack(char* base, size_t size) {
    uintptr_t top = ((uintptr_t)(base + size)) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;                      // fiber_main's return address: never used
    *--sp = (void*)&fiber_main;           // where the first switch's ret goes
    for (int i = 0; i < 6; ++i) *--sp = nullptr;  // rbp rbx r12 r13 r14 r15
    return sp;
}

inline void to_fiber(Fiber& f) { gradcore_switch(&scheduler_sp, f.sp); }
inline void to_scheduler() { gradcore_switch(&running->sp, scheduler_sp); }
#else
inline thread_local ucontext_t* scheduler = nullptr;

inline void fiber_main() {
    (*fiber_body)();
    running->done = true;  // returning switches to uc_link, the scheduler
}

inline void to_fiber(Fiber& f) { swapcontext(scheduler, &f.context); }
inline void to_scheduler() { swapcontext(&running->context, scheduler); }
#endif

// The fibers' stacks, kept from one launch to the next on each OS thread: a block's
// worth of 64 KiB stacks is megabytes, which allocating and zeroing on every launch cost
// more than most kernels. Left as the last launch left them, as a GPU leaves memory.
inline char* fiber_stacks(size_t bytes) {
    static thread_local std::unique_ptr<char[]> stacks;
    static thread_local size_t size = 0;
    if (size < bytes) {
        stacks.reset(new char[bytes]);
        size = bytes;
    }
    return stacks.get();
}

// Every thread of `block` runs `thread_body` until its next __syncthreads (or its end);
// then the next thread runs; rounds repeat until all have finished. A __syncthreads
// reached by some threads of a block and not others hangs on a GPU; here it aborts.
template <typename F>
void launch_cooperative(int grid, int block, F thread_body) {
    // 64 KiB and three cache lines: stacks a power of two apart would put every fiber's
    // top in the same cache sets, and each switch would miss
    const size_t stack_size = 64 * 1024 + 3 * 64;
    std::vector<Fiber> fibers(block);
    char* stacks = fiber_stacks((size_t)block * stack_size);
    std::function<void()> body = thread_body;
    fiber_body = &body;
#ifndef GRADCORE_FAST_FIBERS
    ucontext_t here;
    scheduler = &here;
#endif
    gridDim = {(unsigned int)grid, 1, 1};
    blockDim = {(unsigned int)block, 1, 1};
    for (int b = 0; b < grid; ++b) {
        blockIdx = {(unsigned int)b, 0, 0};
        for (int t = 0; t < block; ++t) {
            Fiber& f = fibers[t];
            f.done = false;
#ifdef GRADCORE_FAST_FIBERS
            f.sp = fiber_stack(&stacks[(size_t)t * stack_size], stack_size);
#else
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = &stacks[(size_t)t * stack_size];
            f.context.uc_stack.ss_size = stack_size;
            f.context.uc_link = &here;
            makecontext(&f.context, fiber_main, 0);
#endif
        }
        for (int live = block; live > 0;) {
            int finished = 0;
            for (int t = 0; t < block; ++t) {
                if (fibers[t].done) continue;
                threadIdx = {(unsigned int)t, 0, 0};
                running = &fibers[t];
                to_fiber(fibers[t]);
                finished += fibers[t].done;
            }
            if (finished && finished != live) abort();  // a barrier not all threads reach
            live -= finished;
        }
    }
    running = nullptr;
#ifndef GRADCORE_FAST_FIBERS
    scheduler = nullptr;
#endif
}

}  // namespace gradcore_host

inline void __syncthreads() {
    if (gradcore_host::running == nullptr) abort();  // only in cooperative launches
    gradcore_host::to_scheduler();
}

#endif  // GRADCORE_HOST_BUILD
