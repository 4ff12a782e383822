// RUN: tessel-opt %s --split-input-file --verify-diagnostics --tessel-emulate-gpu

// Every intrinsic the emulator does not model is an error naming it; none
// is skipped.

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%x: i32) attributes {rocdl.kernel} {
      // expected-error @+1 {{the GPU emulator does not model rocdl.s.sleep}}
      rocdl.s.sleep 1
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%a: vector<4xf16>, %c: vector<4xf32>) attributes {rocdl.kernel} {
      %z = llvm.mlir.constant(0 : i32) : i32
      // expected-error @+1 {{the GPU emulator does not model rocdl.mfma.f32.4x4x4f16 (it models the f32 MFMAs 32x32x8 and 16x16x16 bf16_1k/f16 of gfx942 and 32x32x16 and 16x16x32 bf16/f16 of gfx950)}}
      %d = rocdl.mfma.f32.4x4x4f16 %a, %a, %c, %z, %z, %z : (vector<4xf16>, vector<4xf16>, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%a: vector<4xi16>, %c: vector<4xf32>) attributes {rocdl.kernel} {
      %z = llvm.mlir.constant(0 : i32) : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      // expected-error @+1 {{the GPU emulator models rocdl.mfma.f32.16x16x16bf16.1k with cbsz = 0 only}}
      %d = rocdl.mfma.f32.16x16x16bf16.1k %a, %a, %c, %one, %z, %z : (vector<4xi16>, vector<4xi16>, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    // expected-error @+1 {{the GPU emulator models kernels whose only global is the workgroup memory}}
    llvm.mlir.global internal @table(dense<1> : tensor<4xi32>) {addr_space = 1 : i32} : !llvm.array<4 x i32>
    llvm.func @kern() attributes {rocdl.kernel} {
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    // expected-error @+1 {{the GPU emulator runs kernels only, not the device function @helper}}
    llvm.func @helper() {
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%m: i32, %p: i1) attributes {nvvm.kernel} {
      // expected-error @+1 {{the GPU emulator models vote.sync.ballot only}}
      %r = nvvm.vote.sync any %m, %p -> i1
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%a: vector<2xf16>, %c: vector<2xf16>) attributes {nvvm.kernel} {
      // expected-error @+1 {{the GPU emulator models mma.sync m16n8k16.row.col f32.{bf16,f16}.f32 only}}
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%x: f32) attributes {nvvm.kernel} {
      // expected-error @+1 {{the GPU emulator does not model the intrinsic llvm.nvvm.rcp.approx.ftz.f}}
      %r = llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%x) : (f32) -> f32
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%p: !llvm.ptr<3>) attributes {nvvm.kernel} {
      // expected-error @+1 {{the GPU emulator models ldmatrix .m8n8 .b16 only}}
      %r = nvvm.ldmatrix %p {num = 1 : i32, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 16, n = 16>, eltType = #nvvm.ld_st_matrix_elt_type<b8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%r: !llvm.ptr<8>, %o: i32) attributes {rocdl.kernel} {
      // expected-error @+1 {{the GPU emulator models buffer loads of 4, 8, 12 or 16 bytes, not 'vector<3xi16>'}}
      %v = rocdl.raw.ptr.buffer.load %r, %o, %o, %o : vector<3xi16>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%x: i64) attributes {rocdl.kernel} {
      // expected-error @+1 {{the GPU emulator models rocdl.readfirstlane of i32 only}}
      %r = rocdl.readfirstlane %x : i64
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%x: i64, %l: i32) attributes {rocdl.kernel} {
      // expected-error @+1 {{the GPU emulator models rocdl.readlane of i32 only}}
      %r = rocdl.readlane %x, %l : (i64, i32) -> i64
      llvm.return
    }
  }
}

// -----

// An empty asm statement of one operand (TargetInfo::opaqueCopy) is that
// operand; any other asm has no meaning on the host.
module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%x: i32) attributes {rocdl.kernel} {
      // expected-error @+1 {{the GPU emulator models only empty asm statements of one operand (TargetInfo::opaqueCopy)}}
      %y = llvm.inline_asm has_side_effects "s_nop 0", "=v,0" %x : (i32) -> i32
      llvm.return
    }
  }
}
