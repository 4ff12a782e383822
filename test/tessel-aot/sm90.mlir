// REQUIRES: ptxas
// RUN: tessel-aot %s --targets=sm80,sm90 -o %t.tsb | FileCheck %s

// CHECK:      moe_gate{{ +}}tessel.grouped_matmul{{ +}}sm80{{ +}}bf16
// CHECK-NEXT: moe_gate{{ +}}tessel.grouped_matmul{{ +}}sm90{{ +}}bf16
// CHECK-NEXT: wrote 2 kernels for sm80,sm90 to {{.*}}.tsb

func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
