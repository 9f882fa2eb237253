#include "pcapio/pcap_file.hpp"

#include <pcap/pcap.h>

#include <stdexcept>

namespace linerate::pcapio {

namespace {
constexpr int kSnapLen = 65535;
}

PcapWriter::PcapWriter(const std::string& path) {
    handle_ = pcap_open_dead(DLT_EN10MB, kSnapLen);
    if (!handle_) throw std::runtime_error("pcap_open_dead failed");
    dumper_ = pcap_dump_open(handle_, path.c_str());
    if (!dumper_) {
        std::string err = pcap_geterr(handle_);
        pcap_close(handle_);
        throw std::runtime_error("cannot write " + path + ": " + err);
    }
}

PcapWriter::~PcapWriter() {
    pcap_dump_close(dumper_);
    pcap_close(handle_);
}

void PcapWriter::write(std::span<const uint8_t> frame, uint64_t timestamp_ns) {
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = time_t(timestamp_ns / 1000000000ULL);
    hdr.ts.tv_usec = suseconds_t(timestamp_ns % 1000000000ULL / 1000);
    hdr.caplen = bpf_u_int32(frame.size());
    hdr.len = bpf_u_int32(frame.size());
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
    ++frames_;
}

PcapReader::PcapReader(const std::string& path) {
    char err[PCAP_ERRBUF_SIZE] = {};
    handle_ = pcap_open_offline(path.c_str(), err);
    if (!handle_) throw std::runtime_error("cannot read pcap " + path + ": " + err);
}

PcapReader::~PcapReader() {
    pcap_close(handle_);
}

std::optional<std::span<const uint8_t>> PcapReader::next() {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    int rc = pcap_next_ex(handle_, &hdr, &data);
    if (rc == 1) return std::span<const uint8_t>(data, hdr->caplen);
    if (rc == PCAP_ERROR) truncated_ = true;
    return std::nullopt;
}

std::vector<Frame> read_frames(const std::string& path) {
    PcapReader reader(path);
    std::vector<Frame> frames;
    while (auto f = reader.next()) frames.emplace_back(f->begin(), f->end());
    return frames;
}

void write_frames(const std::string& path, const std::vector<Frame>& frames) {
    PcapWriter writer(path);
    for (const auto& f : frames) writer.write(f);
}

uint64_t count_frames(const std::string& path) {
    PcapReader reader(path);
    uint64_t n = 0;
    while (reader.next()) ++n;
    return n;
}

}  // namespace linerate::pcapio
