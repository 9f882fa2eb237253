#pragma once
// Reading and writing Ethernet pcap files (libpcap): test input, expected output, generator traces.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

struct pcap;
struct pcap_dumper;

namespace linerate::pcapio {

using Frame = std::vector<uint8_t>;

class PcapWriter {
  public:
    explicit PcapWriter(const std::string& path);  // throws std::runtime_error
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    void write(std::span<const uint8_t> frame, uint64_t timestamp_ns = 0);
    uint64_t frames_written() const { return frames_; }

  private:
    pcap* handle_ = nullptr;
    pcap_dumper* dumper_ = nullptr;
    uint64_t frames_ = 0;
};

class PcapReader {
  public:
    explicit PcapReader(const std::string& path);  // throws std::runtime_error
    ~PcapReader();
    PcapReader(const PcapReader&) = delete;
    PcapReader& operator=(const PcapReader&) = delete;

    // The next frame's captured bytes, or nothing at end of file (or at a truncated record).
    std::optional<std::span<const uint8_t>> next();
    bool truncated() const { return truncated_; }

  private:
    pcap* handle_ = nullptr;
    bool truncated_ = false;
};

std::vector<Frame> read_frames(const std::string& path);
void write_frames(const std::string& path, const std::vector<Frame>& frames);
// Records a reader gets from the file: what net_pcap will deliver.
uint64_t count_frames(const std::string& path);

}  // namespace linerate::pcapio
