#include "l2reflect/options.hpp"

#include <stdexcept>

namespace linerate::l2reflect {

void Options::add(CLI::App& app) {
    forward.add(app);
    datapath.add(app);
    memory.add(app);
}

void Options::check() const {
    forward.check();
    datapath.check();
    memory.check();
    if (memory.on() && datapath.xdp())
        throw std::invalid_argument(
            "--touch and --lookups are the poll loop's work: not with --datapath xdp");
}

}  // namespace linerate::l2reflect
