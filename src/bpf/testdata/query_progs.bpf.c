// SPDX-License-Identifier: Apache-2.0
// Test programs for bpf/query_test.cc: one bpf2bpf program (main + a __noinline
// subprogram) and one single-function program. Both names are longer than
// bpf_prog_info.name (15 chars), so tests see that kernel ksyms use BTF names.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Volatile so the verifier sees a real call and clang cannot fold the result.
static __noinline int query_sub(volatile int x) {
  return x * 3 + 1;
}

SEC("xdp")
int query_main_calls_sub(struct xdp_md* ctx) {
  int len = (int)(ctx->data_end - ctx->data);
  return query_sub(len) > 0 ? XDP_PASS : XDP_DROP;
}

SEC("socket")
int query_single_function(struct __sk_buff* skb) {
  return skb->len > 0 ? 0 : -1;
}

char LICENSE[] SEC("license") = "GPL";
