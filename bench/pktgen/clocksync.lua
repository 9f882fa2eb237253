-- clocksync.lua: how many clock-sync requests per second linerate's clocksync master answers
-- with less than 0.1 % unanswered (RFC 2544 throughput), Pktgen-DPDK replaying the requests of
-- bench/pktgen/pcap/clocksync-req.pcap (64 client ids, 84-byte frames):
--   pktgen -l 0-2 -n 4 -a <pci> -- -P -m "[1:2].0" -s 0:bench/pktgen/pcap/clocksync-req.pcap \
--          -f bench/pktgen/clocksync.lua
-- The master answers every valid request on the port it came in on (MACs, IPs, ports swapped),
-- so every frame sent must come back. This measures the master as a load; ε (the sync bound)
-- is measured by linerate's own client (clocksync --role client), which Pktgen cannot be: run
-- it on another port while Pktgen loads the master at the rates found here (see README.md).
-- The committed pcap is addressed to 02:00:00:00:00:02: run the master with --promisc and
-- Pktgen with -P, or regenerate it with your MACs (bench/pktgen/make-pcaps).

-- Settings ------------------------------------------------------------------------------------
local PORT = 0
------------------------------------------------------------------------------------------------

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local sweep = dofile(here .. "sweep.lua")

sweep.run({
    app = "clocksync",
    tx_port = PORT, rx_port = PORT,
    pcap = true,
    return_share = 1.0,
    trial_ms = 10000,
    confirm_ms = 0,
})
