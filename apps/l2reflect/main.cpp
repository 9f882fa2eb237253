// l2reflect: MAC-swap reflector. Wiring only: the kernel is reflect.hpp.
#include <rte_mbuf.h>

#include <iterator>

#include "reflect.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/runtime.hpp"

using namespace linerate;

int main(int argc, char** argv) {
    CLI::App cli(
        "l2reflect: swap source and destination MAC and send each frame back out the "
        "port and queue it came in on",
        "l2reflect");
    cli::CommonOptions options;
    cli::add_common_options(cli, options);
    AppInfo info{"l2reflect",
                 "MAC-swap reflector",
                 {std::begin(l2reflect::kDropNames), std::end(l2reflect::kDropNames)},
                 {}};
    Runtime runtime(info, argc, argv, cli, options);
    auto kernel = [](rte_mbuf* m) {
        return l2reflect::reflect_frame(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m));
    };
    return runtime.run([&](WorkerContext& ctx) { forward_loop(ctx, kernel); });
}
