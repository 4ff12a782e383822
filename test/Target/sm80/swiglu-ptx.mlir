// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The SwiGLU kernels in PTX: 16-byte loads and stores only (gate at column
// n, up 1024 bytes further in the same row), sigmoid by ex2.approx; the
// backward's <grad, act> summed by five butterfly shuffles.

// CHECK-LABEL: .visible .entry swiglu(
// CHECK:         ld.global.v4.b32
// CHECK:         ld.global.v4.b32 {{.*}}+1024]
// CHECK:         ex2.approx.ftz.f32
// CHECK:         st.global.v4.b32
// CHECK-LABEL: .visible .entry swiglu_backward(
// CHECK:         ld.global.b32
// CHECK:         ld.global.v4.b32
// CHECK:         ex2.approx.ftz.f32
// CHECK-COUNT-3: st.global.v4.b32
// CHECK-COUNT-5: shfl.sync.bfly.b32
// CHECK:         st.global.b32
// NOLOCAL-NOT:   .local
func.func @swiglu(%h: memref<?x1024xbf16>, %a: memref<?x512xbf16>) {
  tessel.swiglu h(%h : memref<?x1024xbf16>) act(%a : memref<?x512xbf16>)
  return
}
func.func @swiglu_backward(%g: memref<?x512xbf16>, %h: memref<?x1024xbf16>, %w: memref<?x8xf32>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<?x1024xbf16>, %aw: memref<?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x512xbf16>) h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<?x1024xbf16>) act_weighted(%aw : memref<?x512xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
