//===- Reference.cpp - Naive double-precision references ------------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::numerics::ref {

static const double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

double attendRow(const double *q, size_t qkDim,
                 const std::vector<const double *> &keys,
                 const std::vector<const double *> &values, size_t vDim,
                 double scale, double *out) {
  std::fill(out, out + vDim, 0.0);
  if (keys.empty())
    return -kInf;
  // Every score first, then the softmax over the whole list.
  std::vector<double> scores(keys.size());
  for (size_t j = 0; j < keys.size(); ++j) {
    double dot = 0;
    for (size_t d = 0; d < qkDim; ++d)
      dot += q[d] * keys[j][d];
    scores[j] = scale * dot;
  }
  double maxScore = *std::max_element(scores.begin(), scores.end());
  double denom = 0;
  for (size_t j = 0; j < keys.size(); ++j) {
    double p = std::exp(scores[j] - maxScore);
    denom += p;
    for (size_t d = 0; d < vDim; ++d)
      out[d] += p * values[j][d];
  }
  for (size_t d = 0; d < vDim; ++d)
    out[d] /= denom;
  return maxScore + std::log(denom);
}

//===----------------------------------------------------------------------===//
// Paged KV caches
//===----------------------------------------------------------------------===//

std::vector<int64_t> CacheGeometry::kShape() const {
  if (layout == Layout::NHD)
    return {numBlocks, blockSize, kvHeads, kDim};
  return {numBlocks, kvHeads, kDim / x, blockSize, x};
}

std::vector<int64_t> CacheGeometry::vShape() const {
  if (layout == Layout::NHD)
    return {numBlocks, blockSize, kvHeads, vDim};
  return {numBlocks, kvHeads, blockSize / x, vDim, x};
}

/// Row-major flat index of `idx` in `shape`.
static size_t flatten(const std::vector<int64_t> &shape,
                      const std::vector<int64_t> &idx) {
  size_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * static_cast<size_t>(shape[d]) + static_cast<size_t>(idx[d]);
  return flat;
}

size_t CacheGeometry::kIndex(int64_t block, int64_t offset, int64_t h,
                             int64_t d) const {
  if (layout == Layout::NHD)
    return flatten(kShape(), {block, offset, h, d});
  // Consecutive head-dim elements of one token are packed by x.
  return flatten(kShape(), {block, h, d / x, offset, d % x});
}

size_t CacheGeometry::vIndex(int64_t block, int64_t offset, int64_t h,
                             int64_t d) const {
  if (layout == Layout::NHD)
    return flatten(vShape(), {block, offset, h, d});
  // Consecutive tokens of one head-dim element are packed by x.
  return flatten(vShape(), {block, h, offset / x, d, offset % x});
}

//===----------------------------------------------------------------------===//
// LSE merges
//===----------------------------------------------------------------------===//

/// +inf is an empty partial, like -inf.
static double emptyIfPosInf(double lse) { return lse == kInf ? -kInf : lse; }

double lseMerge(const double *oa, double lseA, const double *ob, double lseB,
                size_t dim, double *out) {
  double a = emptyIfPosInf(lseA), b = emptyIfPosInf(lseB);
  double m = std::max(a, b);
  if (m == -kInf) {
    std::copy(oa, oa + dim, out);
    return -kInf;
  }
  double wa = std::exp(a - m), wb = std::exp(b - m);
  for (size_t d = 0; d < dim; ++d)
    out[d] = (oa[d] * wa + ob[d] * wb) / (wa + wb);
  return m + std::log(wa + wb);
}

double lseMergeN(const std::vector<const double *> &partials,
                 const std::vector<double> &lses, size_t dim, double *out) {
  std::fill(out, out + dim, 0.0);
  double m = -kInf;
  for (double l : lses)
    m = std::max(m, emptyIfPosInf(l));
  if (m == -kInf)
    return -kInf;
  double sum = 0;
  for (size_t p = 0; p < partials.size(); ++p) {
    double w = std::exp(emptyIfPosInf(lses[p]) - m);
    sum += w;
    for (size_t d = 0; d < dim; ++d)
      out[d] += w * partials[p][d];
  }
  for (size_t d = 0; d < dim; ++d)
    out[d] /= sum;
  return m + std::log(sum);
}

//===----------------------------------------------------------------------===//
// Grouped matmul
//===----------------------------------------------------------------------===//

std::vector<std::pair<int64_t, int64_t>>
groupRows(const std::vector<int32_t> &offsets, int64_t rows) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t begin = 0;
  for (int32_t end : offsets) {
    int64_t clamped = std::min<int64_t>(std::max<int64_t>(end, begin), rows);
    ranges.push_back({begin, clamped});
    begin = clamped;
  }
  return ranges;
}

std::vector<double>
groupedMatmul(const std::vector<double> &a, int64_t rows, int64_t k, int64_t n,
              const std::vector<int32_t> &offsets,
              const std::function<double(int64_t, int64_t, int64_t)> &b) {
  std::vector<double> c(static_cast<size_t>(rows * n), 0.0);
  auto ranges = groupRows(offsets, rows);
  for (size_t g = 0; g < ranges.size(); ++g)
    for (int64_t r = ranges[g].first; r < ranges[g].second; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < k; ++i)
          sum += a[r * k + i] * b(static_cast<int64_t>(g), i, j);
        c[r * n + j] = sum;
      }
  return c;
}

std::vector<double> groupedMatmulWgrad(const std::vector<double> &a,
                                       const std::vector<double> &b,
                                       int64_t rows, int64_t m, int64_t n,
                                       const std::vector<int32_t> &offsets) {
  auto ranges = groupRows(offsets, rows);
  std::vector<double> c(ranges.size() * static_cast<size_t>(m * n), 0.0);
  for (size_t g = 0; g < ranges.size(); ++g)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t r = ranges[g].first; r < ranges[g].second; ++r)
          sum += a[r * m + i] * b[r * n + j];
        c[(g * m + i) * n + j] = sum;
      }
  return c;
}

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

Routing route(const std::vector<int32_t> &ids, int64_t numExperts) {
  Routing r;
  r.counts.assign(numExperts, 0);
  for (int32_t id : ids)
    if (id >= 0 && id < numExperts)
      ++r.counts[id];
  int32_t sum = 0;
  for (int32_t c : r.counts)
    r.offsets.push_back(sum += c);
  // Expert by expert, rows in increasing order: stable by construction.
  r.rowPositions.assign(ids.size(), -1);
  for (int64_t e = 0; e < numExperts; ++e)
    for (size_t row = 0; row < ids.size(); ++row)
      if (ids[row] == e) {
        r.rowPositions[row] = static_cast<int32_t>(r.sortedRows.size());
        r.sortedRows.push_back(static_cast<int32_t>(row));
      }
  r.sortedRows.resize(ids.size(), -1);
  return r;
}

std::vector<double> permute(const std::vector<double> &x, int64_t tokens,
                            int64_t hidden, const std::vector<int32_t> &sorted,
                            int64_t topk) {
  std::vector<double> out(sorted.size() * hidden, 0.0);
  for (size_t p = 0; p < sorted.size(); ++p) {
    if (sorted[p] < 0 || sorted[p] / topk >= tokens)
      continue;
    int64_t t = sorted[p] / topk;
    std::copy(&x[t * hidden], &x[t * hidden] + hidden, &out[p * hidden]);
  }
  return out;
}

std::vector<double> unpermute(const std::vector<double> &y, int64_t rows,
                              int64_t hidden,
                              const std::vector<int32_t> &positions,
                              const std::vector<double> &weights,
                              int64_t topk) {
  int64_t tokens = static_cast<int64_t>(positions.size()) / topk;
  std::vector<double> out(tokens * hidden, 0.0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < topk; ++j) {
      int32_t pos = positions[t * topk + j];
      if (pos < 0 || pos >= rows)
        continue;
      for (int64_t h = 0; h < hidden; ++h)
        out[t * hidden + h] += weights[t * topk + j] * y[pos * hidden + h];
    }
  return out;
}

} // namespace tessel::numerics::ref
