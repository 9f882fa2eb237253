-- l2reflect.lua: RFC 2544 throughput of linerate's l2reflect, driven by Pktgen-DPDK.
--   pktgen -l 0-2 -n 4 -a <pci> -- -P -m "[1:2].0" -f bench/pktgen/l2reflect.lua
-- (Pktgen built with -Denable_lua=true, started from the linerate checkout so the path to
-- sweep.lua resolves.) For each frame size, the highest rate (percent of line rate, Mpps, Gbps
-- with 24 B/frame of overhead) at which less than 0.1 % of the frames sent on port 0 fail to
-- come back to port 0. l2reflect swaps the MACs: what returns is addressed to Pktgen's own MAC.
-- Results: printed, and every trial in linerate-l2reflect.csv (Pktgen's working directory).

-- Settings ------------------------------------------------------------------------------------
local PORT    = 0
local DUT_MAC = nil     -- e.g. "0c:42:a1:12:34:56": l2reflect prints "port 0 (...): <MAC>" at
                        -- start; nil keeps Pktgen's (then run l2reflect with --promisc)
local SIZES   = { 64, 128, 256, 512, 1024, 1280, 1518 }   -- with FCS, as Pktgen counts
local PCAP    = false   -- true: replay the pcap given with -s 0:FILE instead of SIZES, e.g.
                        -- pcap/udp-64.pcap (64 flows: RSS spreads them over l2reflect's workers;
                        -- Pktgen's single packet is one flow, so one DUT queue)
------------------------------------------------------------------------------------------------

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local sweep = dofile(here .. "sweep.lua")

local p = tostring(PORT)
sweep.single_udp_flow(p, DUT_MAC)

sweep.run({
    app = "l2reflect",
    tx_port = PORT, rx_port = PORT,
    sizes = SIZES,
    pcap = PCAP,
    return_share = 1.0,
    trial_ms = 10000,       -- RFC 2544: 60000 for the record
    confirm_ms = 0,         -- RFC 2544: 60000
})
