// SPDX-License-Identifier: Apache-2.0
// Export formats on a hand-built profile: folded lines exactly, the JSON
// tree, the SVG's layout read back (well-formed XML, widths, colours), the
// HTML page self-contained, and the format map.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/export.h"
#include "export/flame_tree.h"
#include "export/flamegraph_html.h"
#include "export/flamegraph_json.h"
#include "export/flamegraph_svg.h"
#include "export/folded.h"
#include "testing/subprocess.h"

namespace bpfprof::exporter {
namespace {

using profile::FrameKind;

constexpr char kBurn[] = "bpf_prog_0011223344556677_burn";
constexpr char kSub[] = "bpf_prog_0011223344556677_sub";

// One frame of an SVG as the renderer laid it out.
struct SvgFrame {
  std::string kind, title;
  uint64_t x = 0, w = 0, d = 0;
  double rx = 0, rw = 0;
  Rgb fill;
};

std::vector<SvgFrame> frames_of(const std::string& svg) {
  static const std::regex re(
      "<g class=\"f ([a-z_]+)\" data-x=\"(\\d+)\" data-w=\"(\\d+)\" data-d=\"(\\d+)\">"
      "<title>([^<]*)</title><rect x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\" "
      "height=\"[0-9.]+\" fill=\"rgb\\((\\d+),(\\d+),(\\d+)\\)\"");
  std::vector<SvgFrame> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    out.push_back(SvgFrame{m[1], m[5], std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4]),
                           std::stod(m[6]), std::stod(m[7]),
                           Rgb{static_cast<uint8_t>(std::stoi(m[8])),
                               static_cast<uint8_t>(std::stoi(m[9])),
                               static_cast<uint8_t>(std::stoi(m[10]))}});
  }
  return out;
}

double hue(Rgb c) {
  const double r = c.r / 255.0, g = c.g / 255.0, b = c.b / 255.0;
  const double hi = std::max({r, g, b}), lo = std::min({r, g, b}), d = hi - lo;
  if (d == 0) return -1;  // grey
  double h = hi == r ? std::fmod((g - b) / d, 6.0) : hi == g ? (b - r) / d + 2 : (r - g) / d + 4;
  h *= 60;
  return h < 0 ? h + 360 : h;
}

// `xmllint --noout` on the text; "" if well-formed, else its complaint.
// Without xmllint the check is skipped, except in CI (install-deps installs it).
std::string xml_problems(const std::string& text) {
  testing::TempDir dir;
  const std::string path = dir.file("out.svg");
  std::ofstream(path) << text;
  testing::RunResult r = testing::run({"xmllint", "--noout", path});
  if (r.exit_code == 127 && std::getenv("CI") == nullptr) return "";
  return r.exit_code == 0 ? "" : "xmllint exit " + std::to_string(r.exit_code) + ": " + r.err;
}

// A BPF program (two functions) called from the kernel, a user caller, and a
// user leaf: 10 samples, plus the same BPF stack run by another thread.
class FlameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& p = data_.profile;
    auto burn = p.add_frame({kBurn, "[bpf]", "", FrameKind::kBpf, 1, 0});
    auto sub = p.add_frame({kSub, "[bpf]", "", FrameKind::kBpf, 1, 1});
    auto run = p.add_frame({"bpf_test_run", "[kernel.kallsyms]", "", FrameKind::kKernel});
    auto main = p.add_frame({"main", "/usr/bin/w", "", FrameKind::kUser});
    for (int i = 0; i < 3; i++) p.add_sample(p.add_stack({burn, run, main}), {5, 5, "w"}, 100, 1);
    p.add_sample(p.add_stack({burn, run, main}), {5, 7, "w"}, 100, 1);
    for (int i = 0; i < 2; i++) p.add_sample(p.add_stack({sub, burn, run}), {5, 6, "w"}, 100, 1);
    for (int i = 0; i < 4; i++) p.add_sample(p.add_stack({main}), {5, 5, "w"}, 100, 1);
  }
  FlameTree tree(bool bpf_only = false) const {
    return FlameTree::build(data_.profile, FlameOptions{bpf_only});
  }
  analysis::ReportData data_;
};

TEST_F(FlameTest, FoldedLinesRootFirstWithKindSuffixes) {
  EXPECT_EQ(render_folded(tree()),
            "bpf_test_run_[k];bpf_prog_0011223344556677_burn_[bpf];"
            "bpf_prog_0011223344556677_sub_[bpf] 2\n"
            "main 4\n"
            "main;bpf_test_run_[k];bpf_prog_0011223344556677_burn_[bpf] 4\n");
  EXPECT_EQ(render_folded(tree(true)),
            "bpf_test_run_[k];bpf_prog_0011223344556677_burn_[bpf];"
            "bpf_prog_0011223344556677_sub_[bpf] 2\n"
            "main;bpf_test_run_[k];bpf_prog_0011223344556677_burn_[bpf] 4\n");
}

TEST_F(FlameTest, FoldedReplacesSeparatorsAndCountsEmptyStacks) {
  analysis::ReportData d;
  auto odd = d.profile.add_frame({"a;b\nc", "m.ko", "", FrameKind::kModule});
  d.profile.add_sample(d.profile.add_stack({odd}), {1, 1, "x"}, 1, 1);
  d.profile.add_sample(d.profile.add_stack({}), {1, 1, "x"}, 1, 1);
  EXPECT_EQ(render_folded(FlameTree::build(d.profile, {})), "[unknown] 1\na_b_c_[k] 1\n");
}

TEST_F(FlameTest, JsonTreeHasKindsAndCounts) {
  auto j = nlohmann::json::parse(render_flame_json(tree()));
  EXPECT_EQ(j["name"], "all");
  EXPECT_EQ(j["kind"], "root");
  EXPECT_EQ(j["samples"], 10);
  ASSERT_EQ(j["children"].size(), 2u);
  const auto& run = j["children"][0];
  EXPECT_EQ(run["name"], "bpf_test_run");
  EXPECT_EQ(run["kind"], "kernel");
  EXPECT_EQ(run["samples"], 2);
  const auto& main = j["children"][1];
  EXPECT_EQ(main["kind"], "user");
  EXPECT_EQ(main["samples"], 8);
  EXPECT_EQ(main["self"], 4);
  const auto& burn = main["children"][0]["children"][0];
  EXPECT_EQ(burn["name"], kBurn);
  EXPECT_EQ(burn["kind"], "bpf");
  EXPECT_EQ(burn["samples"], 4);
  EXPECT_TRUE(burn["children"].empty());
}

TEST_F(FlameTest, SvgIsWellFormedAndWidthsFollowSamples) {
  const std::string svg = render_svg(tree(), SvgOptions{});
  EXPECT_EQ(xml_problems(svg), "");
  EXPECT_EQ(svg.rfind("<?xml ", 0), 0u);
  EXPECT_NE(svg.find("<script type=\"text/ecmascript\"><![CDATA["), std::string::npos);
  std::vector<SvgFrame> frames = frames_of(svg);
  ASSERT_EQ(frames.size(), 7u);  // root + 6 nodes
  const double plot = 1200 - 2 * kSvgPad;
  for (const SvgFrame& f : frames) {
    EXPECT_NEAR(f.rw, plot * static_cast<double>(f.w) / 10, 0.006) << f.title;
    EXPECT_NEAR(f.rx, kSvgPad + plot * static_cast<double>(f.x) / 10, 0.006) << f.title;
  }
  EXPECT_EQ(frames[0].kind, "root");
  EXPECT_EQ(frames[0].title, "all (10 samples, 100.00%)");
  EXPECT_NEAR(frames[0].rw, plot, 0.006);
  // Children sit side by side inside their parent: at each depth the widths
  // add up to the parent's samples minus its own (main has 4 of its 8).
  double depth1 = 0, depth2 = 0;
  for (const SvgFrame& f : frames) {
    if (f.d == 1) depth1 += f.rw;
    if (f.d == 2) depth2 += f.rw;
  }
  EXPECT_NEAR(depth1, plot, 0.02);
  EXPECT_NEAR(depth2, plot * 6 / 10, 0.02);
  auto main = std::find_if(frames.begin(), frames.end(),
                           [](const SvgFrame& f) { return f.title.rfind("main (", 0) == 0; });
  ASSERT_NE(main, frames.end());
  EXPECT_EQ(main->title, "main (8 samples, 80.00%)");
  EXPECT_EQ(main->x, 2u);
}

TEST_F(FlameTest, SvgColoursByKind) {
  for (const SvgFrame& f : frames_of(render_svg(tree(), SvgOptions{}))) {
    const double h = hue(f.fill);
    if (f.kind == "bpf") {
      EXPECT_TRUE(h >= 220 && h <= 272) << f.title << " hue " << h;
    } else if (f.kind == "kernel") {
      EXPECT_TRUE(h >= 22 && h <= 42) << f.title << " hue " << h;
    } else if (f.kind == "user") {
      EXPECT_TRUE(h >= 0 && h <= 16) << f.title << " hue " << h;
    }
  }
  EXPECT_EQ(frame_colour(FrameKind::kBpf, kBurn), frame_colour(FrameKind::kBpf, kBurn));
  EXPECT_GE(hue(frame_colour(FrameKind::kBpfImage, "bpf_trampoline_1")), 270);
  EXPECT_EQ(frame_colour(FrameKind::kKernel, "x"), frame_colour(FrameKind::kModule, "x"));
  EXPECT_EQ(hue(frame_colour(FrameKind::kUnknown, "[unknown]")), -1);
}

TEST_F(FlameTest, NarrowFramesAreLeftOut) {
  SvgOptions o;
  o.min_width_px = 300;  // 300 px of 1180 = 2.5 samples of 10
  std::vector<SvgFrame> frames = frames_of(render_svg(tree(), o));
  for (const SvgFrame& f : frames) EXPECT_GE(f.w, 3u) << f.title;
  EXPECT_EQ(frames.size(), 4u);  // all, main, main>bpf_test_run, its burn
}

TEST_F(FlameTest, HtmlIsSelfContainedAndHoldsTheFrames) {
  std::string html = render_html(tree(), HtmlOptions{"t <1>", "input"});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>t &lt;1&gt;</title>"), std::string::npos);
  EXPECT_EQ(frames_of(html).size(), 7u);
  EXPECT_NE(html.find(std::string("<title>") + kBurn + " (4 samples, 40.00%)</title>"),
            std::string::npos);
  EXPECT_NE(html.find("id=\"search\""), std::string::npos);
  EXPECT_NE(html.find("URLSearchParams"), std::string::npos);
  // Nothing fetched: the only URL is the SVG namespace name.
  for (const char* ns : {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml"}) {
    for (size_t at; (at = html.find(ns)) != std::string::npos;) html.erase(at, std::strlen(ns));
  }
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(FlameEmpty, EmptyProfileGivesValidEmptyOutputs) {
  profile::Profile p;
  FlameTree t = FlameTree::build(p, {});
  EXPECT_EQ(render_folded(t), "");
  auto j = nlohmann::json::parse(render_flame_json(t));
  EXPECT_EQ(j["samples"], 0);
  EXPECT_TRUE(j["children"].empty());
  const std::string svg = render_svg(t, SvgOptions{});
  EXPECT_EQ(xml_problems(svg), "");
  EXPECT_NE(svg.find("No samples"), std::string::npos);
  EXPECT_TRUE(frames_of(svg).empty());
  EXPECT_NE(render_html(t, {}).find("No samples"), std::string::npos);
}

TEST(XmlText, EscapesMarkupAndReplacesInvalidBytes) {
  EXPECT_EQ(xml_text("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(xml_text("x\x01y\x7f"), "x?y?");
  EXPECT_EQ(xml_text("caf\xc3\xa9"), "caf\xc3\xa9");        // valid UTF-8 kept
  EXPECT_EQ(xml_text("\xff\xc3(\xed\xa0\x80"), "?" "?(?" "??");  // invalid, cut, surrogate
}

TEST_F(FlameTest, FormatMapWritesEachFormatAndListsThemOnError) {
  EXPECT_EQ(supported_export_formats().find("folded, html, json"), 0u);
  for (const auto& [name, writer] : export_writers()) {
    auto out = export_profile(name, data_, ExportOptions{});
    ASSERT_TRUE(out.ok()) << name;
    EXPECT_FALSE(out->empty()) << name;
  }
  auto folded = export_profile("folded", data_, ExportOptions{true});
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(*folded, render_folded(tree(true)));
  auto bad = export_profile("bogus", data_, ExportOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("supported: " + supported_export_formats()),
            std::string::npos);
}

}  // namespace
}  // namespace bpfprof::exporter
