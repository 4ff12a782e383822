#!/usr/bin/env python3
"""Static loop report of the AMD kernels: what each gfx942 / gfx950 kernel
would do per iteration of its main loop, from its AMDGCN alone.

  scripts/amd-loop-report.py [SPEC] --tessel-opt build/bin/tessel-opt \\
      [--chips gfx942,gfx950] [--check] [--explain KERNEL]

SPEC defaults to the embedded default set (tools/tessel-aot/
DefaultKernels.mlir); kernels with no GPU form (extend_attention) are left
out. Per kernel it prints registers (arch VGPR / AGPR / SGPR), LDS bytes,
waves per SIMD, and for the main loop (the loop with the most MFMAs, else
the largest; a kernel whose MFMAs are in no loop is measured whole) the
issue cycles per iteration of each unit as llvm-mca's scheduling model of
the chip counts them (MFMA, VALU, SALU, LDS + scalar memory, vector
memory), the MFMA share of their sum, and the patterns that
waste a CDNA main loop: workgroup barriers (`s_barrier`), `s_waitcnt
vmcnt(0)`, and of those the serialized
ones (a wait with no MFMA since a load it waits for: a load waited for
before the next is issued or any compute overlaps it; a vmcnt(0) after
the compute, for the loads of the next tile, or before a tile's loads, for
what the tile before loaded, is not), `lgkmcnt(0)`, flat loads, and 2-byte
LDS reads/writes; and the KiB an iteration loads by vector memory times
the waves a CU holds (what a CU can have in flight where a tile's loads
are issued before any is waited for: no serialized vmcnt(0)).
Scratch anywhere in a kernel is reported too. --explain KERNEL lists that
kernel's main-loop instructions by mnemonic.

With --check it exits 1 when a kernel family breaks a threshold of
THRESHOLDS (no scratch anywhere; per family a floor on the MFMA share,
waves per SIMD and (paged families) KiB loaded a CU, and a ceiling on
barriers, waits (vmcnt(0), serialized ones, lgkmcnt(0)), flat loads and
2-byte LDS accesses per iteration), so CI fails when a change makes the AMD code
worse. The thresholds are today's values: lower the ceilings / raise the
floors as the kernels improve (issue 16's targets).

This is an estimate of issue slots, not of time: no latency, no
occupancy-hidden stalls, no memory bandwidth. The AMD kernels are not run
here; their speed is unmeasured.

Hardware facts used (per chip):
  * 512 VGPRs (arch + AGPR, one file) per SIMD lane, allocated in blocks
    of 8; at most 8 waves per SIMD (LLVM AMDGPU: getMaxWavesPerEU is 8 on
    gfx90a and later; CDNA3 ISA guide, "Wavefront" limits);
  * LDS per CU: 64 KiB on gfx942 (MI300X), 160 KiB on gfx950 (MI355X);
  * 4 SIMDs per CU; waves of 64 lanes;
  * MFMA cost: llvm-mca-22's AMDGPU scheduling model (its HWXDL pressure,
    as checked 2026-12-05): 8 issue cycles for a 32x32 bf16 MFMA (gfx942's
    32x32x8, gfx950's 32x32x16, twice the k), 4 for a 16x16 one (16x16x16,
    16x16x32); every other instruction 1 on its unit. The report takes
    them from the model, so a shape's cost follows LLVM's.
"""
import argparse
import collections
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LDS_BYTES = {"gfx942": 64 * 1024, "gfx950": 160 * 1024}
VGPRS_PER_LANE, VGPR_GRANULE, MAX_WAVES, SIMDS = 512, 8, 8, 4
# Ops with no GPU kernel (tessel-aot skips them for GPU targets).
HOST_ONLY = ("tessel.extend_attention",)
# A loop takes llvm-mca well under a second; some inputs make it spin.
MCA_TIMEOUT_S = int(os.environ.get("TESSEL_MCA_TIMEOUT_S", "20"))
# The per-iteration counts THRESHOLDS caps.
CEILINGS = ("barriers", "vmcnt0", "serial", "lgkmcnt0", "flat", "lds16")

# family (the kernel's op) -> limits; "share", "waves" and "kib_cu" are
# floors, the rest ceilings per main-loop iteration: the worst of the default set on
# either chip on 2026-12-01; the attention families' since their tile loads
# left their branches and V is staged transposed (2026-12-02: 21 waits a
# decode tile on gfx950 before, prefill 13% MFMA share and 144 2-byte LDS
# accesses); the attention families' shares and every lgkmcnt(0) ceiling
# since the row reductions moved from ds_swizzle to DPP with the IEEE mode
# bit off (2026-12-02: gfx942 prefill 15 lgkmcnt(0) waits an iteration
# before, 7 after) (--suggest prints them again). Workgroup barriers
# (s_barrier) an iteration since 2026-12-05: one a tile where a ring has
# two stages (a grouped matmul's iteration is two K-tiles), two where tile
# t+1 waits in registers for a one-stage ring (gfx942's MLA forms, whose
# second 40 KB stage would not fit; until 2026-12-05 13:00 gfx942's
# unpaged prefill, whose 32 KB let two blocks share a CU, and gfx950's
# paged forms, where a second stage's offsets cost a point of MFMA
# share), none in
# decode (no K/V tile in LDS); MLA decode's 5 include the warps' exchanges
# of scores, maxima and P.
THRESHOLDS = {
    # Since 2026-12-02 15:55 the attention loops include their out-of-line
    # block that stores the next tile (V's 2-byte transposed writes, the
    # 16-byte K writes), which the report left out before: shares 1-3
    # points lower, 16-32 more 2-byte LDS accesses an iteration. Since
    # 18:30 the prefill's K/V tiles come by buffer loads (gfx950 19% ->
    # 20%, MLA 24% -> 27% / 19% -> 22%), the gfx942 MLA prefill waiting on
    # LDS twice more an iteration (17 lgkmcnt(0)).
    # Since 2026-12-03 07:00 on transposed scores (S^T = K Q^T on 32x32
    # MFMAs, P^T from the accumulators, the masked tiles in a loop of their
    # own; PrefillTransposed.cpp): 28% -> 61% gfx942, 20% -> 50% gfx950
    # (two query atoms a wave there; MLA's 192/128 heads 58% / 49%), no
    # 2-byte LDS access (24 / 48 before). An iteration does twice the MFMAs
    # (64 keys, 32 rows a wave): 25 lgkmcnt(0) on gfx942 where 16-row,
    # 32-key tiles had 7.
    # Since 2026-12-04 06:00 O^T is rescaled lazily, in an unlikely block
    # out of the loop (64 v_pk_mul_f32 an iteration on gfx950, 32 on
    # gfx942), and row maxima are v_max3_f32 trees: 61% -> 63% gfx942, 50%
    # -> 54-55% gfx950, MLA 58% -> 61% / 49% -> 51%; 25 -> 22 lgkmcnt(0).
    # Since 06:55 the K/V windows' sizes in i32 (KernelBuilder::clampI32):
    # 64% / 56%, MLA 62% / 52%.
    # Since 2026-12-04 09:05 MLA's 192 / 128 on gfx942 runs one 64-key
    # register-staged stage instead of two of 32 keys (LDS holds no two
    # 64-key ones): 62% -> 67%, and its iteration twice the keys, so 35
    # lgkmcnt(0) where 32 keys had 17 (the same per key).
    # Since 2026-12-04 14:00 a K fragment is read a k step ahead of its
    # MMAs (its read overlaps the step before): 22 -> 7 lgkmcnt(0) an
    # iteration on gfx942 (MLA 35 -> 12), 10 -> 9 on gfx950 (MLA 15 -> 4);
    # shares unchanged. Since 14:00 gfx950 loads the unpaged tiles straight
    # into LDS (V^T by transposing reads, every read at a lane's base and an
    # immediate offset): 56% -> 57%, MLA 52% -> 53% at 2 waves a SIMD.
    # Since 2026-12-04 16:00 a k step's MMAs take its atoms in the reverse
    # order of their reads (one LDS wait a step, not one an atom), P.V's
    # steps stand behind scheduling fences, maxima are (n - 1) / 2 max3s,
    # the probabilities are summed in two chains of pairs and the row sums
    # rescaled with O^T, in the unlikely block: gfx950 57% -> 60%, MLA 53%
    # -> 57%; gfx942 64% -> 65%, MLA 67% -> 69%. Since 2026-12-04 19:05
    # gfx950's loads to LDS share M0 by runs (K in pairs, V in fours):
    # 60.3% -> 61.0%, MLA 57% -> 58%. Since 2026-12-04 21:00 gfx942 takes
    # one 64-key stage (32 KB: 2 waves a SIMD): 65% -> 66%; gfx950's MLA
    # two query atoms a wave (1 wave a SIMD): 58% -> 65%, 15 lgkmcnt(0) an
    # iteration (one a k step of its 192 dims, as hd 128's 11).
    # Since 2026-12-05 00:20 the usual tile takes no maximum: the
    # probabilities are made at the offset of the tiles before, and a lane's
    # sum of them past 2^8 sends the wave to the unlikely rescale, which
    # scores the tile again (out of the loop the report measures); a k
    # step's K reads stay together before its MMAs; fragments are read
    # through views that start at their constant part: gfx942 66% -> 69%
    # (216 registers), MLA 69% -> 72%;
    # gfx950 61% -> 65%, MLA 65% -> 69%; 10 lgkmcnt(0) an iteration.
    # Since 2026-12-05 02:00 K's fragments are read two k steps ahead and
    # V^T's two steps at a time (one wait for two steps' reads), the loops
    # count in 32 bits: gfx942 69% -> 71%, MLA 72% -> 74%; gfx950 65% ->
    # 66%, MLA 69% -> 70%; 10 -> 6 lgkmcnt(0).
    # Since 2026-12-05 13:00 gfx942's head-dim-128 forms take 8 waves over
    # two 64-key stages (64 KB): one barrier an iteration, 71% as before,
    # 220 -> 204 registers, 64 -> 32 KiB loaded a CU (one block a CU for
    # two); its MLA forms keep one 40 KB stage (two barriers): two do not
    # fit, and two of 32 keys take as many barriers a key at 68% (74%).
    "tessel.prefill_attention": dict(share=0.66, waves=1, barriers=2,
                                     vmcnt0=1, serial=0, lgkmcnt0=6, flat=0,
                                     lds16=0),
    # The same template's paged form, the same way (NHD V transposed to
    # LDS in runs of 4 tokens): 29% -> 59% gfx942, 22% -> 44% gfx950; the
    # lazy rescale and max3 trees 59% -> 61% gfx942 (MLA 56% -> 59%), 44%
    # -> 46% gfx950 (MLA 46% -> 49%); the windows in i32: MLA 60% gfx942,
    # 46-47% gfx950.
    # KiB loaded a CU (2026-12-04): one 64-key K/V tile a CU, 33 (MLA's
    # context windows: 21 gfx942, 41 gfx950). Since 09:05 gfx942's MLA
    # context windows take one 64-key stage (as its prefill): 60% -> 66%,
    # 21 -> 41 KiB a CU, 34 lgkmcnt(0) an iteration (17 a 32-key one).
    # Since 2026-12-04 14:00 K's fragments are read a k step ahead (as the
    # prefill's): 21 -> 6 lgkmcnt(0) on gfx942 (MLA 34 -> 11), 9 -> 2-3 on
    # gfx950 (MLA 15 -> 4).
    # Since 2026-12-04 16:00 (the prefill's changes above) gfx950 47% ->
    # 50% (MLA 50% -> 53%), its extend_context and unified_split at 2
    # waves a SIMD (264 -> 250 registers), gfx942 61% -> 62%. Since 16:30
    # register-staged fragments are read through a view of their stage:
    # gfx950's unified form 260 -> 254 registers, 2 waves a SIMD (gfx942's
    # forms fill its 64 KB of LDS: 1); gfx942 62% -> 63%. Since 21:00
    # gfx942's head-dim-128 forms take one 64-key stage (32 KB): 2 waves a
    # SIMD, 63% -> 65%, 33 -> 66 KiB a CU; the MLA forms one 32-key stage
    # (20 KB) on both chips: 2 waves a SIMD (1 before: gfx942's LDS,
    # gfx950's registers), 67% -> 62% gfx942, 53% -> 49% gfx950, 41 -> 42
    # KiB a CU. Since 21:50 NHD V's transposed writes take one address a
    # run and immediate offsets (KernelBuilder::chunkMajorElement): gfx950
    # 50.0% -> 50.9%, 250 -> 242 registers; gfx942 64.6% -> 64.7%.
    # Since 2026-12-05 00:20 (the prefill's changes above) every paged form
    # takes 8 waves of 32 queries and one 64-key stage of 32 KB (MLA's 40)
    # a CU, a wave's 8 tokens of a block, its K rows a lane's by columns
    # (one load offset and one store address a lane), block ids clamped
    # in 32 bits: gfx942 65% -> 70%, MLA 62% -> 72%; gfx950 51% -> 59%,
    # MLA 49% -> 62%, all at 2 waves a SIMD; 66 -> 34 KiB loaded a CU at
    # head dim 128 (one block of 8 waves a CU for two of 4), 42 MLA.
    # Since 2026-12-05 02:00 (the prefill's changes above) a tile's chunks
    # are stored in reverse (one wait for its loads) and a window's size is
    # whole rows: gfx942 70% -> 71%, MLA 72% -> 74%; gfx950 58.7% -> 60.5%,
    # MLA 62% -> 64%; 10 -> 6 lgkmcnt(0).
    # Since 2026-12-05 12:00 gfx950's forms take two stages as gfx942's
    # (64 KB; MLA's 80 KB), one barrier an iteration: the stage's offset
    # carried and flipped by one XOR, the block ids by buffer loads from a
    # window of the table's row (no clamp, no 64-bit address), a chunk's
    # row compared with the tile's valid rows: gfx950 60.5% (one stage) ->
    # 60.1%, MLA 64% -> 63%; gfx942 70.9% -> 71.2%. gfx942's MLA context
    # windows keep one 40 KB stage: two barriers.
    "tessel.paged_attention cu_seqlens": dict(share=0.60, waves=2,
                                              barriers=2, vmcnt0=1,
                                              serial=0, lgkmcnt0=6, flat=0,
                                              lds16=0, kib_cu=34),
    # Since 2026-12-03 01:30 the paged tiles come by buffer loads, a wave
    # reading its own cache blocks, whose ids it loaded a tile ahead
    # (decode 15% -> 19% gfx942, 9% -> 11% gfx950; shuffled 13% -> 23%,
    # 9% -> 17%; extend and unified 27-28% -> 29%, 19% -> 22%). No
    # vmcnt(0) of theirs is serialized (2-3 were: the block-table round
    # trip, and the selects that zeroed chunks waiting for every load
    # before the compute); the ones left end a tile's stores or wait, at
    # a tile's first load, for the ids loaded during the tile before.
    # (Decode's form: paged_attention without cu_seqlens.) Since
    # 2026-12-03 09:30 decode runs on transposed scores with no K/V tile in
    # LDS (PagedDecodeTransposed.cpp): 0.5 -> 2 waves a SIMD on gfx942 (1
    # -> 2 on gfx950), no 2-byte LDS access (36 / 72 before), MFMA share
    # 19% -> 46% (shuffled 23% -> 53%) on gfx942, 11% -> 30% (17% -> 37%)
    # on gfx950 (32x32 atoms: more MFMA cycles for the same tokens; decode
    # stays bound by its loads).
    # KiB loaded a CU (2026-12-04): 132, both layouts and chips (8 waves a
    # CU, 32 tokens of K and V each).
    "tessel.paged_attention": dict(share=0.30, waves=2, barriers=0, vmcnt0=2,
                                   serial=0, lgkmcnt0=1, flat=0, lds16=0,
                                   kib_cu=132),
    "tessel.decode_attention": dict(share=0.30, waves=2, barriers=0, vmcnt0=2,
                                    serial=0, lgkmcnt0=1, flat=0, lds16=0,
                                    kib_cu=132),
    # MLA decode at 4 waves a block and 1 a SIMD, no MFMA repeated
    # (2026-12-02: 2 waves scored the same tokens before, 0.5 a SIMD);
    # since 2026-12-03 01:50 its tiles by buffer loads like the paged
    # ones (21% -> 26% gfx942, 15% -> 20% gfx950; 2 serialized vmcnt(0)
    # before, 28-31 lgkmcnt(0) then; gfx950's split form waits on LDS 36
    # times, its other form 12). Since 2026-12-03 12:30 P V reads V by
    # 16-byte LDS reads of 8 interleaved atoms' columns, transposed in
    # registers (TargetInfo::loadInterleavedFragments): 2-byte LDS
    # accesses 68 -> 4 (gfx942) and 132 -> 4 (gfx950; the 4 left are P's
    # writes), share 26% -> 30% and 20% -> 26%.
    # KiB loaded a CU (2026-12-04): 37 gfx942, 73 gfx950.
    # Since 2026-12-05 06:00 a warp's Q fragments are read once, before the
    # loop; a k-step's fragments a step ahead of its MMAs, which take them
    # in reverse (AttentionBuilder::mmaSteps); gfx950 reads V and P^T by
    # transposing reads (P^T stored by 8-byte writes: no 2-byte access;
    # gfx942 keeps P's 4): 30% -> 32% gfx942, 28% -> 33% gfx950, 24 -> 7
    # lgkmcnt(0) an iteration. Since 06:20 O is rescaled out of line, where
    # a row's maximum grew: 33% / 34%. Since 2026-12-05 09:30 on
    # transposed scores (MlaDecodeTransposed.cpp): each wave its own tokens
    # over all dims, P^T in registers, K straight into fragments a tile
    # ahead: 4-5 barriers an iteration -> 0, 2-byte LDS accesses 4 -> 0,
    # share 33% -> 53-55% gfx942, 34% -> 43% gfx950 (Q read from LDS
    # every tile there: two score atoms' K chunks fill the VGPRs), 73 / 146
    # KiB loaded a CU.
    "tessel.mla_decode": dict(share=0.42, waves=1, barriers=0, vmcnt0=1,
                              serial=0, lgkmcnt0=6, flat=0, lds16=0,
                              kib_cu=73),
    # The K loop itself (before 2026-12-01 18:55 the report took a branch
    # back to the exit block for a loop and measured most of the kernel);
    # the K = 512 kernels unroll it whole (gfx950's, and since gfx942 took
    # 128x128 tiles for 2 waves a SIMD on 2026-12-02, gfx942's too): their
    # loop is the kernel, 16 K-tiles' waits (18 vmcnt(0) and 76
    # lgkmcnt(0) in gfx950's; gfx942's 107 until its K-tiles went in pairs).
    # Since 2026-12-02 their transposed operands (the dgrad's B, the
    # wgrad's A and B) are staged K-contiguous through registers (gfx950
    # dgrad 25% and wgrad 16% MFMA share before, 32 and 64 16-bit LDS reads
    # a K-tile), and their loops take K-tiles in pairs, one from each stage
    # (gfx942 forward 60% before, 70% after): the counts are per two
    # K-tiles (the wgrad's 1 vmcnt(0) and 5 lgkmcnt(0) a K-tile before;
    # its share 2-3 points lower with its stores counted, as above).
    # Since 2026-12-02 17:50 their tiles are read by buffer loads, whose
    # offsets stay in registers over the K loop (gfx942 forward 70% -> 76%,
    # gfx950 57% -> 67%; wgrad 50% -> 57%, 35% -> 43%); gfx950's K = 512
    # forward, still unrolled whole, waited 84 times (lgkmcnt(0)) in all.
    # Since 2026-12-03 10:15 gfx950's forward and dgrad take 128x256 tiles
    # of 2x2 warps (64x128 a warp): forward 67% -> 76%, dgrad 57% -> 69%,
    # and its K = 512 forward keeps a loop (38% and 18 serialized waits as
    # a whole unrolled kernel before). Since 2026-12-03 18:00 gfx942 reads
    # two k-steps' fragments by one 16-byte LDS read (TargetInfo::
    # loadJointFragments; 32 ds_read_b64 a pair of K-tiles before, 16
    # ds_read_b128 after): forward 76% -> 82%, dgrad 71% -> 76%, wgrad 57%
    # -> 64%; one more vmcnt(0) in the dgrad's loop (4, 3 serialized as
    # before). The register-staged K loops leave their last pair of
    # K-tiles after the loop and are kept from LLVM's unroller (gfx942's
    # K = 512 forward was unrolled whole otherwise: 50% and 18 serialized
    # waits as a kernel); gfx950's wgrad 43% -> 47%. Since 2026-12-03
    # 23:30 gfx950 reads the dgrad's B by ds_read_b64_tr_b16 from tiles
    # staged as they lie (32 v_perm an iteration before), 1x4 warps, a
    # tile's fragments read before its MMAs: 69% -> 75%; and the
    # register-staged loops keep a tile's loads, its MMAs and the next
    # tile's stores in order (scheduling fences: the back end had sunk the
    # loads to their stores, or the MMAs past them): serialized vmcnt(0)
    # 2-3 -> 0 an iteration.
    # gfx950's tiles go to LDS by buffer_load_dwordx4 ... lds since
    # 2026-12-04 11:00 (no staging registers, no LDS stores): 75% -> 76%
    # (dgrad), 76% -> 77% (forward). Since 2026-12-04 18:30 CDNA reads
    # the stages flat, the constants of each read's offset in the LDS
    # instruction, and gfx950's loads to LDS share M0 in fours (their
    # immediate offset): forward 78% -> 82%, dgrad 76% -> 80% (gfx950).
    "tessel.grouped_matmul": dict(share=0.77, waves=2, barriers=2, vmcnt0=2,
                                  serial=0, lgkmcnt0=4, flat=0, lds16=0),
    # (Its blocks renumbered for the L2 partitions since 2026-12-03 10:15:
    # one more vmcnt(0) in gfx950's loop, none of them serialized. Since
    # 2026-12-03 18:00, with its last pair of K-tiles after the loop, 2
    # vmcnt(0) and 2-4 lgkmcnt(0) waits a pair, 4 and 5-7 before; gfx950's
    # K-tiles 64 deep since 18:15: 47% -> 56%, 8 lgkmcnt(0) a pair of
    # twice the rows. Both operands read by ds_read_b64_tr_b16 on gfx950
    # since 2026-12-03 23:30: 56% -> 59%; 4 lgkmcnt(0) a pair since its
    # loads, MMAs and stores are fenced apart. Its K-tile's rows of the
    # group counted in i32 since 2026-12-04 06:45, not in 64-bit selects:
    # SALU 57 -> 37 (gfx942) and 73 -> 53 cycles a pair, 64% -> 67% and
    # 59% -> 62%. gfx950's tiles by loads to LDS since 11:00: 62% -> 64%.
    # Since 2026-12-04 16:20 a k-step's MMAs take B's atoms in the reverse
    # order of their reads (one LDS wait a step): about a point on every
    # grouped matmul, wgrad 67% -> 68% (gfx942), 64% (gfx950). Since
    # 2026-12-04 18:30 M and N in whole 256s take 256x256 tiles of 8 waves
    # (64x128 a wave; 64-deep K-tiles on gfx950), an odd K-tile count's
    # first tile runs before the loop (no branch after it, whose
    # accumulators the back end had kept twice), and the count is uniform:
    # 68% -> 80% (gfx942), 64% -> 77% (gfx950), 2 waves a SIMD.)
    "tessel.grouped_matmul_wgrad": dict(share=0.76, waves=2, barriers=2,
                                        vmcnt0=2, serial=0, lgkmcnt0=4,
                                        flat=0, lds16=0),
}


def load_objects_module():
    path = os.path.join(ROOT, "scripts", "gpu-objects.py")
    spec = importlib.util.spec_from_file_location("gpu_objects", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_of(spec_text):
    """{name: op} of the spec's functions, and the spec without host-only
    ones."""
    funcs = re.split(r"(?m)^(?=func\.func )", spec_text)
    ops, kept = {}, [funcs[0]]
    for f in funcs[1:]:
        name = re.match(r"func\.func @([\w$.]+)", f).group(1)
        op = re.search(r"\b(tessel\.\w+)", f).group(1)
        # The text after the function belongs to the next one (comments).
        body, _, tail = f.partition("\n}\n")
        if op in HOST_ONLY:
            kept.append(tail)
            continue
        # paged_attention with cu_seqlens is the flash template's paged
        # form (extend's context, the unified kernel), without it decode's.
        if op == "tessel.paged_attention" and "cu_seqlens(" in body:
            op += " cu_seqlens"
        ops[name] = op
        kept.append(f)
    return ops, "".join(kept)


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode:
        sys.exit(f"amd-loop-report: {' '.join(cmd[:3])} failed:\n"
                 f"{result.stderr[-4000:]}")
    return result.stdout


def assembly(tessel_opt, spec_path, chip, objects):
    """{kernel: AMDGCN text} of every kernel of the spec for `chip`."""
    text = run([tessel_opt, spec_path, f"--tessel-rocdl-pipeline=chip={chip}"])
    out = {}
    for line in text.splitlines():
        binary = objects.BINARY.search(line)
        if not binary:
            continue
        for vendor, _, kind, payload in objects.OBJECT.findall(line):
            if vendor == "rocdl" and kind == "assembly":
                out[binary.group(1)] = objects.unescape(payload).rstrip(
                    b"\0").decode()
    return out


def shared_bytes(tessel_opt, spec_path, chip):
    """{kernel: dynamic LDS bytes of its launch}."""
    text = run([tessel_opt, spec_path, f"--tessel-to-gpu=chip={chip}"])
    out = {}
    for m in re.finditer(r"gpu\.func @([\w$.]+)\((?:.|\n)*?tessel\.shared_bytes"
                         r" = (\d+)", text):
        out[m.group(1)] = int(m.group(2))
    return out


INSTR = re.compile(r"^\s+([a-z_][\w.]*)\b(.*)$")
BRANCH = re.compile(r"^\s+s_(?:c)?branch\w*\s+(\.LBB\w+)")
LABEL = re.compile(r"^(\.LBB\w+):")


def main_loop(lines):
    """The lines of the loop (a backward branch's target to the last
    branch back to it) with the most MFMAs, the smallest such, of those
    around no other loop with MFMAs; else the largest loop. A backward branch over an `s_endpgm` is no loop: it
    leaves the kernel (LLVM places the exit block early and jumps back to
    it when exec goes empty). A loop may branch back from several places:
    the attention loops' out-of-line block that stores the next tile ends
    in the last one (up to 2026-12-02 the report ended the loop at the
    first and left those stores out). A block the back end laid out after
    the loop as unlikely (the attention loops' lazy O rescale, under
    llvm.expect) branches back into the loop, not to its start, and is not
    counted: the report is of the usual iteration."""
    labels, ends = {}, {}
    for i, line in enumerate(lines):
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = i
        m = BRANCH.match(line)
        if m and m.group(1) in labels:
            start = labels[m.group(1)]
            if not any("s_endpgm" in lines[j] for j in range(start, i)):
                ends[start] = i
    # An out-of-line block branching back into the middle of a loop (the
    # attention loops' unlikely rescale, which scores the tile again) makes
    # no loop of its own.
    loops = [(s, e) for s, e in ends.items()
             if not any(s2 < s <= e2 < e for s2, e2 in ends.items())]
    def mfmas(loop):
        return sum("v_mfma" in lines[j] for j in range(loop[0], loop[1] + 1))

    # MFMAs in no loop (a K loop unrolled whole): the kernel is the loop.
    whole = (0, len(lines) - 1)
    if mfmas(whole) and not any(mfmas(l) for l in loops):
        return lines
    if not loops:
        return []
    # A loop around loops with MFMAs (a prefill's query tiles around its
    # K/V loops: one for the tiles that need no mask, one for those that
    # do) is not a main loop.
    def holds_mfma_loop(loop):
        return any(inner != loop and loop[0] <= inner[0] and
                   inner[1] <= loop[1] and mfmas(inner) for inner in loops)
    candidates = [l for l in loops if not holds_mfma_loop(l)] or loops
    best = max(candidates, key=lambda l: (mfmas(l), -(l[1] - l[0])
                                          if mfmas(l) else l[1] - l[0]))
    return lines[best[0]:best[1] + 1]


def mca_text(llvm_mca, chip, instructions):
    """llvm-mca's report on `instructions`, or None when it did not finish."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(instructions) + "\n")
        path = f.name
    try:
        return run([llvm_mca, "-mtriple=amdgcn", f"-mcpu={chip}",
                    "-iterations=1", "-instruction-info=false",
                    "-resource-pressure", path], timeout=MCA_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None
    finally:
        os.unlink(path)


def mca_pressure(llvm_mca, chip, instructions):
    """Issue cycles per iteration by unit, from llvm-mca's resource
    pressure (one iteration)."""
    if not instructions:
        return {}
    text = mca_text(llvm_mca, chip, instructions)
    if text is None:
        # llvm-mca 22 spins on some gfx950 loops (grouped-matmul wgrad
        # loops, 2026-12-02: a ds_read_b128 and an MFMA 34 instructions
        # later are enough). A unit's pressure over one iteration is the sum
        # of its instructions' uses, so the halves' add up to the loop's.
        if len(instructions) < 2:
            sys.exit(f"amd-loop-report: llvm-mca -mcpu={chip} did not "
                     f"finish in {MCA_TIMEOUT_S} s on {instructions}")
        half = len(instructions) // 2
        total = collections.Counter()
        for part in (instructions[:half], instructions[half:]):
            total.update(mca_pressure(llvm_mca, chip, part))
        return dict(total)
    names = dict(re.findall(r"\[(\d+)\]\s+- (\w+)", text))
    rows = text.split("Resource pressure per iteration:")[1].splitlines()
    values = rows[2].split()
    return {names[str(i)]: (0.0 if v == "-" else float(v))
            for i, v in enumerate(values)}


def analyse(llvm_mca, chip, asm, lds):
    lines = asm.splitlines()
    meta = dict(re.findall(r"^\s+\.(vgpr_count|sgpr_count|"
                           r"private_segment_fixed_size|vgpr_spill_count|"
                           r"sgpr_spill_count|max_flat_workgroup_size):"
                           r"\s+(\d+)", asm, re.M))
    meta = {k: int(v) for k, v in meta.items()}
    accum = re.search(r"\.amdhsa_accum_offset (\d+)", asm)
    vgprs = meta.get("vgpr_count", 0)
    arch = min(vgprs, int(accum.group(1))) if accum else vgprs
    threads = meta.get("max_flat_workgroup_size", 64)
    alloc = -(-max(vgprs, 1) // VGPR_GRANULE) * VGPR_GRANULE
    # Waves of a SIMD: by registers, and by the workgroups the CU's LDS
    # holds (a workgroup's waves spread over the 4 SIMDs: 0.5 is one
    # 2-wave workgroup per CU).
    waves = float(min(MAX_WAVES, VGPRS_PER_LANE // alloc))
    if lds:
        groups = LDS_BYTES[chip] // lds
        waves = min(waves, groups * (-(-threads // 64)) / SIMDS)
    loop = main_loop(lines)
    instructions = [l for l in loop if INSTR.match(l)
                    and not l.strip().startswith(".")]
    pressure = mca_pressure(llvm_mca, chip, instructions)
    mfma = pressure.get("HWXDL", 0.0)
    other = sum(pressure.get(u, 0.0)
                for u in ("HWVALU", "HWSALU", "HWLGKM", "HWVMEM", "HWBranch"))
    text = "\n".join(instructions)
    # Bytes a lane loads by vector memory in an iteration, from each load's
    # width (dword x1-x4, 16- and 8-bit forms).
    widths = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16,
              "ushort": 2, "sshort": 2, "short_d16": 2, "short_d16_hi": 2,
              "ubyte": 1, "sbyte": 1}
    lane_bytes = sum(widths.get(m.group(1), 0) for m in re.finditer(
        r"\b(?:global|buffer)_load_(?:lds_)?(\w+)", text))
    return dict(
        serial=serialized_waits(instructions),
        vgpr=arch, agpr=vgprs - arch, sgpr=meta.get("sgpr_count", 0),
        lds=lds, waves=waves,
        scratch=(meta.get("private_segment_fixed_size", 0) +
                 meta.get("vgpr_spill_count", 0) +
                 meta.get("sgpr_spill_count", 0)),
        loop=len(instructions), mfma=mfma,
        valu=pressure.get("HWVALU", 0.0), salu=pressure.get("HWSALU", 0.0),
        lgkm=pressure.get("HWLGKM", 0.0), vmem=pressure.get("HWVMEM", 0.0),
        share=mfma / (mfma + other) if mfma + other else 0.0,
        barriers=len(re.findall(r"\bs_barrier\b", text)),
        vmcnt0=len(re.findall(r"s_waitcnt[^\n]*vmcnt\(0\)", text)),
        lgkmcnt0=len(re.findall(r"s_waitcnt[^\n]*lgkmcnt\(0\)", text)),
        flat=len(re.findall(r"\bflat_(?:load|store)", text)),
        lds16=len(re.findall(r"\bds_(?:read_u16|read_i16|write_b16)", text)),
        kib_cu=lane_bytes * 64 * waves * SIMDS / 1024,
        mix=collections.Counter(l.split()[0] for l in instructions))


def serialized_waits(instructions):
    """vmcnt(0) waits with a vector-memory load before them in the loop and
    no MFMA in between."""
    count, pending = 0, False
    for line in instructions:
        op = line.split()[0]
        if re.match(r"(global|buffer|flat)_load", op):
            pending = True
        elif op.startswith("v_mfma"):
            pending = False
        elif op == "s_waitcnt" and "vmcnt(0)" in line and pending:
            count += 1
            pending = False
    return count


def violations(op, r, thresholds):
    found = []
    if r["scratch"]:
        found.append(f"scratch/spills ({r['scratch']})")
    limits = thresholds.get(op)
    if not limits:
        return found
    if r["share"] < limits["share"]:
        found.append(f"MFMA share {r['share']:.0%} < {limits['share']:.0%}")
    if r["waves"] < limits["waves"]:
        found.append(f"{r['waves']:g} waves/SIMD < {limits['waves']}")
    if r["kib_cu"] < limits.get("kib_cu", 0):
        found.append(f"{r['kib_cu']:g} KiB loaded a CU < {limits['kib_cu']}")
    for key in CEILINGS:
        if key in limits and r[key] > limits[key]:
            found.append(f"{key} {r[key]} > {limits[key]}")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=os.path.join(
        ROOT, "tools", "tessel-aot", "DefaultKernels.mlir"))
    parser.add_argument("--tessel-opt", default=os.path.join(
        ROOT, "build", "bin", "tessel-opt"))
    parser.add_argument("--llvm-mca", default=shutil.which("llvm-mca-22") or
                        shutil.which("llvm-mca") or "llvm-mca")
    parser.add_argument("--chips", default="gfx942,gfx950")
    parser.add_argument("--thresholds", type=json.loads, default=THRESHOLDS,
                        help="JSON of family -> limits replacing THRESHOLDS")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a threshold is broken")
    parser.add_argument("--explain", metavar="KERNEL", action="append",
                        default=[], help="also print KERNEL's main-loop "
                        "instructions by mnemonic (what to cut)")
    parser.add_argument("--suggest", action="store_true",
                        help="print each family's worst values (new "
                        "THRESHOLDS after an improvement)")
    args = parser.parse_args()
    objects = load_objects_module()
    ops, spec = kernels_of(open(args.spec).read())
    failed, families = [], {}
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(spec)
        spec_path = f.name
    try:
        for chip in args.chips.split(","):
            asm = assembly(args.tessel_opt, spec_path, chip, objects)
            lds = shared_bytes(args.tessel_opt, spec_path, chip)
            print(f"\n### {chip}: issue cycles per main-loop iteration "
                  f"(llvm-mca-22 -mcpu={chip})\n")
            print("| kernel | VGPR/AGPR/SGPR | LDS | waves/SIMD | loop instr "
                  "| MFMA | VALU | SALU | LDS+SMEM | VMEM | MFMA share | "
                  "barriers | vmcnt(0) | lgkmcnt(0) | flat | 2-byte LDS | serialized "
                  "vmcnt(0) | KiB loaded a CU |")
            print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                  "---:|---:|---:|---:|---:|---:|---:|")
            explained = []
            for name in sorted(asm):
                r = analyse(args.llvm_mca, chip, asm[name], lds.get(name, 0))
                if name in args.explain:
                    explained.append((name, r["mix"]))
                print(f"| {name} | {r['vgpr']}/{r['agpr']}/{r['sgpr']} | "
                      f"{r['lds']} | {r['waves']:g} | {r['loop']} | "
                      f"{r['mfma']:.0f} | {r['valu']:.0f} | {r['salu']:.0f} "
                      f"| {r['lgkm']:.0f} | {r['vmem']:.0f} | "
                      f"{r['share']:.0%} | {r['barriers']} | {r['vmcnt0']} | {r['lgkmcnt0']} | "
                      f"{r['flat']} | {r['lds16']} | {r['serial']} | "
                      f"{r['kib_cu']:g} |")
                failed += [f"{chip} {name}: {v}" for v in
                           violations(ops.get(name), r, args.thresholds)]
                worst = families.setdefault(ops.get(name), dict(
                    share=1.0, waves=MAX_WAVES, kib_cu=float("inf"),
                    **{key: 0 for key in CEILINGS}))
                if r["mfma"]:
                    worst["share"] = min(worst["share"], r["share"])
                worst["waves"] = min(worst["waves"], r["waves"])
                worst["kib_cu"] = min(worst["kib_cu"], r["kib_cu"])
                for key in CEILINGS:
                    worst[key] = max(worst[key], r[key])
            for name, mix in explained:
                print(f"\n{chip} {name}: main-loop instructions by mnemonic")
                for mnemonic, count in mix.most_common():
                    print(f"  {count:5d} {mnemonic}")
    finally:
        os.unlink(spec_path)
    if args.suggest:
        print("\nworst per family (both chips):")
        for op, worst in sorted(families.items()):
            if op in args.thresholds:
                print(f"  {op}: {worst}")
    if failed:
        print("\nthresholds broken:\n  " + "\n  ".join(failed))
    if args.check:
        print("\nFAIL" if failed else "\nPASS (every threshold holds)")
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
