// Tool-level failures are reported with the cause, never crashed on.
// RUN: not tessel-aot %s --host-cpu=pentium4 -o %t.tsb 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not tessel-aot %s --lld=%t.missing/ld.lld -o %t.tsb 2>&1 | FileCheck %s --check-prefix=LLD
// RUN: not tessel-aot %s -o %t.missing/out.tsb 2>&1 | FileCheck %s --check-prefix=OUT

// CPU: error: unknown --host-cpu 'pentium4'; use x86-64, x86-64-v2, x86-64-v3 or x86-64-v4
// LLD: error: linking the host kernel with '{{.*}}.missing/ld.lld' failed
// OUT: error: {{.*}}.missing/out.tsb{{.*}}No such file or directory

func.func @histogram(%ids: memref<?x2xi32>, %counts: memref<4xi32>, %offsets: memref<4xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<4xi32>) group_offsets(%offsets : memref<4xi32>)
  return
}
