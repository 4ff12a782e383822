/*===- test/host_kernels.c - Host kernels the runtime tests launch ---------===*
 *
 * Hand-written stand-ins for what the host code generator emits: entries of
 * type `void entry(void **params)` where params[i] points to parameter i —
 * first each argument's data pointer, then each symbol as int64_t.
 *
 *===---------------------------------------------------------------------===*/

#include <stdint.h>

/* c[i] = a[i] + b[i]; args a, b, c: f32[N]; symbol N. */
void add_entry(void **params) {
  const float *a = *(const float **)params[0];
  const float *b = *(const float **)params[1];
  float *c = *(float **)params[2];
  int64_t n = *(const int64_t *)params[3];
  for (int64_t i = 0; i < n; ++i)
    c[i] = a[i] + b[i];
}

/* y[i] = x[2i] + x[2i+1]; args x: f32[2*N], y: f32[N]; symbol N. */
void sum_pairs_entry(void **params) {
  const float *x = *(const float **)params[0];
  float *y = *(float **)params[1];
  int64_t n = *(const int64_t *)params[2];
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[2 * i] + x[2 * i + 1];
}

/* y[r] = sum of row r; args x: i32[R, 4], y: i64[R]; symbol R. */
void row_sum_entry(void **params) {
  const int32_t *x = *(const int32_t **)params[0];
  int64_t *y = *(int64_t **)params[1];
  int64_t rows = *(const int64_t *)params[2];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t sum = 0;
    for (int c = 0; c < 4; ++c)
      sum += x[r * 4 + c];
    y[r] = sum;
  }
}
