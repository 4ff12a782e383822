//===- moe/moe_api.cpp - The MoE routing glue's C entry points ------------===//
//
// A thin layer over four kernels of the bundle: route is the histogram then
// the sort (which reads the histogram's cumulative ends), on one stream.
// The kernels check every shape when launched; this layer checks the
// configuration and says which step a launch error comes from.
//
//===----------------------------------------------------------------------===//

#include "../core/kernel_lookup.h"
#include "../core/status.h"
#include "../support/format.h"

#include <cstring>
#include <memory>
#include <vector>

using namespace tessel;
using tessel::runtime::annotate;
using tessel::runtime::guard;
using tessel::runtime::KernelQuery;
using tessel::runtime::makeStatusf;

struct tessel_moe_t {
  tessel_moe_config config;
  tessel_kernel histogram = nullptr, sort = nullptr;
  /// Null when config.hidden is 0 (routing only).
  tessel_kernel permute = nullptr, unpermute = nullptr;
};

namespace {

tessel_status validate(const tessel_moe_config &c) {
  if (c.struct_size != sizeof(tessel_moe_config))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "config.struct_size is %u, expected %zu: initialise "
                       "the config with tessel_moe_config_init",
                       c.struct_size, sizeof(tessel_moe_config));
  if (c.num_experts < 1 || c.topk < 1 || c.hidden < 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "config.num_experts (%d) and topk (%d) must be "
                       "positive and hidden (%d) not negative",
                       c.num_experts, c.topk, c.hidden);
  return nullptr;
}

/// Launches `kernel` on `args` (null pointers refused), naming `step` in
/// errors.
tessel_status launch(tessel_kernel kernel, const char *step,
                     std::initializer_list<const tessel_tensor *> args,
                     void *stream) {
  tessel_tensor tensors[5];
  size_t n = 0;
  for (const tessel_tensor *arg : args) {
    if (!arg)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "%s: a tensor argument is NULL", step);
    tensors[n++] = *arg;
  }
  return annotate(tessel_kernel_launch(kernel, tensors, n, stream), step);
}

} // namespace

void tessel_moe_config_init(tessel_moe_config *config) {
  if (!config)
    return;
  std::memset(config, 0, sizeof *config);
  config->struct_size = sizeof *config;
  config->dtype = TESSEL_DTYPE_BF16;
  config->weight_dtype = TESSEL_DTYPE_F32;
}

tessel_status tessel_moe_create(tessel_bundle bundle,
                                const tessel_moe_config *config,
                                tessel_moe *out_moe) {
  return guard("creating the MoE glue", [&]() -> tessel_status {
    if (!bundle || !config || !out_moe)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_moe_create: bundle, config and out_moe must "
                         "not be NULL");
    *out_moe = nullptr;
    const tessel_moe_config &c = *config;
    if (tessel_status status = validate(c))
      return annotate(status, "tessel_moe_create");
    auto moe = std::make_unique<tessel_moe_t>();
    moe->config = c;
    const std::string who =
        format("tessel_moe_create: %d experts, top-%d", c.num_experts, c.topk);
    auto need = [&](tessel_kernel &slot, const KernelQuery &query) {
      slot = runtime::findKernel(bundle, query);
      return slot ? nullptr
                  : runtime::missingKernel(
                        bundle, query, who,
                        " (tessel.torch.moe_mlp_spec writes the kernels)");
    };
    const std::vector<std::pair<const char *, int64_t>> routing = {
        {"topk", c.topk}, {"groups", c.num_experts}};
    const std::vector<std::pair<const char *, int64_t>> rows = {
        {"hidden", c.hidden}, {"topk", c.topk}};
    if (tessel_status status = need(
            moe->histogram,
            {"expert histogram", "tessel.expert_histogram", routing, {}, {}, {}}))
      return status;
    if (tessel_status status = need(
            moe->sort,
            {"expert sort", "tessel.expert_sort", routing, {}, {}, {}}))
      return status;
    if (c.hidden > 0) {
      if (tessel_status status = need(
              moe->permute,
              {"permute", "tessel.moe_permute", rows, c.dtype, {}, {}}))
        return status;
      if (tessel_status status =
              need(moe->unpermute, {"unpermute", "tessel.moe_unpermute", rows,
                                    c.dtype, {{"weights", c.weight_dtype}},
                                    {}}))
        return status;
    }
    *out_moe = moe.release();
    return nullptr;
  });
}

void tessel_moe_release(tessel_moe moe) { delete moe; }

tessel_status tessel_moe_route(tessel_moe moe, const tessel_tensor *topk_ids,
                               const tessel_tensor *counts,
                               const tessel_tensor *group_offsets,
                               const tessel_tensor *sorted_rows,
                               const tessel_tensor *row_positions,
                               void *stream) {
  return guard("routing MoE tokens", [&]() -> tessel_status {
    if (!moe)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_moe_route: moe is NULL");
    if (tessel_status status =
            launch(moe->histogram, "tessel_moe_route: the expert histogram",
                   {topk_ids, counts, group_offsets}, stream))
      return status;
    return launch(moe->sort, "tessel_moe_route: the expert sort",
                  {topk_ids, group_offsets, sorted_rows, row_positions},
                  stream);
  });
}

tessel_status tessel_moe_permute(tessel_moe moe, const tessel_tensor *x,
                                 const tessel_tensor *sorted_rows,
                                 const tessel_tensor *out, void *stream) {
  return guard("permuting MoE rows", [&]() -> tessel_status {
    if (!moe || !moe->permute)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_moe_permute: %s",
                         moe ? "the handle was created with hidden 0 "
                               "(routing only)"
                             : "moe is NULL");
    return launch(moe->permute, "tessel_moe_permute", {x, sorted_rows, out},
                  stream);
  });
}

tessel_status tessel_moe_unpermute(tessel_moe moe, const tessel_tensor *y,
                                   const tessel_tensor *row_positions,
                                   const tessel_tensor *weights,
                                   const tessel_tensor *out, void *stream) {
  return guard("combining MoE rows", [&]() -> tessel_status {
    if (!moe || !moe->unpermute)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_moe_unpermute: %s",
                         moe ? "the handle was created with hidden 0 "
                               "(routing only)"
                             : "moe is NULL");
    return launch(moe->unpermute, "tessel_moe_unpermute",
                  {y, row_positions, weights, out}, stream);
  });
}
