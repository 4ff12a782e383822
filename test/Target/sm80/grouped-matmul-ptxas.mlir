// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline=ptxas-verbose=1 \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas (sm_90, the H200) builds every default grouped-matmul config without
// spilling, and the cubin joins the PTX in the gpu.binary.

// CHECK:     remark: ptxas -arch=sm_90: {{.*}}
// CHECK:     Compiling entry function 'gate_up' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     remark: ptxas -arch=sm_90: {{.*}}
// CHECK:     Compiling entry function 'down' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     remark: ptxas -arch=sm_90: {{.*}}
// CHECK:     Compiling entry function 'ragged_edges' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     remark: ptxas -arch=sm_90: {{.*}}
// CHECK:     Compiling entry function 'dgrad_gate_up' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     remark: ptxas -arch=sm_90: {{.*}}
// CHECK:     Compiling entry function 'table_dgrad_down' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     remark: ptxas -arch=sm_90: {{.*}}
// CHECK:     Compiling entry function 'wgrad_gate_up' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     gpu.binary @gate_up  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">,
// CHECK-SAME:  assembly = "
// CHECK-SAME:  #gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">,
// CHECK-SAME:  bin = "

// Reference MoE (H=2048, I=512, E=128): gate/up and down projections.
func.func @gate_up(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                   %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
func.func @down(%a: memref<?x512xbf16>, %b: memref<128x2048x512xbf16>,
                %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x512xbf16>)
      b(%b : memref<128x2048x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x2048xbf16>) {trans_b}
  return
}
// N and K that are not tile multiples: masked columns and K tail.
func.func @ragged_edges(%a: memref<?x72xbf16>, %b: memref<8x200x72xbf16>,
                        %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>)
      b(%b : memref<8x200x72xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<?x200xbf16>) {trans_b}
  return
}
// The dgrads (no trans_b), stacked and from a pointer table.
func.func @dgrad_gate_up(%a: memref<?x1024xbf16>,
                         %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
                         %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x2048xbf16>)
  return
}
func.func @table_dgrad_down(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
                            %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
      {b_shape = array<i64: 2048, 512>}
  return
}

// The wgrad (ragged K) of the reference gate/up projection, f32 out.
func.func @wgrad_gate_up(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
                         %g: memref<128xi32>, %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
  return
}
