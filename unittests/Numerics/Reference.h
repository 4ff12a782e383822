//===- Reference.h - Naive double-precision references ----------*- C++ -*-===//
//
// Independent references of the tessel ops, written from the op descriptions
// in TesselOps.td, in double precision and in the most obvious way: attention
// is a plain softmax over an explicit list of scores (not an online softmax,
// no chunking), paged addressing follows the KVLayout docs literally, the MoE
// sort is a scan per expert. Nothing here shares code with the lowerings.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_UNITTESTS_NUMERICS_REFERENCE_H
#define TESSEL_UNITTESTS_NUMERICS_REFERENCE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace tessel::numerics::ref {

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// out = softmax(scale * q . K^T) V for one query row over explicit keys and
/// values (keys[j] has `qkDim` elements, values[j] `vDim`); returns the
/// natural-log LSE of the scaled scores. No key: out = 0, LSE = -inf.
double attendRow(const double *q, size_t qkDim,
                 const std::vector<const double *> &keys,
                 const std::vector<const double *> &values, size_t vDim,
                 double scale, double *out);

/// Token-major values `[tokens, heads, dim]` in double.
struct TokenRows {
  int64_t tokens = 0, heads = 0, dim = 0;
  std::vector<double> data;

  TokenRows() = default;
  TokenRows(int64_t tokens, int64_t heads, int64_t dim)
      : tokens(tokens), heads(heads), dim(dim),
        data(static_cast<size_t>(tokens * heads * dim)) {}
  double *row(int64_t t, int64_t h) { return &data[(t * heads + h) * dim]; }
  const double *row(int64_t t, int64_t h) const {
    return &data[(t * heads + h) * dim];
  }
};

//===----------------------------------------------------------------------===//
// Paged KV caches
//===----------------------------------------------------------------------===//

enum class Layout { NHD, Shuffled };

/// A K/V cache pair, addressed as the KVLayout attribute documents:
///  NHD:      K and V `[NB, BS, Hkv, D]`;
///  shuffled: x = 16 / sizeof(elem), K `[NB, Hkv, Dk/x, BS, x]`,
///            V `[NB, Hkv, BS/x, Dv, x]`.
struct CacheGeometry {
  Layout layout;
  int64_t numBlocks, blockSize, kvHeads, kDim, vDim;
  int64_t x; // elements per 16 bytes: 4 for f32, 8 for 16-bit types

  std::vector<int64_t> kShape() const;
  std::vector<int64_t> vShape() const;
  /// Flat element index of dim `d` of KV head `h` of the token at
  /// (block, offset).
  size_t kIndex(int64_t block, int64_t offset, int64_t h, int64_t d) const;
  size_t vIndex(int64_t block, int64_t offset, int64_t h, int64_t d) const;
};

//===----------------------------------------------------------------------===//
// LSE merges
//===----------------------------------------------------------------------===//

/// Two partials of one (token, head) row, `dim` wide, as tessel.lse_merge
/// describes (+inf counts as -inf; both empty: out = o_a, LSE = -inf).
double lseMerge(const double *oa, double lseA, const double *ob, double lseB,
                size_t dim, double *out);

/// N partials, as tessel.lse_merge_n describes (all empty: out = 0,
/// LSE = -inf).
double lseMergeN(const std::vector<const double *> &partials,
                 const std::vector<double> &lses, size_t dim, double *out);

//===----------------------------------------------------------------------===//
// Grouped matmul
//===----------------------------------------------------------------------===//

/// The row range of every group from cumulative ends, each clamped to
/// [previous end, rows] as tessel.grouped_matmul documents.
std::vector<std::pair<int64_t, int64_t>>
groupRows(const std::vector<int32_t> &offsets, int64_t rows);

/// c[rows_g] = a[rows_g] . op(B_g); rows past the last group are zero.
/// `b(g, k, n)` is element (k, n) of op(B_g), whatever its storage.
std::vector<double>
groupedMatmul(const std::vector<double> &a, int64_t rows, int64_t k, int64_t n,
              const std::vector<int32_t> &offsets,
              const std::function<double(int64_t, int64_t, int64_t)> &b);

/// c[g] = a[rows_g]^T . b[rows_g], `[G, M, N]`; empty groups are zero.
std::vector<double> groupedMatmulWgrad(const std::vector<double> &a,
                                       const std::vector<double> &b,
                                       int64_t rows, int64_t m, int64_t n,
                                       const std::vector<int32_t> &offsets);

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

struct Routing {
  std::vector<int32_t> counts, offsets; // [E]
  std::vector<int32_t> sortedRows;      // [T * k], tail -1
  std::vector<int32_t> rowPositions;    // [T, k], -1 for dropped ids
};

/// Histogram, cumulative ends and the stable expert order of `ids` `[T, k]`.
Routing route(const std::vector<int32_t> &ids, int64_t numExperts);

/// out[p] = x[sorted[p] / topk], zero rows for invalid entries.
std::vector<double> permute(const std::vector<double> &x, int64_t tokens,
                            int64_t hidden, const std::vector<int32_t> &sorted,
                            int64_t topk);

/// out[t] = sum_j w[t, j] * y[pos[t, j]], skipping invalid positions.
std::vector<double> unpermute(const std::vector<double> &y, int64_t rows,
                              int64_t hidden,
                              const std::vector<int32_t> &positions,
                              const std::vector<double> &weights, int64_t topk);

} // namespace tessel::numerics::ref

#endif // TESSEL_UNITTESTS_NUMERICS_REFERENCE_H
