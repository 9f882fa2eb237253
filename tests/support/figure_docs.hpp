#pragma once
// Holds docs/metrics.md and docs/json.md to an app's figure declarations (stats/figures.hpp), so
// the documents stay checked from the one declaration of each figure. Header-only, for unit
// tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>

#include "stats/figures.hpp"
#include "support/doc_table.hpp"

namespace linerate::test {

namespace figure_docs_detail {

inline const char* metric_type(stats::FigureKind k) {
    return k == stats::FigureKind::total   ? "counter"
           : k == stats::FigureKind::gauge ? "gauge"
                                           : "histogram";
}

// `name` in backquotes (appended, not `+`: GCC 12 warns, -Wrestrict, on such sums).
inline std::string backquoted(std::string_view name) {
    std::string q(1, '`');
    q.append(name).push_back('`');
    return q;
}

// The JSON key's place in docs/json.md: `key` anywhere, or for "a.b" `b` on the row of `a`.
inline bool json_key_documented(const std::string& doc, std::string_view key) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) return doc.find(backquoted(key)) != std::string::npos;
    const size_t row = doc.find("\n| " + backquoted(key.substr(0, dot)) + " |");
    if (row == std::string::npos) return false;
    const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
    return line.find(backquoted(key.substr(dot + 1))) != std::string::npos;
}

}  // namespace figure_docs_detail

// Each figure with a metric name is in docs/metrics.md with its type, its labels (worker for a
// per-worker one) and its JSON twin (`workers[w].KEY` per worker); each JSON key is in
// docs/json.md.
inline void expect_figures_documented(const stats::FigureSet& set) {
    const auto metrics = doc_metric_table();
    std::ifstream in(source_file("docs/json.md"));
    const std::string json_doc((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    ASSERT_FALSE(json_doc.empty()) << "docs/json.md not read";
    for (const stats::Figure& f : set.figures) {
        if (!f.json.empty()) {
            EXPECT_TRUE(figure_docs_detail::json_key_documented(json_doc, f.json))
                << f.json << " is not in docs/json.md";
        }
        if (f.metric.empty()) continue;
        const auto it = metrics.find(f.metric);
        ASSERT_NE(it, metrics.end()) << f.metric << " is not in docs/metrics.md";
        const DocMetric& doc = it->second;
        EXPECT_EQ(doc.type, figure_docs_detail::metric_type(f.kind)) << f.metric;
        const auto has_label = [&doc](const std::string& l) {
            return std::find(doc.labels.begin(), doc.labels.end(), l) != doc.labels.end();
        };
        if (f.per_worker) {
            EXPECT_TRUE(has_label("worker")) << f.metric;
        }
        for (const auto& [label, value] : f.labels) {
            EXPECT_TRUE(has_label(label)) << f.metric;
        }
        if (f.json.empty()) continue;
        // The cell's outer backticks are trimmed: "service.reads`, `service.statuses`, ...".
        const std::string twin =
            figure_docs_detail::backquoted((f.per_worker ? "workers[w]." : "") + f.json);
        EXPECT_NE(figure_docs_detail::backquoted(doc.json).find(twin), std::string::npos)
            << f.metric << ": its JSON twin is " << twin;
    }
}

}  // namespace linerate::test
