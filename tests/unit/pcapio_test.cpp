#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "pcapio/pcap_file.hpp"
#include "support/scratch.hpp"

using namespace linerate::pcapio;

TEST(Pcap, RoundTrip) {
    std::string path = linerate::test::scratch("rt.pcap");
    std::vector<Frame> frames = {Frame(60, 0xAA), Frame(1514, 0x55), Frame{1, 2, 3}};
    write_frames(path, frames);
    EXPECT_EQ(read_frames(path), frames);
    EXPECT_EQ(count_frames(path), 3u);
}

TEST(Pcap, TruncatedFileYieldsWholeRecordsOnly) {
    std::string path = linerate::test::scratch("tr.pcap");
    write_frames(path, {Frame(100, 1), Frame(100, 2)});
    truncate(path.c_str(), 24 + 16 + 100 + 16 + 50);  // second record cut in half
    PcapReader r(path);
    EXPECT_TRUE(r.next().has_value());
    EXPECT_FALSE(r.next().has_value());
    EXPECT_TRUE(r.truncated());
}

TEST(Pcap, MissingFileThrows) {
    EXPECT_THROW(PcapReader("/nonexistent/x.pcap"), std::runtime_error);
}

TEST(Pcap, CheckCountsWholeRecordsAndNamesTheDamage) {
    std::string path = linerate::test::scratch("ck.pcap");
    write_frames(path, {Frame(100, 1), Frame(100, 2), Frame(100, 3)});
    PcapCheck whole = check_pcap(path);
    EXPECT_EQ(whole.frames, 3u);
    EXPECT_EQ(whole.good_bytes, whole.file_bytes);
    EXPECT_TRUE(whole.damage.empty());
    std::string warning;
    EXPECT_EQ(test_mode_input(path, warning).path, path);
    EXPECT_TRUE(warning.empty());

    truncate(path.c_str(), 24 + 2 * 116 + 16 + 10);
    PcapCheck cut = check_pcap(path);
    EXPECT_EQ(cut.frames, 2u);
    EXPECT_EQ(cut.good_bytes, 24u + 2 * 116);
    EXPECT_EQ(cut.file_bytes, 24u + 2 * 116 + 26);
    EXPECT_NE(cut.damage.find("truncated"), std::string::npos) << cut.damage;
    // What net_pcap is given holds exactly the whole records.
    TestInput input = test_mode_input(path, warning);
    EXPECT_EQ(input.frames, 2u);
    EXPECT_NE(input.path, path);
    EXPECT_EQ(read_frames(input.path), (std::vector<Frame>{Frame(100, 1), Frame(100, 2)}));
    PcapReader again(input.path);
    while (again.next()) {
    }
    EXPECT_FALSE(again.truncated());
    EXPECT_NE(warning.find("delivering the 2 whole records"), std::string::npos) << warning;
}
