// REQUIRES: ptxas
// RUN: tessel-aot %s --targets=sm80,sm90,sm90a -o %t.tsb | FileCheck %s

// sm90a is its own compilation (chip sm_90a, an sm_90a cubin); sm80 and
// sm90 share theirs. Every kernel gets all three: the grouped matmul's
// Hopper main loop on sm90a, the histogram its one template everywhere.

// CHECK:      gate_up{{ +}}tessel.grouped_matmul{{ +}}sm80{{ +}}bf16
// CHECK-NEXT: gate_up{{ +}}tessel.grouped_matmul{{ +}}sm90{{ +}}bf16
// CHECK-NEXT: gate_up{{ +}}tessel.grouped_matmul{{ +}}sm90a{{ +}}bf16
// CHECK-NEXT: histogram{{ +}}tessel.expert_histogram{{ +}}sm80{{ +}}i32
// CHECK-NEXT: histogram{{ +}}tessel.expert_histogram{{ +}}sm90{{ +}}i32
// CHECK-NEXT: histogram{{ +}}tessel.expert_histogram{{ +}}sm90a{{ +}}i32
// CHECK-NEXT: wrote 6 kernels for sm80,sm90,sm90a to {{.*}}.tsb

func.func @gate_up(%a: memref<?x256xbf16>, %b: memref<8x512x256xbf16>,
                   %g: memref<8xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x256xbf16>)
      b(%b : memref<8x512x256xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<?x512xbf16>) {trans_b}
  return
}
func.func @histogram(%ids: memref<?x2xi32>, %counts: memref<4xi32>, %offsets: memref<4xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<4xi32>) group_offsets(%offsets : memref<4xi32>)
  return
}
