//===- AttentionSetup.h - Attention test inputs and references -*- C++ -*-===//
//
// Paged KV caches filled the way a serving engine leaves them: blocks handed
// out in a shuffled, non-contiguous order, spare blocks and unused slots full
// of other data (never zeros), block-table columns past a request's context
// pointing at other requests' blocks. A kernel that reads one token too many
// or addresses a block wrongly reads real numbers, and the comparison sees it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_UNITTESTS_NUMERICS_ATTENTIONSETUP_H
#define TESSEL_UNITTESTS_NUMERICS_ATTENTIONSETUP_H

#include "Harness.h"
#include "Reference.h"

#include <functional>

namespace tessel::numerics {

/// The shape of a paged cache pair. `mla` makes one latent cache
/// `[NB, BS, kDim]` whose values are the first `vDim` dims of each key.
struct PagedSpec {
  tessel_dtype dtype;
  ref::Layout layout;
  int64_t blockSize, kvHeads, kDim, vDim;
  bool mla = false;
};

/// Random cached contexts of the given lengths in shuffled blocks.
class PagedKV {
public:
  PagedKV(const PagedSpec &spec, const std::vector<int32_t> &contextLens,
          Rng &rng, int64_t spareBlocks = 3);

  ref::CacheGeometry geometry;
  Tensor kCache, vCache; // vCache is empty for MLA
  Tensor blockTable;     // [B, MB] i32
  Tensor lens;           // [B] i32: the context lengths
  /// What the caches hold for request b, token-major `[ctx, Hkv, D]`.
  std::vector<ref::TokenRows> keys, values;
};

/// A 3-D float tensor as token rows.
ref::TokenRows tokenRows(const Tensor &t);

/// The reference of an attention op: out `[T, Hq, Dv]` and lse `[Hq, T]`.
struct AttentionRef {
  std::vector<double> out, lse;
};

/// Appends the keys and values that query token `t`, reading KV head `kvHead`,
/// attends to.
using KeysOf = std::function<void(int64_t t, int64_t kvHead,
                                  std::vector<const double *> &keys,
                                  std::vector<const double *> &values)>;

/// Runs ref::attendRow for every (token, head) of `q` `[T, Hq, Dqk]`, or only
/// for `onlyTokens` when it is not empty (their rows of out/lse are then laid
/// out in that order, as selectTokens does).
AttentionRef attendAll(const ref::TokenRows &q, int64_t kvHeads, int64_t vDim,
                       double scale, const KeysOf &keysOf,
                       const std::vector<int64_t> &onlyTokens = {});

/// Rows `tokens` (along `dim`) of `t`, for checking a sample of an output or
/// the rows that must be exact.
Tensor selectTokens(const Tensor &t, size_t dim,
                    const std::vector<int64_t> &tokens);
/// The same rows of a reference laid out like `t`.
std::vector<double> selectTokens(const std::vector<double> &ref,
                                 const Tensor &t, size_t dim,
                                 const std::vector<int64_t> &tokens);

/// Checks the split form of a paged kernel: partial p of `out` [P, T, Hq,
/// Dv] and `lse` [P, Hq, T] is attention of query token t over the window
/// [p W, (p + 1) W) of its request's context (`requestOf(t)`; W =
/// ceil(MB / P) * block size, MB the block table's width), cut at
/// `keysEnd(t)` when given (causal).
void expectSplitPartials(
    const Tensor &out, const Tensor &lse, const Tensor &q,
    const PagedKV &cache, int64_t blockSize, int64_t kvHeads, double scale,
    const std::function<int64_t(int64_t t)> &requestOf,
    const std::function<int64_t(int64_t t)> &keysEnd = nullptr);

} // namespace tessel::numerics

#endif // TESSEL_UNITTESTS_NUMERICS_ATTENTIONSETUP_H
