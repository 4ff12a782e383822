// RUN: tessel-opt %s --tessel-emulate-gpu | FileCheck %s

// How tessel-emulate-gpu turns a ROCDL kernel into host code for the
// runtime's emulator (runtime/include/tessel/emulator_abi.h): the kernel
// leaves its gpu.module as `<name>.lane(lane, args...)` plus an entry that
// reads params[i]; ids come from the lane record, the LDS global becomes
// the lane's shared buffer, address spaces are gone, and each intrinsic is
// a call through the lane's op table with the record in a stack buffer.

// CHECK-NOT: gpu.module
// CHECK: llvm.func internal @kern.lane(
// CHECK-SAME: %[[LANE:.*]]: !llvm.ptr, %[[A:.*]]: !llvm.ptr, %{{.*}}: f32, %{{.*}}: i64)
// CHECK-NOT: rocdl.kernel
// CHECK: %[[IO:.*]] = llvm.alloca %{{.*}} x !llvm.array<256 x i8> {alignment = 16 : i64}
// The thread id is the lane's thread_id[0] (offset 16), the block id its
// block_id[1] (offset 32).
// CHECK: %[[TID_AT:.*]] = llvm.getelementptr %[[LANE]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.load %[[TID_AT]] : !llvm.ptr -> i32
// CHECK: %[[BID_AT:.*]] = llvm.getelementptr %[[LANE]][32] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.load %[[BID_AT]] : !llvm.ptr -> i32
// The LDS global is the lane's `shared` (offset 8), in address space 0.
// CHECK: %[[SH_AT:.*]] = llvm.getelementptr %[[LANE]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[SHARED:.*]] = llvm.load %[[SH_AT]] : !llvm.ptr -> !llvm.ptr
// ds_swizzle: op 1 with {value, pattern} in the record, the result at 8.
// CHECK: %[[TABLE:.*]] = llvm.load %[[LANE]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %[[TABLE]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[FN:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call %[[FN]](%[[LANE]], %[[IO]]) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()
// update.dpp (f32): op 19 with {old, src, control, row_mask, bank_mask,
// bound_ctrl} as i32s at 0, 4, ..., 20, the result at 24.
// CHECK: %[[OLD:.*]] = llvm.bitcast %{{.*}} : f32 to i32
// CHECK: %[[OLD_AT:.*]] = llvm.getelementptr %[[IO]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[OLD]], %[[OLD_AT]]
// CHECK: %[[CTRL:.*]] = llvm.mlir.constant(320 : i32) : i32
// CHECK: %[[CTRL_AT:.*]] = llvm.getelementptr %[[IO]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[CTRL]], %[[CTRL_AT]]
// CHECK: %[[BANK:.*]] = llvm.mlir.constant(11 : i32) : i32
// CHECK: %[[BANK_AT:.*]] = llvm.getelementptr %[[IO]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[BANK]], %[[BANK_AT]]
// CHECK: %[[BOUND:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[BOUND_AT:.*]] = llvm.getelementptr %[[IO]][20] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[BOUND]], %[[BOUND_AT]]
// CHECK: llvm.getelementptr %{{.*}}[19] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[DPP_AT:.*]] = llvm.getelementptr %[[IO]][24] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[DPP:.*]] = llvm.load %[[DPP_AT]] {alignment = 1 : i64} : !llvm.ptr -> i32
// CHECK: llvm.bitcast %[[DPP]] : i32 to f32
// Barrier: op 0 with a null record.
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call %{{.*}}(%[[LANE]], %[[NULL]])
// MFMA (op 8): m, n, k, elem, then A at 16, B at 32, C at 48; D from 112.
// CHECK: llvm.getelementptr %{{.*}}[8] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[D_AT:.*]] = llvm.getelementptr %[[IO]][112] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.load %[[D_AT]] {alignment = 1 : i64} : !llvm.ptr -> vector<16xf32>
// exp2 and log: LLVM's exact base-2 functions.
// CHECK: llvm.intr.exp2
// CHECK: llvm.intr.log2
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK-NOT: rocdl.

// The entry: params[i] holds the address of parameter i.
// CHECK: llvm.func @kern(%[[PARAMS:.*]]: !llvm.ptr, %[[L:.*]]: !llvm.ptr)
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[PARAMS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.load %[[A0]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.getelementptr %[[PARAMS]][1]
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.getelementptr %[[PARAMS]][2]
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: llvm.call @kern.lane(%[[L]],
// x86 has no bf16 conversion; the object carries its own.
// CHECK-LABEL: llvm.func hidden @__truncsfbf2(%{{.*}}: f32) -> bf16

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32} : !llvm.array<0 x i8>
    llvm.func @kern(%a: !llvm.ptr, %x: f32, %n: i64) attributes {rocdl.kernel} {
      %zero = llvm.mlir.constant(0 : i32) : i32
      %pattern = llvm.mlir.constant(1055 : i32) : i32
      %t = rocdl.workitem.id.x : i32
      %blk = rocdl.workgroup.id.y : i32
      %lds = llvm.mlir.addressof @__dynamic_shmem__0 : !llvm.ptr<3>
      %s = rocdl.ds_swizzle %t, %pattern : (i32, i32) -> i32
      %xf = llvm.bitcast %s : i32 to f32
      %m = rocdl.update.dpp %x, %xf with 320, 15, 11, true : f32
      %mi = llvm.bitcast %m : f32 to i32
      llvm.store %mi, %lds : i32, !llvm.ptr<3>
      rocdl.barrier
      %va = llvm.mlir.undef : vector<4xi16>
      %vc = llvm.mlir.undef : vector<16xf32>
      %d = rocdl.mfma.f32.32x32x8bf16.1k %va, %va, %vc, %zero, %zero, %zero : (vector<4xi16>, vector<4xi16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
      %e = rocdl.exp2 %x f32 -> f32
      %l = rocdl.log %e f32 -> f32
      %gp = llvm.addrspacecast %a : !llvm.ptr to !llvm.ptr<1>
      llvm.store %l, %gp : f32, !llvm.ptr<1>
      %i = llvm.extractelement %d[%blk : i32] : vector<16xf32>
      llvm.store %i, %gp : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
