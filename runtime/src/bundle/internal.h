//===- bundle/internal.h - Shared by reader and writer ----------*- C++ -*-===//
//
// The reader and the writer enforce the same rules: whatever serializeBundle
// accepts, parseBundle accepts, and the other way round. The rules that apply
// to the decoded model (names, dims, limits, targets, uniqueness) live here,
// once; the reader adds the checks that only make sense on raw bytes (bounds,
// string termination).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_BUNDLE_INTERNAL_H
#define TESSEL_RUNTIME_BUNDLE_INTERNAL_H

#include "tessel/bundle.hpp"

#include <cstddef>
#include <string>
#include <vector>

// The reader and writer copy records with memcpy in host byte order; the
// format is little-endian, and every host we target is.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Tessel bundle reader/writer assume a little-endian host"
#endif

// The record sizes are part of the format: a change here is a new version.
// No record has implicit padding, so writing a zero-initialised record writes
// only zero bytes besides the fields.
static_assert(sizeof(tessel_bundle_header) == 64, "bundle header layout");
static_assert(sizeof(tessel_bundle_dim) == 16, "bundle dim layout");
static_assert(sizeof(tessel_bundle_arg) == 16, "bundle arg layout");
static_assert(sizeof(tessel_bundle_param) == 16, "bundle param layout");
static_assert(sizeof(tessel_bundle_tensor_map) == 72,
              "bundle tensor map layout");
static_assert(sizeof(tessel_bundle_kernel) == 160, "bundle kernel layout");

namespace tessel::bundle::detail {

/// "kernel 3 ('add', target 'host')": how messages name a kernel.
std::string kernelLabel(const Kernel &kernel, size_t index);

/// Checks one decoded kernel against every rule of the format that is not
/// about raw bytes. Returns "" or a message prefixed with kernelLabel; on
/// failure only, sets `kind` (Unsupported for an unknown target, else
/// Corrupt).
std::string validateKernel(const Kernel &kernel, size_t index,
                           ParseError &kind);

/// Checks the rules that span kernels: the count limit and unique
/// (target, name) pairs.
std::string validateKernelSet(const std::vector<Kernel> &kernels);

} // namespace tessel::bundle::detail

#endif // TESSEL_RUNTIME_BUNDLE_INTERNAL_H
