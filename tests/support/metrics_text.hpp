#pragma once
// Reading a Prometheus text exposition (what `--metrics` serves) in tests.
#include <cmath>
#include <string>

namespace linerate::test {

// The value of the sample line `series` (name and labels as served, e.g.
// `linerate_link_up{app="nfv",port="0"}`) in `text`; NaN when there is no such line.
inline double metric_sample(const std::string& text, const std::string& series) {
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return NAN;
    return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace linerate::test
