-- kvagg.lua: load linerate's kvagg (a sink: it aggregates and sends nothing back) from
-- Pktgen-DPDK replaying bench/pktgen/pcap/kvagg-t8.pcap or kvagg-t32.pcap:
--   pktgen -l 0-2 -n 4 -a <pci> -- -P -m "[1:2].0" -s 0:bench/pktgen/pcap/kvagg-t8.pcap \
--          -f bench/pktgen/kvagg.lua
-- Pktgen cannot see a sink's loss: nothing comes back. Two ways, chosen below:
--  * DUT_STATS set: a shell command, run on this (Pktgen) machine, that prints kvagg's live
--    figures (telemetry /linerate/stats, JSON). The script reads kvagg's rx_packets before and
--    after each trial, loss = 1 - received / sent, and runs the RFC 2544 binary search (< 0.1 %)
--    like the reflector scripts. E.g. with kvagg started with --file-prefix kv on host "dut":
--      ssh root@dut 'echo /linerate/stats | dpdk-telemetry.py -f kv'
--  * DUT_STATS nil: a fixed-rate sweep (FIXED_RATES, percent of line rate), each step TRIAL_MS
--    long with 4.1 s of silence between steps (2 s settle, 2 s gap, 0.1 s after clearing). The CSV (linerate-kvagg.csv) has what Pktgen sent per
--    step; kvagg's stats line (--stats-period 1) shows what it received each second (rx Mpps),
--    and its final JSON rx_packets against the CSV's sum of "sent" gives the overall loss.
-- Run kvagg with --dup-window 0: a replay repeats the pcap's sequence numbers, which kvagg
-- would otherwise drop as duplicates (they show as "duplicate" drops, not as loss). The
-- committed pcaps are addressed to 02:00:00:00:00:02: run kvagg with --promisc, or regenerate
-- them with DST_MAC=<kvagg's port MAC> bench/pktgen/make-pcaps.

-- Settings ------------------------------------------------------------------------------------
local PORT        = 0
local DUT_STATS   = nil     -- e.g. "ssh root@dut 'echo /linerate/stats | dpdk-telemetry.py -f kv'"
local FIXED_RATES = { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }
local TRIAL_MS    = 10000
------------------------------------------------------------------------------------------------

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local sweep = dofile(here .. "sweep.lua")

local last_dropped = nil

-- kvagg's rx_packets (frames its workers took from the NIC) from its telemetry JSON.
local function kvagg_rx()
    local h = assert(io.popen(DUT_STATS, "r"))
    local out = h:read("a") or ""
    h:close()
    local rx = tonumber(out:match('"rx_packets"%s*:%s*(%d+)'))
    if not rx then
        error("kvagg.lua: no rx_packets in the output of DUT_STATS (" .. DUT_STATS .. "): "
              .. out:sub(1, 200))
    end
    local dropped = tonumber(out:match('"dropped"%s*:%s*(%d+)'))
    if dropped and last_dropped and dropped > last_dropped then
        print(string.format("kvagg.lua: kvagg dropped %d frames it received (not_kvagg, "
              .. "duplicate, ...: /linerate/drops tells which; --dup-window 0 for replays)",
              dropped - last_dropped))
    end
    last_dropped = dropped
    return rx
end

sweep.run({
    app = "kvagg",
    tx_port = PORT, rx_port = PORT,
    pcap = true,
    return_share = DUT_STATS and 1.0 or 0, -- every frame sent must reach kvagg; 0: unseen
    counter = DUT_STATS and kvagg_rx or nil,
    fixed_rates = (not DUT_STATS) and FIXED_RATES or nil,
    trial_ms = TRIAL_MS,
    confirm_ms = 0,
})
