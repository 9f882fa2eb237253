#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "pcapio/pcap_file.hpp"

using namespace linerate::pcapio;

TEST(Pcap, RoundTrip) {
    std::string path = testing::TempDir() + "rt_" + std::to_string(getpid()) + ".pcap";
    std::vector<Frame> frames = {Frame(60, 0xAA), Frame(1514, 0x55), Frame{1, 2, 3}};
    write_frames(path, frames);
    EXPECT_EQ(read_frames(path), frames);
    EXPECT_EQ(count_frames(path), 3u);
    unlink(path.c_str());
}

TEST(Pcap, TruncatedFileYieldsWholeRecordsOnly) {
    std::string path = testing::TempDir() + "tr_" + std::to_string(getpid()) + ".pcap";
    write_frames(path, {Frame(100, 1), Frame(100, 2)});
    truncate(path.c_str(), 24 + 16 + 100 + 16 + 50);  // second record cut in half
    PcapReader r(path);
    EXPECT_TRUE(r.next().has_value());
    EXPECT_FALSE(r.next().has_value());
    EXPECT_TRUE(r.truncated());
    unlink(path.c_str());
}

TEST(Pcap, MissingFileThrows) {
    EXPECT_THROW(PcapReader("/nonexistent/x.pcap"), std::runtime_error);
}
