// SPDX-License-Identifier: Apache-2.0
// The tc filter dump parser on netlink datagrams built here: cls_bpf
// filters give their program, other kinds nothing, and bytes that are not
// whole messages and attributes are an error, never read past.
#include "bpf/tc.h"

#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/rtnetlink.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace bpfprof::bpf {
namespace {

using Datagram = std::vector<std::byte>;

void pad4(Datagram& d) { d.resize((d.size() + 3) & ~size_t{3}); }

void put_attr(Datagram& d, uint16_t type, const void* data, size_t len) {
  nlattr a{static_cast<uint16_t>(sizeof(nlattr) + len), type};
  append_pod(d, a);
  const auto* p = static_cast<const std::byte*>(data);
  d.insert(d.end(), p, p + len);
  pad4(d);
}

// One RTM_NEWTFILTER of `kind` whose options hold TCA_BPF_ID `id` (and a name).
Datagram filter(const char* kind, uint32_t id) {
  Datagram options;
  put_attr(options, TCA_BPF_NAME, "cls.o:[tc]", 11);
  put_attr(options, TCA_BPF_ID, &id, sizeof id);
  Datagram m(sizeof(nlmsghdr));
  append_pod(m, tcmsg{});
  put_attr(m, TCA_KIND, kind, std::strlen(kind) + 1);
  put_attr(m, TCA_OPTIONS | NLA_F_NESTED, options.data(), options.size());
  nlmsghdr h{static_cast<uint32_t>(m.size()), RTM_NEWTFILTER, NLM_F_MULTI, 1, 0};
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}

Datagram control(uint16_t type, int32_t error = 0) {
  Datagram m;
  nlmsghdr h{static_cast<uint32_t>(sizeof(nlmsghdr) + sizeof error), type, NLM_F_MULTI, 1, 0};
  append_pod(m, h);
  append_pod(m, error);
  return m;
}

Datagram join(std::initializer_list<Datagram> parts) {
  Datagram out;
  for (const Datagram& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(TcFilterDumpTest, ClsBpfFiltersGiveTheirPrograms) {
  std::vector<uint32_t> ids;
  auto done = parse_tc_filter_dump(join({filter("bpf", 42), filter("u32", 7), filter("bpf", 43)}), ids);
  ASSERT_TRUE(done.ok()) << done.error().to_string();
  EXPECT_FALSE(*done) << "no NLMSG_DONE yet";
  EXPECT_EQ(ids, (std::vector<uint32_t>{42, 43}));
  done = parse_tc_filter_dump(control(NLMSG_DONE), ids);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(ids.size(), 2u);
}

TEST(TcFilterDumpTest, AnErrorAnswerIsAnError) {
  std::vector<uint32_t> ids;
  auto done = parse_tc_filter_dump(control(NLMSG_ERROR, -EPERM), ids);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().code, Errc::kPermission) << done.error().to_string();
}

TEST(TcFilterDumpTest, EveryCutIsRefusedOrStopsAtAWholeMessage) {
  const Datagram whole = join({filter("bpf", 42), filter("bpf", 43)});
  const size_t first = filter("bpf", 42).size();
  for (size_t n = 0; n < whole.size(); n++) {
    std::vector<uint32_t> ids;
    auto done = parse_tc_filter_dump(Bytes(whole.data(), n), ids);
    if (n == 0 || n == first) {
      EXPECT_TRUE(done.ok()) << n;  // whole messages only
    } else if (n < sizeof(nlmsghdr) || (n > first && n - first < sizeof(nlmsghdr))) {
      EXPECT_TRUE(done.ok()) << n;  // not even a header left: nothing read
    } else {
      EXPECT_FALSE(done.ok()) << n;
    }
    EXPECT_LE(ids.size(), n >= first ? 1u : 0u) << n;
  }
  // An attribute claiming more than its message holds.
  Datagram bad = filter("bpf", 42);
  nlattr a;
  const size_t kind_at = sizeof(nlmsghdr) + NLMSG_ALIGN(sizeof(tcmsg));
  std::memcpy(&a, bad.data() + kind_at, sizeof a);
  a.nla_len = 0xfff0;
  std::memcpy(bad.data() + kind_at, &a, sizeof a);
  std::vector<uint32_t> ids;
  auto done = parse_tc_filter_dump(bad, ids);
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.error().to_string().find("overruns"), std::string::npos) << done.error().to_string();
}

}  // namespace
}  // namespace bpfprof::bpf
