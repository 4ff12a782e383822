/*===- tessel/emulator_abi.h - Interpreted GPU kernels: the ABI ----*- C
 *-*-===//
 *
 * The contract between the code that `tessel-aot --targets=emu-<chip>`
 * generates (lib/Target/Emulator) and the runtime that runs it
 * (runtime/src/emulator). An interpreted kernel is the chip's GPU kernel —
 * the LLVM-dialect function that would go to the AMDGPU or NVPTX back end —
 * compiled for the host, with every target intrinsic replaced by a call
 * through this table. The runtime runs one fiber per work-item; an
 * intrinsic that involves other lanes (a shuffle, an MFMA, a barrier)
 * suspends the calling lane until every lane that takes part has arrived.
 *
 * The kernel's entry has the host kernels' parameter convention plus the
 * lane:
 *
 *   void entry(void **params, tessel_emu_lane *lane);
 *
 * run once per work-item. Each call of an op passes the lane and a record
 * (`io`, below) holding the op's operands and receiving its results; the
 * generated code lays records out with the offsets of these C structs
 * (it is compiled by the same compiler for the same host ABI).
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSEL_EMULATOR_ABI_H
#define TESSEL_EMULATOR_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a record, an op number or the lane layout changes; a
 * kernel carries it as its bundle parameter "emulator_abi" and the runtime
 * refuses any other. */
#define TESSEL_EMU_ABI_VERSION 7

typedef struct tessel_emu_lane tessel_emu_lane;
typedef void (*tessel_emu_op)(tessel_emu_lane *lane, void *io);

/* One work-item. The generated code reads ops, shared, thread_id and
 * block_id (block and grid sizes are constants or shape arithmetic in the
 * templates); the ops read the rest, and `scheduler` is the runtime's. */
struct tessel_emu_lane {
  const tessel_emu_op *ops;
  /* The workgroup's shared memory (LDS): the kernel's dynamic shared bytes,
   * 16-byte aligned, filled with a poison pattern before the block runs. */
  char *shared;
  uint32_t thread_id[3];
  uint32_t block_id[3];
  uint32_t block_dim[3];
  uint32_t grid_dim[3];
  /* The lane's index in its wave (AMD, 64 lanes) or warp (NVIDIA, 32). */
  uint32_t lane_id;
  uint32_t wave_size;
  void *scheduler;
};

/* The ops, by index into tessel_emu_lane::ops. "Wave op": every live lane
 * of the wave must call the same op before any returns (the kernels are
 * convergent there; a lane waiting elsewhere is a divergence error). */
enum tessel_emu_op_index {
  /* Workgroup barrier (s_barrier, bar.sync 0): io is NULL. Every live lane
   * of the workgroup must arrive; lanes that returned do not count. */
  TESSEL_EMU_BARRIER = 0,

  /* --- AMD (wave64) ------------------------------------------------------ */
  /* ds_swizzle_b32, wave op, tessel_emu_u32_io {a = value, b = pattern}.
   * Below 0x8000, bit mode within 32-lane groups: lane l reads
   * ((l & and) | or) ^ xor with and = pattern[4:0], or = pattern[9:5],
   * xor = pattern[14:10]. 0x8000-0x80ff, quad mode: lane 4q+i reads lane
   * 4q + pattern[2i+1:2i]. Any other pattern (the rotate and FFT modes
   * from 0xc000) is an error naming it. */
  TESSEL_EMU_DS_SWIZZLE = 1,
  /* ds_bpermute_b32, wave op, tessel_emu_u32_io {a = byte address,
   * b = value}: lane l gets the value of lane (address_l / 4) mod 64. */
  TESSEL_EMU_DS_BPERMUTE = 2,
  /* v_permlane16_swap_b32 (gfx950), wave op, tessel_emu_swap_io: the odd
   * 16-lane rows of `old` swap with the even rows of `src` (row 1 of old
   * with row 0 of src, row 3 with row 2). */
  TESSEL_EMU_PERMLANE16_SWAP = 3,
  /* v_permlane32_swap_b32 (gfx950), wave op: lanes 32-63 of `old` swap
   * with lanes 0-31 of `src`. */
  TESSEL_EMU_PERMLANE32_SWAP = 4,
  /* Ballot, wave op, tessel_emu_ballot_io: bit l of `mask` is lane l's
   * predicate (0 for lanes that returned or do not exist). */
  TESSEL_EMU_BALLOT = 5,
  /* v_mbcnt_lo_u32_b32 / v_mbcnt_hi_u32_b32, per lane, tessel_emu_u32_io
   * {a = mask, b = addend}: result = b + popcount(a & m) where m is bits
   * 0..31 (lo) or 32..63 (hi) of the lanes below this one. */
  TESSEL_EMU_MBCNT_LO = 6,
  TESSEL_EMU_MBCNT_HI = 7,
  /* v_mfma_f32_{32x32x8,16x16x16}{bf16_1k,f16} (gfx942) and
   * _{32x32x16,16x16x32}_{bf16,f16} (gfx950), wave op, tessel_emu_mfma_io,
   * cbsz = abid = blgp = 0. With M = N, G = 64 / M lane groups and
   * kl = K / G values per lane: A[i][k] is a[k % kl] of lane i + M (k / kl),
   * B[k][j] is b[k % kl] of lane j + N (k / kl), and D[i][j] (and C) is
   * d[v] of lane j + N g for i = 4 G (v / 4) + 4 g + v % 4. Products are
   * exact in f32 and summed in k order onto C. */
  TESSEL_EMU_MFMA = 8,

  /* --- NVIDIA (warp32) --------------------------------------------------- */
  /* shfl.sync.{bfly,up,down,idx}.b32, wave op, tessel_emu_shfl_io; the
   * PTX ISA's rules: c = clamp (bits 4:0) and segment mask (bits 12:8). */
  TESSEL_EMU_SHFL_BFLY = 9,
  TESSEL_EMU_SHFL_UP = 10,
  TESSEL_EMU_SHFL_DOWN = 11,
  TESSEL_EMU_SHFL_IDX = 12,
  /* vote.sync.ballot.b32, wave op, tessel_emu_ballot_io (mask's low 32
   * bits; `member` is the membermask and must name every live lane). */
  TESSEL_EMU_VOTE_BALLOT = 13,
  /* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.f32, wave op,
   * tessel_emu_mma_io. g = lane / 4, t = lane % 4, elements in the low half
   * of a register first: a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..],
   * a[2] = A[g][2t+8..], a[3] = A[g+8][2t+8..]; b[0] = B[2t..2t+1][g],
   * b[1] = B[2t+8..2t+9][g]; c/d[0,1] = C[g][2t, 2t+1],
   * c/d[2,3] = C[g+8][2t, 2t+1]. */
  TESSEL_EMU_MMA_M16N8K16 = 14,
  /* ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16, wave op,
   * tessel_emu_ldmatrix_io: lanes 8i..8i+7 give the row addresses of
   * matrix i; register i of lane l holds matrix i's row l / 4, columns
   * 2 (l % 4) and 2 (l % 4) + 1 (with .trans, its column l / 4, rows
   * 2 (l % 4) and 2 (l % 4) + 1). */
  TESSEL_EMU_LDMATRIX = 15,
  /* cp.async.{ca,cg}.shared.global, per lane, tessel_emu_cp_async_io: the
   * copy is queued in the lane's open group (src_bytes read, the rest of
   * `bytes` zero-filled) and happens when a wait retires its group — so a
   * kernel that reads the destination before waiting reads stale data, as
   * it might on the GPU. */
  TESSEL_EMU_CP_ASYNC = 16,
  /* cp.async.commit_group: closes the open group; io is NULL. */
  TESSEL_EMU_CP_ASYNC_COMMIT = 17,
  /* cp.async.wait_group n: completes all but the newest n committed
   * groups; tessel_emu_u32_io {a = n}. */
  TESSEL_EMU_CP_ASYNC_WAIT = 18,

  /* --- AMD, continued ----------------------------------------------------- */
  /* v_mov_b32_dpp (llvm.amdgcn.update.dpp), wave op, tessel_emu_dpp_io.
   * Lane l reads `src` of the lane the control selects: quad_perm
   * (0x00-0xff: lane 4q+i reads 4q + control[2i+1:2i]), row_shr n
   * (0x110 + n, n = 1..15: row lane i reads i - n, none for i < n),
   * wave_shr:1 (0x138: lane l reads l - 1, none for lane 0), row_mirror
   * (0x140: row lane i reads 15 - i), row_half_mirror (0x141: i of 8 reads
   * 7 - i), row_bcast:15 (0x142: row r reads lane 16 r - 1, none for row
   * 0), row_bcast:31 (0x143: rows 2 and 3 read lane 31, none for rows 0
   * and 1); any other control is an error naming it. Lanes whose row
   * (row_mask bit l / 16) or bank (bank_mask bit l % 16 / 4) is masked off
   * get `old`; a lane with no source, or whose source returned, gets 0 with
   * bound_ctrl, else `old`. */
  TESSEL_EMU_UPDATE_DPP = 19,
  /* buffer_load_dword{,x2,x3,x4} of a raw buffer (llvm.amdgcn.raw.ptr.
   * buffer.load: stride 0, so offsets are bytes), per lane,
   * tessel_emu_buffer_load_io. Word w is read at base + soffset + offset +
   * 4 w where offset + 4 w < num_records, else it is 0. Chips differ in
   * whether soffset takes part in that check, so a load where counting it
   * would change a word is an error naming both readings. */
  TESSEL_EMU_BUFFER_LOAD = 20,
  /* v_readfirstlane_b32, wave op, tessel_emu_u32_io {a = value}: every
   * lane gets `a` of the lowest live lane. */
  TESSEL_EMU_READFIRSTLANE = 21,
  /* llvm.amdgcn.wave.barrier (no instruction: a wave's LDS accesses run in
   * order), wave op, io is NULL: every live lane of the wave arrives before
   * any goes on, so lanes read what the wave's other lanes wrote before. */
  TESSEL_EMU_WAVE_BARRIER = 22,
  /* ds_read_b64_tr_b16 (gfx950), wave op, tessel_emu_ds_read_tr_io: in
   * each group of 16 lanes, lane j reads 4 16-bit elements (8 bytes, 8-byte
   * aligned, in shared memory) at its address, row j / 4, columns
   * 4 (j % 4)..+3 of a 4 x 16 block; lane i gets column i: element e of its
   * result is element i % 4 of lane 4 e + i / 4's read. */
  TESSEL_EMU_DS_READ_TR16 = 23,
  /* v_readlane_b32, wave op, tessel_emu_u32_io {a = value, b = lane}:
   * every lane gets `a` of lane b; b must be the same in every live lane
   * (one SGPR on the chip) and name a live lane. */
  TESSEL_EMU_READLANE = 24,
  /* buffer_load_dwordx4 ... lds (gfx950, llvm.amdgcn.raw.ptr.buffer.load.
   * lds of 16 bytes), per lane, tessel_emu_buffer_load_lds_io: the lane's
   * 16 bytes, read as TESSEL_EMU_BUFFER_LOAD reads them (0 out of range),
   * go to shared memory at lds + 16 lane_id (lds is M0 plus the
   * instruction's offset, which offset includes too; the same in every
   * lane of the wave: the kernel makes it so by readfirstlane), written
   * when an s_waitcnt retires them (TESSEL_EMU_VMCNT_WAIT), so that a
   * kernel that reads them before waiting reads what was there before. */
  TESSEL_EMU_BUFFER_LOAD_LDS = 25,
  /* s_waitcnt vmcnt(n), per lane, tessel_emu_u32_io {a = n}: the lane's
   * loads to LDS but the newest n are written. The emulator's other vector
   * loads complete at once and are not counted, so a wait is never weaker
   * here than on the chip. */
  TESSEL_EMU_VMCNT_WAIT = 26,

  TESSEL_EMU_OP_COUNT = 27
};

/* Operands a, b; result. */
typedef struct tessel_emu_u32_io {
  uint32_t a, b;
  uint32_t result;
} tessel_emu_u32_io;

/* permlane*_swap: both registers in, both out. */
typedef struct tessel_emu_swap_io {
  uint32_t old_value, src_value;
  uint32_t old_result, src_result;
} tessel_emu_swap_io;

typedef struct tessel_emu_dpp_io {
  uint32_t old_value, src_value;
  uint32_t control, row_mask, bank_mask, bound_ctrl;
  uint32_t result;
} tessel_emu_dpp_io;

typedef struct tessel_emu_ballot_io {
  uint64_t mask; /* result */
  uint32_t predicate;
  uint32_t member; /* NVIDIA only */
} tessel_emu_ballot_io;

/* Element types of the matrix ops. */
enum tessel_emu_elem { TESSEL_EMU_BF16 = 0, TESSEL_EMU_F16 = 1 };

typedef struct tessel_emu_mfma_io {
  uint32_t m, n, k, elem;
  uint16_t a[8], b[8]; /* the first K / (64 / M) used */
  float c[16], d[16];  /* the first M N / 64 used */
} tessel_emu_mfma_io;

typedef struct tessel_emu_mma_io {
  uint32_t elem;
  uint32_t a[4], b[2]; /* two 16-bit elements each, the lower first */
  float c[4], d[4];
} tessel_emu_mma_io;

typedef struct tessel_emu_ldmatrix_io {
  const void *address;
  uint32_t count;     /* matrices: 1, 2 or 4 */
  uint32_t transpose; /* 0 or 1 */
  uint32_t result[4];
} tessel_emu_ldmatrix_io;

typedef struct tessel_emu_cp_async_io {
  void *dst;
  const void *src;
  uint32_t bytes, src_bytes;
} tessel_emu_cp_async_io;

/* A raw buffer resource (llvm.amdgcn.make.buffer.rsrc), as the kernel keeps
 * it: the base address and the size in bytes (the hardware's 32 bits). */
typedef struct tessel_emu_buffer_resource {
  const void *base;
  uint32_t num_records;
  uint32_t stride;
} tessel_emu_buffer_resource;

typedef struct tessel_emu_buffer_load_io {
  const tessel_emu_buffer_resource *resource;
  uint32_t offset, soffset;
  uint32_t bytes; /* 4, 8, 12 or 16 */
  uint32_t result[4];
} tessel_emu_buffer_load_io;

typedef struct tessel_emu_buffer_load_lds_io {
  const tessel_emu_buffer_resource *resource;
  void *lds;
  uint32_t offset, soffset;
  uint32_t bytes; /* 16 */
} tessel_emu_buffer_load_lds_io;

typedef struct tessel_emu_ds_read_tr_io {
  const void *address;
  uint16_t result[4];
} tessel_emu_ds_read_tr_io;

typedef struct tessel_emu_shfl_io {
  uint32_t member, value, offset, clamp;
  uint32_t result, valid;
} tessel_emu_shfl_io;

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_EMULATOR_ABI_H */
