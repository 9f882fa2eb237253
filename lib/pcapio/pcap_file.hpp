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

// Closes what libpcap opened when its owner goes: the writer and the reader hold their handles
// in these, so they need no destructor and cannot be copied (a copy would close twice).
struct PcapCloser {
    void operator()(pcap* handle) const;
    void operator()(pcap_dumper* dumper) const;
};
using PcapHandle = std::unique_ptr<pcap, PcapCloser>;

class PcapWriter {
  public:
    explicit PcapWriter(const std::string& path);  // throws std::runtime_error

    void write(std::span<const uint8_t> frame, uint64_t timestamp_ns = 0);
    uint64_t frames_written() const { return frames_; }

  private:
    PcapHandle handle_;  // declared first: the dumper closes before it
    std::unique_ptr<pcap_dumper, PcapCloser> dumper_;
    uint64_t frames_ = 0;
};

class PcapReader {
  public:
    explicit PcapReader(const std::string& path);  // throws std::runtime_error

    // The next frame's captured bytes, or nothing at end of file (or at a truncated record).
    std::optional<std::span<const uint8_t>> next();
    bool truncated() const { return truncated_; }

  private:
    PcapHandle handle_;
    bool truncated_ = false;
};

// What test mode needs to know of an input file before it is handed to net_pcap (which reads
// it with the same libpcap, record by record, until libpcap reports an error).
struct PcapCheck {
    int link_type = 0;         // DLT_* of the file
    uint64_t frames = 0;       // records libpcap returns before an error: what net_pcap delivers
    uint64_t good_bytes = 0;   // where those records end in the file
    uint64_t file_bytes = 0;   // the file's size
    uint64_t first_empty = 0;  // 1-based index of the first record with no captured byte, or 0
    std::string damage;        // libpcap's message where it stopped early, or empty
};
PcapCheck check_pcap(const std::string& path);  // throws std::runtime_error when unreadable

// A test-mode input as net_pcap must read it: the frame count, and the path to give it.
struct TestInput {
    uint64_t frames = 0;
    std::string path;  // the file, or a copy of its whole records (/proc/self/fd/N)
};
// Judged by check_pcap(): throws std::invalid_argument (a usage error) for a link type other
// than Ethernet or a record with no captured byte (net_pcap would deliver an empty frame). A file
// that ends in damage (a truncated last record, an absurd captured length) gets `warning` and is
// cut: net_pcap reads an in-memory copy of the whole records before the damage, since libpcap,
// asked again after its error, would read on from inside the damaged record.
TestInput test_mode_input(const std::string& path, std::string& warning);

std::vector<Frame> read_frames(const std::string& path);
void write_frames(const std::string& path, const std::vector<Frame>& frames);
// Records a reader gets from the file: what net_pcap will deliver.
uint64_t count_frames(const std::string& path);
// The same, and the longest of them (captured bytes): what net_pcap's infinite_rx must hold.
struct FrameCount {
    uint64_t frames = 0;
    size_t longest = 0;
};
FrameCount measure_frames(const std::string& path);

}  // namespace linerate::pcapio
