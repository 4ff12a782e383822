// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// reshape_and_cache: each lane reads its token's slot, skips it when it is
// negative or past the cache (one unsigned compare), then copies one
// 16-byte chunk: ld.global.v4 / st.global.v4 in nhd and for the shuffled
// K; the shuffled V takes the chunk's 8 bf16 one by one (st.global.b16).

// CHECK-LABEL: .visible .entry rc_nhd(
// CHECK:       .maxntid 256, 1, 1
// CHECK:       ld.global.s32
// CHECK:       setp.{{[a-z]+}}.u64
// CHECK-DAG:   ld.global.v4.b32
// CHECK-DAG:   st.global.v4.b32
// CHECK-NOT:   st.global.b16
// CHECK:       ret;

// CHECK-LABEL: .visible .entry rc_shuffled(
// CHECK:       ld.global.s32
// CHECK-DAG:   st.global.v4.b32
// CHECK-COUNT-8: st.global.b16
// CHECK:       ret;

// NOLOCAL-NOT: .local
// NOLOCAL-NOT: call
func.func @rc_nhd(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                  %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>,
                  %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}

func.func @rc_shuffled(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                       %kc: memref<?x8x16x16x8xbf16>,
                       %vc: memref<?x8x2x128x8xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>)
      v_cache(%vc : memref<?x8x2x128x8xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
