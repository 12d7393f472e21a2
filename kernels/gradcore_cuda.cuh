// gradcore_cuda.cuh: device helpers used by the generated fused kernels
// (kernels/pointwise_backward.cu). Hand-written; see docs/kernels.md.
//
// The kernel expressions of gradcore/fused.py call where, sign, exp, log, sqrt, sin,
// cos, tanh, pow, erf and maximum. They are evaluated in the compute type C (float for
// float16 and float32, double for float64), so every helper has a float and a double
// overload and none of them promotes float to double. The same file compiles with nvcc, with NVRTC
// (CuPy RawModule) and, with GRADCORE_HOST_BUILD defined, with a host C++ compiler
// (host_emulation.h supplies the CUDA keywords and index variables).
#pragma once

#ifdef GRADCORE_HOST_BUILD
#include "host_emulation.h"
#endif

// float16 storage. On the device: the bits of an IEEE binary16, converted with the PTX
// cvt instructions (what cuda_fp16.h does inside), so that the source needs no header
// at all: NVRTC, which CuPy compiles with, has no cuda_fp16.h of its own. On the host
// (host_emulation.h): _Float16.
#ifndef GRADCORE_HOST_BUILD
struct alignas(2) gc_half {
    unsigned short bits;
};
#endif

namespace gradcore {

// The type the arithmetic runs in for a storage type T.
template <typename T> struct compute_type;
template <> struct compute_type<float> { typedef float type; };
template <> struct compute_type<double> { typedef double type; };
#ifndef GRADCORE_NO_float16
template <> struct compute_type<gc_half> { typedef float type; };
#endif

// Loading an element as its compute type, and storing a computed value as T.
__device__ __forceinline__ float load(float x) { return x; }
__device__ __forceinline__ double load(double x) { return x; }
template <typename T>
__device__ __forceinline__ T store(typename compute_type<T>::type v) { return (T)v; }
#ifndef GRADCORE_NO_float16
#ifdef GRADCORE_HOST_BUILD
__device__ __forceinline__ float load(gc_half x) { return (float)x; }
template <>
__device__ __forceinline__ gc_half store<gc_half>(float v) { return (gc_half)v; }
#else
__device__ __forceinline__ float load(gc_half x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
}
template <>
__device__ __forceinline__ gc_half store<gc_half>(float v) {
    gc_half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(v));  // round to nearest even
    return h;
}
#endif
#endif

// where(cond, a, b): NumPy's where on one element (both branches are evaluated, as in
// NumPy; the expressions have no side effects).
__device__ __forceinline__ float where(bool c, float a, float b) { return c ? a : b; }
__device__ __forceinline__ double where(bool c, double a, double b) { return c ? a : b; }

// sign: PyTorch's sign, sign(0) == 0 and sign(NaN) == 0 (NumPy's gives NaN there).
__device__ __forceinline__ float sign(float x) {
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
}
__device__ __forceinline__ double sign(double x) {
    return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
}

// The transcendental functions, single precision for float (no silent promotion).
__device__ __forceinline__ float exp(float x) { return ::expf(x); }
__device__ __forceinline__ double exp(double x) { return ::exp(x); }
__device__ __forceinline__ float log(float x) { return ::logf(x); }
__device__ __forceinline__ double log(double x) { return ::log(x); }
__device__ __forceinline__ float sqrt(float x) { return ::sqrtf(x); }
__device__ __forceinline__ double sqrt(double x) { return ::sqrt(x); }
__device__ __forceinline__ float sin(float x) { return ::sinf(x); }
__device__ __forceinline__ double sin(double x) { return ::sin(x); }
__device__ __forceinline__ float cos(float x) { return ::cosf(x); }
__device__ __forceinline__ double cos(double x) { return ::cos(x); }
__device__ __forceinline__ float tanh(float x) { return ::tanhf(x); }
__device__ __forceinline__ double tanh(double x) { return ::tanh(x); }
__device__ __forceinline__ float pow(float x, float y) { return ::powf(x, y); }
__device__ __forceinline__ double pow(double x, double y) { return ::pow(x, y); }
__device__ __forceinline__ float erf(float x) { return ::erff(x); }
__device__ __forceinline__ double erf(double x) { return ::erf(x); }

// Infinity and NaN in the type of the argument (NVRTC has no math.h macros).
#ifdef GRADCORE_HOST_BUILD
__device__ __forceinline__ float infinity(float) { return __builtin_huge_valf(); }
__device__ __forceinline__ double infinity(double) { return __builtin_huge_val(); }
__device__ __forceinline__ float not_a_number(float) { return __builtin_nanf(""); }
__device__ __forceinline__ double not_a_number(double) { return __builtin_nan(""); }
#else
__device__ __forceinline__ float infinity(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double infinity(double) {
    return __longlong_as_double(0x7ff0000000000000LL);
}
__device__ __forceinline__ float not_a_number(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double not_a_number(double) {
    return __longlong_as_double(0x7ff8000000000000LL);
}
#endif

// maximum: NumPy's, NaN if either is NaN (fmax would drop a NaN).
__device__ __forceinline__ float maximum(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ double maximum(double a, double b) {
    return (a != a || a > b) ? a : b;
}

}  // namespace gradcore
