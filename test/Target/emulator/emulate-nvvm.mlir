// RUN: tessel-opt %s --tessel-emulate-gpu | FileCheck %s

// The NVVM intrinsics of the sm80 templates as calls into the emulator
// (op numbers and record offsets of runtime/include/tessel/emulator_abi.h).

// CHECK: llvm.func internal @kern.lane(%[[LANE:.*]]: !llvm.ptr, %[[SMEM:.*]]: !llvm.ptr, %[[G:.*]]: !llvm.ptr, %[[X:.*]]: f32, %[[M:.*]]: i32)
// CHECK: %[[IO:.*]] = llvm.alloca
// tid.x and ctaid.z: thread_id[0] and block_id[2].
// CHECK: llvm.getelementptr %[[LANE]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.getelementptr %[[LANE]][36] : (!llvm.ptr) -> !llvm.ptr, i8
// shfl.sync bfly (op 9): member, value (f32 as i32), offset, clamp; the
// result at 16 and the valid flag at 20.
// CHECK: llvm.bitcast %[[X]] : f32 to i32
// CHECK: llvm.getelementptr %{{.*}}[9] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.getelementptr %[[IO]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.bitcast %{{.*}} : i32 to f32
// CHECK: llvm.getelementptr %[[IO]][20] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.trunc %{{.*}} : i32 to i1
// vote.sync.ballot (op 13).
// CHECK: llvm.getelementptr %{{.*}}[13] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// ldmatrix x4 (op 15): the address, count 4, transpose 1; four results.
// CHECK: llvm.store %[[SMEM]], %{{.*}} {alignment = 1 : i64} : !llvm.ptr, !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[15] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-COUNT-4: llvm.insertvalue
// mma.sync (op 14).
// CHECK: llvm.getelementptr %{{.*}}[14] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-COUNT-4: llvm.insertvalue
// cp.async (op 16) with 16 bytes and the zero-fill size, commit (17) and
// wait_group 1 (18).
// CHECK: llvm.getelementptr %{{.*}}[16] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[17] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.store %[[ONE]]
// CHECK: llvm.getelementptr %{{.*}}[18] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// ex2.approx.ftz: LLVM's exp2.
// CHECK: llvm.intr.exp2
// CHECK-NOT: nvvm.

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%smem: !llvm.ptr<3>, %g: !llvm.ptr<1>, %x: f32, %m: i32) attributes {nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %bz = nvvm.read.ptx.sreg.ctaid.z : i32
      %c = llvm.mlir.constant(31 : i32) : i32
      %s = nvvm.shfl.sync bfly %m, %x, %t, %c {return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>
      %p = llvm.icmp "eq" %t, %bz : i32
      %b = nvvm.vote.sync ballot %m, %p -> i32
      %l = nvvm.ldmatrix %smem {num = 4 : i32, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
      %a0 = llvm.extractvalue %l[0] : !llvm.struct<(i32, i32, i32, i32)>
      %d = nvvm.mma.sync A[%a0, %a0, %a0, %a0] B[%a0, %a0] C[%x, %x, %x, %x] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      nvvm.cp.async.shared.global %smem, %g, 16, cache = cg, %t : !llvm.ptr<3>, !llvm.ptr<1>, i32
      nvvm.cp.async.commit.group
      nvvm.cp.async.wait.group 1
      %e = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%x) : (f32) -> f32
      %v = llvm.extractvalue %s[0] : !llvm.struct<(f32, i1)>
      %sum = llvm.fadd %v, %e : f32
      llvm.store %sum, %g : f32, !llvm.ptr<1>
      llvm.store %b, %g : i32, !llvm.ptr<1>
      %d0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
      llvm.store %d0, %g : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
