#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include "mem/mempool.hpp"
#include "mem/region_spec.hpp"
#include "support/scratch.hpp"

using namespace linerate::mem;

TEST(RegionSpec, ParsesEveryKind) {
    auto s = parse_region_spec("socket:1");
    EXPECT_EQ(s.kind, RegionKind::socket);
    EXPECT_EQ(s.socket, 1);
    EXPECT_EQ(parse_region_spec("pages:4k").kind, RegionKind::pages_4k);
    EXPECT_EQ(parse_region_spec("pages:thp").kind, RegionKind::pages_thp);
    auto f = parse_region_spec("file:/dev/hugepages/x,size=2G");
    EXPECT_EQ(f.kind, RegionKind::file);
    EXPECT_EQ(f.path, "/dev/hugepages/x");
    EXPECT_EQ(f.size, 2ull << 30);
    EXPECT_EQ(parse_region_spec("file:/dev/shm/y").size, 0u);
}

TEST(RegionSpec, RejectsBadSpecs) {
    for (const char* bad : {"", "socket", "socket:", "socket:a", "socket:-1", "socket:1234",
                            "pages:2m", "pages:", "file:", "file:/x,size=", "file:/x,size=0",
                            "file:/x,size=5T", "file:/x,mode=rw", "dram:0"})
        EXPECT_THROW(parse_region_spec(bad), RegionError) << bad;
}

TEST(RegionSpec, FileOptions) {
    auto f = parse_region_spec("file:/dev/shm/z,size=4M,create");
    EXPECT_EQ(f.size, 4u << 20);
    EXPECT_TRUE(f.create);
    auto g = parse_region_spec("file:/dev/shm/z,create");
    EXPECT_TRUE(g.create);
    EXPECT_EQ(g.size, 0u);
    EXPECT_FALSE(parse_region_spec("file:/dev/shm/z,size=4M").create);
    EXPECT_THROW(parse_region_spec("file:/dev/shm/z,create,"), RegionError);
}

TEST(RegionSpec, MissingFileIsRefusedUnlessCreateIsAsked) {
    const std::string path = linerate::test::scratch("region_missing");
    EXPECT_THROW(check_region_file(parse_region_spec("file:" + path)), RegionError);
    check_region_file(parse_region_spec("file:" + path + ",create"));
    check_region_file(parse_region_spec("pages:4k"));
    std::ofstream(path) << "x";
    check_region_file(parse_region_spec("file:" + path));
}

TEST(RegionSpec, ByteSizes) {
    EXPECT_EQ(parse_byte_size("4096"), 4096u);
    EXPECT_EQ(parse_byte_size("64K"), 65536u);
    EXPECT_EQ(parse_byte_size("3M"), 3u << 20);
    EXPECT_EQ(parse_byte_size("1GiB"), 1u << 30);
    EXPECT_THROW(parse_byte_size("K"), RegionError);
    // Too large for an unsigned long long, and near 2^64 (would wrap when rounded to pages).
    EXPECT_THROW(parse_byte_size("99999999999999999999"), RegionError);
    EXPECT_THROW(parse_byte_size("99999999999999999999G"), RegionError);
    EXPECT_THROW(parse_byte_size("18446744073709551615"), RegionError);
    EXPECT_THROW(parse_byte_size("1048577G"), RegionError);
    EXPECT_EQ(parse_byte_size("1048576G"), kMaxRegionBytes);
}

TEST(RegionCatalog, AliasesFromDefinitionsAndFile) {
    RegionCatalog c;
    c.define("host=socket:0");
    std::string path = linerate::test::scratch("regions");
    std::ofstream(path)
        << "# BlueField-3\narm = pages:thp\n\ndpa = file:/dev/shm/dpa,size=16M  # BAR\n";
    c.load_file(path);
    EXPECT_EQ(c.resolve("host").kind, RegionKind::socket);
    EXPECT_EQ(c.resolve("arm").kind, RegionKind::pages_thp);
    EXPECT_EQ(c.resolve("arm").alias, "arm");
    EXPECT_EQ(c.resolve("dpa").size, 16u << 20);
    EXPECT_EQ(c.resolve("pages:4k").kind, RegionKind::pages_4k);
    EXPECT_EQ(c.resolve("").socket, -1);  // the port's node
    EXPECT_THROW(c.resolve("nic"), RegionError);
    EXPECT_THROW(c.define("bad name=socket:0"), RegionError);
    EXPECT_THROW(c.define("x=host"), RegionError);  // aliases do not chain
}

TEST(RegionCatalog, FileErrorsNameTheLine) {
    std::string path = linerate::test::scratch("regions_bad");
    std::ofstream(path) << "a = socket:0\nb = pages:1g\n";
    RegionCatalog c;
    try {
        c.load_file(path);
        FAIL();
    } catch (const RegionError& e) {
        EXPECT_NE(std::string(e.what()).find(":2: bad region 'pages:1g'"), std::string::npos)
            << e.what();
    }
}

TEST(PoolSize, CoversRingsCachesAndBurstsAsPowerOfTwoMinusOne) {
    PoolDemand d{
        .rx_descriptors = 1024, .tx_descriptors = 1024, .lcores = 2, .burst = 32, .cache = 256};
    unsigned n = pool_size(d);
    EXPECT_GE(n, 1024u + 1024 + 2 * (256 + 128 + 64));
    EXPECT_EQ((n + 1) & n, 0u);
    d.rx_descriptors = 4 * 4096;
    EXPECT_GE(pool_size(d), 4u * 4096 + 1024);
}

// kRegionKinds is the one list of kinds: every kind has its line, the help text and README.md's
// region table name exactly the kinds it holds, and a spec of each kind parses to that kind.
TEST(RegionKinds, OneListForTheParserTheHelpAndTheReadme) {
    for (const RegionKindInfo& k : kRegionKinds) {
        EXPECT_EQ(&region_kind_info(k.kind), &k);
        EXPECT_NE(region_syntax().find(k.syntax), std::string::npos) << k.syntax;
        std::string example(k.syntax);
        example = example.substr(0, example.find('['));
        if (k.kind == RegionKind::socket) example = "socket:0";
        if (k.kind == RegionKind::file) example = "file:/dev/shm/x";
        EXPECT_EQ(parse_region_spec(example).kind, k.kind) << example;
        EXPECT_EQ(parse_region_spec(example).page_size(), k.page_size);
    }
    std::ifstream readme(std::string(LINERATE_SOURCE_DIR) + "/README.md");
    std::set<std::string> in_readme, in_code = {"NAME"};
    for (const RegionKindInfo& k : kRegionKinds) in_code.insert(std::string(k.syntax));
    bool in_section = false;
    for (std::string line; std::getline(readme, line);) {
        if (line.rfind("## ", 0) == 0) in_section = line == "## Memory regions";
        if (in_section && line.rfind("| `", 0) == 0)
            in_readme.insert(line.substr(3, line.find('`', 3) - 3));
    }
    EXPECT_EQ(in_readme, in_code);
}
