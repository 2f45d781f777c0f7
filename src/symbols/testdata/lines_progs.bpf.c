// SPDX-License-Identifier: Apache-2.0
// Test program for symbols/bpf_lines_test.cc: its BTF line info must map JIT
// addresses back to these lines (the markers are searched for by the test).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __noinline int lines_sub(volatile int x) {
  return x * 3 + 1; /* SUB_MARKER */
}

SEC("socket")
int lines_main(struct __sk_buff* skb) {
  int len = skb->len;
  if (len > 1000)
    return 1;
  return lines_sub(len) * 7 + 3; /* MAIN_MARKER */
}

char LICENSE[] SEC("license") = "GPL";
