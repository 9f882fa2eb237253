-- sweep.lua: the RFC 2544 throughput search shared by linerate's Pktgen-DPDK scripts.
-- Not run on its own: l2reflect.lua, nfv.lua, kvagg.lua and clocksync.lua load it with dofile
-- and call run(cfg). Written against Pktgen-DPDK's Lua API (app/lpktgenlib.c) of 22.07..25.08;
-- portStats of 26.02+ (one argument, counters under .curr) is handled too.
--
-- A trial: set the rate (percent of the link speed, Pktgen's unit), clear the counters, send
-- for trial_ms, stop, wait settle_ms (frames in flight come back, and Pktgen refreshes its
-- counters once a second), then loss = 1 - received / expected, where expected is
--   sent x return_share    (l2reflect, clocksync master: 1; nfv on a mix: the valid share)
-- and received is what came back on rx_port, or, for a sink such as kvagg, what a counter
-- function reads on the device under test (cfg.counter). A trial passes when loss < loss_limit
-- (0.1 %). The search is a binary search on the rate between the last pass and the last fail,
-- starting at max_rate, until they are within `precision` percent of line rate; RFC 2544 then
-- asks for a confirmation trial of 60 s at the rate found (confirm_ms).
--
-- Rates in the results are measured, not the percentage asked for: Mpps = frames / trial time,
-- Gbps = (bytes + 24 per frame) x 8 / trial time. The 24 bytes are preamble + SFD (8), FCS (4)
-- and inter-frame gap (12): Pktgen's Mbit/s and linerate's Gbps both count them, so the figures
-- compare directly with the DUT app's stats line. Pktgen's "size 64" is a 60-byte frame + FCS.

local M = {}

M.defaults = {
    app = "dut",
    tx_port = 0,            -- Pktgen port that sends
    rx_port = 0,            -- Pktgen port the DUT sends back to (same port for a reflector)
    sizes = { 64 },         -- frame sizes with FCS, single-packet mode; ignored with pcap = true
    pcap = false,           -- replay the pcap given to Pktgen with -s P:FILE instead
    setup = nil,            -- function(cfg, size): traffic setup before the trials of a size
    return_share = 1.0,     -- share of the sent frames the DUT must send back (with
                            -- counter: must count); 0 = a sink nobody can see
    counter = nil,          -- function() -> frames the DUT received so far (sinks); without
                            -- one, a sink's loss cannot be measured: only fixed_rates then
    loss_limit = 0.001,     -- a trial passes when loss < 0.1 %
    max_rate = 100,         -- percent of line rate: first trial, upper bound
    precision = 0.5,        -- stop when pass and fail are this close (percent of line rate)
    max_trials = 14,        -- per frame size, confirmation not counted
    trial_ms = 10000,       -- RFC 2544 section 23 suggests 60 s; 10 s keeps a sweep short
    settle_ms = 2000,
    confirm_ms = 0,         -- > 0: a final trial at the rate found, e.g. 60000
    fixed_rates = nil,      -- a list of rates: run these trials instead of searching
    screen_off = true,      -- Pktgen's screen updates off, so the printed lines stay readable
    log = nil,              -- CSV of every trial; default linerate-<app>.csv in Pktgen's cwd
}

local function printf(fmt, ...) print(string.format(fmt, ...)) end

-- Pktgen's port counters since the last clear, one table for both API generations.
local function counters(port)
    local ok, t = pcall(pktgen.portStats, tostring(port), "port")
    if ok and t and t[port] then return t[port] end
    t = pktgen.portStats(tostring(port))[port]      -- 26.02+
    return t.curr or t
end

-- The last second's counters (Pktgen's own rate line), nil where the API has no such view.
local function rate_line(port)
    local ok, t = pcall(pktgen.portStats, tostring(port), "rate")
    if ok and t and t[port] and t[port].mbits_tx then return t[port] end
    return nil
end

-- Link speed in Mb/s from "<UP-10000-FD>", 0 when down or unknown.
local function link_mbps(port)
    local ok, t = pcall(pktgen.linkState, tostring(port))
    if not ok or not t or not t[port] then return 0 end
    return tonumber(string.match(t[port], "UP%-(%d+)")) or 0
end

local function delay(ms) pktgen.delay(math.floor(ms)) end

local function ports_of(cfg)
    if cfg.tx_port == cfg.rx_port then return tostring(cfg.tx_port) end
    return cfg.tx_port .. "," .. cfg.rx_port
end

-- One trial at `rate` percent; returns a result table.
function M.trial(cfg, rate, ms)
    local tx = tostring(cfg.tx_port)
    pktgen.set(tx, "count", 0)            -- until stopped
    pktgen.set(tx, "rate", rate)
    pktgen.clr()
    delay(100)
    local before = cfg.counter and cfg.counter() or 0
    pktgen.start(tx)
    delay(ms)
    local line = rate_line(cfg.tx_port)       -- the last full second, while still sending
    local rxline = rate_line(cfg.rx_port)
    pktgen.stop(tx)
    delay(cfg.settle_ms)

    local s = counters(cfg.tx_port)
    local r = counters(cfg.rx_port)
    local secs = ms / 1000
    local res = { rate = rate, secs = secs, sent = s.opackets, obytes = s.obytes,
                  rx_imissed = r.imissed or 0, rx_nombuf = r.rx_nombuf or 0,
                  rx_errors = r.ierrors or 0 }
    if cfg.counter then
        res.back = cfg.counter() - before
        res.ibytes = nil
    else
        res.back = r.ipackets
        res.ibytes = r.ibytes
    end
    res.expected = res.sent * cfg.return_share
    if not cfg.counter and cfg.return_share == 0 then
        res.loss = nil                  -- a sink without a counter: nothing comes back to see
    elseif res.expected > 0 then
        res.loss = (res.expected - res.back) / res.expected
    else
        res.loss = 1                    -- nothing went out
    end
    -- More back than expected is a failed measurement, not a pass (negative loss): frames that
    -- are not the replay's came back. Most often the pcap was never loaded (-s P:FILE missing:
    -- Pktgen's Lua API cannot tell), so Pktgen sent its own single packet, which the DUT sends
    -- back whole; or the counter read is not this port's.
    res.invalid = res.loss ~= nil and res.loss < -cfg.loss_limit
    res.pass = res.loss ~= nil and res.sent > 0 and res.loss < cfg.loss_limit and not res.invalid
    res.tx_mpps = res.sent / secs / 1e6
    res.rx_mpps = res.back / secs / 1e6
    res.tx_gbps = (res.obytes + 24 * res.sent) * 8 / secs / 1e9
    if res.ibytes then res.rx_gbps = (res.ibytes + 24 * res.back) * 8 / secs / 1e9 end
    res.pg_tx_mbits = line and line.mbits_tx or nil
    res.pg_rx_mbits = rxline and rxline.mbits_rx or nil

    -- Did Pktgen send what it was asked to? Its pacing: link / ((frame + 24) x 8) x rate %.
    local link = link_mbps(cfg.tx_port)
    if link > 0 and res.sent > 0 then
        local frame = res.obytes / res.sent           -- mean frame without FCS
        local offered = link * 1e6 / ((frame + 24) * 8) * rate / 100
        res.offered_mpps = offered / 1e6
        res.tx_limited = res.sent < 0.97 * offered * secs
    end
    return res
end

local function fmt_opt(v, f) if v == nil then return "" end return string.format(f, v) end

local function log_trial(cfg, f, size, kind, res)
    local verdict = res.loss == nil and "n/a"
        or (res.invalid and "invalid" or (res.pass and "pass" or "fail"))
    local loss = res.loss and string.format("%.6f", res.loss * 100) or ""
    local line = string.format("%s,%s,%s,%.3f,%d,%d,%.0f,%s,%s,%.4f,%.4f,%.4f,%s,%s,%s,%s,%d,%d,%d",
        cfg.app, size, kind, res.rate, res.sent, res.back, res.expected, loss,
        verdict, res.tx_mpps, res.rx_mpps, res.tx_gbps,
        fmt_opt(res.rx_gbps, "%.4f"), fmt_opt(res.offered_mpps, "%.4f"),
        fmt_opt(res.pg_tx_mbits, "%d"), fmt_opt(res.pg_rx_mbits, "%d"),
        res.rx_imissed, res.rx_nombuf, res.rx_errors)
    if f then f:write(line, "\n"); f:flush() end
    if res.loss == nil then
        printf("[%s %s] %-7s rate %7.3f%%  sent %d  tx %.3f Mpps %.3f Gbps  (sink: compare "
               .. "with the DUT's rx)%s", cfg.app, size, kind, res.rate, res.sent, res.tx_mpps,
               res.tx_gbps, res.tx_limited and "  (generator-limited)" or "")
        return
    end
    printf("[%s %s] %-7s rate %7.3f%%  sent %d  back %d (expected %.0f)  loss %.4f%%  %s  "
           .. "tx %.3f Mpps %.3f Gbps  rx %.3f Mpps%s",
           cfg.app, size, kind, res.rate, res.sent, res.back, res.expected, res.loss * 100,
           verdict:upper(), res.tx_mpps, res.tx_gbps, res.rx_mpps,
           res.tx_limited and "  (Pktgen sent less than asked: generator-limited)" or "")
end

-- Binary search for one frame size; returns the best passing trial (nil if none).
function M.search(cfg, f, size)
    local lo, hi = 0, cfg.max_rate
    local rate, best = cfg.max_rate, nil
    for n = 1, cfg.max_trials do
        local res = M.trial(cfg, rate, cfg.trial_ms)
        log_trial(cfg, f, size, "trial", res)
        if res.invalid then
            error(string.format("linerate %s: %d frames came back, %.0f expected (loss %.2f%%): "
                .. "the measurement is wrong, not the DUT.%s", cfg.app, res.back, res.expected,
                res.loss * 100, cfg.pcap and string.format(" Was the pcap loaded (pktgen ... -- "
                .. "-s %d:FILE.pcap)?", cfg.tx_port) or " Is the return share right?"), 0)
        end
        if res.pass then lo, best = rate, res else hi = rate end
        if hi - lo <= cfg.precision then break end
        rate = (lo + hi) / 2
    end
    if best and cfg.confirm_ms > 0 then
        local res = M.trial(cfg, best.rate, cfg.confirm_ms)
        log_trial(cfg, f, size, "confirm", res)
        if res.pass then best = res else best.unconfirmed = true end
    end
    return best
end

-- Pktgen's single packet as one valid UDP flow, 192.168.0.1:1024 -> 192.168.0.2:9, addressed to
-- dut_mac (nil keeps Pktgen's own: then the DUT needs --promisc).
function M.single_udp_flow(port, dut_mac)
    if dut_mac then pktgen.set_mac(port, "dst", dut_mac) end
    pktgen.set_type(port, "ipv4")
    pktgen.set_proto(port, "udp")
    pktgen.set_ipaddr(port, "src", "192.168.0.1/24")
    pktgen.set_ipaddr(port, "dst", "192.168.0.2")
    pktgen.set(port, "sport", 1024)
    pktgen.set(port, "dport", 9)
end

function M.run(user)
    local cfg = {}
    for k, v in pairs(M.defaults) do cfg[k] = v end
    for k, v in pairs(user or {}) do cfg[k] = v end
    cfg.log = cfg.log or ("linerate-" .. cfg.app .. ".csv")
    cfg.tx_port, cfg.rx_port = tonumber(cfg.tx_port), tonumber(cfg.rx_port)
    if not cfg.fixed_rates and not cfg.counter and cfg.return_share == 0 then
        error("linerate " .. cfg.app .. ": a sink's loss is not visible to Pktgen: give a "
              .. "counter (DUT stats command) or fixed_rates")
    end
    local sizes = cfg.pcap and { "pcap" } or cfg.sizes

    local f = io.open(cfg.log, "w")
    if f then
        f:write("app,size,kind,rate_pct,sent,back,expected,loss_pct,verdict,tx_mpps,rx_mpps,"
                .. "tx_gbps,rx_gbps,offered_mpps,pktgen_tx_mbits,pktgen_rx_mbits,"
                .. "rx_imissed,rx_nombuf,rx_errors\n")
    end
    if cfg.screen_off then pktgen.screen("off") end
    -- A -f script starts as soon as the ports are configured: wait for the link to the DUT.
    for _ = 1, 60 do
        if link_mbps(cfg.tx_port) > 0 and link_mbps(cfg.rx_port) > 0 then break end
        delay(500)
    end
    pktgen.stop(ports_of(cfg))
    pktgen.pcap(tostring(cfg.tx_port), cfg.pcap and "on" or "off")
    printf("linerate %s: link %d Mb/s, %s, loss limit %.3f%%, %s trials of %d ms, log %s",
           cfg.app, link_mbps(cfg.tx_port), cfg.pcap and "pcap replay" or "single packet",
           cfg.loss_limit * 100, cfg.fixed_rates and "fixed-rate" or "search", cfg.trial_ms,
           cfg.log)

    local results = {}
    for _, size in ipairs(sizes) do
        if size ~= "pcap" then pktgen.set(tostring(cfg.tx_port), "size", size) end
        if cfg.setup then cfg.setup(cfg, size) end
        if cfg.fixed_rates then
            for _, rate in ipairs(cfg.fixed_rates) do
                local res = M.trial(cfg, rate, cfg.trial_ms)
                log_trial(cfg, f, size, "fixed", res)
                delay(cfg.settle_ms)            -- a quiet gap that shows in the DUT's stats line
            end
        else
            results[#results + 1] = { size = size, best = M.search(cfg, f, size) }
        end
    end

    if #results > 0 then
        print("")
        printf("linerate %s: highest rate with loss < %.3f%% (RFC 2544 throughput)",
               cfg.app, cfg.loss_limit * 100)
        for _, r in ipairs(results) do
            local b = r.best
            if b then
                printf("  size %-5s  %7.3f%% of line rate  %.3f Mpps  %.3f Gbps  loss %.4f%%%s%s",
                       r.size, b.rate, b.tx_mpps, b.tx_gbps, b.loss * 100,
                       b.unconfirmed and "  (NOT confirmed by the long trial)" or "",
                       b.tx_limited and "  (generator-limited)" or "")
                if f then f:write(string.format("# result %s %s %.3f%% %.4f Mpps %.4f Gbps%s\n",
                    cfg.app, r.size, b.rate, b.tx_mpps, b.tx_gbps,
                    b.unconfirmed and " unconfirmed" or "")) end
            else
                printf("  size %-5s  no rate above %.2f%% of line rate had loss < %.3f%%",
                       r.size, cfg.precision, cfg.loss_limit * 100)
                if f then f:write(string.format("# result %s %s none\n", cfg.app, r.size)) end
            end
        end
    end
    if f then f:close() end
    if cfg.screen_off then pktgen.screen("on") end
    return results
end

return M
