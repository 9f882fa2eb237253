#include "kvagg/redis_export.hpp"

#include <hiredis/hiredis.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <optional>

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

std::string export_held_key(unsigned partition) {
    return fmt::format("kvagg:{{p{}}}:held", partition);
}

// Exact u64 sums mod 2^64, as signed 64-bit fields: Lua's numbers are doubles, so no sum goes
// through them; HINCRBY adds exactly in Redis and refuses (writing nothing) a sum that leaves the
// signed 64 bits. Then old and delta have the delta's sign, and the wrapped sum is reached in
// steps that each stay inside the bounds: for a positive delta, + MIN (old > 0), + delta
// (old - 2^63 + delta is in [0, 2^63)), + MIN; for a negative one, + MAX, + 1 (old + 2^63 is in
// [0, 2^63)), + delta (in [-2^63, 0)), + MAX, + 1. Any other refusal of HINCRBY (the field is not
// an integer, the hash is not a hash) holds the delta apart in the held hash, added there the
// same way; each call first applies the held deltas whose fields take them again. The held
// values are checked to be integers before any write (Redis does not roll back a script that
// failed half-way, and a retry would add its first fields twice). The marker is set again when
// the epoch was applied before: a write, so a WAIT after it on this connection waits for the
// replicas to have everything up to now, the first apply included.
const char* const kApplyScript = R"lua(
local MIN, MAX = '-9223372036854775808', '9223372036854775807'
local function is_int64(s)
  local neg = string.sub(s, 1, 1) == '-'
  local digits = neg and string.sub(s, 2) or s
  if not string.match(digits, '^[1-9]%d*$') then return s == '0' end
  if #digits ~= 19 then return #digits < 19 end
  return digits <= (neg and '9223372036854775808' or MAX)
end
local function add(hash, field, delta)
  local r = redis.pcall('HINCRBY', hash, field, delta)
  if type(r) ~= 'table' or not r.err then return true end
  if not string.find(r.err, 'overflow', 1, true) then return false end
  local steps = string.byte(delta, 1) == 45 and {MAX, '1', delta, MAX, '1'} or {MIN, delta, MIN}
  for _, step in ipairs(steps) do redis.call('HINCRBY', hash, field, step) end
  return true
end
local held = redis.call('HGETALL', KEYS[3])
for i = 2, #held, 2 do
  if not is_int64(held[i]) then
    return redis.error_reply('kvagg: field ' .. held[i - 1] .. ' of ' .. KEYS[3] .. ' is not an integer')
  end
end
local released = 0
for i = 1, #held, 2 do
  if add(KEYS[1], held[i], held[i + 1]) then
    redis.call('HDEL', KEYS[3], held[i])
    released = released + 1
  end
end
local function answer(applied, newly, first)
  return {applied, redis.call('HLEN', KEYS[3]), newly, released, first}
end
if ARGV[2] == '0' then return answer(0, 0, '') end
local done = redis.call('HGET', KEYS[2], ARGV[1])
if done and tonumber(done) >= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[2], ARGV[1], done)
  return answer(0, 0, '')
end
local newly, first = 0, ''
for i = 3, #ARGV, 2 do
  if not add(KEYS[1], ARGV[i], ARGV[i + 1]) then
    add(KEYS[3], ARGV[i], ARGV[i + 1])
    newly = newly + 1
    if first == '' then first = ARGV[i] end
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return answer(1, newly, first)
)lua";

RedisExporter::RedisExporter(RedisCluster& cluster, uint64_t instance, ExportCounters& counters,
                             std::chrono::milliseconds wait_timeout)
    : cluster_(cluster),
      instance_(export_instance_name(instance)),
      counters_(counters),
      wait_timeout_(wait_timeout) {
    held_.fill(-1);
}

std::vector<std::string> RedisExporter::script_args(const char* verb, const std::string& script,
                                                    unsigned p, uint64_t epoch,
                                                    std::span<const AggSlot> sums) const {
    std::vector<std::string> a{verb,
                               script,
                               "3",
                               export_sums_key(p),
                               export_marker_key(p),
                               export_held_key(p),
                               instance_,
                               std::to_string(epoch)};
    a.reserve(a.size() + 2 * sums.size());
    for (const AggSlot& s : sums) {
        a.push_back(std::to_string(s.key));
        a.push_back(std::to_string(int64_t(s.value)));  // the u64 delta's two's complement
    }
    return a;
}

namespace {

// kApplyScript's answer: {applied, held now, newly held, released, first held key}.
std::optional<ApplyReply> parse_apply_reply(const redisReply* r) {
    if (is_error(r) || r->type != REDIS_REPLY_ARRAY || r->elements != 5) return std::nullopt;
    for (size_t i = 0; i < 4; ++i)
        if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0)
            return std::nullopt;
    return ApplyReply{.applied = r->element[0]->integer == 1,
                      .held_now = uint64_t(r->element[1]->integer),
                      .newly_held = uint64_t(r->element[2]->integer),
                      .released = uint64_t(r->element[3]->integer),
                      .first_held = reply_text(r->element[4])};
}

}  // namespace

// The script (by SHA, by EVAL on NOSCRIPT) and, with `wait`, WAIT 1 in the same pipeline;
// `replicated`: WAIT saw a replica take it (true without `wait`).
ApplyReply RedisExporter::run_script(unsigned p, uint64_t epoch, std::span<const AggSlot> sums,
                                     bool wait, bool& replicated) {
    const uint16_t slot = cluster_slot(export_sums_key(p));
    std::vector<std::vector<std::string>> cmds{
        sha_.empty() ? script_args("EVAL", kApplyScript, p, epoch, sums)
                     : script_args("EVALSHA", sha_, p, epoch, sums)};
    if (wait) cmds.push_back({"WAIT", "1", std::to_string(wait_timeout_.count())});
    std::vector<RedisReply> r = cluster_.pipeline(slot, cmds);
    if (reply_text(r[0].get()).starts_with("NOSCRIPT")) {  // a node that has not seen it yet
        cmds[0] = script_args("EVAL", kApplyScript, p, epoch, sums);
        r = cluster_.pipeline(slot, cmds);
    }
    const std::optional<ApplyReply> a = parse_apply_reply(r[0].get());
    if (!a)
        throw RedisError(
            fmt::format("partition {} epoch {}: {}", p, epoch, reply_text(r[0].get())));
    replicated = !wait || (!is_error(r[1].get()) && r[1]->integer >= 1);
    note_held(p, *a);
    return *a;
}

// The held deltas counted, and told: one line when a partition starts holding, one when what
// it held is applied.
void RedisExporter::note_held(unsigned p, const ApplyReply& r) {
    counters_.held.fetch_add(r.newly_held, std::memory_order_relaxed);
    counters_.released.fetch_add(r.released, std::memory_order_relaxed);
    if (r.newly_held > 0 && held_[p] <= 0)
        std::fprintf(stderr,
                     "kvagg: --export: field %s of %s is not an integer: its delta is held in %s "
                     "and added once it is one (%llu fields held there)\n",
                     r.first_held.c_str(), export_sums_key(p).c_str(), export_held_key(p).c_str(),
                     static_cast<unsigned long long>(r.held_now));
    if (r.held_now == 0 && held_[p] > 0)
        std::fprintf(stderr, "kvagg: --export: the deltas held in %s are applied\n",
                     export_held_key(p).c_str());
    held_[p] = int64_t(r.held_now);
    uint64_t fields = 0;
    for (int64_t h : held_) fields += uint64_t(std::max<int64_t>(h, 0));
    counters_.held_fields.store(fields, std::memory_order_relaxed);
}

bool RedisExporter::apply_partition(unsigned p, uint64_t epoch, std::span<const AggSlot> sums) {
    bool replicated = true;
    const ApplyReply r = run_script(
        p, epoch, sums, cluster_.replicas(cluster_slot(export_sums_key(p))) > 0, replicated);
    if (!sums.empty())  // a visit for the held deltas alone is no batch
        (r.applied ? counters_.applied : counters_.already).fetch_add(1, std::memory_order_relaxed);
    if (!replicated) counters_.wait_short.fetch_add(1, std::memory_order_relaxed);
    return replicated;
}

void RedisExporter::load_script() {
    if (!sha_.empty()) return;
    // Loaded on one node; the others answer NOSCRIPT once and get the script with EVAL.
    std::vector<RedisReply> r = cluster_.pipeline(0, {{"SCRIPT", "LOAD", kApplyScript}});
    if (!is_error(r[0].get())) sha_ = reply_text(r[0].get());
}

bool RedisExporter::export_epoch(const ExportEpoch& e) {
    load_script();
    if (e.epoch != progress_epoch_) {
        progress_epoch_ = e.epoch;
        done_.reset();
    }
    std::vector<std::vector<AggSlot>> parts(kExportPartitions);
    for (const AggSlot& s : e.sums) parts[export_partition(s.key)].push_back(s);
    // A partition that holds deltas is visited without keys too: its held deltas are applied
    // once their fields are integers again.
    std::bitset<kExportPartitions> visit;
    for (unsigned p = 0; p < kExportPartitions; ++p)
        visit[p] = !done_[p] && (!parts[p].empty() || held_[p] != 0);
    for (unsigned p = 0; p < kExportPartitions; ++p)
        if (visit[p] && apply_partition(p, e.epoch, parts[p])) done_.set(p);
    return (visit & ~done_).none();
}

bool RedisExporter::holding() const {
    return std::any_of(held_.begin(), held_.end(), [](int64_t h) { return h != 0; });
}

void RedisExporter::release_held() {
    load_script();
    bool replicated = true;
    for (unsigned p = 0; p < kExportPartitions; ++p)
        if (held_[p] != 0) run_script(p, 0, {}, false, replicated);
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

// Held deltas wait for their fields to be integers again; while epochs come, each visits the
// partitions that hold some, and without epochs this does, once a second, while Redis answers.
void ExportThread::release_held_now_and_then() {
    const auto now = std::chrono::steady_clock::now();
    if (failing_ != Failing::no || !exporter_->holding() ||
        now - last_release_ < std::chrono::seconds(1))
        return;
    last_release_ = now;
    try {
        exporter_->release_held();
    } catch (const std::exception&) {  // told by the next epoch's try
    }
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
            release_held_now_and_then();
            continue;
        }
        if (!try_once(e)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

}  // namespace linerate::kvagg
