// RUN: tessel-opt %s --tessel-decompose-phases=chunk-tokens=0 -verify-diagnostics
// RUN: tessel-opt %s --tessel-decompose-phases=split-kv-tokens=-1 -verify-diagnostics

// expected-error@+1 {{tessel-decompose-phases: chunk-tokens must be positive and split-kv-tokens non-negative}}
func.func @f() {
  return
}
