#pragma once
// redis-server processes on 127.0.0.1 for the --export tests, each in a scratch directory on a
// port free when it starts (no fixed port: tests run side by side), killed with the test.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/doc_table.hpp"
#include "support/process.hpp"

namespace linerate::kvagg::test {

// A port free on 127.0.0.1 now (bound to 0, read back, closed).
inline uint16_t free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

// A free port for a cluster node: its bus listens on port + 10000, which must be a port too (an
// ephemeral port above 55535 made redis-server exit at start).
inline uint16_t free_node_port() {
    for (;;)
        if (const uint16_t p = free_port(); p <= 65535 - 10000) return p;
}

inline bool redis_installed() {
    return linerate::test::command_output(
               "command -v redis-server >/dev/null && command -v redis-cli >/dev/null && echo "
               "yes") == "yes\n";
}

// execv takes a path.
inline std::string redis_server() {
    std::string path = linerate::test::command_output("command -v redis-server");
    return path.substr(0, path.find('\n'));
}

// A file of `text` with `mode` in the test's scratch directory (an --export-auth file).
inline std::string write_file_with_mode(const std::string& name, const std::string& text,
                                        mode_t mode) {
    const std::string path = linerate::test::scratch(name);
    std::filesystem::remove(path);
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    chmod(path.c_str(), mode);
    return path;
}

// The least-privilege ACL user as docs/scale-out.md gives it (its `user kvagg on >PASSWORD ...`
// line, so that the tests run the documented line), as redis-server's command line takes it:
// "--user", "kvagg", "on", ">" + password, ... Empty when the docs have no such line.
inline std::vector<std::string> kvagg_acl_user(const std::string& password) {
    std::ifstream doc(linerate::test::source_file("docs/scale-out.md"));
    for (std::string line; std::getline(doc, line);) {
        if (!line.starts_with("user kvagg on >PASSWORD ")) continue;
        std::istringstream words(line.substr(5));  // after "user "
        std::vector<std::string> argv{"--user"};
        for (std::string w; words >> w;) argv.push_back(w == ">PASSWORD" ? ">" + password : w);
        return argv;
    }
    return {};
}

// How a node starts: standalone, a one-node cluster serving every slot, or a cluster member
// that `redis-cli --cluster create` joins later.
enum class RedisMode { plain, one_node_cluster, cluster_member };

// One redis-server; `extra`: more of its options ("--requirepass", "pw", ...); `cli_password`:
// what the test's redis-cli authenticates with (the default user's).
class RedisNode {
  public:
    explicit RedisNode(RedisMode mode, std::vector<std::string> extra = {},
                       std::string cli_password = "")
        : port_(free_node_port()), cli_password_(std::move(cli_password)) {
        const std::string dir = linerate::test::scratch("redis" + std::to_string(port_));
        std::filesystem::create_directories(dir);
        std::vector<std::string> argv{
            redis_server(), "--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir", dir,
            "--save",       "",       "--appendonly",        "no"};
        if (mode != RedisMode::plain)
            argv.insert(argv.end(),
                        {"--cluster-enabled", "yes", "--cluster-config-file", dir + "/nodes.conf"});
        argv.insert(argv.end(), extra.begin(), extra.end());
        server_ = std::make_unique<linerate::test::BackgroundProcess>(argv);
        ready_ = server_->wait_for_output("Ready to accept connections", 10);
        if (ready_ && mode == RedisMode::one_node_cluster) {
            cli("CLUSTER ADDSLOTSRANGE 0 16383");
            for (int i = 0;
                 i < 100 && cli("CLUSTER INFO").find("cluster_state:ok") == std::string::npos; ++i)
                usleep(50'000);
        }
    }
    bool ready() const { return ready_; }
    uint16_t port() const { return port_; }
    int pid() const { return server_->pid(); }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    // redis-cli's answer to `args` (a shell word list), stderr included.
    std::string cli(const std::string& args) const {
        return linerate::test::command_output(cli_prefix() + " -p " + std::to_string(port_) + " " +
                                              args + " 2>&1");
    }
    void set_cli_password(std::string password) { cli_password_ = std::move(password); }
    std::string cli_prefix() const {
        return cli_password_.empty() ? "redis-cli"
                                     : "redis-cli --no-auth-warning -a '" + cli_password_ + "'";
    }

  private:
    uint16_t port_;
    std::string cli_password_;
    std::unique_ptr<linerate::test::BackgroundProcess> server_;
    bool ready_ = false;
};

// Every partition's sums (docs/scale-out.md's 16 `kvagg:{pP}:sums` hashes) read with redis-cli
// HGETALL through `node` (`flags`: "-c" to follow MOVED), each field as the u64 it stands for:
// the signed decimal's two's complement. A field that is not an integer is left out.
inline std::map<uint64_t, uint64_t> sums_in_redis(const RedisNode& node,
                                                  const std::string& flags = "") {
    std::map<uint64_t, uint64_t> sums;
    for (unsigned p = 0; p < 16; ++p) {
        std::istringstream flat(
            node.cli(flags + " HGETALL 'kvagg:{p" + std::to_string(p) + "}:sums'"));
        std::string key, value;
        while (flat >> key >> value) try {
                sums[std::stoull(key)] = uint64_t(std::stoll(value));
            } catch (const std::exception&) {  // another writer's field
            }
    }
    return sums;
}

// Six cluster members made one cluster of three primaries with a replica each
// (`redis-cli --cluster create`), as docs/scale-out.md runs one; `extra` and `cli_password` as
// RedisNode's, for every node. ready(): every node says cluster_state:ok and the three replicas
// are in sync.
class SixNodeCluster {
  public:
    explicit SixNodeCluster(const std::vector<std::string>& extra = {},
                            const std::string& cli_password = "") {
        std::string members;
        for (int i = 0; i < 6; ++i) {
            nodes_.push_back(
                std::make_unique<RedisNode>(RedisMode::cluster_member, extra, cli_password));
            if (!nodes_.back()->ready()) return;
            members += ' ';  // then appended: " " + address() makes GCC 12 warn (-Wrestrict)
            members += nodes_.back()->address();
        }
        const std::string created =
            linerate::test::command_output(nodes_[0]->cli_prefix() + " --cluster create" + members +
                                           " --cluster-replicas 1 --cluster-yes 2>&1");
        for (int i = 0; i < 300 && !(all_ok() && replicas_synced() == 3); ++i) usleep(100'000);
        ready_ = all_ok() && replicas_synced() == 3;
        if (!ready_) std::fprintf(stderr, "cluster create:\n%s\n", created.c_str());
    }
    bool ready() const { return ready_; }
    const RedisNode& node(size_t i) const { return *nodes_[i]; }
    std::map<uint64_t, uint64_t> sums() const { return sums_in_redis(*nodes_[0], "-c"); }

  private:
    bool all_ok() const {
        for (const auto& n : nodes_)
            if (n->cli("CLUSTER INFO").find("cluster_state:ok") == std::string::npos) return false;
        return true;
    }
    int replicas_synced() const {
        int up = 0;
        for (const auto& n : nodes_)
            up += n->cli("INFO replication").find("master_link_status:up") != std::string::npos;
        return up;
    }

    std::vector<std::unique_ptr<RedisNode>> nodes_;
    bool ready_ = false;
};

}  // namespace linerate::kvagg::test
