// SPDX-License-Identifier: Apache-2.0
// Encoders and decoders of the non-BPF feature sections (perf-data-format.md
// section 8): strings, NRCPUS, CMDLINE, EVENT_DESC, SAMPLE_TIME, CLOCKID.
#include "perfdata/features.h"

#include <cstring>

#include "perfdata/file_format.h"

namespace bpfprof::perfdata {
namespace {

// perf pads header strings to NAME_ALIGN (64) including the NUL.
constexpr size_t kNameAlign = 64;

std::vector<std::byte> string_section(const std::string& s) {
  std::vector<std::byte> out;
  encode_string(out, s);
  return out;
}

std::vector<std::byte> event_desc_section(const std::vector<EventDescEntry>& events) {
  std::vector<std::byte> out;
  append_pod(out, static_cast<uint32_t>(events.size()));
  append_pod(out, perf::kAttrSizeWritten);
  for (const EventDescEntry& e : events) {
    perf_event_attr attr{};
    std::memcpy(&attr, e.attr, perf::kAttrSizeWritten);
    attr.size = perf::kAttrSizeWritten;
    const auto* p = reinterpret_cast<const std::byte*>(&attr);
    out.insert(out.end(), p, p + perf::kAttrSizeWritten);
    append_pod(out, static_cast<uint32_t>(e.ids->size()));
    encode_string(out, *e.name);
    for (uint64_t id : *e.ids) append_pod(out, id);
  }
  return out;
}

Result<std::optional<std::string>> decode_string_feature(Bytes payload, uint64_t base,
                                                         std::string_view field) {
  ByteCursor c(payload, base);
  BPFPROF_ASSIGN_OR_RETURN(std::string s, decode_string(c, field));
  return std::optional<std::string>(std::move(s));
}

Status decode_event_desc(Bytes payload, uint64_t base, std::vector<std::string>& names) {
  ByteCursor c(payload, base);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t nr, c.u32("EVENT_DESC nr"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t attr_size, c.u32("EVENT_DESC attr_size"));
  std::vector<std::string> out;
  for (uint32_t i = 0; i < nr; ++i) {
    BPFPROF_TRY(c.skip(attr_size, "EVENT_DESC attr"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t nr_ids, c.u32("EVENT_DESC nr_ids"));
    BPFPROF_ASSIGN_OR_RETURN(std::string name, decode_string(c, "EVENT_DESC name"));
    BPFPROF_TRY(c.array<uint64_t>(nr_ids, "EVENT_DESC ids"));
    out.push_back(std::move(name));
  }
  names = std::move(out);
  return ok_status();
}

Status decode_cmdline(Bytes payload, uint64_t base, std::vector<std::string>& argv) {
  ByteCursor c(payload, base);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t nr, c.u32("CMDLINE nr"));
  std::vector<std::string> out;
  for (uint32_t i = 0; i < nr; ++i) {
    BPFPROF_ASSIGN_OR_RETURN(std::string arg, decode_string(c, "CMDLINE argv"));
    out.push_back(std::move(arg));
  }
  argv = std::move(out);
  return ok_status();
}

}  // namespace

void encode_string(std::vector<std::byte>& out, const std::string& s) {
  // A string with an embedded NUL would be cut by readers; keep what they see.
  size_t n = strnlen(s.c_str(), s.size());
  size_t len = (n + 1 + kNameAlign - 1) / kNameAlign * kNameAlign;
  append_pod(out, static_cast<uint32_t>(len));
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + n);
  out.insert(out.end(), len - n, std::byte{0});
}

Result<std::string> decode_string(ByteCursor& c, std::string_view field) {
  BPFPROF_ASSIGN_OR_RETURN(uint32_t len, c.u32(field));
  BPFPROF_ASSIGN_OR_RETURN(std::string_view s, c.fixed_string(len, field));
  return std::string(s);
}

std::map<int, std::vector<std::byte>> encode_features(const Features& f,
                                                      const std::vector<EventDescEntry>& events) {
  std::map<int, std::vector<std::byte>> out;
  if (f.hostname) out[kFeatHostname] = string_section(*f.hostname);
  if (f.osrelease) out[kFeatOsRelease] = string_section(*f.osrelease);
  if (f.version) out[kFeatVersion] = string_section(*f.version);
  if (f.arch) out[kFeatArch] = string_section(*f.arch);
  if (f.nr_cpus_avail || f.nr_cpus_online) {
    // perf writes avail first (the older text documentation has it reversed).
    std::vector<std::byte> s;
    append_pod(s, f.nr_cpus_avail.value_or(f.nr_cpus_online.value_or(0)));
    append_pod(s, f.nr_cpus_online.value_or(f.nr_cpus_avail.value_or(0)));
    out[kFeatNrCpus] = std::move(s);
  }
  if (!f.cmdline.empty()) {
    std::vector<std::byte> s;
    append_pod(s, static_cast<uint32_t>(f.cmdline.size()));
    for (const std::string& arg : f.cmdline) encode_string(s, arg);
    out[kFeatCmdline] = std::move(s);
  }
  if (!events.empty()) out[kFeatEventDesc] = event_desc_section(events);
  if (f.first_sample_time && f.last_sample_time) {
    std::vector<std::byte> s;
    append_pod(s, *f.first_sample_time);
    append_pod(s, *f.last_sample_time);
    out[kFeatSampleTime] = std::move(s);
  }
  if (f.clockid_res_ns) {
    std::vector<std::byte> s;
    append_pod(s, *f.clockid_res_ns);
    out[kFeatClockId] = std::move(s);
  }
  if (f.compression) {
    std::vector<std::byte> s;
    const Compression& c = *f.compression;
    for (uint32_t v : {c.version, c.type, c.level, c.ratio, c.mmap_len}) append_pod(s, v);
    out[kFeatCompressed] = std::move(s);
  }
  if (f.kallsyms) out[kFeatBpfprofKallsyms] = encode_kallsyms(*f.kallsyms);
  if (f.enrichment) out[kFeatBpfprofEnrichment] = encode_enrichment(*f.enrichment);
  if (f.run_stats) out[kFeatBpfprofRunStats] = encode_run_stats(*f.run_stats);
  if (f.owners) out[kFeatBpfprofOwners] = encode_owners(*f.owners);
  if (f.attach) out[kFeatBpfprofAttach] = encode_attach(*f.attach);
  if (!f.vdso.empty()) out[kFeatBpfprofVdso] = encode_vdso(f.vdso);
  if (!f.bpf_prog_info.empty()) out[kFeatBpfProgInfo] = encode_bpf_prog_info(f.bpf_prog_info);
  if (!f.bpf_btf.empty()) out[kFeatBpfBtf] = encode_bpf_btf(f.bpf_btf);
  ProgramMaps maps = program_maps(f.bpf_prog_info);
  maps.insert(f.bpf_maps.begin(), f.bpf_maps.end());
  if (!maps.empty()) out[kFeatBpfprofMaps] = encode_maps(maps);
  ProgramMetadata metadata = program_metadata(f.bpf_prog_info);
  for (const auto& [prog, entries] : f.bpf_metadata) bpf::merge_metadata(metadata[prog], entries);
  if (!metadata.empty()) out[kFeatBpfprofMetadata] = encode_metadata(metadata);
  // Raw sections fill only numbers the typed fields did not claim.
  for (const auto& [feat, bytes] : f.other) {
    if (feat > 0 && feat < kFeatureBits) out.emplace(feat, bytes);
  }
  return out;
}

std::vector<std::byte> encode_vdso(Bytes image) {
  std::vector<std::byte> s;
  append_pod(s, uint32_t{1});
  append_pod(s, uint32_t{0});
  append_pod(s, static_cast<uint64_t>(image.size()));
  s.insert(s.end(), image.begin(), image.end());
  s.resize((s.size() + 7) / 8 * 8);
  return s;
}

Result<Bytes> decode_vdso(Bytes section, uint64_t base) {
  ByteCursor c(section, base);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("VDSO version"));
  if (version != 1) {
    return make_error_at(Errc::kUnsupported, base, "VDSO version " + std::to_string(version));
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t flags, c.u32("VDSO flags"));
  (void)flags;
  BPFPROF_ASSIGN_OR_RETURN(uint64_t size, c.u64("VDSO size"));
  BPFPROF_ASSIGN_OR_RETURN(Bytes image, c.bytes(size, "VDSO image"));
  return image;
}

Status decode_feature(int feat, Bytes payload, uint64_t base, Features& out,
                      std::vector<std::string>& event_names) {
  switch (feat) {
    case kFeatHostname: {
      BPFPROF_ASSIGN_OR_RETURN(out.hostname, decode_string_feature(payload, base, "HOSTNAME"));
      return ok_status();
    }
    case kFeatOsRelease: {
      BPFPROF_ASSIGN_OR_RETURN(out.osrelease, decode_string_feature(payload, base, "OSRELEASE"));
      return ok_status();
    }
    case kFeatVersion: {
      BPFPROF_ASSIGN_OR_RETURN(out.version, decode_string_feature(payload, base, "VERSION"));
      return ok_status();
    }
    case kFeatArch: {
      BPFPROF_ASSIGN_OR_RETURN(out.arch, decode_string_feature(payload, base, "ARCH"));
      return ok_status();
    }
    case kFeatNrCpus: {
      ByteCursor c(payload, base);
      BPFPROF_ASSIGN_OR_RETURN(uint32_t avail, c.u32("NRCPUS nr_cpus_avail"));
      BPFPROF_ASSIGN_OR_RETURN(uint32_t online, c.u32("NRCPUS nr_cpus_online"));
      out.nr_cpus_avail = avail;
      out.nr_cpus_online = online;
      return ok_status();
    }
    case kFeatCmdline:
      return decode_cmdline(payload, base, out.cmdline);
    case kFeatEventDesc:
      return decode_event_desc(payload, base, event_names);
    case kFeatSampleTime: {
      ByteCursor c(payload, base);
      BPFPROF_ASSIGN_OR_RETURN(uint64_t first, c.u64("SAMPLE_TIME first"));
      BPFPROF_ASSIGN_OR_RETURN(uint64_t last, c.u64("SAMPLE_TIME last"));
      out.first_sample_time = first;
      out.last_sample_time = last;
      return ok_status();
    }
    case kFeatClockId: {
      ByteCursor c(payload, base);
      BPFPROF_ASSIGN_OR_RETURN(out.clockid_res_ns, c.u64("CLOCKID res_ns"));
      return ok_status();
    }
    case kFeatBpfProgInfo: {
      BPFPROF_ASSIGN_OR_RETURN(out.bpf_prog_info, decode_bpf_prog_info(payload, base));
      return ok_status();
    }
    case kFeatBpfBtf: {
      std::vector<Error> bad;
      BPFPROF_ASSIGN_OR_RETURN(out.bpf_btf, decode_bpf_btf(payload, base, &bad));
      if (!bad.empty()) return bad.front();  // the rest of the section is kept
      return ok_status();
    }
    case kFeatCompressed: {
      ByteCursor c(payload, base);
      Compression z;
      BPFPROF_ASSIGN_OR_RETURN(z.version, c.u32("COMPRESSED version"));
      BPFPROF_ASSIGN_OR_RETURN(z.type, c.u32("COMPRESSED type"));
      BPFPROF_ASSIGN_OR_RETURN(z.level, c.u32("COMPRESSED level"));
      BPFPROF_ASSIGN_OR_RETURN(z.ratio, c.u32("COMPRESSED ratio"));
      BPFPROF_ASSIGN_OR_RETURN(z.mmap_len, c.u32("COMPRESSED mmap_len"));
      out.compression = z;
      return ok_status();
    }
    case kFeatBpfprofMaps:
      return decode_maps(payload, base, out.bpf_maps);
    case kFeatBpfprofMetadata:
      return decode_metadata(payload, base, out.bpf_metadata);
    case kFeatBpfprofKallsyms: {
      // Opened in place by whoever names kernel code (KallsymsTable).
      out.kallsyms_packed = payload;
      out.kallsyms_packed_at = base;
      return ok_status();
    }
    case kFeatBpfprofEnrichment: {
      BPFPROF_ASSIGN_OR_RETURN(out.enrichment, decode_enrichment(payload, base));
      return ok_status();
    }
    case kFeatBpfprofRunStats: {
      BPFPROF_ASSIGN_OR_RETURN(out.run_stats, decode_run_stats(payload, base));
      return ok_status();
    }
    case kFeatBpfprofOwners: {
      BPFPROF_ASSIGN_OR_RETURN(out.owners, decode_owners(payload, base));
      return ok_status();
    }
    case kFeatBpfprofAttach: {
      BPFPROF_ASSIGN_OR_RETURN(out.attach, decode_attach(payload, base));
      return ok_status();
    }
    case kFeatBpfprofVdso: {
      BPFPROF_ASSIGN_OR_RETURN(out.vdso, decode_vdso(payload, base));
      out.vdso_at = base + 16;
      return ok_status();
    }
    default:
      out.other[feat].assign(payload.begin(), payload.end());
      return ok_status();
  }
}

}  // namespace bpfprof::perfdata
