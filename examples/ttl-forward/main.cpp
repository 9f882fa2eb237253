// ttl-forward: an out-of-tree app on the installed linerate runtime (find_package(linerate)).
// Wiring only: the kernel is ttl.hpp.
#include <rte_mbuf.h>

#include "runtime/forward_loop.hpp"
#include "runtime/runtime.hpp"
#include "ttl.hpp"

using namespace linerate;

int main(int argc, char** argv) {
    CLI::App cli(
        "ttl-forward: decrement the TTL of every IPv4 frame and send it back out the port "
        "and queue it came in on; drop non-IPv4 frames and expired TTLs, counted",
        "ttl-forward");
    cli::CommonOptions options;
    Runtime runtime({"ttl-forward", "TTL-decrement forwarder", ttl_forward::kDrops}, argc, argv,
                    cli, options);
    return runtime.run([](WorkerContext& ctx) {
        auto kernel = [](rte_mbuf* m) {
            return ttl_forward::decrement_ttl(rte_pktmbuf_mtod(m, uint8_t*),
                                              rte_pktmbuf_data_len(m));
        };
        forward_loop(ctx, kernel);
    });
}
