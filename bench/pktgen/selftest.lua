-- selftest.lua: runs the four app scripts and sweep.lua against a simulated Pktgen and DUT,
-- with no Pktgen and no NIC:   lua5.3 bench/pktgen/selftest.lua   (exit status 0 = pass)
-- The fake `pktgen` table checks every call's argument count and types as Pktgen-DPDK's
-- app/lpktgenlib.c does (luaL_checkstring/number/integer), then simulates a 10 Gb/s link and
-- a DUT that forwards at most CAPACITY frames/s: the search must land just below it.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local failures = 0
local function check(cond, what)
    if cond then print("ok    " .. what) else print("FAIL  " .. what); failures = failures + 1 end
end

-- The simulated testbed ------------------------------------------------------------------
local sim
local function new_sim(opts)
    return { link = 10000, size = 64, rate = 100, sending = false, pcap_loaded = opts.pcap_loaded,
             pcap_on = false, pcap_frame = opts.pcap_frame or 60, capacity = opts.capacity,
             share = opts.share or 1, sink = opts.sink, api26 = opts.api26,
             tx = 0, txb = 0, rx = 0, rxb = 0, dut_rx = 0, calls = {} }
end

local function argc(name, n, ...)
    local got = select("#", ...)
    if got ~= n then error(string.format("pktgen.%s: %d arguments, Pktgen wants %d", name, got, n), 3) end
    sim.calls[name] = (sim.calls[name] or 0) + 1
end
local function str(v, name) -- luaL_checkstring accepts strings and numbers
    if type(v) ~= "string" and type(v) ~= "number" then error("pktgen." .. name .. ": string expected", 3) end
    return tostring(v)
end
local function num(v, name)
    if tonumber(v) == nil then error("pktgen." .. name .. ": number expected", 3) end
    return tonumber(v)
end
local function portlist(v, name)
    local s = str(v, name)
    if not s:match("^[%d,%-]+$") and s ~= "all" then error("pktgen." .. name .. ": bad portlist " .. s, 3) end
    return s
end

local function frame_len() -- without FCS
    if sim.pcap_on then return sim.pcap_frame end
    return sim.size - 4
end

local function advance(ms)
    if not sim.sending then return end
    local pps = sim.link * 1e6 / ((frame_len() + 24) * 8) * sim.rate / 100
    local n = math.floor(pps * ms / 1000)
    local ok = math.floor(math.min(pps, sim.capacity) * ms / 1000)
    sim.tx, sim.txb = sim.tx + n, sim.txb + n * frame_len()
    sim.dut_rx = sim.dut_rx + ok
    if not sim.sink then
        -- The pcap's share comes back; Pktgen's own single packet (no pcap on) comes back whole.
        local back = math.floor(ok * (sim.pcap_on and sim.share or 1))
        sim.rx, sim.rxb = sim.rx + back, sim.rxb + back * frame_len()
    end
    sim.last_pps = pps
end

local function eth(tx, txb, rx, rxb)
    return { ipackets = rx, opackets = tx, ibytes = rxb, obytes = txb, ierrors = 0, oerrors = 0,
             rx_nombuf = 0, imissed = 0 }
end

pktgen = {
    set = function(...)
        argc("set", 3, ...)
        local p, what, v = ...
        portlist(p, "set"); str(what, "set"); num(v, "set")
        if what == "rate" then
            local r = tonumber(str(v, "set"))
            if r == 0 then r = 0.01 elseif r > 100 then r = 100 end
            sim.rate = r
        elseif what == "size" then sim.size = math.floor(v)
        elseif not ({ count = 1, burst = 1, sport = 1, dport = 1, ttl = 1 })[what] then
            error("pktgen.set does not support " .. what)
        end
    end,
    start = function(...) argc("start", 1, ...); portlist(..., "start"); sim.sending = true end,
    stop = function(...) argc("stop", 1, ...); portlist(..., "stop"); sim.sending = false end,
    clr = function() sim.tx, sim.txb, sim.rx, sim.rxb = 0, 0, 0, 0 end,
    delay = function(...)
        argc("delay", 1, ...)
        local ms = ...
        if math.type(ms) ~= "integer" and not (math.type(ms) == "float" and ms == math.floor(ms)) then
            error("pktgen.delay: number has no integer representation", 2)
        end
        advance(ms)
    end,
    screen = function(...) argc("screen", 1, ...); str(..., "screen") end,
    pcap = function(...)
        argc("pcap", 2, ...)
        local p, what = ...
        portlist(p, "pcap")
        if sim.pcap_loaded then sim.pcap_on = (str(what, "pcap") == "on") end
    end,
    set_type = function(...) argc("set_type", 2, ...); portlist(..., "set_type") end,
    set_proto = function(...) argc("set_proto", 2, ...); portlist(..., "set_proto") end,
    set_ipaddr = function(...)
        argc("set_ipaddr", 3, ...)
        local p, which, ip = ...
        portlist(p, "set_ipaddr"); str(which, "set_ipaddr"); str(ip, "set_ipaddr")
    end,
    set_mac = function(...)
        argc("set_mac", 3, ...)
        local p, which, mac = ...
        portlist(p, "set_mac")
        assert(which == "dst" or which == "src", "set_mac: dst or src")
        assert(tostring(mac):match("^%x%x:%x%x:%x%x:%x%x:%x%x:%x%x$"), "set_mac: MAC")
    end,
    linkState = function(...)
        argc("linkState", 1, ...)
        return { [0] = "<UP-" .. sim.link .. "-FD>", n = 1 }
    end,
    portStats = function(...)
        local n = select("#", ...)
        if sim.api26 then
            if n ~= 1 then error("portStats, wrong number of arguments") end
            return { [0] = { curr = eth(sim.tx, sim.txb, sim.rx, sim.rxb) }, n = 1 }
        end
        if n ~= 2 then error("portStats, wrong number of arguments") end
        local _, kind = ...
        local t
        if kind == "rate" then
            local pps = sim.sending and sim.last_pps or 0
            t = eth(pps, pps * frame_len(), 0, 0)
            t.mbits_tx = math.floor((pps * (frame_len() + 24)) * 8 / 1e6)
            t.mbits_rx = 0
        else
            t = eth(sim.tx, sim.txb, sim.rx, sim.rxb)
        end
        return { [0] = t, n = 1 }
    end,
}

-- Scenarios ------------------------------------------------------------------------------
local function line_pps(frame) return 10e9 / ((frame + 24) * 8) end

local function results_of(script, opts, patch)
    sim = new_sim(opts)
    local src = assert(io.open(here .. script)):read("a")
    if patch then src = patch(src) end
    local chunk = assert(load(src, "@" .. here .. script))
    local ok, err = pcall(chunk)
    LAST_ERROR = not ok and tostring(err) or nil
    if not ok then print("error in " .. script .. ": " .. tostring(err)) end
    return ok
end

local sweep = dofile(here .. "sweep.lua")
local real_run = sweep.run
local last
-- The app scripts dofile sweep.lua themselves: catch the results through a wrapper module.
local function capture(src)
    return src:gsub('local sweep = dofile%(here %.%. "sweep%.lua"%)',
                    'local sweep = dofile(here .. "sweep.lua"); local _r = sweep.run; '
                    .. 'sweep.run = function(c) c.log = os.tmpname(); LAST = _r(c); os.remove(c.log); '
                    .. 'return LAST end')
end

-- l2reflect: capacity 5 Mpps; 64-byte frames: line 14.88 Mpps -> about 33.6 %.
check(results_of("l2reflect.lua", { capacity = 5e6 }, capture), "l2reflect.lua runs")
last = LAST
check(last and #last == 7, "l2reflect.lua: one result per frame size")
if last then
    local r64 = last[1].best
    local want = 5e6 / line_pps(60) * 100
    check(r64 and r64.rate <= want and r64.rate > want - 0.5,
          string.format("l2reflect 64 B: %.3f%% found, capacity at %.3f%%", r64 and r64.rate or -1, want))
    check(last[7].best and last[7].best.rate == 100, "l2reflect 1518 B: line rate passes (0.81 Mpps < 5)")
    check(r64 and math.abs(r64.tx_gbps - r64.tx_mpps * 84 * 8 / 1000) < 1e-6, "Gbps counts 24 B per frame")
end

-- nfv on the pcap mix: 89.1 % come back; capacity 8 Mpps.
check(results_of("nfv.lua", { capacity = 8e6, share = 0.891, pcap_loaded = true }, capture), "nfv.lua runs")
last = LAST
if last then
    local b = last[1].best
    local want = 8e6 / line_pps(60) * 100
    check(#last == 1 and b and b.rate <= want and b.rate > want - 0.5,
          string.format("nfv pcap: %.3f%% found, capacity at %.3f%%", b and b.rate or -1, want))
    check(sim.pcap_on, "nfv.lua turned pcap replay on")
end
-- nfv with the wrong share: every trial must fail (a sanity check of the loss arithmetic).
check(results_of("nfv.lua", { capacity = 8e6, share = 0.80, pcap_loaded = true }, capture), "nfv.lua runs (share 0.80)")
check(LAST and LAST[1].best == nil, "nfv: 10 % fewer frames back than the share says -> no passing rate")

-- nfv with the pcap forgotten (no -s 0:FILE): Pktgen sends its own valid frames, all come back,
-- more than the share: the sweep must stop with an error naming the pcap, not report a pass.
local missing_ok = results_of("nfv.lua", { capacity = 8e6, share = 0.891, pcap_loaded = false }, capture)
check(not missing_ok and LAST_ERROR and LAST_ERROR:find("Was the pcap loaded", 1, true),
      "nfv.lua without a loaded pcap: stops, says the pcap is missing")
-- More back than expected at all (negative loss) is invalid, never a pass.
do
    sim = new_sim({ capacity = 8e6, share = 1.0, pcap_loaded = true })
    pktgen.pcap("0", "on")
    local ok, err = pcall(sweep.search, setmetatable({ app = "nfv", tx_port = 0, rx_port = 0,
        pcap = true, return_share = 0.891, trial_ms = 1000, confirm_ms = 0 },
        { __index = sweep.defaults }), nil, "pcap")
    check(not ok and tostring(err):find("came back", 1, true), "negative loss stops the search")
end

-- clocksync master, 84-byte frames, capacity 3 Mpps.
check(results_of("clocksync.lua", { capacity = 3e6, pcap_loaded = true, pcap_frame = 84 }, capture), "clocksync.lua runs")
if LAST then
    local b = LAST[1].best
    local want = 3e6 / line_pps(84) * 100
    check(b and b.rate <= want and b.rate > want - 0.5,
          string.format("clocksync: %.3f%% found, capacity at %.3f%%", b and b.rate or -1, want))
end

-- kvagg without a DUT counter: fixed rates, no verdicts.
check(results_of("kvagg.lua", { capacity = 2e6, sink = true, pcap_loaded = true, pcap_frame = 192 }, capture),
      "kvagg.lua runs (fixed rates)")
check(LAST and #LAST == 0, "kvagg fixed-rate sweep: no search result claimed")

-- kvagg with a DUT counter: the stats command is simulated by a stub io.popen.
local real_popen = io.popen
io.popen = function(cmd)
    return { read = function() return string.format(
                '{"/linerate/stats": {"app": "kvagg", "dropped": 0, "rx_packets": %d, '
                .. '"workers_rx_packets": [%d]}}', sim.dut_rx, sim.dut_rx) end,
             close = function() end }
end
check(results_of("kvagg.lua", { capacity = 2e6, sink = true, pcap_loaded = true, pcap_frame = 192 },
      function(s) return capture(s):gsub("local DUT_STATS   = nil", 'local DUT_STATS = "fake"') end),
      "kvagg.lua runs (DUT counter)")
io.popen = real_popen
if LAST then
    local b = LAST[1] and LAST[1].best
    local want = 2e6 / line_pps(192) * 100
    check(b and b.rate <= want and b.rate > want - 0.5,
          string.format("kvagg via DUT counter: %.3f%% found, capacity at %.3f%%", b and b.rate or -1, want))
end

-- Pktgen 26.02+: portStats(portlist) with the counters under .curr.
check(results_of("l2reflect.lua", { capacity = 5e6, api26 = true }, capture), "l2reflect.lua runs on the 26.02 portStats")
check(LAST and LAST[1].best and LAST[1].best.rate > 30, "26.02 portStats: same search result")

print(failures == 0 and "selftest: all passed" or ("selftest: " .. failures .. " failed"))
os.exit(failures == 0 and 0 or 1)
