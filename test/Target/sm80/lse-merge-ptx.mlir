// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The PTX of the LSE merges: 16-byte global loads and stores (an f32
// partial's 8-element chunk is two ld.global.v4.b32, the bf16 out chunk one
// st.global.v4.b32), the row leader's LSEs handed out by shfl.sync.idx, exp
// and log as ex2.approx / lg2.approx (no libdevice call), no local memory.

// CHECK-LABEL: .visible .entry merge(
// CHECK:       .maxntid 256, 1, 1
// CHECK:       ld.global.v4.b32 {{.*}}, [[[OA:%rd[0-9]+]]];
// CHECK-NEXT:  ld.global.v4.b32 {{.*}}, [[[OA]]+16];
// CHECK:       ld.global.v4.b32 {{.*}}, [[[OB:%rd[0-9]+]]];
// CHECK-NEXT:  ld.global.v4.b32 {{.*}}, [[[OB]]+16];
// CHECK:       ld.global.b32
// CHECK:       ld.global.b32
// CHECK:       shfl.sync.idx.b32
// CHECK:       shfl.sync.idx.b32
// CHECK:       ex2.approx.ftz.f32
// CHECK:       ex2.approx.ftz.f32
// CHECK:       cvt.rn.bf16x2.f32
// CHECK:       st.global.v4.b32
// CHECK:       lg2.approx.ftz.f32
// CHECK:       st.global.b32
// CHECK:       ret;

// The split-KV merge (bf16 partials: one 16-byte load a chunk), 4 partials
// a loop step: the next step's 4 LSEs and this step's 4 chunks are loaded
// before the fold's five ex2.
// CHECK-LABEL: .visible .entry merge_n(
// CHECK:       .maxntid 256, 1, 1
// CHECK:     [[HEAD:\$L__BB[0-9_]+]]:
// CHECK-COUNT-4: ld.global.b32
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK-COUNT-5: ex2.approx.ftz.f32
// CHECK:       bra{{.*}} [[HEAD]];
// CHECK:       st.global.v4.b32
// CHECK:       lg2.approx.ftz.f32
// CHECK:       ret;

// NOLOCAL-NOT: .local
// NOLOCAL-NOT: call
func.func @merge(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>,
                 %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>,
                 %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

func.func @merge_n(%p: memref<?x?x32x128xbf16>, %pl: memref<?x32x?xf32>,
                   %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xbf16>,
                              %pl : memref<?x32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}
