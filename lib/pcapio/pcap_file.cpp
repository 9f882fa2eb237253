#include "pcapio/pcap_file.hpp"

#include <pcap/pcap.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace linerate::pcapio {

void PcapCloser::operator()(pcap* handle) const {
    pcap_close(handle);
}

void PcapCloser::operator()(pcap_dumper* dumper) const {
    pcap_dump_close(dumper);
}

namespace {

constexpr int kSnapLen = 65535;

// `path` opened for reading records, the one way the reader and check_pcap() open a file.
PcapHandle open_offline(const std::string& path) {
    char err[PCAP_ERRBUF_SIZE] = {};
    PcapHandle handle(pcap_open_offline(path.c_str(), err));
    if (!handle) throw std::runtime_error("cannot read pcap " + path + ": " + err);
    return handle;
}

}  // namespace

PcapWriter::PcapWriter(const std::string& path) : handle_(pcap_open_dead(DLT_EN10MB, kSnapLen)) {
    if (!handle_) throw std::runtime_error("pcap_open_dead failed");
    dumper_.reset(pcap_dump_open(handle_.get(), path.c_str()));
    if (!dumper_)
        throw std::runtime_error("cannot write " + path + ": " + pcap_geterr(handle_.get()));
}

void PcapWriter::write(std::span<const uint8_t> frame, uint64_t timestamp_ns) {
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = time_t(timestamp_ns / 1000000000ULL);
    hdr.ts.tv_usec = suseconds_t(timestamp_ns % 1000000000ULL / 1000);
    hdr.caplen = bpf_u_int32(frame.size());
    hdr.len = bpf_u_int32(frame.size());
    pcap_dump(reinterpret_cast<u_char*>(dumper_.get()), &hdr, frame.data());
    ++frames_;
}

PcapReader::PcapReader(const std::string& path) : handle_(open_offline(path)) {}

std::optional<std::span<const uint8_t>> PcapReader::next() {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    int rc = pcap_next_ex(handle_.get(), &hdr, &data);
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

PcapCheck check_pcap(const std::string& path) {
    const PcapHandle handle = open_offline(path);
    PcapCheck c;
    c.link_type = pcap_datalink(handle.get());
    FILE* file = pcap_file(handle.get());
    c.good_bytes = file ? uint64_t(std::ftell(file)) : 0;
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    int rc;
    while ((rc = pcap_next_ex(handle.get(), &hdr, &data)) == 1) {
        ++c.frames;
        if (hdr->caplen == 0 && c.first_empty == 0) c.first_empty = c.frames;
        if (file) c.good_bytes = uint64_t(std::ftell(file));
    }
    if (rc == PCAP_ERROR) c.damage = pcap_geterr(handle.get());
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) c.file_bytes = uint64_t(st.st_size);
    return c;
}

namespace {

// The first `bytes` of `path` in a memory file that lives as long as the process; its path.
std::string memory_copy(const std::string& path, uint64_t bytes) {
    int fd = memfd_create("linerate-pcap-cut", 0);
    if (fd < 0) throw std::runtime_error("memfd_create failed for a cut copy of " + path);
    FILE* in = std::fopen(path.c_str(), "rb");
    if (!in) throw std::runtime_error("cannot read pcap " + path);
    std::vector<char> buf(1 << 16);
    while (bytes > 0) {
        size_t n = std::fread(buf.data(), 1, std::min<uint64_t>(bytes, buf.size()), in);
        if (n == 0 || write(fd, buf.data(), n) != ssize_t(n)) {
            std::fclose(in);
            throw std::runtime_error("cannot copy the whole records of " + path);
        }
        bytes -= n;
    }
    std::fclose(in);
    return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

TestInput test_mode_input(const std::string& path, std::string& warning) {
    const PcapCheck c = check_pcap(path);
    if (c.link_type != DLT_EN10MB) {
        const char* name = pcap_datalink_val_to_description(c.link_type);
        throw std::invalid_argument("--pcap " + path + ": link type " + (name ? name : "unknown") +
                                    ", not Ethernet: the apps read Ethernet frames only");
    }
    if (c.first_empty != 0)
        throw std::invalid_argument("--pcap " + path + ": record " + std::to_string(c.first_empty) +
                                    " has no captured byte (caplen 0): not a frame");
    if (c.damage.empty()) return {c.frames, path};
    warning = "--pcap " + path + ": " + c.damage + "; delivering the " + std::to_string(c.frames) +
              " whole records before it (bytes 0-" + std::to_string(c.good_bytes) + " of " +
              std::to_string(c.file_bytes) + "), the remaining " +
              std::to_string(c.file_bytes - c.good_bytes) + " bytes are not read";
    return {c.frames, memory_copy(path, c.good_bytes)};
}

uint64_t count_frames(const std::string& path) {
    return measure_frames(path).frames;
}

FrameCount measure_frames(const std::string& path) {
    PcapReader reader(path);
    FrameCount c;
    while (auto f = reader.next()) {
        ++c.frames;
        c.longest = std::max(c.longest, f->size());
    }
    return c;
}

}  // namespace linerate::pcapio
