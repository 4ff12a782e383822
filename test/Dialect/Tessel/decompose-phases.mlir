// RUN: tessel-opt %s --tessel-decompose-phases=chunk-tokens=64 | FileCheck %s
// RUN: tessel-opt %s --tessel-decompose-phases=split-kv-tokens=0 | FileCheck %s --check-prefix=NOSPLIT

// Extend: new tokens first (causal, into fp32 scratch), then every context
// chunk but the last merged in place, then the last chunk merged into the
// op's own outputs. The chunk count comes from the block table width.

// CHECK-LABEL: func.func @extend(
// CHECK-SAME:    %[[Q:[^:]*]]: memref<?x4x64xbf16>, %[[K:[^:]*]]: memref<?x2x64xbf16>, %[[V:[^:]*]]: memref<?x2x64xbf16>, %[[KC:[^:]*]]: memref<?x16x2x64xbf16>, %[[VC:[^:]*]]: memref<?x16x2x64xbf16>, %[[BT:[^:]*]]: memref<?x?xi32>, %[[CU:[^:]*]]: memref<?xi32>, %[[CL:[^:]*]]: memref<?xi32>, %[[O:[^:]*]]: memref<?x4x64xbf16>, %[[L:[^:]*]]: memref<4x?xf32>, %[[S:[^:]*]]: f32)
// CHECK:         %[[ACC:.*]] = memref.alloc(%{{.*}}) : memref<?x4x64xf32>
// CHECK:         %[[ACCL:.*]] = memref.alloc(%{{.*}}) : memref<4x?xf32>
// CHECK:         %[[TMP:.*]] = memref.alloc(%{{.*}}) : memref<?x4x64xf32>
// CHECK:         %[[TMPL:.*]] = memref.alloc(%{{.*}}) : memref<4x?xf32>
// CHECK:         tessel.prefill_attention q(%[[Q]] {{.*}} k(%[[K]] {{.*}} v(%[[V]] {{.*}} cu_seqlens(%[[CU]] {{.*}} out(%[[ACC]] {{.*}} lse(%[[ACCL]] {{.*}} scale(%[[S]]) {causal}
// CHECK:         %[[CHUNK:.*]] = arith.constant 64 : index
// CHECK:         %[[MB:.*]] = memref.dim %[[BT]], %c1
// CHECK:         %[[CAP:.*]] = arith.muli %[[MB]], %c16
// CHECK:         %[[N:.*]] = arith.ceildivui %[[CAP]], %{{.*}}
// CHECK:         %[[N1:.*]] = arith.maxui %[[N]], %{{.*}}
// CHECK:         %[[LAST:.*]] = arith.subi %[[N1]], %{{.*}}
// CHECK:         scf.for %[[C:.*]] = %{{.*}} to %[[LAST]]
// CHECK:           %[[START:.*]] = arith.muli %[[C]], %[[CHUNK]]
// CHECK:           tessel.paged_attention {{.*}} cu_seqlens(%[[CU]] {{.*}} context_lens(%[[CL]] {{.*}} out(%[[TMP]] {{.*}} lse(%[[TMPL]] {{.*}} window(%[[START]], %[[CHUNK]]) layout( nhd) scale(%[[S]])
// CHECK:           tessel.lse_merge a(%[[ACC]] {{.*}}, %[[ACCL]] {{.*}}) b(%[[TMP]] {{.*}}, %[[TMPL]] {{.*}}) out(%[[ACC]] {{.*}}) lse_out(%[[ACCL]]
// CHECK:         }
// CHECK:         %[[LSTART:.*]] = arith.muli %[[LAST]], %[[CHUNK]]
// CHECK:         tessel.paged_attention {{.*}} window(%[[LSTART]], %[[CHUNK]]) layout( nhd) scale(%[[S]])
// CHECK:         tessel.lse_merge a(%[[ACC]] {{.*}}) b(%[[TMP]] {{.*}}) out(%[[O]] {{.*}}) lse_out(%[[L]]
// CHECK-DAG:     memref.dealloc %[[ACC]]
// CHECK-DAG:     memref.dealloc %[[TMP]]
// CHECK-NOT:     tessel.extend_attention
// NOSPLIT-LABEL: func.func @extend(
// NOSPLIT-NOT:   tessel.extend_attention
func.func @extend(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %o: memref<?x4x64xbf16>, %l: memref<4x?xf32>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x4x64xbf16>) k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x4x64xbf16>) lse(%l : memref<4x?xf32>) layout(nhd) scale(%scale)
  return
}

// Decode: one windowed partial per split into [P, B, H, D] scratch, merged
// by one N-way merge. With split-kv-tokens=0 decode is left alone.

// CHECK-LABEL: func.func @decode(
// CHECK:         %[[P:.*]] = arith.maxui
// CHECK:         %[[PARTS:.*]] = memref.alloc(%[[P]], %{{.*}}) : memref<?x?x4x64xf32>
// CHECK:         %[[PLSE:.*]] = memref.alloc(%[[P]], %{{.*}}) : memref<?x4x?xf32>
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[P]]
// CHECK:           %[[SO:.*]] = memref.subview %[[PARTS]][%[[I]], 0, 0, 0]
// CHECK:           %[[SL:.*]] = memref.subview %[[PLSE]][%[[I]], 0, 0]
// CHECK:           tessel.paged_attention {{.*}} out(%[[SO]] {{.*}} lse(%[[SL]] {{.*}} window(%{{.*}}, %{{.*}}) layout( shuffled)
// CHECK-NOT:       cu_seqlens
// CHECK:         }
// CHECK:         tessel.lse_merge_n partials(%[[PARTS]] {{.*}}, %[[PLSE]] {{.*}}) out(
// NOSPLIT-LABEL: func.func @decode(
// NOSPLIT:       tessel.decode_attention
func.func @decode(%q: memref<?x4x64xbf16>, %kc: memref<?x2x8x16x8xbf16>, %vc: memref<?x2x2x64x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x4x64xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x2x8x16x8xbf16>) v_cache(%vc : memref<?x2x2x64x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x4x64xbf16>) layout(shuffled) scale(%scale)
  return
}

// MLA decode splits the same way, through windowed mla_decode.

// CHECK-LABEL: func.func @mla(
// CHECK:         scf.for
// CHECK:           tessel.mla_decode {{.*}} window(
// CHECK:         tessel.lse_merge_n
// NOSPLIT-LABEL: func.func @mla(
// NOSPLIT:       tessel.mla_decode
// NOSPLIT-NOT:   window
func.func @mla(%q: memref<?x16x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x16x512xbf16>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x16x512xbf16>) scale(%scale)
  return
}
