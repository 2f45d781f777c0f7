// SPDX-License-Identifier: Apache-2.0
// End to end on a real recording of the BPF workload: `bpfprof export` in
// every format, and headless Chromium renders the HTML page — a screenshot
// that is a picture (decoded here: size, colours of both families) and the
// DOM after `?search=burn_step`, where exactly the matching frames carry the
// class "match". Chromium missing: a skip with the reason, a failure in CI.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    if (run({"sh", "-c", std::string("command -v ") + name}).exit_code == 0) return name;
  }
  return "";
}

// A decoded 8-bit RGB(A) non-interlaced PNG, which is what Chromium writes.
struct Image {
  uint32_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // rows without filter bytes
  std::string error;
};

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint8_t(s[at + 3]);
}

Image decode_png(const std::string& png) {
  Image img;
  if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {.error = "not a PNG"};
  std::string idat;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t len = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + len > png.size()) return {.error = "truncated chunk"};
    if (type == "IHDR") {
      img.width = be32(png, at + 8);
      img.height = be32(png, at + 12);
      const int depth = uint8_t(png[at + 16]), colour = uint8_t(png[at + 17]);
      if (depth != 8 || (colour != 2 && colour != 6) || png[at + 20] != 0) {
        return {.error = "not 8-bit RGB(A) non-interlaced"};
      }
      img.channels = colour == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat.append(png, at + 8, len);
    }
    at += 12 + len;
  }
  const size_t stride = size_t(img.width) * img.channels;
  std::vector<uint8_t> raw((stride + 1) * img.height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK || raw_len != raw.size()) {
    return {.error = "bad IDAT"};
  }
  img.pixels.resize(stride * img.height);
  const size_t bpp = img.channels;
  for (size_t y = 0; y < img.height; y++) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &img.pixels[y * stride];
    const uint8_t* up = y > 0 ? out - stride : nullptr;
    for (size_t i = 0; i < stride; i++) {
      const int a = i >= bpp ? out[i - bpp] : 0, b = up ? up[i] : 0,
                c = up && i >= bpp ? up[i - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: return {.error = "bad filter"};
      }
      out[i] = uint8_t(in[i] + pred);
    }
  }
  return img;
}

class ExportBrowserTest : public WorkloadRecordingTest<ExportBrowserTest> {
 protected:
  static void SetUpTestSuite() {
    g = new WorkloadRecording;
    g->record_workload(
        kBin, {.workload_args = {"--programs", "4", "--lifetime", "50ms", "--long-lived", "1s"},
               .truth = false});
  }
  // `bpfprof export` into the test's directory; returns the file's path.
  static std::string export_to(const std::string& format, const std::string& name,
                               std::vector<std::string> extra = {}) {
    const std::string out = g->dir.file(name);
    std::vector<std::string> argv = {kBin + "/bpfprof", "export", "-i", g->data, "--format",
                                     format, "-o", out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
  static std::vector<std::string> chromium_args(const std::string& chromium) {
    return {"timeout", "120", chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync",
            "--user-data-dir=" + g->dir.file("chromium-profile-" + std::to_string(++runs_))};
  }
  void require_chromium(std::string& chromium) {
    chromium = find_chromium();
    if (chromium.empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << "chromium missing in CI (scripts/install-deps.sh installs it)";
      GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
    }
  }
  static inline int runs_ = 0;
};

TEST_F(ExportBrowserTest, FoldedCountsEverySampleAndNamesTheWorkload) {
  const std::string folded = read_file_text(export_to("folded", "out.folded"));
  uint64_t total = 0;
  bool long_burner = false;
  std::istringstream lines(folded);
  for (std::string line; std::getline(lines, line);) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    total += std::stoull(line.substr(sp + 1));
    long_burner = long_burner || line.find("_long_burner_[bpf]") != std::string::npos;
  }
  EXPECT_TRUE(long_burner) << folded.substr(0, 2000);
  RunResult report = run({kBin + "/bpfprof", "report", "--format", "json", "-i", g->data});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(total, nlohmann::json::parse(report.out)["samples"].get<uint64_t>());
  // --bpf-only: every line ends in a BPF frame.
  std::istringstream bpf(read_file_text(export_to("folded", "bpf.folded", {"--bpf-only"})));
  for (std::string line; std::getline(bpf, line);) {
    EXPECT_NE(line.substr(0, line.rfind(' ')).rfind("_[bpf]"), std::string::npos) << line;
  }
}

TEST_F(ExportBrowserTest, SvgAndJsonAreValid) {
  const std::string svg = export_to("svg", "out.svg");
  RunResult lint = run({"xmllint", "--noout", svg});
  if (lint.exit_code != 127 || std::getenv("CI") != nullptr) {
    EXPECT_EQ(lint.exit_code, 0) << lint.err;  // xmllint missing outside CI: not checked
  }
  auto j = nlohmann::json::parse(read_file_text(export_to("json", "out.json")));
  EXPECT_EQ(j["name"], "all");
  EXPECT_GT(j["samples"].get<uint64_t>(), 0u);
}

TEST_F(ExportBrowserTest, ScreenshotIsAFlameGraph) {
  std::string chromium;
  require_chromium(chromium);
  const std::string html = export_to("html", "flame.html");
  const std::string png = g->dir.file("flame.png");
  std::vector<std::string> argv = chromium_args(chromium);
  argv.insert(argv.end(), {"--screenshot=" + png, "--window-size=1200,800",
                           "--hide-scrollbars", "file://" + html});
  RunResult r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Image img = decode_png(read_file_text(png));
  ASSERT_EQ(img.error, "");
  EXPECT_EQ(img.width, 1200u);
  EXPECT_EQ(img.height, 800u);
  // Not blank: many colours, among them the BPF family (blue > red) and the
  // kernel/user family (red > blue), each over a real area.
  std::set<uint32_t> colours;
  size_t bpf = 0, warm = 0;
  for (size_t i = 0; i + img.channels <= img.pixels.size(); i += img.channels) {
    const uint8_t r = img.pixels[i], gr = img.pixels[i + 1], b = img.pixels[i + 2];
    colours.insert(uint32_t(r) << 16 | uint32_t(gr) << 8 | b);
    if (b > r + 40 && b > gr + 10) bpf++;
    if (r > b + 60) warm++;
  }
  EXPECT_GT(colours.size(), 20u);
  EXPECT_GT(bpf, 2000u);
  EXPECT_GT(warm, 2000u);
}

TEST_F(ExportBrowserTest, SearchInTheUrlHighlightsExactlyTheMatches) {
  std::string chromium;
  require_chromium(chromium);
  const std::string html = export_to("html", "search.html");
  std::vector<std::string> argv = chromium_args(chromium);
  argv.insert(argv.end(), {"--dump-dom", "file://" + html + "?search=burn_step"});
  RunResult r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  static const std::regex frame("<g class=\"f ([^\"]*)\"[^>]*><title>([^<]*) \\(\\d+ samples?, ");
  size_t frames = 0, matches = 0;
  bool long_burner = false, burn_step = false;
  static const std::regex prog_name("bpf_prog_[0-9a-f]{16}_(long_burner|burn_step)");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), frame);
       it != std::sregex_iterator(); ++it) {
    const std::string classes = (*it)[1], name = (*it)[2];
    const bool highlighted = (" " + classes + " ").find(" match ") != std::string::npos;
    const bool should = name.find("burn_step") != std::string::npos;
    EXPECT_EQ(highlighted, should) << name << " class=\"f " << classes << "\"";
    frames++;
    matches += highlighted;
    std::smatch m;
    if (std::regex_match(name, m, prog_name)) {
      long_burner = long_burner || m[1] == "long_burner";
      burn_step = burn_step || m[1] == "burn_step";
    }
  }
  EXPECT_GT(frames, 10u);
  EXPECT_GT(matches, 0u);
  EXPECT_TRUE(long_burner) << "no bpf_prog_<tag>_long_burner frame";
  EXPECT_TRUE(burn_step) << "no bpf_prog_<tag>_burn_step frame";
  std::smatch matched;
  ASSERT_TRUE(std::regex_search(r.out, matched, std::regex("Matched: ([0-9.]+)% \\((\\d+) frames?\\)")));
  EXPECT_GT(std::stod(matched[1]), 0.0);
  EXPECT_EQ(std::stoul(matched[2]), matches);
}

}  // namespace
}  // namespace bpfprof::testing
