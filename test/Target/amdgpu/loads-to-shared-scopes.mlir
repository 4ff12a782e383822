// RUN: tessel-opt %s --tessel-loads-to-shared-scopes | FileCheck %s

// tessel-loads-to-shared-scopes: in a function with loads to LDS, those
// loads get one alias scope of the function and every LDS read (llvm.load
// from address space 3, ds_read_tr*) is noalias with it, beside any
// noalias scope it had; global reads and LDS writes are left alone, and so
// is a function without loads to LDS.

// CHECK-DAG: #[[DOMAIN:.*]] = #llvm.alias_scope_domain<id = {{.*}}, description = "kernel">
// CHECK-DAG: #[[SCOPE:.*]] = #llvm.alias_scope<id = {{.*}}, domain = #[[DOMAIN]], description = "loads to LDS">
// CHECK-DAG: #[[OTHER:.*]] = #llvm.alias_scope<id = {{.*}}, domain = #{{.*}}, description = "other">
// CHECK-LABEL: llvm.func @kernel
// CHECK:         rocdl.raw.ptr.buffer.load.lds {{.*}} {alias_scopes = [#[[SCOPE]]]}
// CHECK:         llvm.load %{{.*}} {noalias_scopes = [#[[SCOPE]]]} : !llvm.ptr<3> -> vector<8xbf16>
// CHECK:         rocdl.ds.read.tr16.b64 %{{.*}} {noalias_scopes = [#[[SCOPE]]]}
// CHECK:         llvm.load %{{.*}} {noalias_scopes = [#[[OTHER]], #[[SCOPE]]]} : !llvm.ptr<3> -> f32
// CHECK:         llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NEXT:    llvm.store %{{.*}} : f32, !llvm.ptr<3>
// CHECK-LABEL: llvm.func @no_loads_to_lds
// CHECK:         llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT:    llvm.return
#domain = #llvm.alias_scope_domain<id = distinct[0]<>, description = "other domain">
#other = #llvm.alias_scope<id = distinct[1]<>, domain = #domain, description = "other">
module {
  llvm.func @kernel(%rsrc: !llvm.ptr<8>, %lds: !llvm.ptr<3>, %global: !llvm.ptr<1>, %off: i32) {
    %size = llvm.mlir.constant(16 : i32) : i32
    %zero = llvm.mlir.constant(0 : i32) : i32
    rocdl.raw.ptr.buffer.load.lds %rsrc, %lds, %size, %off, %zero, %zero, %zero
    %a = llvm.load %lds : !llvm.ptr<3> -> vector<8xbf16>
    %b = rocdl.ds.read.tr16.b64 %lds : !llvm.ptr<3> -> vector<4xbf16>
    %c = llvm.load %lds {noalias_scopes = [#other]} : !llvm.ptr<3> -> f32
    %d = llvm.load %global : !llvm.ptr<1> -> f32
    llvm.store %d, %lds : f32, !llvm.ptr<3>
    llvm.return
  }
  llvm.func @no_loads_to_lds(%lds: !llvm.ptr<3>) {
    %a = llvm.load %lds : !llvm.ptr<3> -> f32
    llvm.return
  }
}
