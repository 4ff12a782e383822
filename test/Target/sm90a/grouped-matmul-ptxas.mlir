// REQUIRES: ptxas
// RUN: tessel-opt %s \
// RUN:   --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=sm_90a ptxas-verbose=1" \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas builds the Hopper grouped matmuls (forward, dgrad, wgrad; stacked b
// and pointer tables) for sm_90a
// without spilling, at
// the register cap the 384-thread block sets at entry (which setmaxnreg
// needs), with no wgmma serialized: values the wgmmas depend on reach
// them through warp-uniform broadcasts (C7520 otherwise).

// CHECK-NOT: Potential Performance Loss
// CHECK:     remark: ptxas -arch=sm_90a: {{.*}}
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'gate_up' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Used 168 registers
// CHECK-NOT: Potential Performance Loss
// CHECK:     remark: ptxas -arch=sm_90a: {{.*}}
// CHECK:     Compiling entry function 'ragged_n' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     remark: ptxas -arch=sm_90a: {{.*}}
// CHECK:     Compiling entry function 'dgrad' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     remark: ptxas -arch=sm_90a: {{.*}}
// CHECK:     Compiling entry function 'wgrad' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     remark: ptxas -arch=sm_90a: {{.*}}
// CHECK:     Compiling entry function 'gate_ptrs' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Used 168 registers
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'dgrad_ptrs' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'down_dsv3' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'ptrs_partial' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'gate_up_swiglu' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     gpu.binary @gate_up  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">,
// CHECK-SAME:  assembly = "
// CHECK-SAME:  #gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">,
// CHECK-SAME:  bin = "

func.func @gate_up(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                   %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
// N not a multiple of the tile, K not of 64: masked columns, TMA's zero
// fill past K; f16.
func.func @ragged_n(%a: memref<?x200xf16>, %b: memref<5x328x200xf16>,
                    %g: memref<5xi32>, %c: memref<?x328xf16>) {
  tessel.grouped_matmul a(%a : memref<?x200xf16>)
      b(%b : memref<5x328x200xf16>) group_offsets(%g : memref<5xi32>)
      c(%c : memref<?x328xf16>) {trans_b}
  return
}
// The dgrad: b [G, K, N], MN-major B tiles.
func.func @dgrad(%a: memref<?x1024xbf16>, %b: memref<128x1024x2048xbf16>,
                 %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x2048xbf16>)
  return
}
// The wgrad: ragged K, both operands MN-major.
func.func @wgrad(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
                 %g: memref<128xi32>, %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
  return
}
// A pointer table of per-expert [N, K] (forward) and [K, N] (dgrad)
// matrices, copied by the producer threads.
func.func @gate_ptrs(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
                     %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
      {trans_b, b_shape = array<i64: 512, 2048>}
  return
}
func.func @dgrad_ptrs(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
                      %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
      {b_shape = array<i64: 2048, 512>}
  return
}
// 28 N-tiles (a division by 28 in every role's tile walk): spilled 8 bytes
// while the epilogue's shared addresses were hoisted out of the tile loop
// (WarpgroupMma::opaque keeps them in the epilogue).
func.func @down_dsv3(%a: memref<?x2048xbf16>, %b: memref<32x7168x2048xbf16>,
                     %g: memref<32xi32>, %c: memref<?x7168xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<32x7168x2048xbf16>) group_offsets(%g : memref<32xi32>)
      c(%c : memref<?x7168xbf16>) {trans_b}
  return
}
// A pointer table with N and K no tile multiples: the producer's copies
// keep a select per piece; it spilled with 40 and 56 registers
// (WarpgroupMma::kGemmRegisters).
func.func @ptrs_partial(%a: memref<?x72xbf16>, %b: memref<8xi64>,
                        %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>)
      {trans_b, b_shape = array<i64: 200, 72>}
  return
}
// The MoE forward with act = silu(gate) * up in its epilogue: the act
// pass's math beside the 128 accumulators spilled 20 bytes with an IEEE
// division in the sigmoid (KernelBuilder::sigmoid divides approximately).
func.func @gate_up_swiglu(%a: memref<?x2048xbf16>, %rows: memref<?xi32>,
                          %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
                          %c: memref<?x1024xbf16>, %act: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      a_rows(%rows : memref<?xi32>) b(%b : memref<128x1024x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>)
      act(%act : memref<?x512xbf16>) {a_rows_divisor = 8, trans_b}
  return
}
