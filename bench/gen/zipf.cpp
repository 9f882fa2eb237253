#include "gen/zipf.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace linerate::gen {

DistSpec parse_dist(const std::string& text) {
    if (text == "uniform") return {};
    const std::string prefix = "zipf:";
    if (text.rfind(prefix, 0) == 0) {
        const std::string num = text.substr(prefix.size());
        char* end = nullptr;
        const double s = std::strtod(num.c_str(), &end);
        if (!num.empty() && *end == '\0' && std::isfinite(s) && s >= 0 && s <= 10) return {true, s};
    }
    throw std::invalid_argument("bad distribution '" + text +
                                "' (want uniform or zipf:S, 0<=S<=10)");
}

std::string to_string(const DistSpec& d) {
    if (!d.zipf) return "uniform";
    char buf[32];
    std::snprintf(buf, sizeof buf, "zipf:%g", d.s);
    return buf;
}

KeyDist::KeyDist(uint64_t keys, const DistSpec& spec) : keys_(keys), spec_(spec) {
    if (keys == 0) throw std::invalid_argument("need at least one key");
    if (!spec.zipf) return;
    if (keys > kMaxZipfKeys)
        throw std::invalid_argument("zipf over more than " + std::to_string(kMaxZipfKeys) +
                                    " keys is not supported");
    const size_t n = size_t(keys);
    std::vector<double> p(n);
    double sum = 0;
    // Summed from the smallest weight up, to lose less precision.
    for (size_t k = n; k-- > 0;) {
        p[k] = std::pow(double(k + 1), -spec.s);
        sum += p[k];
    }
    norm_ = sum;
    // Vose: scale to mean 1, pair each under-full column with an over-full one.
    std::vector<uint32_t> small, large;
    for (size_t k = 0; k < n; ++k) {
        p[k] = p[k] * double(n) / sum;
        (p[k] < 1 ? small : large).push_back(uint32_t(k));
    }
    columns_.resize(n);
    for (size_t k = 0; k < n; ++k) columns_[k] = {0xFFFFFFFFu, uint32_t(k)};
    while (!small.empty() && !large.empty()) {
        const uint32_t s = small.back(), l = large.back();
        small.pop_back();
        columns_[s] = {uint32_t(std::min(std::llround(p[s] * 4294967296.0), 0xFFFFFFFFll)), l};
        p[l] -= 1 - p[s];
        if (p[l] < 1) {
            large.pop_back();
            small.push_back(l);
        }
    }
    // What is left is full up to rounding: always stay (threshold max, alias = self).
}

double KeyDist::probability(uint64_t key) const {
    if (key >= keys_) return 0;
    if (!spec_.zipf) return 1.0 / double(keys_);
    return std::pow(double(key + 1), -spec_.s) / norm_;
}

}  // namespace linerate::gen
