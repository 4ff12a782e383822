// RUN: tessel-opt %s --tessel-loop-annotations | FileCheck %s
// RUN: tessel-opt %s --tessel-loop-annotations | mlir-translate --mlir-to-llvmir \
// RUN:   | FileCheck %s --check-prefix=IR

// tessel-loop-annotations: the `llvm.loop_annotation` that convert-scf-to-cf
// leaves on a loop's back edge (a discardable attribute, which the
// translation ignores) becomes the branch's own loop_annotation, so that
// LLVM sees the loop metadata (here: no unrolling) on either kind of branch.

// CHECK-LABEL: llvm.func @unconditional_back_edge
// CHECK:         llvm.br ^bb1(%{{.*}} : i32) {loop_annotation = #[[ANNOTATION:.*]]}
// CHECK-NOT:     llvm.loop_annotation
// CHECK-LABEL: llvm.func @conditional_back_edge
// CHECK:         llvm.cond_br %{{.*}}, ^bb1, ^bb2 {loop_annotation = #[[ANNOTATION]]}
// CHECK-NOT:     llvm.loop_annotation

// IR-LABEL: define void @unconditional_back_edge
// IR:         br label %{{.*}}, !llvm.loop ![[LOOP:[0-9]+]]
// IR-LABEL: define void @conditional_back_edge
// IR:         br i1 %{{.*}}, label %{{.*}}, label %{{.*}}, !llvm.loop ![[LOOP2:[0-9]+]]
// IR:       ![[LOOP]] = distinct !{![[LOOP]], ![[DISABLE:[0-9]+]]}
// IR:       ![[DISABLE]] = !{!"llvm.loop.unroll.disable"}

#no_unroll = #llvm.loop_annotation<unroll = <disable = true>>
module {
  llvm.func @unconditional_back_edge(%n: i32) {
    %zero = llvm.mlir.constant(0 : i32) : i32
    %one = llvm.mlir.constant(1 : i32) : i32
    llvm.br ^bb1(%zero : i32)
  ^bb1(%i: i32):
    %next = llvm.add %i, %one : i32
    %more = llvm.icmp "slt" %next, %n : i32
    llvm.cond_br %more, ^bb2, ^bb3
  ^bb2:
    llvm.br ^bb1(%next : i32) {llvm.loop_annotation = #no_unroll}
  ^bb3:
    llvm.return
  }
  llvm.func @conditional_back_edge(%more: i1) {
    llvm.br ^bb1
  ^bb1:
    llvm.cond_br %more, ^bb1, ^bb2 {llvm.loop_annotation = #no_unroll}
  ^bb2:
    llvm.return
  }
}
