/*===- tessel/bundle_format.h - On-disk layout of a kernel bundle -*- C -*-===*
 *
 * The kernel bundle is the one file that travels from the compiler
 * (tessel-aot) to the runtime. This header is the single definition of its
 * layout: the writer (runtime/src/bundle/writer.cpp, used by tessel-aot) and
 * the reader (runtime/src/bundle/reader.cpp) both include it.
 *
 * All integers are little-endian. Every offset is from the start of the file.
 * docs/bundle-format.md explains the format for readers of the file.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSEL_BUNDLE_FORMAT_H
#define TESSEL_BUNDLE_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSEL_BUNDLE_MAGIC "TESSELKB"
/* Version 2: kernels take scalars by value (rank-0 args: the attention
 * kernels' softmax scale) and TMA tensor maps (sm90a). Version 1 bundles are
 * refused: their attention kernels had the scale compiled in, where callers
 * now pass it. */
#define TESSEL_BUNDLE_VERSION 2u

/* Upper bounds the reader enforces before it allocates anything, so a
 * corrupt count cannot make it allocate gigabytes. */
#define TESSEL_BUNDLE_MAX_KERNELS 65536u
#define TESSEL_BUNDLE_MAX_ARGS 64u
#define TESSEL_BUNDLE_MAX_RANK 8u
#define TESSEL_BUNDLE_MAX_SYMBOLS 64u
#define TESSEL_BUNDLE_MAX_PARAMS 64u
#define TESSEL_BUNDLE_MAX_TENSOR_MAPS 8u
/* A tensor map's dims and box: the limits of cuTensorMapEncodeTiled. */
#define TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK 5u
#define TESSEL_BUNDLE_MAX_TENSOR_MAP_BOX 256u
/* The largest bundle, in bytes (4 GiB): the writer refuses to write a larger
 * one and the runtime refuses to read one, before it allocates anything. */
#define TESSEL_BUNDLE_MAX_SIZE (UINT64_C(1) << 32)

/* Element types of kernel arguments. */
typedef enum tessel_dtype {
  TESSEL_DTYPE_INVALID = 0,
  TESSEL_DTYPE_F32 = 1,
  TESSEL_DTYPE_F16 = 2,
  TESSEL_DTYPE_BF16 = 3,
  TESSEL_DTYPE_I32 = 4,
  TESSEL_DTYPE_I64 = 5,
} tessel_dtype;

/* File header, at offset 0. */
typedef struct tessel_bundle_header {
  char magic[8];            /* TESSEL_BUNDLE_MAGIC, no terminator */
  uint32_t version;         /* TESSEL_BUNDLE_VERSION */
  uint32_t header_size;     /* sizeof(tessel_bundle_header) */
  uint64_t file_size;       /* must equal the size of the file */
  uint32_t crc32;           /* CRC-32 (IEEE) of bytes [0, file_size), this
                               field read as zero: the header is covered too */
  uint32_t num_kernels;
  uint32_t kernel_record_size; /* sizeof(tessel_bundle_kernel) */
  uint32_t reserved0;
  uint64_t kernels_offset;  /* num_kernels tessel_bundle_kernel records */
  uint64_t strings_offset;  /* string table: NUL-terminated UTF-8 strings */
  uint64_t strings_size;
} tessel_bundle_header;

/* A symbolic size: value = (sym < 0) ? add : symbols[sym] * mul + add.
 * Tensor dims and launch dims use it; the runtime checks that every tensor
 * dimension equals its expression and derives the symbol values from them.
 * A constant has sym == -1, mul == 1, add >= 0; a symbolic dim has mul >= 1. */
typedef struct tessel_bundle_dim {
  int32_t sym;
  int32_t mul;
  int64_t add;
} tessel_bundle_dim;

/* One kernel argument: a dense row-major buffer, or (rank 0) a scalar
 * passed by value, such as the softmax scale: an f32 input, never
 * elementwise. */
typedef struct tessel_bundle_arg {
  uint32_t name;            /* string offset: the operand name, e.g. "q" */
  uint8_t dtype;            /* tessel_dtype */
  uint8_t rank;             /* <= TESSEL_BUNDLE_MAX_RANK */
  uint8_t is_output;        /* 1 if the kernel writes it */
  uint8_t elementwise;      /* 1 if GPU kernels read it one element at a
                               time (index arrays such as block tables): its
                               base needs element alignment only; 0: they may
                               move 16-byte vectors from its base */
  uint64_t dims_offset;     /* rank tessel_bundle_dim records */
} tessel_bundle_arg;

/* A named integer shape parameter, e.g. ("num_q_heads", 32). */
typedef struct tessel_bundle_param {
  uint32_t key;             /* string offset */
  uint32_t reserved0;
  int64_t value;
} tessel_bundle_param;

/* A TMA tensor map the kernel takes by value (sm90a), encoded by the
 * runtime at each launch from buffer argument `arg`. Map dim i (innermost
 * first) is the product of the arg's dims [dim_first[i], dim_last[i]); the
 * ranges tile the arg's dims from the last back to the first (dim_last[0] ==
 * the arg's rank, dim_first[i] == dim_last[i + 1], dim_first[rank - 1] == 0).
 * Entries at and past `rank` are zero. 72 bytes: a multiple of 8, so the
 * records after it stay aligned in the writer's layout. */
typedef struct tessel_bundle_tensor_map {
  uint32_t arg;             /* index of a buffer (rank >= 1) argument */
  uint8_t rank;             /* map dims, 1 .. TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK */
  uint8_t swizzle;          /* CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B */
  uint16_t reserved0;
  uint32_t dim_first[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK];
  uint32_t dim_last[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK];
  uint32_t box[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK]; /* elements per copy, 1..256 */
  uint32_t reserved1;
} tessel_bundle_tensor_map;

/* One kernel. Launch geometry: grid[i] = ceildiv(dim value, grid_div[i]). */
typedef struct tessel_bundle_kernel {
  uint32_t name;            /* string offset, unique per target */
  uint32_t op;              /* string offset: the tessel op, e.g. "tessel.decode_attention" */
  uint32_t target;          /* string offset: "host", "sm80", "sm90a", ... */
  uint32_t entry;           /* string offset: symbol of the entry in the binary */
  uint32_t dtype;           /* tessel_dtype of the main data operands */
  uint32_t num_args;        /* <= TESSEL_BUNDLE_MAX_ARGS */
  uint64_t args_offset;     /* num_args tessel_bundle_arg records */
  uint32_t num_symbols;     /* <= TESSEL_BUNDLE_MAX_SYMBOLS */
  uint32_t num_params;      /* <= TESSEL_BUNDLE_MAX_PARAMS */
  uint64_t symbols_offset;  /* num_symbols uint32 string offsets (symbol names) */
  uint64_t params_offset;   /* num_params tessel_bundle_param records */
  tessel_bundle_dim grid[3];
  uint32_t grid_div[3];
  uint32_t block[3];        /* threads per block (1,1,1 on the host) */
  uint32_t shared_bytes;    /* dynamic shared memory per block */
  uint32_t num_tensor_maps; /* <= TESSEL_BUNDLE_MAX_TENSOR_MAPS */
  uint64_t binary_offset;
  uint64_t binary_size;
  uint64_t tensor_maps_offset; /* num_tensor_maps tessel_bundle_tensor_map */
} tessel_bundle_kernel;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_BUNDLE_FORMAT_H */
