#include "stats/telemetry.hpp"

#include <rte_telemetry.h>

#include <cctype>
#include <map>
#include <mutex>

namespace linerate::stats {

namespace {

std::mutex g_mutex;
std::map<std::string, TelemetryHandler>& handlers() {
    static std::map<std::string, TelemetryHandler> h;
    return h;
}

void fill(rte_tel_data* d, const nlohmann::json& j);

// Telemetry names allow only alphanumerics, '_', '-', '.' and '/'; reason names have spaces.
std::string telemetry_name(std::string s) {
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
            c != '/')
            c = '_';
    return s;
}

void add_to_dict(rte_tel_data* d, const std::string& raw_key, const nlohmann::json& v) {
    const std::string key = telemetry_name(raw_key);
    if (v.is_number_unsigned()) {
        rte_tel_data_add_dict_u64(d, key.c_str(), v.get<uint64_t>());
    } else if (v.is_number_integer()) {
        rte_tel_data_add_dict_int(d, key.c_str(), int(v.get<int64_t>()));
    } else if (v.is_string()) {
        rte_tel_data_add_dict_string(d, key.c_str(), v.get<std::string>().c_str());
    } else if (v.is_object() || v.is_array()) {
        rte_tel_data* c = rte_tel_data_alloc();
        fill(c, v);
        rte_tel_data_add_dict_container(d, key.c_str(), c, 0);
    } else {
        // 22.11 telemetry has no floating-point values: doubles travel as strings.
        rte_tel_data_add_dict_string(d, key.c_str(), v.dump().c_str());
    }
}

void fill(rte_tel_data* d, const nlohmann::json& j) {
    if (j.is_array()) {
        if (!j.empty() && j[0].is_number_unsigned()) {
            rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
            for (const auto& v : j) rte_tel_data_add_array_u64(d, v.get<uint64_t>());
        } else if (!j.empty() && (j[0].is_object() || j[0].is_array())) {
            rte_tel_data_start_array(d, RTE_TEL_CONTAINER);
            for (const auto& v : j) {
                rte_tel_data* c = rte_tel_data_alloc();
                fill(c, v);
                rte_tel_data_add_array_container(d, c, 0);
            }
        } else {
            rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
            for (const auto& v : j)
                rte_tel_data_add_array_string(
                    d, v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
        }
        return;
    }
    rte_tel_data_start_dict(d);
    if (!j.is_object()) {
        add_to_dict(d, "value", j);
        return;
    }
    for (const auto& [k, v] : j.items()) add_to_dict(d, k, v);
}

int dispatch(const char* cmd, const char* params, rte_tel_data* d) {
    std::lock_guard lock(g_mutex);
    auto it = handlers().find(cmd);
    if (it == handlers().end()) return -1;
    fill(d, it->second(params ? params : ""));
    return 0;
}

}  // namespace

bool register_telemetry(const std::string& command, const std::string& help,
                        TelemetryHandler handler) {
    {
        std::lock_guard lock(g_mutex);
        handlers()[command] = std::move(handler);
    }
    return rte_telemetry_register_cmd(command.c_str(), dispatch, help.c_str()) == 0;
}

void clear_telemetry() {
    std::lock_guard lock(g_mutex);
    handlers().clear();
}

}  // namespace linerate::stats
