/*===- test/emu_kernels.c - Interpreted GPU kernels the tests launch ------===*
 *
 * Hand-written stand-ins for what tessel-aot --targets=emu-<chip> emits:
 * entries `void entry(void **params, tessel_emu_lane *lane)` run once per
 * work-item, calling every intrinsic through lane->ops with a record laid out
 * as tessel/emulator_abi.h says. Most take a `config` i32 buffer choosing the
 * op and its operands, so that one kernel serves every case of a test.
 *
 * "Exit rules" let some lanes return at the start: config[exit] != 0 makes
 * the lanes with lane_id % config[exit] == config[exit + 1] return.
 *
 *===---------------------------------------------------------------------===*/

#include "tessel/emulator_abi.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PARAM(type, i) (*(type *)params[i])

static void call(tessel_emu_lane *lane, int op, void *io) {
  lane->ops[op](lane, io);
}

static uint32_t threadInBlock(const tessel_emu_lane *lane) {
  return lane->thread_id[0] +
         lane->block_dim[0] *
             (lane->thread_id[1] + lane->block_dim[1] * lane->thread_id[2]);
}

static uint32_t blockInGrid(const tessel_emu_lane *lane) {
  return lane->block_id[0] +
         lane->grid_dim[0] *
             (lane->block_id[1] + lane->grid_dim[1] * lane->block_id[2]);
}

static uint32_t globalThread(const tessel_emu_lane *lane) {
  return blockInGrid(lane) * lane->block_dim[0] * lane->block_dim[1] *
             lane->block_dim[2] +
         threadInBlock(lane);
}

static int exits(const tessel_emu_lane *lane, const int32_t *config, int at) {
  return config[at] != 0 &&
         lane->lane_id % (uint32_t)config[at] == (uint32_t)config[at + 1];
}

/* Copies `count` b16 from `from` to shared memory at `to`, the wave's
 * `lanes` lanes striding through them; the caller waits at a barrier. */
static void copyToShared(const tessel_emu_lane *lane, uint16_t *to,
                         const uint16_t *from, uint32_t count,
                         uint32_t lanes) {
  for (uint32_t i = lane->lane_id; i < count; i += lanes)
    to[i] = from[i];
}

/* Fills a 16-byte aligned local and reports its address mod 16: generated
 * code keeps vectors in such slots, and a fiber entered with a misaligned
 * stack would misplace them. */
static __attribute__((noinline)) uint32_t stackMisalignment(void) {
  _Alignas(16) volatile char slot[16];
  char *address = (char *)slot;
  /* Hides from the optimizer the alignment it would fold the answer from. */
  __asm__("" : "+r"(address));
  slot[0] = 1;
  return (uint32_t)((uintptr_t)address % 16);
}

/* ids: out i32[threads, 9] = thread x y z, block x y z, lane_id,
 * wave_size, stack misalignment; order i32[1 + blocks]: thread 0 of each
 * block appends its linear block index after the count in order[0]. */
void ids_entry(void **params, tessel_emu_lane *lane) {
  int32_t *out = PARAM(int32_t *, 0);
  int32_t *order = PARAM(int32_t *, 1);
  int32_t *record = out + 9 * globalThread(lane);
  for (int axis = 0; axis < 3; ++axis) {
    record[axis] = (int32_t)lane->thread_id[axis];
    record[3 + axis] = (int32_t)lane->block_id[axis];
  }
  record[6] = (int32_t)lane->lane_id;
  record[7] = (int32_t)lane->wave_size;
  record[8] = (int32_t)stackMisalignment();
  if (threadInBlock(lane) == 0)
    order[1 + order[0]++] = (int32_t)blockInGrid(lane);
}

/* barrier: shared i32[threads]. Each thread records what its slot held
 * first (the poison), writes 1000 * block + t, waits, reads its right
 * neighbour's slot, waits, writes -t, waits, reads its left neighbour's.
 * out i32[threads, 3]. config[0..1]: exit rule. */
void barrier_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  int32_t *out = PARAM(int32_t *, 1);
  if (exits(lane, config, 0))
    return;
  int32_t *slots = (int32_t *)lane->shared;
  uint32_t t = threadInBlock(lane);
  uint32_t n = lane->block_dim[0] * lane->block_dim[1] * lane->block_dim[2];
  int32_t *record = out + 3 * globalThread(lane);
  record[0] = slots[t];
  slots[t] = (int32_t)(1000 * blockInGrid(lane) + t);
  call(lane, TESSEL_EMU_BARRIER, NULL);
  record[1] = slots[(t + 1) % n];
  call(lane, TESSEL_EMU_BARRIER, NULL);
  slots[t] = -(int32_t)t;
  call(lane, TESSEL_EMU_BARRIER, NULL);
  record[2] = slots[(t + n - 1) % n];
}

/* wave_barrier: shared i32[threads]. Each thread writes 1000 * block + t,
 * meets its wave at llvm.amdgcn.wave.barrier (config[0] = 1; none with 0),
 * and reads the slot of the next lane of its wave. out i32[threads]. */
void wave_barrier_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  int32_t *out = PARAM(int32_t *, 1);
  int32_t *slots = (int32_t *)lane->shared;
  uint32_t t = threadInBlock(lane), wave = lane->wave_size;
  slots[t] = (int32_t)(1000 * blockInGrid(lane) + t);
  if (config[0])
    call(lane, TESSEL_EMU_WAVE_BARRIER, NULL);
  out[globalThread(lane)] = slots[t / wave * wave + (t + 1) % wave];
}

/* u32_op: any op with a tessel_emu_u32_io record. config[0] = op,
 * config[1..2] = exit rule; a = in_a[t], b = in_b[t], out[t] = result. */
void u32_op_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *inA = PARAM(const uint32_t *, 1);
  const uint32_t *inB = PARAM(const uint32_t *, 2);
  uint32_t *out = PARAM(uint32_t *, 3);
  if (exits(lane, config, 1))
    return;
  uint32_t t = globalThread(lane);
  tessel_emu_u32_io io = {inA[t], inB[t], 0};
  call(lane, config[0], &io);
  out[t] = io.result;
}

/* swap: permlane16/32_swap. config[0] = op, config[1..2] = exit rule;
 * old = in_a[t], src = in_b[t]; out[2t], out[2t + 1] = the results. */
void swap_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *inA = PARAM(const uint32_t *, 1);
  const uint32_t *inB = PARAM(const uint32_t *, 2);
  uint32_t *out = PARAM(uint32_t *, 3);
  if (exits(lane, config, 1))
    return;
  uint32_t t = globalThread(lane);
  tessel_emu_swap_io io = {inA[t], inB[t], 0, 0};
  call(lane, config[0], &io);
  out[2 * t] = io.old_result;
  out[2 * t + 1] = io.src_result;
}

/* ds_read_tr16: shared holds 256 b16 copied from `table`; lane l reads at
 * element 4 quads[l] (+ config[2] bytes where l == config[3]).
 * config[0..1] = exit rule; out [64, 4] = the result elements. */
void ds_read_tr16_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint16_t *table = PARAM(const uint16_t *, 1);
  const int32_t *quads = PARAM(const int32_t *, 2);
  uint16_t *out = PARAM(uint16_t *, 3);
  const uint32_t l = lane->lane_id;
  uint16_t *shared = (uint16_t *)lane->shared;
  copyToShared(lane, shared, table, 256, 64);
  call(lane, TESSEL_EMU_BARRIER, NULL);
  if (exits(lane, config, 0))
    return;
  tessel_emu_ds_read_tr_io io = {0};
  io.address = (const char *)(shared + 4 * quads[l]) +
               (l == (uint32_t)config[3] ? config[2] : 0);
  call(lane, TESSEL_EMU_DS_READ_TR16, &io);
  for (int e = 0; e < 4; ++e)
    out[4 * l + e] = io.result[e];
}

/* dpp: UPDATE_DPP. config[0..1] = exit rule, config[2..5] = control,
 * row_mask, bank_mask, bound_ctrl; old = in_a[t], src = in_b[t],
 * out[t] = result. */
void dpp_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *inA = PARAM(const uint32_t *, 1);
  const uint32_t *inB = PARAM(const uint32_t *, 2);
  uint32_t *out = PARAM(uint32_t *, 3);
  if (exits(lane, config, 0))
    return;
  uint32_t t = globalThread(lane);
  tessel_emu_dpp_io io = {inA[t],
                          inB[t],
                          (uint32_t)config[2],
                          (uint32_t)config[3],
                          (uint32_t)config[4],
                          (uint32_t)config[5],
                          0};
  call(lane, TESSEL_EMU_UPDATE_DPP, &io);
  out[t] = io.result;
}

/* ballot: BALLOT or VOTE_BALLOT. config[0] = op, config[1..2] = exit rule,
 * config[3] = membermask; predicate = in[t]; out i64[t] = mask. */
void ballot_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *in = PARAM(const uint32_t *, 1);
  int64_t *out = PARAM(int64_t *, 2);
  if (exits(lane, config, 1))
    return;
  uint32_t t = globalThread(lane);
  tessel_emu_ballot_io io;
  io.mask = 0;
  io.predicate = in[t];
  io.member = (uint32_t)config[3];
  call(lane, config[0], &io);
  out[t] = (int64_t)io.mask;
}

/* shfl: config[0] = op, [1] = membermask, [2] = offset, [3] = c (clamp and
 * segment mask), [4..5] = exit rule; value = in[t]; out[2t] = result,
 * out[2t + 1] = valid. */
void shfl_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *in = PARAM(const uint32_t *, 1);
  uint32_t *out = PARAM(uint32_t *, 2);
  if (exits(lane, config, 4))
    return;
  uint32_t t = globalThread(lane);
  tessel_emu_shfl_io io = {(uint32_t)config[1], in[t], (uint32_t)config[2],
                           (uint32_t)config[3], 0,     0};
  call(lane, config[0], &io);
  out[2 * t] = io.result;
  out[2 * t + 1] = io.valid;
}

/* mfma: one wave computes D = A B + C. config = {M, N, K, elem}; a [M, K]
 * and b [K, N] of 16-bit elements, c and d [M, N] f32, row-major. Each lane
 * gathers its operands by the ABI's layout formula. */
void mfma_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint16_t *a = PARAM(const uint16_t *, 1);
  const uint16_t *b = PARAM(const uint16_t *, 2);
  const float *c = PARAM(const float *, 3);
  float *d = PARAM(float *, 4);
  const uint32_t m = (uint32_t)config[0], n = (uint32_t)config[1],
                 k = (uint32_t)config[2];
  const uint32_t groups = 64 / m, perLane = k / groups;
  const uint32_t l = lane->lane_id, values = m * n / 64;
  tessel_emu_mfma_io io;
  memset(&io, 0, sizeof io);
  io.m = m;
  io.n = n;
  io.k = k;
  io.elem = (uint32_t)config[3];
  /* Lane l holds row l % M of A and column l % N of B, k from
   * perLane * (l / M). */
  for (uint32_t i = 0; i < perLane; ++i) {
    io.a[i] = a[(l % m) * k + perLane * (l / m) + i];
    io.b[i] = b[(perLane * (l / n) + i) * n + l % n];
  }
  /* Lane l = j + N g holds column j, rows 4 G (v / 4) + 4 g + v % 4. */
  for (uint32_t v = 0; v < values; ++v) {
    uint32_t row = 4 * groups * (v / 4) + 4 * (l / n) + v % 4;
    io.c[v] = c[row * n + l % n];
  }
  call(lane, TESSEL_EMU_MFMA, &io);
  for (uint32_t v = 0; v < values; ++v) {
    uint32_t row = 4 * groups * (v / 4) + 4 * (l / n) + v % 4;
    d[row * n + l % n] = io.d[v];
  }
}

/* mma: one warp computes D [16, 8] = A [16, 16] B [16, 8] + C through
 * shared memory, ldmatrix and mma.sync, as the sm80 templates do.
 * config[0] = elem; config[1] = 0: B is stored transposed (bt [8, 16],
 * ldmatrix.x2), 1: as is (b [16, 8], ldmatrix.x2.trans). */
void mma_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint16_t *a = PARAM(const uint16_t *, 1);
  const uint16_t *b = PARAM(const uint16_t *, 2);
  const float *c = PARAM(const float *, 3);
  float *d = PARAM(float *, 4);
  const uint32_t l = lane->lane_id, g = l / 4, t = l % 4;
  uint16_t *sharedA = (uint16_t *)lane->shared;
  uint16_t *sharedB = sharedA + 256;
  copyToShared(lane, sharedA, a, 256, 32);
  copyToShared(lane, sharedB, b, 128, 32);
  call(lane, TESSEL_EMU_BARRIER, NULL);

  /* A's four 8x8 quarters: matrix q = l / 8 is rows 8 (q % 2) + r,
   * columns 8 (q / 2). */
  tessel_emu_ldmatrix_io loadA = {0};
  uint32_t q = l / 8, r = l % 8;
  loadA.address = sharedA + (8 * (q % 2) + r) * 16 + 8 * (q / 2);
  loadA.count = 4;
  call(lane, TESSEL_EMU_LDMATRIX, &loadA);

  tessel_emu_ldmatrix_io loadB = {0};
  q = (l / 8) % 2;
  if (config[1] == 0) /* bt row n = r holds k 8q .. 8q + 7 */
    loadB.address = sharedB + r * 16 + 8 * q;
  else /* b row k = 8q + r holds all of n */
    loadB.address = sharedB + (8 * q + r) * 8;
  loadB.count = 2;
  loadB.transpose = config[1] != 0;
  call(lane, TESSEL_EMU_LDMATRIX, &loadB);

  tessel_emu_mma_io io;
  memset(&io, 0, sizeof io);
  io.elem = (uint32_t)config[0];
  memcpy(io.a, loadA.result, sizeof io.a);
  memcpy(io.b, loadB.result, sizeof io.b);
  for (uint32_t v = 0; v < 4; ++v)
    io.c[v] = c[(g + 8 * (v / 2)) * 8 + 2 * t + v % 2];
  call(lane, TESSEL_EMU_MMA_M16N8K16, &io);
  for (uint32_t v = 0; v < 4; ++v)
    d[(g + 8 * (v / 2)) * 8 + 2 * t + v % 2] = io.d[v];
}

/* ldmatrix: shared holds 32 rows of 8 b16 copied from `table`; lane l
 * gives the address of row rows[l]. config[0] = count, [1] = transpose.
 * out [32, 4] = the result registers. */
void ldmatrix_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint16_t *table = PARAM(const uint16_t *, 1);
  const int32_t *rows = PARAM(const int32_t *, 2);
  uint32_t *out = PARAM(uint32_t *, 3);
  const uint32_t l = lane->lane_id;
  uint16_t *shared = (uint16_t *)lane->shared;
  copyToShared(lane, shared, table, 256, 32);
  call(lane, TESSEL_EMU_BARRIER, NULL);
  tessel_emu_ldmatrix_io io = {0};
  io.address = shared + 8 * rows[l];
  io.count = (uint32_t)config[0];
  io.transpose = (uint32_t)config[1];
  call(lane, TESSEL_EMU_LDMATRIX, &io);
  for (int i = 0; i < 4; ++i)
    out[4 * l + i] = io.result[i];
}

/* cp_async: shared is two regions of 16 bytes per thread. Thread t queues
 * region 0 from first[t] with src-size 4 (t % 5) and commits; queues region
 * 1 from second[t] in full and commits; then records (out [threads, 4, 4])
 * region 0 before any wait, region 0 and region 1 after wait_group 1, and
 * region 1 after wait_group 0. config[0] = 1 makes thread 5 copy to just
 * past the end of shared memory instead. */
void cp_async_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const char *first = PARAM(const char *, 1);
  const char *second = PARAM(const char *, 2);
  char *out = PARAM(char *, 3);
  const uint32_t t = threadInBlock(lane);
  const uint32_t n = lane->block_dim[0];
  char *region0 = lane->shared + 16 * t;
  char *region1 = lane->shared + 16 * (n + t);
  char *record = out + 64 * t;
  tessel_emu_cp_async_io copy;
  copy.dst = config[0] == 1 && t == 5 ? lane->shared + 32 * n : region0;
  copy.src = first + 16 * t;
  copy.bytes = 16;
  copy.src_bytes = 4 * (t % 5);
  call(lane, TESSEL_EMU_CP_ASYNC, &copy);
  call(lane, TESSEL_EMU_CP_ASYNC_COMMIT, NULL);
  copy.dst = region1;
  copy.src = second + 16 * t;
  copy.src_bytes = 16;
  call(lane, TESSEL_EMU_CP_ASYNC, &copy);
  call(lane, TESSEL_EMU_CP_ASYNC_COMMIT, NULL);
  memcpy(record, region0, 16);
  tessel_emu_u32_io wait = {1, 0, 0};
  call(lane, TESSEL_EMU_CP_ASYNC_WAIT, &wait);
  memcpy(record + 16, region0, 16);
  memcpy(record + 32, region1, 16);
  wait.a = 0;
  call(lane, TESSEL_EMU_CP_ASYNC_WAIT, &wait);
  memcpy(record + 48, region1, 16);
}

/* buffer_load: a raw buffer over `data` of config[0] bytes and stride
 * config[1]; thread t loads config[2] bytes at offset 4 t, soffset config[3],
 * into out[4 t ..]. */
void buffer_load_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *data = PARAM(const uint32_t *, 1);
  uint32_t *out = PARAM(uint32_t *, 2);
  const uint32_t t = globalThread(lane);
  tessel_emu_buffer_resource resource = {data, (uint32_t)config[0],
                                         (uint32_t)config[1]};
  tessel_emu_buffer_load_io load = {
      &resource, 4 * t, (uint32_t)config[3], (uint32_t)config[2], {0, 0, 0, 0}};
  call(lane, TESSEL_EMU_BUFFER_LOAD, &load);
  memcpy(out + 4 * t, load.result, config[2] < 16 ? (uint32_t)config[2] : 16);
}

/* buffer_load_lds: a raw buffer over `data` of config[0] bytes; wave w
 * (64 lanes) loads, with M0 = shared + 1024 w, the 16 bytes at offset 16 t
 * (t the thread) into region 0 and, with M0 = shared + 1024 (waves + w),
 * those at 16 t + 1024 waves into region 1; then records (out [threads, 4,
 * 16 bytes]) its lane's slot of region 0 before any wait, both slots after
 * s_waitcnt vmcnt(1), and region 1's after vmcnt(0). config[1] = 1 makes
 * wave 0's first M0 the end of shared memory instead, 2 the loads 12
 * bytes. */
void buffer_load_lds_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  const uint32_t *data = PARAM(const uint32_t *, 1);
  char *out = PARAM(char *, 2);
  const uint32_t t = threadInBlock(lane), wave = t / 64;
  const uint32_t waves = lane->block_dim[0] / 64;
  tessel_emu_buffer_resource resource = {data, (uint32_t)config[0], 0};
  char *region0 = lane->shared + 1024 * wave;
  char *region1 = lane->shared + 1024 * (waves + wave);
  tessel_emu_buffer_load_lds_io load = {
      &resource,
      config[1] == 1 && wave == 0 ? lane->shared + 2048 * waves : region0,
      16 * t, 0, config[1] == 2 ? 12 : 16};
  call(lane, TESSEL_EMU_BUFFER_LOAD_LDS, &load);
  load.lds = region1;
  load.offset = 16 * t + 1024 * waves;
  call(lane, TESSEL_EMU_BUFFER_LOAD_LDS, &load);
  char *record = out + 64 * t;
  const uint32_t slot = 16 * lane->lane_id;
  memcpy(record, region0 + slot, 16);
  tessel_emu_u32_io wait = {1, 0, 0};
  call(lane, TESSEL_EMU_VMCNT_WAIT, &wait);
  memcpy(record + 16, region0 + slot, 16);
  memcpy(record + 32, region1 + slot, 16);
  wait.a = 0;
  call(lane, TESSEL_EMU_VMCNT_WAIT, &wait);
  memcpy(record + 48, region1 + slot, 16);
}

/* split: lanes below config[0] of every wave call op config[1], the others
 * op config[2] (TESSEL_EMU_BARRIER or a u32 op); config[3] = 1 makes the
 * lanes of waves after the first call the barrier only. Makes divergences
 * and deadlocks. */
void split_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  /* Zeros, and room for any op's record. */
  _Alignas(16) char io[sizeof(tessel_emu_mfma_io)] = {0};
  int op = lane->lane_id < (uint32_t)config[0] ? config[1] : config[2];
  if (config[3] == 1 && threadInBlock(lane) >= lane->wave_size)
    op = TESSEL_EMU_BARRIER;
  call(lane, op, op == TESSEL_EMU_BARRIER ? NULL : io);
}

/* rotate: config[0] rounds of ds_bpermute, each moving every value to the
 * lane below (lane l reads lane l + 1); out[t] = the value lane t ends
 * with, starting from t. */
void rotate_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  uint32_t *out = PARAM(uint32_t *, 1);
  uint32_t t = globalThread(lane);
  tessel_emu_u32_io io = {4 * ((lane->lane_id + 1) % 64), t, 0};
  for (int32_t round = 0; round < config[0]; ++round) {
    call(lane, TESSEL_EMU_DS_BPERMUTE, &io);
    io.b = io.result;
  }
  out[t] = io.b;
}

/* fail_late: in block config[0], thread config[1] calls op config[2] with a
 * zeroed u32 record; thread 0 of every block that gets past that marks
 * out[block] = 1. */
void fail_late_entry(void **params, tessel_emu_lane *lane) {
  const int32_t *config = PARAM(const int32_t *, 0);
  int32_t *out = PARAM(int32_t *, 1);
  tessel_emu_u32_io io = {0, 0, 0};
  if (blockInGrid(lane) == (uint32_t)config[0] &&
      threadInBlock(lane) == (uint32_t)config[1])
    call(lane, config[2], &io);
  call(lane, TESSEL_EMU_BARRIER, NULL);
  if (threadInBlock(lane) == 0)
    out[blockInGrid(lane)] = 1;
}
