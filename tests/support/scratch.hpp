#pragma once
// Scratch files for tests: scratch("out.pcap") is a fresh path in a directory of this test
// process's own (under GoogleTest's TempDir), removed with everything in it when the process
// exits, so tests write files there and never clean up by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace linerate::test {

class ScratchDir {
  public:
    static const std::string& path() {
        static ScratchDir dir;
        return dir.path_;
    }

  private:
    ScratchDir() : path_(testing::TempDir() + "linerate_" + std::to_string(getpid())) {
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string path_;
};

// A path no other call of this process returns, ending in `name`; the file is not created.
inline std::string scratch(const std::string& name) {
    static std::atomic<int> n{0};
    return ScratchDir::path() + "/" + std::to_string(n++) + "_" + name;
}

}  // namespace linerate::test
