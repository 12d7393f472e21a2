// gradcore_conv.cuh: a convolution's window kernels, im2col and col2im, and max
// pooling's forward and backward, hand-written.
// Included by the generated kernels/pointwise_backward.cu, whose extern "C" entry points
// (one per dtype) call these templates; their parameter lists are declared in
// gradcore/kernels/conv.py (CONV_KERNELS), beside their NumPy twins. See docs/kernels.md.
//
// Layout: the input is a C-contiguous (batch, channels, height, width) array; the columns
// a C-contiguous (channels * kernel_h * kernel_w, batch, out_h * out_w) array, whose row
// (c, i, j) holds the input under kernel position (i, j) of channel c for every image and
// output position: a convolution is then one matrix product. One thread per element of
// the output (grid-stride loops); 32-bit index arithmetic where every index fits.
#pragma once

#include "gradcore_cuda.cuh"

namespace gradcore {

// cols[(c, i, j), n, (y, x)] = x[n, c, y * stride_h - pad_h + i * dilation_h,
//                                x * stride_w - pad_w + j * dilation_w], zero outside.
template <typename T, typename C, typename I>
__device__ __forceinline__ void im2col_loop(
        const T* __restrict__ x, T* __restrict__ cols, I batch, I channels, I height,
        I width, I kernel_h, I kernel_w, I pad_h, I pad_w, I stride_h, I stride_w,
        I dilation_h, I dilation_w, I out_h, I out_w) {
    const I total = channels * kernel_h * kernel_w * batch * out_h * out_w;
    const I step = (I)blockDim.x * gridDim.x;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        I r = e;
        const I ox = r % out_w;
        r /= out_w;
        const I oy = r % out_h;
        r /= out_h;
        const I n = r % batch;
        r /= batch;
        const I j = r % kernel_w;
        r /= kernel_w;
        const I i = r % kernel_h;
        const I c = r / kernel_h;
        const I iy = oy * stride_h - pad_h + i * dilation_h;
        const I ix = ox * stride_w - pad_w + j * dilation_w;
        cols[e] = (iy >= 0 && iy < height && ix >= 0 && ix < width)
                      ? x[((n * channels + c) * height + iy) * width + ix]
                      : store<T>(C(0));
    }
}

// The adjoint of im2col, without atomics: a thread per input element (n, c, y, x) adds
// the column entries read from it, kernel position by kernel position (i, then j), from
// zero in the compute type C: the order of the NumPy twin's whole-array adds.
template <typename T, typename C, typename I>
__device__ __forceinline__ void col2im_loop(
        const T* __restrict__ cols, T* __restrict__ x, I batch, I channels, I height,
        I width, I kernel_h, I kernel_w, I pad_h, I pad_w, I stride_h, I stride_w,
        I dilation_h, I dilation_w, I out_h, I out_w) {
    const I total = batch * channels * height * width;
    const I plane = out_h * out_w;
    const I step = (I)blockDim.x * gridDim.x;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        I r = e;
        const I px = r % width + pad_w;
        r /= width;
        const I py = r % height + pad_h;
        r /= height;
        const I c = r % channels;
        const I n = r / channels;
        C acc = C(0);
        for (I i = 0; i < kernel_h; ++i) {
            const I ty = py - i * dilation_h;  // oy * stride_h, where a window reads here
            if (ty < 0) break;                 // (only smaller for later i)
            if (ty % stride_h != 0) continue;
            const I oy = ty / stride_h;
            if (oy >= out_h) continue;
            for (I j = 0; j < kernel_w; ++j) {
                const I tx = px - j * dilation_w;
                if (tx < 0) break;
                if (tx % stride_w != 0) continue;
                const I ox = tx / stride_w;
                if (ox >= out_w) continue;
                const I row = (c * kernel_h + i) * kernel_w + j;
                acc += load(cols[(row * batch + n) * plane + oy * out_w + ox]);
            }
        }
        x[e] = store<T>(acc);
    }
}

// max pooling, a thread per output element (n, c, y, x): the window's first maximum in
// raster order over the positions inside the image (a NaN is a maximum, its first
// one), and its position in the H x W plane; a window of -inf reports its first
// position inside the image.
template <typename T, typename C, typename I>
__device__ __forceinline__ void max_pool_forward_loop(
        const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ idx, I batch,
        I channels, I height, I width, I kernel_h, I kernel_w, I pad_h, I pad_w,
        I stride_h, I stride_w, I dilation_h, I dilation_w, I out_h, I out_w) {
    const I total = batch * channels * out_h * out_w;
    const I step = (I)blockDim.x * gridDim.x;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        I r = e;
        const I ox = r % out_w;
        r /= out_w;
        const I oy = r % out_h;
        const I plane = r / out_h;  // n * channels + c
        const T* src = x + plane * height * width;
        C best = -infinity(C(0));
        I at = -1;
        for (I i = 0; i < kernel_h; ++i) {
            const I iy = oy * stride_h - pad_h + i * dilation_h;
            if (iy < 0 || iy >= height) continue;
            for (I j = 0; j < kernel_w; ++j) {
                const I ix = ox * stride_w - pad_w + j * dilation_w;
                if (ix < 0 || ix >= width) continue;
                const C v = load(src[iy * width + ix]);
                if (at < 0 || v > best || (v != v && best == best)) {  // (v != v: a NaN)
                    best = v;
                    at = iy * width + ix;
                }
            }
        }
        y[e] = store<T>(best);
        idx[e] = (long long)at;
    }
}

// max pooling's gradient without atomics: a thread per input element (n, c, y, x)
// adds the gradients of the windows whose maximum it is, in the windows' raster order
// (the order of the twin's index_add), from zero in the compute type C.
template <typename T, typename C, typename I>
__device__ __forceinline__ void max_pool_backward_loop(
        const T* __restrict__ g, const long long* __restrict__ idx, T* __restrict__ dx,
        I batch, I channels, I height, I width, I kernel_h, I kernel_w, I pad_h, I pad_w,
        I stride_h, I stride_w, I dilation_h, I dilation_w, I out_h, I out_w) {
    const I total = batch * channels * height * width;
    const I windows = out_h * out_w;
    const I step = (I)blockDim.x * gridDim.x;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        const I at = e % (height * width);
        const I plane = e / (height * width);
        const I py = at / width + pad_h, px = at % width + pad_w;
        const long long* ip = idx + plane * windows;
        const T* gp = g + plane * windows;
        C acc = C(0);
        for (I i = kernel_h - 1; i >= 0; --i) {  // (the windows' rows in increasing order)
            const I ty = py - i * dilation_h;
            if (ty < 0 || ty % stride_h != 0) continue;
            const I oy = ty / stride_h;
            if (oy >= out_h) break;
            for (I j = kernel_w - 1; j >= 0; --j) {
                const I tx = px - j * dilation_w;
                if (tx < 0 || tx % stride_w != 0) continue;
                const I ox = tx / stride_w;
                if (ox >= out_w) break;
                if (ip[oy * out_w + ox] == (long long)at) acc += load(gp[oy * out_w + ox]);
            }
        }
        dx[e] = store<T>(acc);
    }
}

// The entry templates: 32-bit indices when both arrays have fewer than 2^30 elements
// (cheaper division and address arithmetic; an index plus the grid's stride then stays
// below 2^31), else 64-bit.
__device__ __forceinline__ bool conv_fits_int(long long batch, long long channels,
                                              long long height, long long width,
                                              long long kernel_h, long long kernel_w,
                                              long long out_h, long long out_w) {
    return batch * channels * height * width < 1073741824LL &&
           channels * kernel_h * kernel_w * batch * out_h * out_w < 1073741824LL;
}

template <typename T, typename C>
__device__ __forceinline__ void im2col(
        const T* __restrict__ x, T* __restrict__ cols, long long batch, long long channels,
        long long height, long long width, long long kernel_h, long long kernel_w,
        long long pad_h, long long pad_w, long long stride_h, long long stride_w,
        long long dilation_h, long long dilation_w, long long out_h, long long out_w) {
    if (conv_fits_int(batch, channels, height, width, kernel_h, kernel_w, out_h, out_w)) {
        im2col_loop<T, C, int>(x, cols, (int)batch, (int)channels, (int)height, (int)width,
                               (int)kernel_h, (int)kernel_w, (int)pad_h, (int)pad_w,
                               (int)stride_h, (int)stride_w, (int)dilation_h,
                               (int)dilation_w, (int)out_h, (int)out_w);
    } else {
        im2col_loop<T, C, long long>(x, cols, batch, channels, height, width, kernel_h,
                                     kernel_w, pad_h, pad_w, stride_h, stride_w,
                                     dilation_h, dilation_w, out_h, out_w);
    }
}

template <typename T, typename C>
__device__ __forceinline__ void col2im(
        const T* __restrict__ cols, T* __restrict__ x, long long batch, long long channels,
        long long height, long long width, long long kernel_h, long long kernel_w,
        long long pad_h, long long pad_w, long long stride_h, long long stride_w,
        long long dilation_h, long long dilation_w, long long out_h, long long out_w) {
    if (conv_fits_int(batch, channels, height, width, kernel_h, kernel_w, out_h, out_w)) {
        col2im_loop<T, C, int>(cols, x, (int)batch, (int)channels, (int)height, (int)width,
                               (int)kernel_h, (int)kernel_w, (int)pad_h, (int)pad_w,
                               (int)stride_h, (int)stride_w, (int)dilation_h,
                               (int)dilation_w, (int)out_h, (int)out_w);
    } else {
        col2im_loop<T, C, long long>(cols, x, batch, channels, height, width, kernel_h,
                                     kernel_w, pad_h, pad_w, stride_h, stride_w,
                                     dilation_h, dilation_w, out_h, out_w);
    }
}

template <typename T, typename C>
__device__ __forceinline__ void max_pool_forward(
        const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ idx,
        long long batch, long long channels, long long height, long long width,
        long long kernel_h, long long kernel_w, long long pad_h, long long pad_w,
        long long stride_h, long long stride_w, long long dilation_h, long long dilation_w,
        long long out_h, long long out_w) {
    if (conv_fits_int(batch, channels, height, width, 1, 1, out_h, out_w)) {
        max_pool_forward_loop<T, C, int>(x, y, idx, (int)batch, (int)channels, (int)height,
                                         (int)width, (int)kernel_h, (int)kernel_w,
                                         (int)pad_h, (int)pad_w, (int)stride_h,
                                         (int)stride_w, (int)dilation_h, (int)dilation_w,
                                         (int)out_h, (int)out_w);
    } else {
        max_pool_forward_loop<T, C, long long>(x, y, idx, batch, channels, height, width,
                                               kernel_h, kernel_w, pad_h, pad_w, stride_h,
                                               stride_w, dilation_h, dilation_w, out_h,
                                               out_w);
    }
}

template <typename T, typename C>
__device__ __forceinline__ void max_pool_backward(
        const T* __restrict__ g, const long long* __restrict__ idx, T* __restrict__ dx,
        long long batch, long long channels, long long height, long long width,
        long long kernel_h, long long kernel_w, long long pad_h, long long pad_w,
        long long stride_h, long long stride_w, long long dilation_h, long long dilation_w,
        long long out_h, long long out_w) {
    if (conv_fits_int(batch, channels, height, width, 1, 1, out_h, out_w)) {
        max_pool_backward_loop<T, C, int>(g, idx, dx, (int)batch, (int)channels,
                                          (int)height, (int)width, (int)kernel_h,
                                          (int)kernel_w, (int)pad_h, (int)pad_w,
                                          (int)stride_h, (int)stride_w, (int)dilation_h,
                                          (int)dilation_w, (int)out_h, (int)out_w);
    } else {
        max_pool_backward_loop<T, C, long long>(g, idx, dx, batch, channels, height, width,
                                                kernel_h, kernel_w, pad_h, pad_w, stride_h,
                                                stride_w, dilation_h, dilation_w, out_h,
                                                out_w);
    }
}

}  // namespace gradcore
