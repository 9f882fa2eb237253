#pragma once
// Reads the field tables of docs/wire-formats.md (`| offset | size | field | meaning |`), and the
// metric tables of docs/metrics.md, so tests can hold the documents to the code.
// Header-only: unit tests link no test support library. LINERATE_SOURCE_DIR comes from
// linerate_test().
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace linerate::test {

struct DocField {
    size_t offset = 0;
    size_t size = 0;
};

namespace doc_detail {

inline std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t`");
    size_t e = s.find_last_not_of(" \t`");
    return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

// "| a | b |" -> {"a", "b"}.
inline std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line.substr(1));
    for (std::string cell; std::getline(in, cell, '|');) out.push_back(trim(cell));
    if (!out.empty() && out.back().empty()) out.pop_back();
    return out;
}

}  // namespace doc_detail

// The rows of the first table with an `offset | size | field` header after the line `heading`
// (e.g. "## kvagg") in the markdown file `path`, by field name; empty when there is none.
inline std::map<std::string, DocField> doc_field_table(const std::string& path,
                                                       const std::string& heading) {
    std::map<std::string, DocField> fields;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line) && line != heading) {
    }
    bool in_table = false;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) break;  // the next section
        if (line.empty() || line[0] != '|') {
            if (in_table) break;
            continue;
        }
        auto row = doc_detail::cells(line);
        if (!in_table) {
            in_table =
                row.size() >= 3 && row[0] == "offset" && row[1] == "size" && row[2] == "field";
            continue;
        }
        if (row.size() < 3 || row[0].find_first_not_of("-") == std::string::npos) continue;
        fields[row[2]] = {std::stoul(row[0]), std::stoul(row[1])};
    }
    return fields;
}

// A file of the source tree, e.g. source_file("docs/wire-formats.md").
inline std::string source_file(const std::string& relative) {
    return std::string(LINERATE_SOURCE_DIR) + "/" + relative;
}

// The table under `heading` of docs/wire-formats.md has exactly the fields of `code`, at the same
// offsets with the same sizes.
inline void expect_wire_table(const std::string& heading,
                              const std::map<std::string, DocField>& code) {
    const auto doc = doc_field_table(source_file("docs/wire-formats.md"), heading);
    ASSERT_EQ(doc.size(), code.size()) << "rows of the table under '" << heading << "'";
    for (const auto& [name, want] : code) {
        auto it = doc.find(name);
        ASSERT_NE(it, doc.end()) << "field " << name << " missing under '" << heading << "'";
        EXPECT_EQ(it->second.offset, want.offset) << name;
        EXPECT_EQ(it->second.size, want.size) << name;
    }
}

// Every key of an app's final JSON (top level, the first worker, and the objects inside, drop
// reasons included) appears in docs/json.md as `key`: the document users read stays complete.
inline void expect_json_documented(const nlohmann::json& j) {
    std::ifstream in(source_file("docs/json.md"));
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(doc.empty()) << "docs/json.md not read";
    auto check = [&](const nlohmann::json& obj, const std::string& where) {
        for (const auto& [key, value] : obj.items()) {
            EXPECT_NE(doc.find("`" + key + "`"), std::string::npos)
                << where << key << " is written but not in docs/json.md";
        }
    };
    ASSERT_TRUE(j.is_object());
    check(j, "");
    for (const auto& [key, value] : j.items())
        if (value.is_object()) check(value, key + ".");
    if (j.contains("workers") && !j["workers"].empty()) check(j["workers"][0], "workers[0].");
}

// A row of docs/metrics.md's tables: | `name` | type | labels | JSON twin |.
struct DocMetric {
    std::string type;                 // counter, gauge
    std::vector<std::string> labels;  // as listed, comma-separated in the doc
    std::string json;                 // the JSON key it matches, or "-"
};

// Every row of every `metric | type | labels | JSON` table of docs/metrics.md, by name.
inline std::map<std::string, DocMetric> doc_metric_table() {
    std::map<std::string, DocMetric> rows;
    std::ifstream in(source_file("docs/metrics.md"));
    bool in_table = false;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] != '|') {
            in_table = false;
            continue;
        }
        auto row = doc_detail::cells(line);
        if (!in_table) {
            in_table = row.size() == 4 && row[0] == "metric" && row[1] == "type";
            continue;
        }
        if (row.size() != 4 || row[0].find_first_not_of("-") == std::string::npos) continue;
        DocMetric m{row[1], {}, row[3]};
        std::stringstream labels(row[2]);
        for (std::string l; std::getline(labels, l, ',');) m.labels.push_back(doc_detail::trim(l));
        rows[row[0]] = m;
    }
    return rows;
}

}  // namespace linerate::test
