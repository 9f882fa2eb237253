#include "kvagg/redis_export.hpp"

#include <hiredis/hiredis.h>

#include <fmt/core.h>

#include <cstdio>

namespace linerate::kvagg {

std::string export_sums_key(unsigned partition) {
    return fmt::format("kvagg:{{p{}}}:sums", partition);
}

std::string export_marker_key(unsigned partition) {
    return fmt::format("kvagg:{{p{}}}:epochs", partition);
}

std::string export_instance_name(uint64_t instance) {
    return fmt::format("{:016x}", instance);
}

// The marker is set again when the epoch was applied before: a write, so a WAIT after it on this
// connection waits for the replicas to have everything up to now, the first apply included (a
// WAIT after no write waits for nothing). HINCRBY fails on a field that is not an integer or
// would leave the signed 64 bits, and Redis does not roll a script back: every field is checked
// before the first write (the bound leaves room for the doubles Lua compares in), so a batch is
// applied whole or not at all and a retry cannot add its first fields twice.
const char* const kApplyScript = R"lua(
local done = redis.call('HGET', KEYS[2], ARGV[1])
if done and tonumber(done) >= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[2], ARGV[1], done)
  return 0
end
for i = 3, #ARGV, 2 do
  local now = redis.call('HGET', KEYS[1], ARGV[i])
  if now and not string.match(now, '^-?%d+$') then
    return redis.error_reply('kvagg: field ' .. ARGV[i] .. ' of ' .. KEYS[1] .. ' is not an integer')
  end
  if math.abs(tonumber(now or '0')) + math.abs(tonumber(ARGV[i + 1])) >= 9.2e18 then
    return redis.error_reply('kvagg: field ' .. ARGV[i] .. ' of ' .. KEYS[1] .. ' would overflow')
  end
end
for i = 3, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
)lua";

RedisExporter::RedisExporter(RedisCluster& cluster, uint64_t instance, ExportCounters& counters,
                             std::chrono::milliseconds wait_timeout)
    : cluster_(cluster),
      instance_(export_instance_name(instance)),
      counters_(counters),
      wait_timeout_(wait_timeout) {}

std::vector<std::string> RedisExporter::script_args(const char* verb, const std::string& script,
                                                    unsigned p, uint64_t epoch,
                                                    std::span<const AggSlot> sums) const {
    std::vector<std::string> a{verb,
                               script,
                               "2",
                               export_sums_key(p),
                               export_marker_key(p),
                               instance_,
                               std::to_string(epoch)};
    a.reserve(a.size() + 2 * sums.size());
    for (const AggSlot& s : sums) {
        a.push_back(std::to_string(s.key));
        a.push_back(std::to_string(int64_t(s.value)));  // the wrapping sum as Redis's signed one
    }
    return a;
}

bool RedisExporter::apply_partition(unsigned p, uint64_t epoch, std::span<const AggSlot> sums) {
    const uint16_t slot = cluster_slot(export_sums_key(p));
    const bool wait = cluster_.replicas(slot) > 0;
    const std::vector<std::string> wait_cmd{"WAIT", "1", std::to_string(wait_timeout_.count())};
    std::vector<std::vector<std::string>> cmds{
        sha_.empty() ? script_args("EVAL", kApplyScript, p, epoch, sums)
                     : script_args("EVALSHA", sha_, p, epoch, sums)};
    if (wait) cmds.push_back(wait_cmd);
    std::vector<RedisReply> r = cluster_.pipeline(slot, cmds);
    if (reply_text(r[0].get()).starts_with("NOSCRIPT")) {  // a node that has not seen it yet
        cmds[0] = script_args("EVAL", kApplyScript, p, epoch, sums);
        r = cluster_.pipeline(slot, cmds);
    }
    if (is_error(r[0].get()) || r[0]->type != REDIS_REPLY_INTEGER)
        throw RedisError(
            fmt::format("partition {} epoch {}: {}", p, epoch, reply_text(r[0].get())));
    (r[0]->integer == 1 ? counters_.applied : counters_.already)
        .fetch_add(1, std::memory_order_relaxed);
    if (wait && (is_error(r[1].get()) || r[1]->integer < 1)) {
        counters_.wait_short.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    return true;
}

bool RedisExporter::export_epoch(const ExportEpoch& e) {
    if (sha_.empty()) {
        // Loaded on one node; the others answer NOSCRIPT once and get the script with EVAL.
        std::vector<RedisReply> r = cluster_.pipeline(0, {{"SCRIPT", "LOAD", kApplyScript}});
        if (!is_error(r[0].get())) sha_ = reply_text(r[0].get());
    }
    std::vector<std::vector<AggSlot>> parts(kExportPartitions);
    for (const AggSlot& s : e.sums) parts[export_partition(s.key)].push_back(s);
    bool acknowledged = true;
    for (unsigned p = 0; p < kExportPartitions; ++p)
        if (!parts[p].empty()) acknowledged = apply_partition(p, e.epoch, parts[p]) && acknowledged;
    return acknowledged;
}

ExportThread::ExportThread(ExportBacklog& backlog, std::vector<RedisEndpoint> seeds,
                           std::chrono::milliseconds timeout, ExportCounters& counters,
                           RedisAuth auth)
    : backlog_(backlog),
      cluster_(std::move(seeds), timeout, std::move(auth)),
      counters_(counters),
      timeout_(timeout) {}

size_t ExportThread::connect_now() {
    cluster_.refresh_slots();
    return cluster_.primaries();
}

void ExportThread::start() {
    exporter_ = std::make_unique<RedisExporter>(cluster_, backlog_.instance(), counters_, timeout_);
    thread_ = std::thread([this] { loop(); });
}

void ExportThread::stop(std::chrono::milliseconds drain) {
    drain_until_ns_.store((std::chrono::steady_clock::now() + drain).time_since_epoch().count());
    stopping_.store(true);
    backlog_.stop();
    if (thread_.joinable()) thread_.join();
}

bool ExportThread::try_once(const EpochPtr& e) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
        if (!exporter_->export_epoch(*e)) return false;
    } catch (const std::exception& ex) {  // RedisError, or a redirection that did not parse
        counters_.errors.fetch_add(1, std::memory_order_relaxed);
        // A password changed on the server shows once the node is reached again: told too.
        const Failing now =
            dynamic_cast<const RedisRefused*>(&ex) ? Failing::refused : Failing::unreachable;
        if (failing_ != now) std::fprintf(stderr, "kvagg: --export: %s; retrying\n", ex.what());
        failing_ = now;
        return false;
    }
    if (failing_ != Failing::no) std::fprintf(stderr, "kvagg: --export: Redis answers again\n");
    failing_ = Failing::no;
    counters_.epochs.fetch_add(1, std::memory_order_relaxed);
    counters_.keys.fetch_add(e->sums.size(), std::memory_order_relaxed);
    counters_.last_export_us.store(uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - t0)
                                                .count()),
                                   std::memory_order_relaxed);
    backlog_.acknowledged(e->epoch);
    return true;
}

void ExportThread::loop() {
    for (;;) {
        const bool stopping = stopping_.load();
        if (stopping &&
            std::chrono::steady_clock::now().time_since_epoch().count() >= drain_until_ns_.load())
            return;
        EpochPtr e = backlog_.oldest_durable(std::chrono::milliseconds(stopping ? 0 : 100));
        if (!e) {
            if (stopping) return;
            continue;
        }
        if (!try_once(e)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

}  // namespace linerate::kvagg
