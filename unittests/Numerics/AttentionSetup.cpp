//===- AttentionSetup.cpp - Inputs and references of attention tests ------===//

#include "AttentionSetup.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessel::numerics {

PagedKV::PagedKV(const PagedSpec &spec, const std::vector<int32_t> &contextLens,
                 Rng &rng, int64_t spareBlocks) {
  const int64_t bs = spec.blockSize;
  const int64_t requests = static_cast<int64_t>(contextLens.size());
  std::vector<int64_t> blocksOf;
  int64_t usedBlocks = 0, maxBlocks = 0;
  for (int32_t len : contextLens) {
    blocksOf.push_back((len + bs - 1) / bs);
    usedBlocks += blocksOf.back();
    maxBlocks = std::max(maxBlocks, blocksOf.back());
  }
  const int64_t numBlocks = usedBlocks + spareBlocks;
  // One column more than the longest request needs: the table is wider than
  // the data, as it is in an engine that preallocates.
  const int64_t columns = maxBlocks + 1;

  int64_t x = 16 / static_cast<int64_t>(tessel_dtype_size(spec.dtype));
  geometry = {spec.layout, numBlocks, bs, spec.kvHeads,
              spec.kDim,   spec.vDim, x};
  if (spec.mla) {
    kCache = Tensor(spec.dtype, {numBlocks, bs, spec.kDim});
  } else {
    kCache = Tensor(spec.dtype, geometry.kShape());
    vCache = Tensor(spec.dtype, geometry.vShape());
    fillRandom(vCache, rng);
  }
  fillRandom(kCache, rng);

  // Hand the blocks out in a random order.
  std::vector<int32_t> ids(numBlocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng.raw());
  std::vector<int32_t> table(requests * columns);
  size_t next = 0;
  for (int64_t b = 0; b < requests; ++b)
    for (int64_t c = 0; c < columns; ++c)
      table[b * columns + c] =
          c < blocksOf[b] ? ids[next++]
                          : static_cast<int32_t>(rng.integer(0, numBlocks - 1));
  blockTable = Tensor::i32({requests, columns}, table);

  // The slots past each request's last token are NaN, as stale memory in an
  // engine's cache may be: a kernel must not let them reach its output
  // (a probability of 0 times NaN is NaN).
  const int64_t kvHeadsOfCache = spec.mla ? 1 : spec.kvHeads;
  for (int64_t b = 0; b < requests; ++b) {
    if (contextLens[b] % bs == 0)
      continue;
    int64_t block = table[b * columns + contextLens[b] / bs];
    for (int64_t offset = contextLens[b] % bs; offset < bs; ++offset)
      for (int64_t h = 0; h < kvHeadsOfCache; ++h) {
        for (int64_t d = 0; d < spec.kDim; ++d)
          kCache.set(spec.mla ? (block * bs + offset) * spec.kDim + d
                              : geometry.kIndex(block, offset, h, d),
                     std::nan(""));
        for (int64_t d = 0; !spec.mla && d < spec.vDim; ++d)
          vCache.set(geometry.vIndex(block, offset, h, d), std::nan(""));
      }
  }
  lens = Tensor::i32({requests}, contextLens);

  // Read back what each request's tokens are, through the documented
  // addressing of the layout.
  const int64_t kvHeads = spec.mla ? 1 : spec.kvHeads;
  for (int64_t b = 0; b < requests; ++b) {
    ref::TokenRows k(contextLens[b], kvHeads, spec.kDim);
    ref::TokenRows v(contextLens[b], kvHeads, spec.vDim);
    for (int64_t j = 0; j < contextLens[b]; ++j) {
      int64_t block = table[b * columns + j / bs], offset = j % bs;
      for (int64_t h = 0; h < kvHeads; ++h) {
        for (int64_t d = 0; d < spec.kDim; ++d)
          k.row(j, h)[d] = kCache.at(geometry.kIndex(block, offset, h, d));
        for (int64_t d = 0; d < spec.vDim; ++d)
          v.row(j, h)[d] =
              spec.mla ? k.row(j, h)[d]
                       : vCache.at(geometry.vIndex(block, offset, h, d));
      }
    }
    keys.push_back(std::move(k));
    values.push_back(std::move(v));
  }
}

ref::TokenRows tokenRows(const Tensor &t) {
  ref::TokenRows rows(t.dim(0), t.dim(1), t.dim(2));
  rows.data = t.values();
  return rows;
}

AttentionRef attendAll(const ref::TokenRows &q, int64_t kvHeads, int64_t vDim,
                       double scale, const KeysOf &keysOf,
                       const std::vector<int64_t> &onlyTokens) {
  std::vector<int64_t> tokens = onlyTokens;
  if (tokens.empty())
    for (int64_t t = 0; t < q.tokens; ++t)
      tokens.push_back(t);
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t groupSize = q.heads / kvHeads;
  AttentionRef r;
  r.out.resize(n * q.heads * vDim);
  r.lse.resize(q.heads * n);
  std::vector<const double *> keys, values;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < q.heads; ++h) {
      keys.clear();
      values.clear();
      keysOf(tokens[i], h / groupSize, keys, values);
      r.lse[h * n + i] =
          ref::attendRow(q.row(tokens[i], h), q.dim, keys, values, vDim, scale,
                         &r.out[(i * q.heads + h) * vDim]);
    }
  return r;
}

/// Calls copy(from, to) for the flat indices of rows `tokens` along `dim`
/// of `shape`, `to` counting up from 0.
template <typename Copy>
static void forSelected(const std::vector<int64_t> &shape, size_t dim,
                        const std::vector<int64_t> &tokens, Copy copy) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  size_t next = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t tok : tokens)
      for (int64_t i = 0; i < inner; ++i)
        copy(static_cast<size_t>((o * shape[dim] + tok) * inner + i), next++);
}

Tensor selectTokens(const Tensor &t, size_t dim,
                    const std::vector<int64_t> &tokens) {
  std::vector<int64_t> shape = t.shape();
  shape[dim] = static_cast<int64_t>(tokens.size());
  Tensor s(t.dtype(), shape);
  forSelected(t.shape(), dim, tokens,
              [&](size_t from, size_t to) { s.set(to, t.at(from)); });
  return s;
}

std::vector<double> selectTokens(const std::vector<double> &ref,
                                 const Tensor &t, size_t dim,
                                 const std::vector<int64_t> &tokens) {
  std::vector<double> s;
  forSelected(t.shape(), dim, tokens,
              [&](size_t from, size_t) { s.push_back(ref[from]); });
  return s;
}

void expectSplitPartials(const Tensor &out, const Tensor &lse,
                         const Tensor &q, const PagedKV &cache,
                         int64_t blockSize, int64_t kvHeads, double scale,
                         const std::function<int64_t(int64_t t)> &requestOf,
                         const std::function<int64_t(int64_t t)> &keysEnd) {
  const int64_t splits = out.dim(0), vDim = out.dim(3);
  const int64_t window =
      (cache.blockTable.dim(1) + splits - 1) / splits * blockSize;
  for (int64_t p = 0; p < splits; ++p) {
    AttentionRef r = attendAll(
        tokenRows(q), kvHeads, vDim, scale,
        [&](int64_t t, int64_t kvHead, auto &keys, auto &values) {
          const int64_t b = requestOf(t);
          int64_t end =
              std::min<int64_t>(cache.keys[b].tokens, (p + 1) * window);
          if (keysEnd)
            end = std::min(end, keysEnd(t));
          for (int64_t j = p * window; j < end; ++j) {
            keys.push_back(cache.keys[b].row(j, kvHead));
            values.push_back(cache.values[b].row(j, kvHead));
          }
        });
    SCOPED_TRACE("partial " + std::to_string(p));
    EXPECT_TRUE(near("out", selectTokens(out, 0, {p}), r.out));
    EXPECT_TRUE(nearLse("lse", selectTokens(lse, 0, {p}), r.lse));
  }
}

} // namespace tessel::numerics
