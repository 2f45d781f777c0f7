// SPDX-License-Identifier: Apache-2.0
// Test program for bpf/metadata_kernel_test.cc: bpf_metadata_* variables of
// several types in .rodata (none read by the code: libbpf binds the map),
// one .rodata variable without the prefix, and a .data variable the code
// writes (another array map of one element, not metadata).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

enum metadata_mode { MODE_OFF, MODE_FAST = 5 };

const volatile char bpf_metadata_name[] = "metadata test";
const volatile int bpf_metadata_negative = -7;
const volatile unsigned long long bpf_metadata_big = 18446744073709551615ULL;
const volatile _Bool bpf_metadata_on = 1;
const volatile enum metadata_mode bpf_metadata_mode = MODE_FAST;
const volatile int not_metadata = 3;
int runs = 1;

SEC("socket")
int metadata_prog(struct __sk_buff* skb) {
  runs += not_metadata;
  return skb->len > 0 ? 0 : -1;
}

char LICENSE[] SEC("license") = "GPL";
